/* params.c - see params.h. */
#include "tests/fakecloud/params.h"

#include <stdlib.h>
#include <string.h>

#include "broker/base/hex.h"
#include "broker/base/mem.h"

void fc_params_init(struct fc_params *p) {
  p->v = NULL;
  p->n = 0;
}

void fc_params_release(struct fc_params *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n; i++) {
    free(p->v[i].key);
    free(p->v[i].value);
  }
  free(p->v);
  p->v = NULL;
  p->n = 0;
}

char *fc_url_decode(const char *s, size_t len, bool plus_is_space,
                    size_t *out_len) {
  char *out = tw_malloc(len + 1);
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == '%') {
      if (len - i < 3) {
        free(out);
        return NULL;
      }
      int hi = tw_hexval((unsigned char)s[i + 1]),
          lo = tw_hexval((unsigned char)s[i + 2]);
      if (hi < 0 || lo < 0) {
        free(out);
        return NULL;
      }
      c = (char)(hi * 16 + lo);
      i += 2;
      if (c == '\0') {
        free(out);
        return NULL;
      }
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    } else if (c == '\0') {
      free(out);
      return NULL;
    }
    out[o++] = c;
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  return out;
}

bool fc_utf8_valid(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    size_t n;
    unsigned min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, min = 0x10000, c &= 0x07;
    } else {
      return false;
    }
    if (len - i - 1 < n)
      return false;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return false;
      c = (c << 6) | (s[i + k] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

enum tw_rc fc_params_parse(struct fc_params *p, const char *s, size_t len,
                           struct tw_err *err) {
  size_t i = 0;
  while (i < len) {
    size_t end = i;
    while (end < len && s[end] != '&')
      end++;
    if (end > i) { /* empty segments ("a=1&&b=2") are skipped, as AWS does */
      size_t eq = i;
      while (eq < end && s[eq] != '=')
        eq++;
      size_t klen, vlen;
      char *key = fc_url_decode(s + i, eq - i, true, &klen);
      char *val = eq < end
                      ? fc_url_decode(s + eq + 1, end - eq - 1, true, &vlen)
                      : (vlen = 0, tw_strdup(""));
      if (!key || !val) {
        free(key);
        free(val);
        tw_err_detail(err, "MalformedQueryString");
        return tw_err_set(err, TW_E_INVALID,
                          "The query string contains a malformed escape "
                          "sequence or a NUL byte.");
      }
      if (!fc_utf8_valid(key, klen) || !fc_utf8_valid(val, vlen)) {
        free(key);
        free(val);
        tw_err_detail(err, "InvalidCharacter");
        return tw_err_set(err, TW_E_INVALID,
                          "The request contains a character that is not "
                          "valid UTF-8.");
      }
      if (klen == 0) {
        free(key);
        free(val);
        tw_err_detail(err, "MalformedQueryString");
        return tw_err_set(err, TW_E_INVALID,
                          "The query string contains a parameter with an "
                          "empty name.");
      }
      if (klen > FC_PARAM_KEY_MAX || vlen > FC_PARAM_VALUE_MAX ||
          p->n >= FC_PARAMS_MAX) {
        free(key);
        free(val);
        tw_err_detail(err, "RequestEntityTooLarge");
        return tw_err_set(err, TW_E_TOOBIG,
                          "The request has too many or too large "
                          "parameters (limits: %d pairs, %d-byte names, "
                          "%d-byte values).",
                          FC_PARAMS_MAX, FC_PARAM_KEY_MAX, FC_PARAM_VALUE_MAX);
      }
      if (fc_params_get(p, key)) {
        tw_err_detail(err, "InvalidParameterValue");
        tw_err_set(err, TW_E_INVALID,
                   "The parameter %.64s is specified more than once.", key);
        free(key);
        free(val);
        return TW_E_INVALID;
      }
      if ((p->n & (p->n - 1)) == 0) /* grow at powers of two */
        p->v = tw_realloc(p->v, (p->n ? p->n * 2 : 8) * sizeof *p->v);
      p->v[p->n].key = key;
      p->v[p->n].value = val;
      p->n++;
    }
    i = end + 1;
  }
  return TW_OK;
}

const char *fc_params_get(const struct fc_params *p, const char *key) {
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].key, key))
      return p->v[i].value;
  return NULL;
}

/* Parses a list index: decimal, no sign, no leading zero, 1..MAX. */
static int parse_index(const char *s, size_t len) {
  if (len == 0 || len > 4 || s[0] == '0')
    return -1;
  int v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v <= FC_LIST_INDEX_MAX ? v : -1;
}

size_t fc_params_indexes(const struct fc_params *p, const char *prefix,
                         int *idx, size_t max, const char **bad_key) {
  size_t plen = strlen(prefix), found = 0, stored = 0;
  if (bad_key)
    *bad_key = NULL;
  for (size_t i = 0; i < p->n; i++) {
    const char *k = p->v[i].key;
    if (strncmp(k, prefix, plen) != 0 || k[plen] != '.')
      continue;
    const char *num = k + plen + 1;
    size_t nlen = strcspn(num, ".");
    int n = parse_index(num, nlen);
    if (n < 0) {
      if (bad_key && !*bad_key)
        *bad_key = k;
      continue;
    }
    bool dup = false;
    for (size_t j = 0; j < stored; j++)
      if (idx[j] == n)
        dup = true;
    if (dup)
      continue;
    found++;
    if (stored < max) {
      /* insertion keeps idx sorted */
      size_t j = stored++;
      while (j > 0 && idx[j - 1] > n) {
        idx[j] = idx[j - 1];
        j--;
      }
      idx[j] = n;
    }
  }
  return found;
}

const char *fc_params_unknown(const struct fc_params *p,
                              const char *const *allowed) {
  for (size_t i = 0; i < p->n; i++) {
    const char *k = p->v[i].key;
    size_t top = strcspn(k, ".");
    bool ok = false;
    for (const char *const *a = allowed; *a && !ok; a++)
      ok = strlen(*a) == top && !strncmp(*a, k, top);
    if (!ok)
      return k;
  }
  return NULL;
}
