/* store_secrets.h - the sealed values of broker/tenancy/secrets.c (table
 * secrets).  The store keeps ciphertexts only: sealing, opening and the
 * keys stay in the secrets module, so nothing here ever sees a value.
 * Thread-safe, as the store. */
#ifndef TW_CORE_STORE_SECRETS_H
#define TW_CORE_STORE_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

/* One sealed value: AES-256-GCM nonce, ciphertext and tag, and the id of
 * the key that sealed it. */
struct tw_store_secret {
  char key_id[16];
  unsigned char nonce[12];
  unsigned char tag[16];
  unsigned char *ct; /* len bytes; owned by what the store returns */
  size_t len;
};

/* A stored name, without its value. */
struct tw_store_secret_info {
  char name[64];
  char key_id[16];
  int64_t updated_ms;
};

/* Creates or replaces name's sealed value (v->ct borrowed), updated at
 * at_ms. */
enum tw_rc tw_store_secret_put(struct tw_store *s, const char *name,
                               const struct tw_store_secret *v, int64_t at_ms,
                               struct tw_err *err);

/* name's sealed value into *out (*found false when absent, or when the
 * row is not of the sizes written); free(out->ct) after. */
enum tw_rc tw_store_secret_get(struct tw_store *s, const char *name,
                               bool *found, struct tw_store_secret *out,
                               struct tw_err *err);

/* Every name, by name.  free() *out. */
enum tw_rc tw_store_secret_list(struct tw_store *s,
                                struct tw_store_secret_info **out, size_t *n,
                                struct tw_err *err);

/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_secret_delete(struct tw_store *s, const char *name,
                                  struct tw_err *err);

#endif
