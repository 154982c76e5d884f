/* node.h - one document tree for YAML and JSON input.
 *
 * Job specs and configs arrive as YAML or JSON; both front-ends build the
 * same tree, with the line and column of every node, so validation is
 * written once and its errors can point into the user's file.  Parsing is
 * bounded: depth, node count and aliases (refused: no "billion laughs"). */
#ifndef TW_BROKER_NODE_H
#define TW_BROKER_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

enum tw_node_kind { TW_NODE_NULL, TW_NODE_SCALAR, TW_NODE_MAP, TW_NODE_SEQ };

struct tw_node {
  enum tw_node_kind kind;
  int line, col;          /* 1-based position in the source */
  char *str;              /* SCALAR: its text (owned) */
  bool quoted;            /* SCALAR: was a quoted string (JSON strings too) */
  size_t n;               /* MAP and SEQ: number of children */
  char **keys;            /* MAP: n keys (owned) */
  struct tw_node **items; /* MAP values / SEQ items (owned) */
};

#define TW_NODE_MAX_DEPTH 64
#define TW_NODE_MAX_NODES 100000

/* Parse len bytes of YAML (a single document) or strict JSON.  On success
 * *out is an owned tree (tw_node_free).  Errors are TW_E_INVALID with the
 * line, column and the parser's reason. */
enum tw_rc tw_node_parse_yaml(const char *text, size_t len,
                              struct tw_node **out, struct tw_err *err);
enum tw_rc tw_node_parse_json(const char *text, size_t len,
                              struct tw_node **out, struct tw_err *err);

void tw_node_free(struct tw_node *n);

/* MAP lookup; NULL when absent or when m is not a map. */
struct tw_node *tw_node_get(const struct tw_node *m, const char *key);

/* "mapping", "sequence", "string", "number", "boolean", "null". */
const char *tw_node_type_name(const struct tw_node *n);

/* Scalar conversions.  Each returns false when the node is not a plain
 * scalar of that type (a quoted "8" is a string, not a number). */
bool tw_node_as_int(const struct tw_node *n, int64_t *out);
bool tw_node_as_bool(const struct tw_node *n, bool *out);
bool tw_node_is_string(const struct tw_node *n);

/* Appends n as compact JSON to b (scalars: plain ints, bools and null stay
 * bare, everything else becomes a JSON string). */
void tw_node_to_json(const struct tw_node *n, struct tw_buf *b);

/* Levenshtein distance, for "did you mean" suggestions. */
size_t tw_edit_distance(const char *a, const char *b);
/* The candidate nearest to word (NULL-terminated list), or NULL when none
 * is within a third of the word's length (at least 2 edits). */
const char *tw_closest(const char *word, const char *const *candidates);

/* The member path ("resources.cpus", "env[2]") of the value at byte pos
 * of a JSON text ("" at the top), into out: what an error jansson reports
 * by position names as a field. */
void tw_json_path_at(const char *text, size_t len, size_t pos, char *out,
                     size_t cap);

#endif
