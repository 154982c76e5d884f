/* secrets.h - provider credentials kept encrypted in the store.
 *
 * Each value is sealed with AES-256-GCM under the current key: a fresh
 * 96-bit random nonce per write, the secret's name as additional
 * authenticated data (a ciphertext moved to another name does not open),
 * and the key's id stored beside it.  The key (32 bytes) comes from a file
 * or an environment variable, as 64 hex digits or 44 base64 characters;
 * it is never stored, logged or sent.  Values are never logged either.
 *
 * Rotation: start with the new key as the current one and the old one as
 * `previous`; tw_secrets_rotate() re-seals every value still under another
 * key id.  Reads open values under either key meanwhile.
 *
 * Thread-safe. */
#ifndef TW_BROKER_SECRETS_H
#define TW_BROKER_SECRETS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"

struct tw_store;
struct tw_secrets;

#define TW_SECRET_NAME_MAX 64
#define TW_SECRET_VALUE_MAX 65536

struct tw_secrets_opts {
  struct tw_store *store; /* borrowed */
  struct tw_clock *clock; /* NULL: real */
  /* The current key: a file, else an environment variable (one must
   * give a key). */
  const char *key_file;
  const char *key_env;
  /* The key being rotated away from, if any. */
  const char *previous_key_file;
  const char *previous_key_env;
};

/* Loads the keys (tw_store_open migrated the table).  TW_E_INVALID when no key
 * is given or it is not 32 bytes in hex or base64 (the message names the file
 * or variable, never the value); TW_E_IO when the file cannot be read.  *out is
 * owned (tw_secrets_free). */
enum tw_rc tw_secrets_open(const struct tw_secrets_opts *opts,
                           struct tw_secrets **out, struct tw_err *err);
/* Wipes the keys from memory.  NULL ok. */
void tw_secrets_free(struct tw_secrets *s);

/* The current key's id: 8 hex digits of SHA-256 over the key, safe to
 * show. */
const char *tw_secrets_key_id(const struct tw_secrets *s);

/* Seals and stores value (len bytes) under name ([A-Za-z0-9._-], 1..63),
 * replacing any previous value. */
enum tw_rc tw_secrets_put(struct tw_secrets *s, const char *name,
                          const void *value, size_t len, struct tw_err *err);

/* Opens name's value into *value (owned: NUL-terminated, wipe with
 * tw_secrets_value_free).  TW_E_NOTFOUND when absent; TW_E_AUTH when it
 * does not open (wrong key, tampered row). */
enum tw_rc tw_secrets_get(struct tw_secrets *s, const char *name, char **value,
                          size_t *len, struct tw_err *err);
void tw_secrets_value_free(char *value, size_t len);

struct tw_secret_info {
  char name[TW_SECRET_NAME_MAX];
  char key_id[16];
  int64_t updated_ms;
};
/* Names and key ids only, never values.  free() *out. */
enum tw_rc tw_secrets_list(struct tw_secrets *s, struct tw_secret_info **out,
                           size_t *n, struct tw_err *err);
/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_secrets_delete(struct tw_secrets *s, const char *name,
                             struct tw_err *err);

/* Re-seals under the current key every value sealed under another;
 * *rotated receives how many.  A value that opens under neither key is
 * left alone and reported (TW_E_AUTH) after the others are done. */
enum tw_rc tw_secrets_rotate(struct tw_secrets *s, size_t *rotated,
                             struct tw_err *err);

/* ---- a job's secrets (docs/jobspec.md#secrets) ----------------------------
 *
 * One sealed value per job, named "job.<id>": the variables as a JSON
 * object of strings.  The API puts them before the job can be placed,
 * the agent's side reads them into the register answer, and they are
 * deleted when the job ends by its agent's exit report or a cancel. */
struct tw_kv;

/* Seals the n variables (every value non-NULL) for job_id.  TW_E_INVALID
 * naming "secrets" when together they exceed TW_SECRET_VALUE_MAX. */
enum tw_rc tw_secrets_job_put(struct tw_secrets *s, const char *job_id,
                              const struct tw_kv *kv, size_t n,
                              struct tw_err *err);
/* Opens job_id's variables into *kv (owned: tw_secrets_job_free).
 * TW_E_NOTFOUND when none are stored. */
enum tw_rc tw_secrets_job_get(struct tw_secrets *s, const char *job_id,
                              struct tw_kv **kv, size_t *n,
                              struct tw_err *err);
/* Zeroes the values, then frees.  NULL ok. */
void tw_secrets_job_free(struct tw_kv *kv, size_t n);
/* Deletes job_id's variables; TW_OK when there were none. */
enum tw_rc tw_secrets_job_delete(struct tw_secrets *s, const char *job_id,
                                 struct tw_err *err);

#endif
