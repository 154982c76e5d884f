/* params.h - decoding of query strings and form bodies into parameters.
 *
 * The AWS Query protocol (EC2) and Alibaba's RPC protocol carry every
 * argument as a `key=value` pair, percent-encoded, in the query string of a
 * GET or in an application/x-www-form-urlencoded POST body.  This module
 * decodes them, bounded, and offers the lookups that EC2's flattened lists
 * (`InstanceId.1`, `Filter.2.Value.1`) need.  It holds no server state, so
 * the fuzz target tests/fuzz/fuzz_fakecloud_req.c drives it directly. */
#ifndef TW_TESTS_FAKECLOUD_PARAMS_H
#define TW_TESTS_FAKECLOUD_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/err.h"

#define FC_PARAMS_MAX 1000       /* pairs in one request */
#define FC_PARAM_KEY_MAX 256     /* bytes of a decoded key */
#define FC_PARAM_VALUE_MAX 65536 /* bytes of a decoded value */
#define FC_LIST_INDEX_MAX 1000   /* largest N accepted in `Name.N` */

struct fc_param {
  char *key;   /* decoded, NUL-terminated, owned */
  char *value; /* decoded, NUL-terminated, owned */
};

struct fc_params {
  struct fc_param *v;
  size_t n;
};

void fc_params_init(struct fc_params *p);
void fc_params_release(struct fc_params *p);

/* Decodes `a=1&b=%20x+y` (len bytes, not NUL-terminated) and appends the
 * pairs to p.  '+' decodes to a space, as in HTML forms.  A key seen twice
 * is an error, as is a bad escape, a NUL byte, invalid UTF-8, an empty key
 * or a size limit above.  Errors: TW_E_INVALID with err->detail
 * "MalformedQueryString" or "InvalidCharacter", TW_E_TOOBIG with
 * "RequestEntityTooLarge"; p keeps the pairs decoded before the error. */
enum tw_rc fc_params_parse(struct fc_params *p, const char *s, size_t len,
                           struct tw_err *err);

/* The value of key, or NULL.  Borrowed from p. */
const char *fc_params_get(const struct fc_params *p, const char *key);

/* The distinct indexes N of `prefix.N` and `prefix.N.*` keys, ascending,
 * into idx (at most max).  Returns how many were found (which may exceed
 * max; only max are stored).  An index that is not a positive decimal
 * without leading zeros, or above FC_LIST_INDEX_MAX, is reported through
 * *bad_key (borrowed, the first such key) when bad_key is not NULL. */
size_t fc_params_indexes(const struct fc_params *p, const char *prefix,
                         int *idx, size_t max, const char **bad_key);

/* The first key whose top-level name (the text before the first '.') is
 * not in allowed (NULL-terminated), or NULL when all are known. */
const char *fc_params_unknown(const struct fc_params *p,
                              const char *const *allowed);

/* Percent-decodes s[0..len) into a new NUL-terminated string (free()).
 * plus_is_space selects form decoding.  Returns NULL on a malformed escape
 * or an encoded NUL. */
char *fc_url_decode(const char *s, size_t len, bool plus_is_space,
                    size_t *out_len);

/* True when s[0..len) is valid UTF-8 without overlong forms. */
bool fc_utf8_valid(const char *s, size_t len);

#endif
