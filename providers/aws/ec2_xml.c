/* ec2_xml.c - EC2 Query API responses into plain structs (see ec2_xml.h).
 *
 * The tree is walked by local element names from the root down, following
 * the shape the EC2 API reference documents for each action; nothing is
 * found by searching the whole document, so a nested <item> or a
 * repeated element name elsewhere cannot be mistaken for the one wanted. */
#include "providers/aws/ec2_xml.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/SAX2.h>
#include <libxml/dict.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/provider.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;
static pthread_key_t xml_key;

static void xml_tls_free(void *p);

static void xml_init_once(void) {
  xmlInitParser();
  if (pthread_key_create(&xml_key, xml_tls_free))
    abort();
}

void tw_ec2_xml_init(void) { pthread_once(&xml_once, xml_init_once); }

/* ---- a light tree from SAX2 --------------------------------------------- */

/* libxml2's tree (xmlReadMemory) costs an allocation per element and per
 * text run, its names and namespaces, and a walk to free it all; most of
 * a DescribeInstances answer's parse went there.  Instead the parser's
 * SAX2 events build a compact tree of what the walks below read: each
 * element's local name and its own text (text and CDATA children,
 * concatenated), in two arrays reused from parse to parse.  Entity
 * references stay unexpanded and are skipped, as the tree's entity
 * reference nodes were; the DTD is handled by libxml2's own SAX2
 * callbacks, under the same options as before (no NOENT, no DTDLOAD,
 * NONET), so nothing external is ever read. */
struct lnode {
  uint32_t name;     /* offset in bytes, NUL-terminated */
  uint32_t parent;   /* index; the document is node 0 */
  uint32_t first;    /* first child element; 0 none */
  uint32_t last;     /* last child element */
  uint32_t next;     /* next sibling element; 0 none */
  uint32_t text;     /* offset of the element's own text in bytes */
  uint32_t text_len; /* not NUL-terminated */
  /* Text after a child element, while the element is open: more runs
   * (segs), joined after text when the element ends. */
  uint32_t seg_first, seg_last; /* 0 none */
};

struct lseg {
  uint32_t off, len;
  uint32_t next; /* 0 none */
};

struct ldoc {
  struct lnode *n;
  size_t n_len, n_cap;
  struct lseg *s; /* s[0] unused */
  size_t s_len, s_cap;
  char *b;
  size_t b_len, b_cap;
  uint32_t cur;             /* the open element */
  xmlParserCtxtPtr ctxt;    /* the one whose events count */
  bool failed;              /* out of memory or a limit */
  bool dtd;                 /* the document had a DOCTYPE */
  xmlNodePtr stand_in;      /* see sax_get_entity() */
};

/* Per thread: a parser context (its dictionary and buffers) and the
 * arrays, reused while they stay small. */
struct xml_tls {
  xmlParserCtxtPtr ctxt;
  struct ldoc d;
};

/* Reuse bounds: past these the context (its dictionary grows with every
 * new element name a hostile answer invents) or the arrays are dropped
 * after the parse. */
#define XML_DICT_MAX 2048
#define XML_KEEP_BYTES (1u << 20)
#define XML_KEEP_NODES (1u << 16)

static void xml_tls_free(void *p) {
  struct xml_tls *t = p;
  if (!t)
    return;
  if (t->ctxt)
    xmlFreeParserCtxt(t->ctxt);
  free(t->d.n);
  free(t->d.s);
  free(t->d.b);
  free(t);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return true;
  size_t c = *cap ? *cap : 64;
  while (c < need)
    c *= 2;
  if (c > UINT32_MAX)
    return false;
  void *q = realloc(*p, c * elem);
  if (!q)
    return false;
  *p = q;
  *cap = c;
  return true;
}

/* Appends len bytes to d->b; returns the offset, or UINT32_MAX. */
static uint32_t bytes_add(struct ldoc *d, const void *s, size_t len) {
  if (!grow((void **)&d->b, &d->b_cap, d->b_len + len + 1, 1)) {
    d->failed = true;
    return UINT32_MAX;
  }
  uint32_t off = (uint32_t)d->b_len;
  memcpy(d->b + off, s, len);
  d->b_len += len;
  return off;
}

/* The events of an entity's content that libxml2 parses on its own
 * context (to check it) are not the document's. */
static struct ldoc *doc_of(void *ctx) {
  xmlParserCtxtPtr c = ctx;
  struct ldoc *d = c->_private;
  return d && d->ctxt == c && !d->failed ? d : NULL;
}

static void fail(struct ldoc *d) {
  d->failed = true;
  xmlStopParser(d->ctxt);
}

static void sax_start(void *ctx, const xmlChar *localname,
                      const xmlChar *prefix, const xmlChar *uri,
                      int n_namespaces, const xmlChar **namespaces,
                      int n_attributes, int n_defaulted,
                      const xmlChar **attributes) {
  (void)n_namespaces, (void)namespaces, (void)n_attributes, (void)n_defaulted,
      (void)attributes;
  struct ldoc *d = doc_of(ctx);
  if (!d)
    return;
  if (!grow((void **)&d->n, &d->n_cap, d->n_len + 1, sizeof *d->n))
    return fail(d);
  /* libxml2's tree names an element of an undeclared prefix
   * "prefix:local"; so does this one. */
  uint32_t name;
  if (prefix && !uri) {
    name = bytes_add(d, prefix, strlen((const char *)prefix));
    bytes_add(d, ":", 1);
  } else {
    name = bytes_add(d, "", 0);
  }
  bytes_add(d, localname, strlen((const char *)localname) + 1);
  if (d->failed)
    return fail(d);
  uint32_t i = (uint32_t)d->n_len++;
  struct lnode *n = &d->n[i], *p = &d->n[d->cur];
  *n = (struct lnode){.name = name, .parent = d->cur};
  if (p->last)
    d->n[p->last].next = i;
  else
    p->first = i;
  p->last = i;
  d->cur = i;
}

static void sax_end(void *ctx, const xmlChar *localname, const xmlChar *prefix,
                    const xmlChar *uri) {
  (void)localname, (void)prefix, (void)uri;
  struct ldoc *d = doc_of(ctx);
  if (!d || !d->cur)
    return;
  struct lnode *n = &d->n[d->cur];
  if (n->seg_first) {
    /* the runs joined, once: each byte of text is copied once at most */
    size_t total = n->text_len;
    for (uint32_t g = n->seg_first; g; g = d->s[g].next)
      total += d->s[g].len;
    if (!grow((void **)&d->b, &d->b_cap, d->b_len + total + 1, 1))
      return fail(d);
    uint32_t off = (uint32_t)d->b_len;
    memcpy(d->b + d->b_len, d->b + n->text, n->text_len);
    d->b_len += n->text_len;
    for (uint32_t g = n->seg_first; g; g = d->s[g].next) {
      memcpy(d->b + d->b_len, d->b + d->s[g].off, d->s[g].len);
      d->b_len += d->s[g].len;
    }
    n->text = off;
    n->text_len = (uint32_t)total;
    n->seg_first = n->seg_last = 0;
  }
  d->cur = n->parent;
}

static void sax_text(void *ctx, const xmlChar *s, int len) {
  struct ldoc *d = doc_of(ctx);
  if (!d || !d->cur || len <= 0)
    return;
  struct lnode *n = &d->n[d->cur];
  /* libxml2's tree refuses a text run over XML_MAX_TEXT_LENGTH. */
  size_t run = n->seg_last ? d->s[n->seg_last].len : n->text_len;
  if (run + (size_t)len > XML_MAX_TEXT_LENGTH)
    return fail(d);
  uint32_t off = bytes_add(d, s, (size_t)len);
  if (d->failed)
    return fail(d);
  if (!n->text_len) {
    n->text = off;
    n->text_len = (uint32_t)len;
    return;
  }
  if (!n->seg_first && n->text + n->text_len == off) {
    n->text_len += (uint32_t)len;
    return;
  }
  if (n->seg_last && d->s[n->seg_last].off + d->s[n->seg_last].len == off) {
    d->s[n->seg_last].len += (uint32_t)len;
    return;
  }
  /* text after a child element: one more run, joined at the end */
  if (!grow((void **)&d->s, &d->s_cap, d->s_len + 1, sizeof *d->s))
    return fail(d);
  uint32_t g = (uint32_t)d->s_len++;
  d->s[g] = (struct lseg){.off = off, .len = (uint32_t)len};
  if (n->seg_last)
    d->s[n->seg_last].next = g;
  else
    n->seg_first = g;
  n->seg_last = g;
}

/* Entity references are not expanded; like the tree's entity reference
 * nodes, they add nothing to the text. */
static void sax_reference(void *ctx, const xmlChar *name) {
  (void)ctx, (void)name;
}

/* libxml2 parses an internal entity's content once, at its first
 * reference, to check it, and keeps what a tree builder made of it as the
 * entity's children; with no children (nothing built here) it parses the
 * content again at every later reference, which costs the entity's
 * length times the references: a small answer of many references to a
 * long entity would take minutes.  An entity checked once is given a
 * stand-in child (an empty text node the entity does not own, freed after
 * the document), which spares the parses again; the reference itself
 * still adds nothing. */
static xmlEntityPtr sax_get_entity(void *ctx, const xmlChar *name) {
  xmlParserCtxtPtr c = ctx;
  xmlEntityPtr ent = xmlSAX2GetEntity(ctx, name);
  struct ldoc *d = c->_private;
  if (ent && d && ent->etype == XML_INTERNAL_GENERAL_ENTITY && ent->checked &&
      !ent->children) {
    if (!d->stand_in)
      d->stand_in = xmlNewText((const xmlChar *)"");
    ent->children = d->stand_in;
  }
  return ent;
}

/* A DOCTYPE: libxml2's SAX2 callbacks keep its declarations in a document
 * of their own (entities must be declared to be refused unexpanded rather
 * than as undeclared), made only then. */
static void sax_internal_subset(void *ctx, const xmlChar *name,
                                const xmlChar *external_id,
                                const xmlChar *system_id) {
  xmlParserCtxtPtr c = ctx;
  struct ldoc *d = c->_private;
  if (d && d->ctxt == c)
    d->dtd = true;
  if (!c->myDoc)
    xmlSAX2StartDocument(ctx);
  xmlSAX2InternalSubset(ctx, name, external_id, system_id);
}

static const int xml_options = XML_PARSE_NONET | XML_PARSE_NOERROR |
                               XML_PARSE_NOWARNING | XML_PARSE_NOCDATA;

static xmlParserCtxtPtr ctxt_new(void) {
  xmlParserCtxtPtr c = xmlNewParserCtxt();
  if (!c)
    return NULL;
  xmlSAXHandler *h = c->sax;
  xmlSAXVersion(h, 2);
  h->startDocument = NULL;
  h->endDocument = NULL;
  h->internalSubset = sax_internal_subset;
  h->startElementNs = sax_start;
  h->endElementNs = sax_end;
  h->startElement = NULL;
  h->endElement = NULL;
  h->characters = sax_text;
  h->cdataBlock = sax_text;
  h->ignorableWhitespace = sax_text;
  h->reference = sax_reference;
  h->getEntity = sax_get_entity;
  h->comment = NULL;
  h->processingInstruction = NULL;
  return c;
}

/* Parses body into t->d, node 0 the document.  False when it is not
 * well-formed XML (or memory ran out). */
static bool ldoc_parse(struct xml_tls *t, const char *body, size_t len) {
  struct ldoc *d = &t->d;
  if (!t->ctxt && !(t->ctxt = ctxt_new()))
    return false;
  xmlParserCtxtPtr c = t->ctxt;
  d->n_len = 0;
  d->s_len = 1;
  d->b_len = 0;
  d->cur = 0;
  d->failed = false;
  d->dtd = false;
  d->ctxt = c;
  if (!grow((void **)&d->n, &d->n_cap, 1, sizeof *d->n))
    return false;
  d->n[d->n_len++] = (struct lnode){0};
  bytes_add(d, "", 1);
  xmlCtxtReset(c);
  c->_private = d;
  xmlParserInputBufferPtr in =
      xmlParserInputBufferCreateMem(body, (int)len, XML_CHAR_ENCODING_NONE);
  xmlParserInputPtr s = in ? xmlNewIOInputStream(c, in, XML_CHAR_ENCODING_NONE)
                           : NULL;
  bool ok = false;
  if (!s) {
    if (in)
      xmlFreeParserInputBuffer(in);
  } else if (inputPush(c, s) < 0) {
    xmlFreeInputStream(s);
  } else {
    xmlCtxtUseOptions(c, xml_options);
    xmlParseDocument(c);
    ok = c->wellFormed && !d->failed;
  }
  if (c->myDoc) {
    xmlFreeDoc(c->myDoc);
    c->myDoc = NULL;
  }
  if (d->stand_in) {
    xmlFreeNode(d->stand_in);
    d->stand_in = NULL;
  }
  c->_private = NULL;
  d->ctxt = NULL;
  return ok;
}

/* The thread's parse state, NULL when memory ran out. */
static struct xml_tls *tls_get(void) {
  tw_ec2_xml_init();
  struct xml_tls *t = pthread_getspecific(xml_key);
  if (!t) {
    t = calloc(1, sizeof *t);
    if (!t || pthread_setspecific(xml_key, t)) {
      free(t);
      return NULL;
    }
  }
  return t;
}

/* After a parse: what was kept of an odd document is dropped. */
static void tls_done(struct xml_tls *t) {
  if (t->ctxt && (t->d.dtd || t->d.failed || !t->ctxt->wellFormed ||
                  (t->ctxt->dict && xmlDictSize(t->ctxt->dict) >
                                        XML_DICT_MAX))) {
    xmlFreeParserCtxt(t->ctxt);
    t->ctxt = NULL;
  }
  if (t->d.b_cap > XML_KEEP_BYTES) {
    free(t->d.b);
    t->d.b = NULL;
    t->d.b_cap = 0;
  }
  if (t->d.n_cap > XML_KEEP_NODES) {
    free(t->d.n);
    t->d.n = NULL;
    t->d.n_cap = 0;
  }
  if (t->d.s_cap > XML_KEEP_NODES) {
    free(t->d.s);
    t->d.s = NULL;
    t->d.s_cap = 0;
  }
}

/* ---- tree walking ------------------------------------------------------- */

/* An element of a parsed document; d NULL: none. */
typedef struct {
  const struct ldoc *d;
  uint32_t i;
} xnode;

static const xnode no_node = {NULL, 0};

static const char *xname(xnode n) { return n.d->b + n.d->n[n.i].name; }

static bool is_elem(xnode n, const char *name) {
  return n.d && (!name || !strcmp(xname(n), name));
}

static xnode first_elem(xnode parent, const char *name) {
  if (!parent.d)
    return no_node;
  for (uint32_t c = parent.d->n[parent.i].first; c; c = parent.d->n[c].next)
    if (!name || !strcmp(parent.d->b + parent.d->n[c].name, name))
      return (xnode){parent.d, c};
  return no_node;
}

static xnode next_elem(xnode n, const char *name) {
  for (uint32_t c = n.d->n[n.i].next; c; c = n.d->n[c].next)
    if (!name || !strcmp(n.d->b + n.d->n[c].name, name))
      return (xnode){n.d, c};
  return no_node;
}

#define FOR_EACH(var, parent, name)                                            \
  for (xnode var = first_elem((parent), (name)); var.d;                        \
       var = next_elem(var, (name)))

/* Follows a path of child names separated by '/': "placement/zone". */
static xnode path_elem(xnode n, const char *path) {
  char part[64];
  while (n.d && path && *path) {
    size_t len = strcspn(path, "/");
    if (len >= sizeof part)
      return no_node;
    memcpy(part, path, len);
    part[len] = '\0';
    n = first_elem(n, part);
    path += len;
    if (*path == '/')
      path++;
  }
  return n;
}

/* The text of n (its own text and CDATA; entity references are not
 * expanded), cut to size - 1 bytes and then trimmed, into buf.  Returns
 * the untrimmed length of the whole text, so the caller can tell a value
 * that did not fit. */
static size_t text_into(xnode n, char *buf, size_t size) {
  const char *s = "";
  size_t need = 0;
  if (n.d) {
    s = n.d->b + n.d->n[n.i].text;
    need = n.d->n[n.i].text_len;
  }
  size_t len = need < size - 1 ? need : size - 1;
  while (len && isspace((unsigned char)*s))
    s++, len--;
  while (len && isspace((unsigned char)s[len - 1]))
    len--;
  memmove(buf, s, len);
  buf[len] = '\0';
  return need;
}

/* The trimmed text of n, not cut: *s and its length. */
static size_t text_of(xnode n, const char **s) {
  const char *p = n.d->b + n.d->n[n.i].text;
  size_t len = n.d->n[n.i].text_len;
  while (len && isspace((unsigned char)*p))
    p++, len--;
  while (len && isspace((unsigned char)p[len - 1]))
    len--;
  *s = p;
  return len;
}

/* Reads the text at path below n into buf ("" when absent).  A value that
 * does not fit is an error naming the path: ids, tokens and tags cut short
 * would name something else. */
static enum tw_rc get(xnode n, const char *path, char *buf, size_t size,
                      struct tw_err *err) {
  buf[0] = '\0';
  xnode e = path_elem(n, path);
  if (!e.d)
    return TW_OK;
  const char *s;
  size_t l = text_of(e, &s);
  if (l >= size)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: <%s> longer than %zu bytes", path,
                      size - 1);
  memcpy(buf, s, l);
  buf[l] = '\0';
  return TW_OK;
}

/* As get(), cutting a long value: for free text (messages, reasons). */
static void get_cut(xnode n, const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  xnode e = path_elem(n, path);
  if (e.d)
    text_into(e, buf, size);
}

#define GET(n, path, field) get((n), (path), (field), sizeof(field), err)

/* An integer at path; *out untouched when absent.  Negative or malformed
 * values are errors: no EC2 count or size is negative. */
static enum tw_rc get_int(xnode n, const char *path, int64_t max, int64_t *out,
                          struct tw_err *err) {
  char buf[32];
  enum tw_rc rc = get(n, path, buf, sizeof buf, err);
  if (rc)
    return rc;
  if (!*buf)
    return TW_OK;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end || v < 0 || v > max)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: <%s> \"%s\" is not an integer in "
                      "0..%lld",
                      path, buf, (long long)max);
  *out = v;
  return TW_OK;
}

/* ---- documents ---------------------------------------------------------- */

/* Parses body into the thread's tree: *top its root element.  On TW_OK
 * and on errors alike the caller ends with tls_done(*t) when *t is set. */
static enum tw_rc parse_doc(const char *body, size_t len, struct xml_tls **t,
                            xnode *top, struct tw_err *err) {
  *t = NULL;
  *top = no_node;
  tw_ec2_xml_init();
  if (len > TW_EC2_XML_MAX_BYTES)
    return tw_err_set(err, TW_E_TOOBIG, "EC2 response: %zu bytes, limit %u",
                      len, TW_EC2_XML_MAX_BYTES);
  if (!body || len == 0)
    return tw_err_set(err, TW_E_INVALID, "EC2 response: empty body");
  if (!(*t = tls_get()))
    return tw_err_set(err, TW_E_INTERNAL, "EC2 response: out of memory");
  /* NONET: never fetch; no NOENT/DTDLOAD: entities stay unexpanded and
   * no external subset is read; NOERROR/NOWARNING: libxml2 would print
   * to stderr otherwise. */
  if (!ldoc_parse(*t, body, len))
    return tw_err_set(err, TW_E_INVALID, "EC2 response: malformed XML");
  *top = first_elem((xnode){&(*t)->d, 0}, NULL);
  if (!top->d)
    return tw_err_set(err, TW_E_INVALID, "EC2 response: no root element");
  return TW_OK;
}

/* The first error of an envelope below root r into *out; false when r is
 * no envelope or carries no code. */
static bool error_of(xnode r, struct tw_ec2_error *out) {
  memset(out, 0, sizeof *out);
  bool found = false;
  if (is_elem(r, "Response") || is_elem(r, "ErrorResponse")) {
    /* EC2: <Response><Errors><Error>; other Query APIs:
     * <ErrorResponse><Error>. */
    xnode e = path_elem(r, "Errors/Error");
    if (!e.d)
      e = first_elem(r, "Error");
    if (e.d) {
      get_cut(e, "Code", out->code, sizeof out->code);
      get_cut(e, "Message", out->message, sizeof out->message);
      found = *out->code != '\0';
    }
    get_cut(r, "RequestID", out->request_id, sizeof out->request_id);
    if (!*out->request_id)
      get_cut(r, "RequestId", out->request_id, sizeof out->request_id);
  }
  if (!found)
    memset(out, 0, sizeof *out);
  return found;
}

static enum tw_rc error_from(const char *action, long http_status,
                             const struct tw_ec2_error *e, bool found,
                             struct tw_err *err);

/* Parses body and checks that the root is one of roots (NULL-terminated;
 * any namespace or prefix; a name starting with a root also matches, as
 * Eucalyptus appends "Type").  An error envelope is turned into its
 * class.  The caller ends with tls_done(*t) when *t is set. */
static enum tw_rc load(const char *body, size_t len, const char *const *roots,
                       struct xml_tls **t, xnode *top, struct tw_err *err) {
  enum tw_rc rc = parse_doc(body, len, t, top, err);
  if (rc)
    return rc;
  const char *name = xname(*top);
  if (!strcmp(name, "Response") || !strcmp(name, "ErrorResponse")) {
    struct tw_ec2_error e;
    bool found = error_of(*top, &e);
    return error_from(roots[0], 0, &e, found, err);
  }
  const char *const *root = roots;
  while (*root && strncmp(name, *root, strlen(*root)))
    root++;
  if (!*root)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: expected <%s>, got <%.64s>", roots[0],
                      name);
  return TW_OK;
}

static enum tw_rc take_next_token(xnode top, char **next_token,
                                  struct tw_err *err) {
  if (!next_token)
    return TW_OK;
  *next_token = NULL;
  xnode e = first_elem(top, "nextToken");
  if (!e.d)
    return TW_OK;
  /* Tokens are opaque and may be long; bound them all the same. */
  char buf[4096];
  size_t need = text_into(e, buf, sizeof buf);
  if (need >= sizeof buf)
    return tw_err_set(err, TW_E_TOOBIG, "EC2 response: <nextToken> too long");
  if (*buf)
    *next_token = tw_strdup(buf);
  return TW_OK;
}

/* ---- errors ------------------------------------------------------------- */

bool tw_ec2_parse_error(const char *body, size_t len,
                        struct tw_ec2_error *out) {
  memset(out, 0, sizeof *out);
  struct xml_tls *t = NULL;
  xnode r;
  bool found = false;
  if (len <= TW_EC2_XML_MAX_BYTES &&
      parse_doc(body, len, &t, &r, NULL) == TW_OK)
    found = error_of(r, out);
  if (t)
    tls_done(t);
  return found;
}

struct code_class {
  const char *code;
  enum tw_rc rc;
};

/* EC2's error codes (API reference, "Error codes for the Amazon EC2 API")
 * and the class each means to the core.  Codes not listed fall back on
 * the HTTP status. */
static const struct code_class code_classes[] = {
    /* no capacity for this offer now: the fallback strategy moves on */
    {"InsufficientInstanceCapacity", TW_E_CAPACITY},
    {"InsufficientCapacity", TW_E_CAPACITY},
    {"InsufficientHostCapacity", TW_E_CAPACITY},
    {"InsufficientReservedInstanceCapacity", TW_E_CAPACITY},
    {"SpotMaxPriceTooLow", TW_E_CAPACITY},
    /* "The requested configuration is currently not supported": an
     * instance type not offered in that zone. */
    {"Unsupported", TW_E_CAPACITY},
    /* throttled or a server fault: the http helper retried already */
    {"RequestLimitExceeded", TW_E_RETRYABLE},
    {"InternalError", TW_E_RETRYABLE},
    {"InternalFailure", TW_E_RETRYABLE},
    {"ServiceUnavailable", TW_E_RETRYABLE},
    {"Unavailable", TW_E_RETRYABLE},
    /* account limits */
    {"VcpuLimitExceeded", TW_E_QUOTA},
    {"InstanceLimitExceeded", TW_E_QUOTA},
    {"MaxSpotInstanceCountExceeded", TW_E_QUOTA},
    /* credentials */
    {"AuthFailure", TW_E_AUTH},
    {"SignatureDoesNotMatch", TW_E_AUTH},
    {"MissingAuthenticationToken", TW_E_AUTH},
    {"IncompleteSignature", TW_E_AUTH},
    {"RequestExpired", TW_E_AUTH},
    {"UnauthorizedOperation", TW_E_AUTH},
    /* describe/terminate of an unknown id */
    {"InvalidInstanceID.NotFound", TW_E_NOTFOUND},
    /* the client token was used before with other parameters */
    {"IdempotentParameterMismatch", TW_E_CONFLICT},
};

enum tw_rc tw_ec2_error_class(const char *code, long http_status) {
  for (size_t i = 0; code && i < sizeof code_classes / sizeof *code_classes;
       i++)
    if (!strcmp(code, code_classes[i].code))
      return code_classes[i].rc;
  if (http_status >= 500 || http_status == 429)
    return TW_E_RETRYABLE;
  if (http_status == 401 || http_status == 403)
    return TW_E_AUTH;
  return TW_E_INVALID;
}

enum tw_rc tw_ec2_response_error(const char *action, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err) {
  struct tw_ec2_error e;
  bool found = tw_ec2_parse_error(body, len, &e);
  return error_from(action, http_status, &e, found, err);
}

static enum tw_rc error_from(const char *action, long http_status,
                             const struct tw_ec2_error *ep, bool found,
                             struct tw_err *err) {
  const struct tw_ec2_error e = *ep;
  if (found) {
    enum tw_rc rc = tw_ec2_error_class(e.code, http_status);
    if (err && err->rc == TW_OK)
      tw_err_detail(err, e.code);
    return tw_err_set(err, rc, "%s: %s: %s", action, e.code,
                      *e.message ? e.message : "(no message)");
  }
  enum tw_rc rc = tw_ec2_error_class(NULL, http_status);
  if (err && err->rc == TW_OK) {
    char detail[32];
    snprintf(detail, sizeof detail, "HTTP %ld", http_status);
    tw_err_detail(err, detail);
  }
  return tw_err_set(err, rc, "%s: HTTP %ld without an EC2 error document",
                    action, http_status);
}

/* ---- instances ---------------------------------------------------------- */

static enum tw_arch arch_parse(const char *s) {
  if (!strcmp(s, "x86_64"))
    return TW_ARCH_X86_64;
  if (!strcmp(s, "arm64"))
    return TW_ARCH_ARM64;
  /* i386, x86_64_mac, arm64_mac: nothing a job spec can ask for. */
  return TW_ARCH_ANY;
}

/* EC2's instanceState/code: the low byte is the state (the high byte is
 * internal and to be ignored, says the API reference). */
static enum tw_instance_state state_from_code(int64_t code) {
  switch (code & 0xff) {
  case 0:
    return TW_INST_PENDING;
  case 16:
    return TW_INST_RUNNING;
  case 32:
    return TW_INST_SHUTTING_DOWN;
  case 48:
    return TW_INST_TERMINATED;
  case 64:
    return TW_INST_STOPPING;
  case 80:
    return TW_INST_STOPPED;
  }
  return TW_INST_UNKNOWN;
}

/* Reads <name>/<code> of a state element into state and its spelling. */
static enum tw_rc parse_state(xnode st, enum tw_instance_state *state,
                              char *spelled, size_t spelled_size,
                              struct tw_err *err) {
  char name[32];
  int64_t code = -1;
  enum tw_rc rc;
  *state = TW_INST_UNKNOWN;
  if (!st.d)
    return TW_OK;
  if ((rc = get(st, "name", name, sizeof name, err)) ||
      (rc = get_int(st, "code", 0xffff, &code, err)))
    return rc;
  *state = tw_instance_state_parse(name);
  if (*state == TW_INST_UNKNOWN && code >= 0)
    *state = state_from_code(code);
  if (spelled)
    tw_model_set(spelled, spelled_size,
                 *name ? name : tw_instance_state_str(*state));
  return TW_OK;
}

static enum tw_rc parse_tags(xnode inst, struct tw_instance *out,
                             struct tw_err *err) {
  FOR_EACH(item, first_elem(inst, "tagSet"), "item") {
    char key[128];
    enum tw_rc rc;
    get_cut(item, "key", key, sizeof key);
    char *dst = NULL;
    size_t size = 0;
    if (!strcmp(key, TW_TAG_JOB))
      dst = out->job_id, size = sizeof out->job_id;
    else if (!strcmp(key, TW_TAG_ATTEMPT))
      dst = out->attempt_id, size = sizeof out->attempt_id;
    else if (!strcmp(key, TW_TAG_TENANT))
      dst = out->tenant, size = sizeof out->tenant;
    else
      continue;
    if ((rc = get(item, "value", dst, size, err)))
      return rc;
  }
  return TW_OK;
}

/* The time in a state transition reason, "User initiated (2026-12-01
 * 10:00:00 GMT)" or "Service initiated (...)": when the instance left
 * running.  0 when the text carries none. */
static int64_t transition_ms(const char *reason) {
  const char *p = strchr(reason, '(');
  int64_t ms = 0;
  if (!p || strlen(p) < 21 || strncmp(p + 20, " GMT)", 5))
    return 0;
  char iso[32];
  snprintf(iso, sizeof iso, "%.10sT%.8sZ", p + 1, p + 12);
  return tw_time_parse_rfc3339(iso, &ms) ? 0 : ms;
}

static enum tw_rc parse_instance(xnode n, struct tw_instance *out,
                                 struct tw_err *err) {
  char buf[64];
  enum tw_rc rc;
  if ((rc = GET(n, "instanceId", out->id)))
    return rc;
  if (!*out->id)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance without <instanceId>");
  if ((rc = GET(n, "instanceType", out->instance_type)) ||
      (rc = GET(n, "placement/availabilityZone", out->zone)) ||
      (rc = GET(n, "clientToken", out->client_token)) ||
      (rc = GET(n, "privateIpAddress", out->private_ip)) ||
      (rc = GET(n, "ipAddress", out->public_ip)) ||
      (rc =
           parse_state(first_elem(n, "instanceState"), &out->state,
                       out->provider_state, sizeof out->provider_state, err)) ||
      (rc = parse_tags(n, out, err)))
    return rc;
  char transition[TW_MODEL_TEXT_MAX];
  get_cut(n, "reason", transition, sizeof transition);
  get_cut(n, "stateReason/code", out->state_reason, sizeof out->state_reason);
  if (!*out->state_reason)
    snprintf(out->state_reason, sizeof out->state_reason, "%s", transition);
  get_cut(n, "architecture", buf, sizeof buf);
  out->arch = arch_parse(buf);
  get_cut(n, "instanceLifecycle", buf, sizeof buf);
  out->market = !strcmp(buf, "spot") ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
  get_cut(n, "launchTime", buf, sizeof buf);
  if (*buf && tw_time_parse_rfc3339(buf, &out->launched_ms))
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance %s: <launchTime> \"%s\" is "
                      "not RFC 3339",
                      out->id, buf);
  /* billing runs from LaunchTime (the instance entered running then) to
   * the state transition that took it out of running */
  if (out->state != TW_INST_PENDING && out->state != TW_INST_UNKNOWN)
    out->running_ms = out->launched_ms;
  if (out->state == TW_INST_SHUTTING_DOWN || out->state == TW_INST_TERMINATED ||
      out->state == TW_INST_STOPPING || out->state == TW_INST_STOPPED)
    out->ended_ms = transition_ms(transition);
  return TW_OK;
}

static enum tw_rc parse_instances_set(xnode set,
                                      struct tw_instance_list *out,
                                      struct tw_err *err) {
  FOR_EACH(item, set, "item") {
    enum tw_rc rc = parse_instance(item, tw_instance_list_add(out), err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_ec2_parse_instances(const char *body, size_t len,
                                  struct tw_instance_list *out,
                                  char **next_token, struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeInstancesResponse",
                                      "RunInstancesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  if ((rc = parse_instances_set(first_elem(top, "instancesSet"), out, err)))
    goto out;
  FOR_EACH(res, first_elem(top, "reservationSet"), "item") {
    if ((rc = parse_instances_set(first_elem(res, "instancesSet"), out, err)))
      goto out;
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}

enum tw_rc tw_ec2_parse_state_changes(const char *body, size_t len,
                                      struct tw_ec2_state_change_list *out,
                                      struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  /* Terminate-, Start- and StopInstancesResponse share the shape. */
  static const char *const roots[] = {"TerminateInstancesResponse",
                                      "StartInstancesResponse",
                                      "StopInstancesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  FOR_EACH(item, first_elem(top, "instancesSet"), "item") {
    struct tw_ec2_state_change *c = tw_ec2_state_change_list_add(out);
    if ((rc = GET(item, "instanceId", c->id)))
      goto out;
    if (!*c->id) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: state change without <instanceId>");
      goto out;
    }
    xnode cur = first_elem(item, "currentState");
    if (!cur.d)
      cur = first_elem(item, "shutdownState");
    if ((rc = parse_state(cur, &c->current, NULL, 0, err)) ||
        (rc = parse_state(first_elem(item, "previousState"), &c->previous, NULL,
                          0, err)))
      goto out;
  }
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}

/* ---- spot prices -------------------------------------------------------- */

enum tw_rc tw_ec2_parse_spot_prices(const char *body, size_t len,
                                    struct tw_ec2_spot_price_list *out,
                                    char **next_token, struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeSpotPriceHistoryResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  FOR_EACH(item, first_elem(top, "spotPriceHistorySet"), "item") {
    struct tw_ec2_spot_price *s = tw_ec2_spot_price_list_add(out);
    char price[48], ts[48];
    if ((rc = GET(item, "instanceType", s->instance_type)) ||
        (rc = GET(item, "availabilityZone", s->zone)) ||
        (rc = GET(item, "productDescription", s->product)) ||
        (rc = GET(item, "spotPrice", price)) ||
        (rc = GET(item, "timestamp", ts)))
      goto out;
    if (!*s->instance_type || !*price) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot price without <instanceType> or "
                      "<spotPrice>");
      goto out;
    }
    if ((rc = tw_provider_usd_to_uusd(price, &s->price_uusd_per_hour, err)))
      goto out;
    if (*ts && tw_time_parse_rfc3339(ts, &s->timestamp_ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot price <timestamp> \"%s\" is not "
                      "RFC 3339",
                      ts);
      goto out;
    }
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}

/* ---- spot requests ------------------------------------------------------ */

enum tw_rc tw_ec2_parse_spot_requests(const char *body, size_t len,
                                      struct tw_ec2_spot_request_list *out,
                                      char **next_token, struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeSpotInstanceRequestsResponse",
                                      NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  FOR_EACH(item, first_elem(top, "spotInstanceRequestSet"), "item") {
    struct tw_ec2_spot_request *r = tw_ec2_spot_request_list_add(out);
    char ts[48];
    if ((rc = GET(item, "spotInstanceRequestId", r->id)) ||
        (rc = GET(item, "instanceId", r->instance_id)) ||
        (rc = GET(item, "state", r->state)) ||
        (rc = GET(item, "status/code", r->code)) ||
        (rc = GET(item, "status/updateTime", ts)) ||
        (rc = GET(item, "instanceInterruptionBehavior", r->behavior)))
      goto out;
    if (!*r->id) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot instance request without "
                      "<spotInstanceRequestId>");
      goto out;
    }
    if (*ts && tw_time_parse_rfc3339(ts, &r->updated_ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot request %s <status><updateTime> "
                      "\"%s\" is not RFC 3339",
                      r->id, ts);
      goto out;
    }
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}

/* ---- instance types ----------------------------------------------------- */

void tw_ec2_accel_name(const char *name, int64_t memory_mib, char *out,
                       size_t out_size) {
  char n[64];
  size_t j = 0;
  for (size_t i = 0; name && name[i] && j + 1 < sizeof n; i++)
    if (!isspace((unsigned char)name[i]))
      n[j++] = name[i];
  n[j] = '\0';
  /* The spec names the large-memory variants apart (as SkyPilot's
   * catalogs do); EC2 calls both "A100" and tells them by memory. */
  if (!strcmp(n, "A100") && memory_mib >= 80 * 1024)
    snprintf(out, out_size, "A100-80GB");
  else if (!strcmp(n, "V100") && memory_mib >= 32 * 1024)
    snprintf(out, out_size, "V100-32GB");
  else
    snprintf(out, out_size, "%s", n);
}

/* The first device of an accelerator list (gpuInfo/gpus, neuronInfo/
 * neuronDevices, inferenceAcceleratorInfo/accelerators). */
static enum tw_rc parse_accel(xnode list,
                              struct tw_ec2_instance_type *t,
                              struct tw_err *err) {
  xnode dev = first_elem(list, "item");
  if (!dev.d || t->accel_count)
    return TW_OK;
  char name[64];
  int64_t count = 0, mem = 0;
  enum tw_rc rc;
  get_cut(dev, "name", name, sizeof name);
  if ((rc = get_int(dev, "count", 1024, &count, err)) ||
      (rc = get_int(dev, "memoryInfo/sizeInMiB", INT64_C(1) << 40, &mem, err)))
    return rc;
  if (!*name || count < 1)
    return TW_OK;
  tw_ec2_accel_name(name, mem, t->accel_name, sizeof t->accel_name);
  t->accel_count = (int)count;
  t->accel_memory_mib = mem;
  return TW_OK;
}

static enum tw_rc parse_type_aws(xnode item,
                                 struct tw_ec2_instance_type *t,
                                 struct tw_err *err) {
  int64_t v = 0;
  enum tw_rc rc;
  if ((rc = GET(item, "instanceType", t->name)) ||
      (rc = get_int(item, "vCpuInfo/defaultVCpus", 1 << 20, &v, err)))
    return rc;
  t->vcpus = (int)v;
  if ((rc = get_int(item, "memoryInfo/sizeInMiB", INT64_C(1) << 40,
                    &t->memory_mib, err)))
    return rc;
  FOR_EACH(a, path_elem(item, "processorInfo/supportedArchitectures"), "item") {
    char buf[32];
    get_cut(a, NULL, buf, sizeof buf);
    enum tw_arch arch = arch_parse(buf);
    /* A type listing i386 and x86_64 runs 64-bit x86 jobs. */
    if (arch != TW_ARCH_ANY && t->arch != TW_ARCH_X86_64)
      t->arch = arch;
  }
  if ((rc = parse_accel(path_elem(item, "gpuInfo/gpus"), t, err)) ||
      (rc = parse_accel(path_elem(item, "neuronInfo/neuronDevices"), t, err)) ||
      (rc = parse_accel(path_elem(item, "inferenceAcceleratorInfo/"
                                        "accelerators"),
                        t, err)))
    return rc;
  xnode classes = first_elem(item, "supportedUsageClasses");
  if (!classes.d) {
    t->spot = t->on_demand = true;
  } else {
    FOR_EACH(c, classes, "item") {
      char buf[32];
      get_cut(c, NULL, buf, sizeof buf);
      if (!strcmp(buf, "spot"))
        t->spot = true;
      else if (!strcmp(buf, "on-demand"))
        t->on_demand = true;
    }
  }
  return TW_OK;
}

/* Eucalyptus: <item><name>m1.small</name><cpu>1</cpu><disk>5</disk>
 * <memory>256</memory> (MiB). */
static enum tw_rc parse_type_euca(xnode item,
                                  struct tw_ec2_instance_type *t,
                                  struct tw_err *err) {
  int64_t v = 0;
  enum tw_rc rc;
  if ((rc = GET(item, "name", t->name)) ||
      (rc = get_int(item, "cpu", 1 << 20, &v, err)) ||
      (rc = get_int(item, "memory", INT64_C(1) << 40, &t->memory_mib, err)))
    return rc;
  t->vcpus = (int)v;
  t->spot = false; /* Eucalyptus has no spot market */
  t->on_demand = true;
  return TW_OK;
}

enum tw_rc tw_ec2_parse_instance_types(const char *body, size_t len,
                                       struct tw_ec2_instance_type_list *out,
                                       char **next_token, struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeInstanceTypesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  FOR_EACH(item, first_elem(top, "instanceTypeSet"), "item") {
    if ((rc = parse_type_aws(item, tw_ec2_instance_type_list_add(out), err)))
      goto out;
  }
  FOR_EACH(item, first_elem(top, "instanceTypeDetails"), "item") {
    if ((rc = parse_type_euca(item, tw_ec2_instance_type_list_add(out), err)))
      goto out;
  }
  for (size_t i = first; i < out->n; i++)
    if (!*out->items[i].name) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance type without a name");
      goto out;
    }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}

/* ---- zones -------------------------------------------------------------- */

enum tw_rc tw_ec2_parse_zones(const char *body, size_t len,
                              struct tw_ec2_zone_list *out,
                              struct tw_err *err) {
  struct xml_tls *t;
  xnode top;
  size_t first = out->n;
  static const char *const roots[] = {"DescribeAvailabilityZonesResponse",
                                      NULL};
  enum tw_rc rc = load(body, len, roots, &t, &top, err);
  if (rc)
    goto out;
  FOR_EACH(item, first_elem(top, "availabilityZoneInfo"), "item") {
    struct tw_ec2_zone *z = tw_ec2_zone_list_add(out);
    if ((rc = GET(item, "zoneName", z->name)) ||
        (rc = GET(item, "zoneId", z->zone_id)) ||
        (rc = GET(item, "regionName", z->region)) ||
        (rc = GET(item, "zoneState", z->state)) ||
        (rc = GET(item, "zoneType", z->zone_type)))
      goto out;
    if (!*z->name) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: zone without <zoneName>");
      goto out;
    }
  }
out:
  if (rc)
    out->n = first;
  if (t)
    tls_done(t);
  return rc;
}
