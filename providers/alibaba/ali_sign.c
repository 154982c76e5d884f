/* ali_sign.c - see ali_sign.h. */
#include "providers/alibaba/ali_sign.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

void tw_ali_encode(struct tw_buf *out, const char *s, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      tw_buf_addc(out, (char)c);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      tw_buf_add(out, e, 3);
    }
  }
}

static void enc_str(struct tw_buf *out, const char *s) {
  tw_ali_encode(out, s ? s : "", s ? strlen(s) : 0);
}

static int pair_cmp(const void *x, const void *y) {
  const struct tw_ali_pair *a = *(const struct tw_ali_pair *const *)x;
  const struct tw_ali_pair *b = *(const struct tw_ali_pair *const *)y;
  int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
  return c ? c : strcmp(a->value ? a->value : "", b->value ? b->value : "");
}

void tw_ali_canonical_query(struct tw_buf *out, const struct tw_ali_pair *p,
                            size_t n, const char *skip) {
  if (!n)
    return;
  /* Sort pointers: the caller's array stays in the order it was sent. */
  const struct tw_ali_pair **v = tw_calloc(n, sizeof *v);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!skip || !p[i].name || strcmp(p[i].name, skip))
      v[m++] = &p[i];
  qsort(v, m, sizeof *v, pair_cmp);
  for (size_t i = 0; i < m; i++) {
    if (i)
      tw_buf_addc(out, '&');
    enc_str(out, v[i]->name);
    tw_buf_addc(out, '=');
    enc_str(out, v[i]->value);
  }
  free(v);
}

enum tw_rc tw_ali_rpc_sign(const char *method, const struct tw_ali_pair *p,
                           size_t n, const char *secret, char sig_out[32],
                           char **string_to_sign, struct tw_err *err) {
  if (string_to_sign)
    *string_to_sign = NULL;
  sig_out[0] = '\0';
  if (!method || !*method || !secret)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba signature: method and secret are required");
  struct tw_buf canon, sts, key;
  tw_buf_init(&canon);
  tw_buf_init(&sts);
  tw_buf_init(&key);
  tw_ali_canonical_query(&canon, p, n, "Signature");
  tw_buf_adds(&sts, method);
  tw_buf_adds(&sts, "&%2F&");
  tw_ali_encode(&sts, canon.data ? canon.data : "", canon.len);
  /* The key is the secret with '&' appended: the legacy scheme reserved
   * the part after it for a token secret that was never used. */
  tw_buf_adds(&key, secret);
  tw_buf_addc(&key, '&');
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  HMAC(EVP_sha1(), key.data, (int)key.len, (const unsigned char *)sts.data,
       sts.len, md, &md_len);
  EVP_EncodeBlock((unsigned char *)sig_out, md, (int)md_len);
  OPENSSL_cleanse(key.data, key.len);
  if (string_to_sign)
    *string_to_sign = tw_buf_detach(&sts);
  tw_buf_release(&sts);
  tw_buf_release(&canon);
  tw_buf_release(&key);
  return TW_OK;
}

void tw_ali_sha256_hex(const void *data, size_t len, char out[65]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data ? data : "", len, md, &n, EVP_sha256(), NULL);
  for (unsigned i = 0; i < 32; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[64] = '\0';
}

bool tw_ali_equal(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la != lb)
    return false;
  return CRYPTO_memcmp(a, b, la) == 0;
}

void tw_ali_acs3_result_release(struct tw_ali_acs3_result *r) {
  free(r->canonical_request);
  free(r->string_to_sign);
  free(r->signed_headers);
  memset(r, 0, sizeof *r);
}

/* A header value as canonicalized: leading and trailing spaces dropped. */
static void trimmed(const char *v, const char **s, size_t *n) {
  v = v ? v : "";
  while (*v == ' ' || *v == '\t')
    v++;
  size_t l = strlen(v);
  while (l && (v[l - 1] == ' ' || v[l - 1] == '\t'))
    l--;
  *s = v;
  *n = l;
}

static bool default_signed(const char *name) {
  return !strcasecmp(name, "host") || !strcasecmp(name, "content-type") ||
         !strncasecmp(name, "x-acs-", 6);
}

static int str_cmp(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

enum tw_rc tw_ali_acs3_sign(const struct tw_ali_acs3_request *r,
                            const char *secret, struct tw_ali_acs3_result *out,
                            struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!r || !r->method || !secret)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba ACS3 signature: method and secret are "
                      "required");
  /* The names to sign, lower case and sorted. */
  char **names = NULL;
  size_t n_names = 0;
  enum tw_rc rc = TW_OK;
  if (r->signed_headers) {
    const char *s = r->signed_headers;
    while (*s) {
      size_t l = strcspn(s, ";");
      if (l) {
        names = tw_realloc(names, (n_names + 1) * sizeof *names);
        char *nm = tw_strndup(s, l);
        for (char *c = nm; *c; c++)
          *c = (char)tolower((unsigned char)*c);
        names[n_names++] = nm;
      }
      s += l;
      if (*s == ';')
        s++;
    }
  } else {
    for (size_t i = 0; i < r->n_headers; i++) {
      if (!r->headers[i].name || !default_signed(r->headers[i].name))
        continue;
      char *nm = tw_strdup(r->headers[i].name);
      for (char *c = nm; *c; c++)
        *c = (char)tolower((unsigned char)*c);
      bool dup = false;
      for (size_t k = 0; k < n_names && !dup; k++)
        dup = !strcmp(names[k], nm);
      if (dup) {
        free(nm);
        continue;
      }
      names = tw_realloc(names, (n_names + 1) * sizeof *names);
      names[n_names++] = nm;
    }
  }
  if (n_names)
    qsort(names, n_names, sizeof *names, str_cmp);

  struct tw_buf creq, sh;
  tw_buf_init(&creq);
  tw_buf_init(&sh);
  tw_buf_adds(&creq, r->method);
  tw_buf_addc(&creq, '\n');
  /* The path, each segment encoded, '/' kept. */
  const char *path = r->path && *r->path ? r->path : "/";
  for (const char *s = path; *s;) {
    size_t l = strcspn(s, "/");
    tw_ali_encode(&creq, s, l);
    s += l;
    if (*s == '/') {
      tw_buf_addc(&creq, '/');
      s++;
    }
  }
  tw_buf_addc(&creq, '\n');
  tw_ali_canonical_query(&creq, r->query, r->n_query, NULL);
  tw_buf_addc(&creq, '\n');
  for (size_t k = 0; k < n_names; k++) {
    /* Repeated headers are joined with ',' in the order sent. */
    bool found = false;
    tw_buf_adds(&creq, names[k]);
    tw_buf_addc(&creq, ':');
    for (size_t i = 0; i < r->n_headers; i++) {
      if (!r->headers[i].name || strcasecmp(r->headers[i].name, names[k]))
        continue;
      const char *v;
      size_t vl;
      trimmed(r->headers[i].value, &v, &vl);
      if (found)
        tw_buf_addc(&creq, ',');
      tw_buf_add(&creq, v, vl);
      found = true;
    }
    tw_buf_addc(&creq, '\n');
    if (!found && !rc) {
      tw_err_detail(err, "IncompleteSignature");
      rc = tw_err_set(err, TW_E_AUTH,
                      "The request signature does not conform to Aliyun "
                      "standards: signed header %.64s is missing.",
                      names[k]);
    }
    if (k)
      tw_buf_addc(&sh, ';');
    tw_buf_adds(&sh, names[k]);
  }
  tw_buf_addc(&creq, '\n');
  tw_buf_adds(&creq, sh.data ? sh.data : "");
  tw_buf_addc(&creq, '\n');
  tw_buf_adds(&creq, r->payload_hash ? r->payload_hash : "");

  char h[65];
  tw_ali_sha256_hex(creq.data, creq.len, h);
  out->string_to_sign = tw_asprintf("%s\n%s", TW_ALI_ACS3, h);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  HMAC(EVP_sha256(), secret, (int)strlen(secret),
       (const unsigned char *)out->string_to_sign, strlen(out->string_to_sign),
       md, &md_len);
  static const char hex[] = "0123456789abcdef";
  for (unsigned i = 0; i < 32 && i < md_len; i++) {
    out->signature[2 * i] = hex[md[i] >> 4];
    out->signature[2 * i + 1] = hex[md[i] & 15];
  }
  out->signature[64] = '\0';
  out->canonical_request = tw_buf_detach(&creq);
  out->signed_headers = tw_buf_detach(&sh);
  if (!out->signed_headers)
    out->signed_headers = tw_strdup("");
  tw_buf_release(&creq);
  tw_buf_release(&sh);
  for (size_t k = 0; k < n_names; k++)
    free(names[k]);
  free(names);
  return rc;
}

/* Copies the value of "key=" up to the next ',' into out. */
static bool authz_field(const char *v, const char *key, char *out,
                        size_t size) {
  size_t kl = strlen(key);
  const char *p = v;
  while ((p = strstr(p, key))) {
    /* A field starts the parameter list or follows ',' or a space. */
    if (p == v || p[-1] == ',' || p[-1] == ' ')
      break;
    p += kl;
  }
  if (!p)
    return false;
  p += kl;
  size_t n = strcspn(p, ", ");
  if (n == 0 || n >= size)
    return false;
  memcpy(out, p, n);
  out[n] = '\0';
  return true;
}

enum tw_rc tw_ali_acs3_parse_authz(const char *value,
                                   struct tw_ali_acs3_authz *out,
                                   struct tw_err *err) {
  memset(out, 0, sizeof *out);
  size_t al = strlen(TW_ALI_ACS3);
  if (!value || strncmp(value, TW_ALI_ACS3, al) || value[al] != ' ' ||
      !authz_field(value + al, "Credential=", out->access_key,
                   sizeof out->access_key) ||
      !authz_field(value + al, "SignedHeaders=", out->signed_headers,
                   sizeof out->signed_headers) ||
      !authz_field(value + al, "Signature=", out->signature,
                   sizeof out->signature)) {
    tw_err_detail(err, "IncompleteSignature");
    return tw_err_set(err, TW_E_AUTH,
                      "The request signature does not conform to Aliyun "
                      "standards: malformed Authorization header.");
  }
  return TW_OK;
}
