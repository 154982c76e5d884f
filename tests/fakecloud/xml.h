/* xml.h - a small XML writer for the fake's Query-protocol answers.
 *
 * EC2 answers are flat enough that a writer over struct tw_buf is clearer
 * than building a libxml2 tree.  All text goes through fc_xml_text(), which
 * escapes markup characters and drops code points XML 1.0 cannot carry
 * (C0 controls other than tab, LF and CR), so input echoed back in tags or
 * error messages can never break the document. */
#ifndef TW_TESTS_FAKECLOUD_XML_H
#define TW_TESTS_FAKECLOUD_XML_H

#include <stdint.h>

#include "broker/base/mem.h"

#define FC_XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* Appends s escaped as XML character data (also safe in attributes). */
void fc_xml_text(struct tw_buf *b, const char *s);

/* <name> and </name>. */
void fc_xml_open(struct tw_buf *b, const char *name);
void fc_xml_close(struct tw_buf *b, const char *name);

/* <name>escaped text</name>; a NULL or empty text writes <name/>. */
void fc_xml_elem(struct tw_buf *b, const char *name, const char *text);
void fc_xml_elem_i64(struct tw_buf *b, const char *name, int64_t v);
void fc_xml_elem_bool(struct tw_buf *b, const char *name, int v);
/* printf-style text, escaped. */
void fc_xml_elemf(struct tw_buf *b, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
