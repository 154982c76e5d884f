/* secrets.c - AES-256-GCM sealed values in the store (see secrets.h). */
#include "broker/tenancy/secrets.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/hex.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_secrets.h"

struct key {
  bool set;
  unsigned char k[32];
  char id[16];
};

struct tw_secrets {
  struct tw_store *store;
  struct tw_clock *clock;
  struct key cur, prev;
};

const char *tw_secrets_key_id(const struct tw_secrets *s) { return s->cur.id; }

/* ---- keys ------------------------------------------------------------------
 */

/* 64 hex digits or standard/url base64 of 32 bytes, surrounding blanks
 * ignored. */
static bool decode_key(const char *text, unsigned char out[32]) {
  char buf[128];
  size_t n = 0;
  for (const char *p = text; *p && n < sizeof buf - 1; p++)
    if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
      buf[n++] = *p;
  buf[n] = '\0';
  bool ok = false;
  if (n == 64) {
    ok = tw_unhex(buf, 32, out, false);
  } else if (n == 43 || n == 44) {
    for (size_t i = 0; i < n; i++)
      if (buf[i] == '-')
        buf[i] = '+';
      else if (buf[i] == '_')
        buf[i] = '/';
    if (n == 43)
      buf[n++] = '=', buf[n] = '\0';
    unsigned char tmp[48];
    int got = EVP_DecodeBlock(tmp, (const unsigned char *)buf, (int)n);
    /* 44 characters decode to 33 bytes, the last being padding */
    if (got == 33 && buf[43] == '=') {
      memcpy(out, tmp, 32);
      ok = true;
    }
    OPENSSL_cleanse(tmp, sizeof tmp);
  }
  OPENSSL_cleanse(buf, sizeof buf);
  return ok;
}

static enum tw_rc load_key(const char *file, const char *env, const char *what,
                           bool required, struct key *k, struct tw_err *err) {
  char text[256] = "";
  const char *src;
  memset(k, 0, sizeof *k);
  if (file && *file) {
    FILE *f = fopen(file, "r");
    if (!f)
      return tw_err_set(err, TW_E_IO,
                        "secrets: cannot read the %s key file %s: %s", what,
                        file, strerror(errno));
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    src = file;
  } else if (env && *env && getenv(env) && *getenv(env)) {
    snprintf(text, sizeof text, "%s", getenv(env));
    src = env;
  } else {
    if (!required)
      return TW_OK;
    return tw_err_set(
        err, TW_E_INVALID,
        "secrets: no %s key: set secrets.key_file or the variable %s", what,
        env && *env ? env : "named by secrets.key_env");
  }
  bool ok = decode_key(text, k->k);
  OPENSSL_cleanse(text, sizeof text);
  if (!ok)
    return tw_err_set(
        err, TW_E_INVALID,
        "secrets: the %s key in %s is not 32 bytes as 64 hex digits "
        "or base64",
        what, src);
  unsigned char h[32];
  unsigned int hl = 0;
  EVP_Digest(k->k, sizeof k->k, h, &hl, EVP_sha256(), NULL);
  snprintf(k->id, sizeof k->id, "%02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
  k->set = true;
  return TW_OK;
}

enum tw_rc tw_secrets_open(const struct tw_secrets_opts *o,
                           struct tw_secrets **out, struct tw_err *err) {
  struct tw_secrets *s = tw_calloc(1, sizeof *s);
  enum tw_rc rc;
  *out = NULL;
  s->store = o->store;
  s->clock = o->clock ? o->clock : tw_clock_real();
  if ((rc = load_key(o->key_file, o->key_env, "current", true, &s->cur, err)) ||
      (rc = load_key(o->previous_key_file, o->previous_key_env, "previous",
                     false, &s->prev, err))) {
    tw_secrets_free(s);
    return rc;
  }
  tw_log_info("secrets", "key=%s ready%s%s", s->cur.id,
              s->prev.set ? " previous=" : "", s->prev.set ? s->prev.id : "");
  *out = s;
  return TW_OK;
}

void tw_secrets_free(struct tw_secrets *s) {
  if (!s)
    return;
  OPENSSL_cleanse(s, sizeof *s);
  free(s);
}

/* ---- sealing
 * ------------------------------------------------------------------ */

static bool seal(const struct key *k, const char *name, const void *in,
                 size_t len, unsigned char nonce[12], unsigned char *ct,
                 unsigned char tag[16]) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int n = 0;
  bool ok = c && RAND_bytes(nonce, 12) == 1 &&
            EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
            EVP_EncryptInit_ex(c, NULL, NULL, k->k, nonce) == 1 &&
            EVP_EncryptUpdate(c, NULL, &n, (const unsigned char *)name,
                              (int)strlen(name)) == 1 &&
            (len == 0 || EVP_EncryptUpdate(c, ct, &n, in, (int)len) == 1) &&
            EVP_EncryptFinal_ex(c, ct + (len ? n : 0), &n) == 1 &&
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

static bool unseal(const struct key *k, const char *name,
                   const unsigned char nonce[12], const unsigned char *ct,
                   size_t len, const unsigned char tag[16],
                   unsigned char *out) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int n = 0;
  bool ok =
      c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
      EVP_DecryptInit_ex(c, NULL, NULL, k->k, nonce) == 1 &&
      EVP_DecryptUpdate(c, NULL, &n, (const unsigned char *)name,
                        (int)strlen(name)) == 1 &&
      (len == 0 || EVP_DecryptUpdate(c, out, &n, ct, (int)len) == 1) &&
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) == 1 &&
      EVP_DecryptFinal_ex(c, out + (len ? n : 0), &n) == 1;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

static bool name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= TW_SECRET_NAME_MAX || s[0] == '.' || s[0] == '-')
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
      return false;
  return true;
}

enum tw_rc tw_secrets_put(struct tw_secrets *s, const char *name,
                          const void *value, size_t len, struct tw_err *err) {
  if (!name_ok(name))
    return tw_err_field(err, TW_E_INVALID, "name",
                        "name: expected 1 to 63 of [A-Za-z0-9._-]");
  if (len > TW_SECRET_VALUE_MAX)
    return tw_err_field(err, TW_E_TOOBIG, "value",
                        "value: larger than %d bytes", TW_SECRET_VALUE_MAX);
  struct tw_store_secret v = {.ct = tw_malloc(len ? len : 1), .len = len};
  snprintf(v.key_id, sizeof v.key_id, "%s", s->cur.id);
  if (!seal(&s->cur, name, value, len, v.nonce, v.ct, v.tag)) {
    free(v.ct);
    return tw_err_set(err, TW_E_INTERNAL, "secrets: encryption failed");
  }
  enum tw_rc rc =
      tw_store_secret_put(s->store, name, &v, tw_clock_now_ms(s->clock), err);
  free(v.ct);
  if (rc == TW_OK)
    tw_log_info("secrets", "secret=%s key=%s stored", name, s->cur.id);
  return rc;
}

/* Opens name's sealed value a under whichever key sealed it. */
static enum tw_rc open_value(struct tw_secrets *s, const char *name,
                             const struct tw_store_secret *a, char **value,
                             struct tw_err *err) {
  const struct key *k = !strcmp(a->key_id, s->cur.id) ? &s->cur
                        : s->prev.set && !strcmp(a->key_id, s->prev.id)
                            ? &s->prev
                            : NULL;
  if (!k)
    return tw_err_set(err, TW_E_AUTH,
                      "secret %s is sealed under key %s, which is not loaded",
                      name, a->key_id);
  char *out = tw_malloc(a->len + 1);
  if (!unseal(k, name, a->nonce, a->ct, a->len, a->tag, (unsigned char *)out)) {
    tw_secrets_value_free(out, a->len + 1);
    return tw_err_set(
        err, TW_E_AUTH,
        "secret %s does not open: tampered with, or moved from another "
        "name",
        name);
  }
  out[a->len] = '\0';
  *value = out;
  return TW_OK;
}

enum tw_rc tw_secrets_get(struct tw_secrets *s, const char *name, char **value,
                          size_t *len, struct tw_err *err) {
  struct tw_store_secret a;
  bool found = false;
  *value = NULL;
  enum tw_rc rc = tw_store_secret_get(s->store, name, &found, &a, err);
  if (rc == TW_OK && !found)
    rc = tw_err_set(err, TW_E_NOTFOUND, "secret %s not found", name);
  if (rc == TW_OK && (rc = open_value(s, name, &a, value, err)) == TW_OK && len)
    *len = a.len;
  free(a.ct);
  return rc;
}

void tw_secrets_value_free(char *value, size_t len) {
  if (!value)
    return;
  OPENSSL_cleanse(value, len);
  free(value);
}

enum tw_rc tw_secrets_list(struct tw_secrets *s, struct tw_secret_info **out,
                           size_t *n, struct tw_err *err) {
  struct tw_store_secret_info *rows = NULL;
  size_t nr = 0;
  enum tw_rc rc = tw_store_secret_list(s->store, &rows, &nr, err);
  if (rc)
    return rc;
  struct tw_secret_info *items = nr ? tw_calloc(nr, sizeof *items) : NULL;
  for (size_t i = 0; i < nr; i++) {
    snprintf(items[i].name, sizeof items[i].name, "%s", rows[i].name);
    snprintf(items[i].key_id, sizeof items[i].key_id, "%s", rows[i].key_id);
    items[i].updated_ms = rows[i].updated_ms;
  }
  free(rows);
  *out = items;
  *n = nr;
  return TW_OK;
}

enum tw_rc tw_secrets_delete(struct tw_secrets *s, const char *name,
                             struct tw_err *err) {
  enum tw_rc rc = tw_store_secret_delete(s->store, name, err);
  if (rc == TW_OK)
    tw_log_info("secrets", "secret=%s deleted", name);
  return rc;
}

enum tw_rc tw_secrets_rotate(struct tw_secrets *s, size_t *rotated,
                             struct tw_err *err) {
  struct tw_secret_info *items = NULL;
  size_t n = 0, done = 0;
  enum tw_rc rc = tw_secrets_list(s, &items, &n, err), first_bad = TW_OK;
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(items[i].key_id, s->cur.id))
      continue;
    char *v = NULL;
    size_t len = 0;
    struct tw_err e2 = {0};
    if ((rc = tw_secrets_get(s, items[i].name, &v, &len, &e2)) ||
        (rc = tw_secrets_put(s, items[i].name, v, len, &e2))) {
      if (!first_bad) {
        first_bad = rc;
        tw_err_set(err, rc, "%s", e2.msg);
      }
    } else {
      done++;
    }
    tw_secrets_value_free(v, len);
  }
  free(items);
  if (rotated)
    *rotated = done;
  tw_log_info("secrets", "key=%s rotated=%zu", s->cur.id, done);
  return first_bad;
}

/* ---- a job's secrets -------------------------------------------------------- */

static void job_name(const char *job_id, char *out, size_t outsz) {
  snprintf(out, outsz, "job.%s", job_id);
}

enum tw_rc tw_secrets_job_put(struct tw_secrets *s, const char *job_id,
                              const struct tw_kv *kv, size_t n,
                              struct tw_err *err) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_addc(&b, '{');
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&b, ',');
    tw_buf_json_str(&b, kv[i].key);
    tw_buf_addc(&b, ':');
    tw_buf_json_str(&b, kv[i].value ? kv[i].value : "");
  }
  tw_buf_addc(&b, '}');
  enum tw_rc rc;
  if (b.len >= TW_SECRET_VALUE_MAX) {
    rc = tw_err_field(err, TW_E_INVALID, "secrets",
                      "secrets: %zu bytes together, at most %d", b.len,
                      TW_SECRET_VALUE_MAX - 1);
  } else {
    char name[TW_SECRET_NAME_MAX];
    job_name(job_id, name, sizeof name);
    rc = tw_secrets_put(s, name, b.data, b.len, err);
  }
  OPENSSL_cleanse(b.data, b.len);
  tw_buf_release(&b);
  return rc;
}

void tw_secrets_job_free(struct tw_kv *kv, size_t n) {
  if (!kv)
    return;
  for (size_t i = 0; i < n; i++) {
    free(kv[i].key);
    if (kv[i].value) {
      OPENSSL_cleanse(kv[i].value, strlen(kv[i].value));
      free(kv[i].value);
    }
  }
  free(kv);
}

enum tw_rc tw_secrets_job_get(struct tw_secrets *s, const char *job_id,
                              struct tw_kv **kv, size_t *n,
                              struct tw_err *err) {
  *kv = NULL;
  *n = 0;
  char name[TW_SECRET_NAME_MAX];
  job_name(job_id, name, sizeof name);
  char *v = NULL;
  size_t len = 0;
  enum tw_rc rc = tw_secrets_get(s, name, &v, &len, err);
  if (rc)
    return rc;
  struct tw_node *root = NULL;
  struct tw_err perr = {0};
  rc = tw_node_parse_json(v, len, &root, &perr);
  tw_secrets_value_free(v, len);
  if (rc || !root || root->kind != TW_NODE_MAP) {
    tw_node_free(root);
    return tw_err_set(err, TW_E_INVALID,
                      "secrets: the sealed variables of job %s are not an "
                      "object",
                      job_id);
  }
  struct tw_kv *out = tw_calloc(root->n ? root->n : 1, sizeof *out);
  size_t k = 0;
  for (size_t i = 0; i < root->n; i++) {
    const struct tw_node *it = root->items[i];
    if (!it || it->kind != TW_NODE_SCALAR)
      continue;
    out[k].key = tw_strdup(root->keys[i]);
    out[k].value = tw_strdup(it->str ? it->str : "");
    k++;
  }
  /* the parsed copy holds the values too */
  for (size_t i = 0; i < root->n; i++)
    if (root->items[i] && root->items[i]->kind == TW_NODE_SCALAR &&
        root->items[i]->str)
      OPENSSL_cleanse(root->items[i]->str, strlen(root->items[i]->str));
  tw_node_free(root);
  *kv = out;
  *n = k;
  return TW_OK;
}

enum tw_rc tw_secrets_job_delete(struct tw_secrets *s, const char *job_id,
                                 struct tw_err *err) {
  char name[TW_SECRET_NAME_MAX];
  job_name(job_id, name, sizeof name);
  enum tw_rc rc = tw_secrets_delete(s, name, err);
  if (rc == TW_E_NOTFOUND) {
    if (err)
      *err = (struct tw_err){0};
    return TW_OK;
  }
  return rc;
}
