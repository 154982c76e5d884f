/* Fuzz target: token checking and the audit chain.
 *
 * The input is a patch list (position, byte) applied to a real token, or
 * used raw as the token, or applied to a real three-entry audit chain.
 * Properties, beyond not crashing under the sanitizers:
 *   - a token authenticates only when it is byte for byte the real one;
 *   - a chain whose entries changed in any way does not verify.
 * The store lives in a temporary directory made at the first call. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "broker/tenancy/audit.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"

static struct tw_store *store;
static struct tw_tenancy *ten;
static char token[TW_TOKEN_LEN + 1];
static char dir[64];
static struct tw_audit_entry chain[3];
static char strs[3][7][32];

static void cleanup(void) {
  tw_tenancy_free(ten);
  tw_store_close(store);
  char p[128];
  const char *sfx[] = {"/f.db", "/f.db-wal", "/f.db-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", dir, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void init(void) {
  snprintf(dir, sizeof dir, "/tmp/tw-fuzz-auth-XXXXXX");
  if (!mkdtemp(dir))
    abort();
  char path[128];
  snprintf(path, sizeof path, "%s/f.db", dir);
  struct tw_store_opts so = {.path = path, .sync_full = false};
  struct tw_err err = {0};
  if (tw_store_open(&so, &store, &err))
    abort();
  struct tw_tenancy_opts to = {.store = store};
  if (tw_tenancy_open(&to, &ten, &err) ||
      tw_tenancy_tenant_create(ten, "ml", &err))
    abort();
  struct tw_principal p = {
      .name = "fz", .tenant = "ml", .role = TW_ROLE_MEMBER};
  if (tw_tenancy_user_create(ten, &p, &err) ||
      tw_tenancy_token_create(ten, "fz", "fuzz", 0, token, NULL, &err))
    abort();
  atexit(cleanup);
  /* a valid chain of three */
  const char *prev = NULL;
  for (int i = 0; i < 3; i++) {
    struct tw_audit_entry *e = &chain[i];
    e->seq = i + 1;
    e->at_ms = 1764460800000 + i;
    char **f[] = {&e->principal, &e->tenant,     &e->action, &e->object,
                  &e->outcome,   &e->request_id, &e->detail};
    for (int k = 0; k < 7; k++) {
      snprintf(strs[i][k], sizeof strs[i][k], "f%d-%d", i, k);
      *f[k] = strs[i][k];
    }
    snprintf(e->prev_hash, sizeof e->prev_hash, "%s",
             prev ? prev
                  : "0000000000000000000000000000000000000000000000000000000000"
                    "000000");
    tw_audit_entry_hash(e, e->prev_hash, e->hash);
    prev = e->hash;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!store)
    init();
  if (size == 0)
    return 0;
  uint8_t mode = data[0] % 3;
  data++;
  size--;
  if (mode == 0 || mode == 1) {
    char t[256];
    if (mode == 0) {
      /* patches of the real token: (position, byte) pairs */
      memcpy(t, token, sizeof token);
      size_t len = TW_TOKEN_LEN;
      for (size_t i = 0; i + 1 < size; i += 2) {
        size_t pos = data[i] % (TW_TOKEN_LEN + 2);
        if (pos < len)
          t[pos] = (char)data[i + 1];
        else if (len < sizeof t - 1)
          t[len++] = (char)data[i + 1];
      }
      t[len] = '\0';
    } else {
      size_t n = size < sizeof t - 1 ? size : sizeof t - 1;
      memcpy(t, data, n);
      t[n] = '\0';
    }
    struct tw_principal p;
    bool ok = tw_tenancy_authenticate(ten, t, &p, NULL) == TW_OK;
    if (ok != (strcmp(t, token) == 0))
      abort(); /* accepted a wrong token, or refused the right one */
    return 0;
  }
  /* the chain, patched: (entry, field, position, byte) */
  struct tw_audit_entry e[3];
  char s[3][7][32];
  memcpy(e, chain, sizeof e);
  memcpy(s, strs, sizeof s);
  for (int i = 0; i < 3; i++) {
    char **f[] = {&e[i].principal, &e[i].tenant,     &e[i].action, &e[i].object,
                  &e[i].outcome,   &e[i].request_id, &e[i].detail};
    for (int k = 0; k < 7; k++)
      *f[k] = s[i][k];
  }
  bool changed = false;
  for (size_t i = 0; i + 3 < size; i += 4) {
    int which = data[i] % 3, field = data[i + 1] % 10;
    size_t pos = data[i + 2] % 31;
    char b = (char)data[i + 3];
    char *target = field < 7    ? s[which][field]
                   : field == 7 ? e[which].prev_hash
                   : field == 8 ? e[which].hash
                                : NULL;
    if (!target) {
      int64_t old = e[which].seq;
      e[which].seq += b;
      changed |= e[which].seq != old;
      continue;
    }
    if (pos >= strlen(target) || b == '\0')
      continue;
    changed |= target[pos] != b;
    target[pos] = b;
  }
  enum tw_rc rc = tw_audit_verify_entries(e, 3, 1, NULL, NULL);
  if (changed && rc == TW_OK) {
    /* only a change that restores the original is invisible */
    for (int i = 0; i < 3; i++) {
      char **f[] = {&e[i].principal, &e[i].tenant,  &e[i].action,
                    &e[i].object,    &e[i].outcome, &e[i].request_id,
                    &e[i].detail};
      for (int k = 0; k < 7; k++)
        if (strcmp(*f[k], strs[i][k]))
          abort();
      if (e[i].seq != chain[i].seq || strcmp(e[i].hash, chain[i].hash) ||
          strcmp(e[i].prev_hash, chain[i].prev_hash))
        abort();
    }
  }
  return 0;
}
