/* xml.c - see xml.h. */
#include "tests/fakecloud/xml.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Whether c goes into text as it is (no reference, not dropped). */
static bool plain(unsigned char c) {
  return c >= 0x20 ? c != '&' && c != '<' && c != '>' && c != '"' && c != '\''
                   : c == '\t' || c == '\n' || c == '\r';
}

/* Element text: runs of plain characters appended at once, a reference
 * for each of the five, control characters XML 1.0 cannot hold dropped
 * (the bulk of a DescribeInstances answer, so no per-character call). */
void fc_xml_text(struct tw_buf *b, const char *s) {
  if (!s)
    return;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const unsigned char *run = p;
    while (*p && plain(*p))
      p++;
    if (p > run)
      tw_buf_add(b, run, (size_t)(p - run));
    if (!*p)
      break;
    switch (*p) {
    case '&':
      tw_buf_adds(b, "&amp;");
      break;
    case '<':
      tw_buf_adds(b, "&lt;");
      break;
    case '>':
      tw_buf_adds(b, "&gt;");
      break;
    case '"':
      tw_buf_adds(b, "&quot;");
      break;
    case '\'':
      tw_buf_adds(b, "&apos;");
      break;
    default:
      break; /* not representable in XML 1.0, even as a reference */
    }
  }
}

void fc_xml_open(struct tw_buf *b, const char *name) {
  tw_buf_addc(b, '<');
  tw_buf_adds(b, name);
  tw_buf_addc(b, '>');
}

void fc_xml_close(struct tw_buf *b, const char *name) {
  tw_buf_adds(b, "</");
  tw_buf_adds(b, name);
  tw_buf_addc(b, '>');
}

void fc_xml_elem(struct tw_buf *b, const char *name, const char *text) {
  if (!text || !*text) {
    tw_buf_addc(b, '<');
    tw_buf_adds(b, name);
    tw_buf_adds(b, "/>");
    return;
  }
  fc_xml_open(b, name);
  fc_xml_text(b, text);
  fc_xml_close(b, name);
}

void fc_xml_elem_i64(struct tw_buf *b, const char *name, int64_t v) {
  tw_buf_printf(b, "<%s>%" PRId64 "</%s>", name, v, name);
}

void fc_xml_elem_bool(struct tw_buf *b, const char *name, int v) {
  tw_buf_printf(b, "<%s>%s</%s>", name, v ? "true" : "false", name);
}

void fc_xml_elemf(struct tw_buf *b, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  struct tw_buf t;
  tw_buf_init(&t);
  tw_buf_vprintf(&t, fmt, ap);
  va_end(ap);
  fc_xml_elem(b, name, t.data);
  tw_buf_release(&t);
}
