/* xml.c - see xml.h. */
#include "tests/fakecloud/xml.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void fc_xml_text(struct tw_buf *b, const char *s) {
  if (!s)
    return;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
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
      if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
        break; /* not representable in XML 1.0, even as a reference */
      tw_buf_addc(b, (char)*p);
    }
  }
}

void fc_xml_open(struct tw_buf *b, const char *name) {
  tw_buf_printf(b, "<%s>", name);
}

void fc_xml_close(struct tw_buf *b, const char *name) {
  tw_buf_printf(b, "</%s>", name);
}

void fc_xml_elem(struct tw_buf *b, const char *name, const char *text) {
  if (!text || !*text) {
    tw_buf_printf(b, "<%s/>", name);
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
