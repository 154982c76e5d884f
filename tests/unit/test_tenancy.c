/* Principals and tokens, quota admission, and sealed secrets, over a real
 * store in a temporary directory and a fake clock.
 *
 *   first_start_writes_a_private_admin_token: admin.token, mode 0600, works,
 *     and a second start writes nothing;
 *   tokens_are_kept_only_as_hashes: no column holds the token's text, the
 *     hash is SHA-256 of it;
 *   token_lifecycle: wrong secret, malformed, expired, revoked, disabled;
 *   principals_are_validated: admin only in "*", unknown tenant, twice;
 *   quota_versions_conflict: If-Match semantics of quota updates;
 *   admission_names_the_quota_and_the_numbers;
 *   a_tenant_made_elsewhere_is_admitted_after_a_refusal: an admission
 *     remembers the tenants it found, never one it did not;
 *   secrets_are_sealed_and_rotate.
 * With --backend=postgres the same cases run on PostgreSQL
 * (tests/unit/pg_store.h): the rows read there hold no secret either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/tenancy/secrets.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "tests/unit/pg_store.h"

static char dir[64], path[128], tokfile[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_tenancy *ten;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

/* memmem without _GNU_SOURCE */
static const void *find(const void *hay, size_t n, const void *needle,
                        size_t k) {
  for (size_t i = 0; k && i + k <= n; i++)
    if (!memcmp((const char *)hay + i, needle, k))
      return (const char *)hay + i;
  return NULL;
}

static void open_all(void) {
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err))
    fail_msg("store: %s", err.msg);
  struct tw_tenancy_opts to = {
      .store = store, .clock = &clk, .admin_token_file = tokfile};
  if (tw_tenancy_open(&to, &ten, &err))
    fail_msg("tenancy: %s", err.msg);
}

static void close_all(void) {
  tw_tenancy_free(ten);
  tw_store_close(store);
  ten = NULL;
  store = NULL;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-tenancy-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_tenancy_token_path(path, tokfile, sizeof tokfile);
  tw_clock_fake_init(&clk, 1764460800000);
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  open_all();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  close_all();
  tw_test_pg_schema_drop(&pg);
  char p[200];
  const char *sfx[] = {"/t.db",        "/t.db-wal", "/t.db-shm",
                       "/admin.token", "/key",      "/key.old"};
  for (int i = 0; i < 6; i++) {
    snprintf(p, sizeof p, "%s%s", dir, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static void read_token_file(char out[TW_TOKEN_LEN + 2]) {
  FILE *f = fopen(tokfile, "r");
  assert_non_null(f);
  assert_non_null(fgets(out, TW_TOKEN_LEN + 2, f));
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

static void first_start_writes_a_private_admin_token(void **state) {
  (void)state;
  char expect[128];
  snprintf(expect, sizeof expect, "%s/admin.token", dir);
  assert_string_equal(tokfile, expect);
  struct stat st;
  assert_int_equal(stat(tokfile, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  char tok[TW_TOKEN_LEN + 2];
  read_token_file(tok);
  assert_int_equal(strlen(tok), TW_TOKEN_LEN);
  struct tw_principal p;
  assert_int_equal(tw_tenancy_authenticate(ten, tok, &p, NULL), TW_OK);
  assert_string_equal(p.name, "admin");
  assert_string_equal(p.tenant, "*");
  assert_int_equal(p.role, TW_ROLE_ADMIN);
  struct tw_tenant_info ti;
  assert_int_equal(tw_tenancy_tenant_get(ten, "default", &ti, NULL), TW_OK);
  /* a restart finds principals and writes no new token */
  unlink(tokfile);
  close_all();
  open_all();
  assert_int_equal(access(tokfile, F_OK), -1);
  assert_int_equal(tw_tenancy_authenticate(ten, tok, &p, NULL), TW_OK);
}

static void tokens_are_kept_only_as_hashes(void **state) {
  (void)state;
  struct tw_principal u = {
      .name = "alice", .tenant = "default", .role = TW_ROLE_MEMBER};
  assert_int_equal(tw_tenancy_user_create(ten, &u, NULL), TW_OK);
  char tok[TW_TOKEN_LEN + 1];
  struct tw_token_info info;
  assert_int_equal(
      tw_tenancy_token_create(ten, "alice", "laptop", 0, tok, &info, NULL),
      TW_OK);
  /* 256 bits of secret: 43 base64url characters after the id */
  assert_int_equal(strlen(tok), TW_TOKEN_LEN);
  assert_int_equal(strlen(tok + 5 + TW_TOKEN_ID_LEN),
                   43); /* "_" may occur in it */
  close_all();
  struct tw_db *db = tw_test_db_raw(&pg, path);
  assert_non_null(db);
  struct tw_db_stmt *st;
  /* every column of tenancy_tokens (store_schema.c) */
  static const char *const cols[] = {"id",      "principal",     "hash",
                                     "name",    "created_at_ms", "expires_at_ms",
                                     "revoked_at_ms"};
  assert_int_equal(
      tw_db_prepare(db,
                    "SELECT id, principal, hash, name, created_at_ms,"
                    " expires_at_ms, revoked_at_ms FROM tenancy_tokens"
                    " WHERE id = ?1",
                    &st),
      TW_DB_OK);
  tw_db_bind_text(st, 1, info.id, -1);
  assert_int_equal(tw_db_step(st), TW_DB_ROW);
  const char *secret = tok + 5 + TW_TOKEN_ID_LEN;
  for (int c = 0; c < (int)(sizeof cols / sizeof cols[0]); c++) {
    const void *v = tw_db_column_blob(st, c);
    int n = tw_db_column_bytes(st, c);
    if (v && n >= 8)
      assert_null(find(v, (size_t)n, secret, 8));
    if (!strcmp(cols[c], "hash")) {
      unsigned char h[32];
      unsigned int hl;
      EVP_Digest(tok, strlen(tok), h, &hl, EVP_sha256(), NULL);
      assert_int_equal(n, 32);
      assert_memory_equal(v, h, 32);
    }
  }
  tw_db_finalize(st);
  tw_db_close(db);
  open_all();
}

static void expect_auth(const char *tok, const char *why) {
  struct tw_principal p;
  struct tw_err err = {0};
  assert_int_equal(tw_tenancy_authenticate(ten, tok, &p, &err), TW_E_AUTH);
  assert_string_equal(err.msg, why);
}

static void token_lifecycle(void **state) {
  (void)state;
  struct tw_principal u = {
      .name = "bot", .tenant = "default", .role = TW_ROLE_CI, .service = true};
  assert_int_equal(tw_tenancy_user_create(ten, &u, NULL), TW_OK);
  char tok[TW_TOKEN_LEN + 1], tok2[TW_TOKEN_LEN + 1];
  struct tw_token_info info;
  assert_int_equal(
      tw_tenancy_token_create(ten, "bot", "ci", 3600 * 1000, tok, &info, NULL),
      TW_OK);
  struct tw_principal p;
  assert_int_equal(tw_tenancy_authenticate(ten, tok, &p, NULL), TW_OK);
  assert_string_equal(p.name, "bot");
  assert_int_equal(p.role, TW_ROLE_CI);
  assert_true(p.service);
  assert_string_equal(p.token_id, info.id);
  /* one character of the secret changed: the id exists, the secret not */
  char bad[TW_TOKEN_LEN + 1];
  memcpy(bad, tok, sizeof bad);
  bad[TW_TOKEN_LEN - 1] = bad[TW_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
  expect_auth(bad, "unknown token");
  /* an id nobody has */
  memcpy(bad, tok, sizeof bad);
  bad[4] = bad[4] == 'a' ? 'b' : 'a';
  expect_auth(bad, "unknown token");
  expect_auth("twt_short", "malformed token");
  expect_auth("", "malformed token");
  /* expiry on the injected clock */
  tw_clock_advance(&clk, 3600 * 1000);
  expect_auth(tok, "token expired");
  /* revocation, at once */
  assert_int_equal(
      tw_tenancy_token_create(ten, "bot", "ci2", 0, tok2, NULL, NULL), TW_OK);
  char id2[TW_TOKEN_ID_LEN + 1];
  memcpy(id2, tok2 + 4, TW_TOKEN_ID_LEN);
  id2[TW_TOKEN_ID_LEN] = '\0';
  assert_int_equal(tw_tenancy_authenticate(ten, tok2, &p, NULL), TW_OK);
  assert_int_equal(tw_tenancy_token_revoke(ten, id2, NULL), TW_OK);
  expect_auth(tok2, "token revoked");
  assert_int_equal(tw_tenancy_token_revoke(ten, "0000000000000000", NULL),
                   TW_E_NOTFOUND);
  /* a disabled principal's tokens stop */
  char tok3[TW_TOKEN_LEN + 1];
  assert_int_equal(
      tw_tenancy_token_create(ten, "bot", "ci3", 0, tok3, NULL, NULL), TW_OK);
  assert_int_equal(tw_tenancy_user_disable(ten, "bot", NULL), TW_OK);
  expect_auth(tok3, "principal disabled");
  assert_int_equal(
      tw_tenancy_token_create(ten, "bot", "x", 0, tok3, NULL, NULL),
      TW_E_CONFLICT);
  /* listing never shows token text and scopes by principal */
  struct tw_token_info *items;
  size_t n;
  assert_int_equal(tw_tenancy_token_list(ten, "bot", NULL, &items, &n, NULL),
                   TW_OK);
  assert_int_equal(n, 3);
  int revoked = 0;
  for (size_t i = 0; i < n; i++)
    if (items[i].revoked_ms) {
      revoked++;
      assert_string_equal(items[i].id, id2);
    }
  assert_int_equal(revoked, 1);
  free(items);
}

static void principals_are_validated(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_principal a = {
      .name = "eve", .tenant = "default", .role = TW_ROLE_ADMIN};
  assert_int_equal(tw_tenancy_user_create(ten, &a, &err), TW_E_INVALID);
  assert_string_equal(err.field, "role");
  struct tw_principal b = {
      .name = "eve", .tenant = "*", .role = TW_ROLE_MEMBER};
  assert_int_equal(tw_tenancy_user_create(ten, &b, NULL), TW_E_INVALID);
  struct tw_principal c = {
      .name = "eve", .tenant = "nowhere", .role = TW_ROLE_MEMBER};
  assert_int_equal(tw_tenancy_user_create(ten, &c, NULL), TW_E_NOTFOUND);
  struct tw_principal d = {
      .name = "bad name", .tenant = "default", .role = TW_ROLE_MEMBER};
  assert_int_equal(tw_tenancy_user_create(ten, &d, NULL), TW_E_INVALID);
  struct tw_principal e = {
      .name = "eve", .tenant = "default", .role = TW_ROLE_FINANCE};
  assert_int_equal(tw_tenancy_user_create(ten, &e, NULL), TW_OK);
  assert_int_equal(tw_tenancy_user_create(ten, &e, NULL), TW_E_CONFLICT);
  assert_int_equal(tw_tenancy_tenant_create(ten, "default", NULL),
                   TW_E_CONFLICT);
  assert_int_equal(tw_tenancy_tenant_create(ten, "-x", NULL), TW_E_INVALID);
  assert_int_equal(tw_tenancy_tenant_create(ten, "ml", NULL), TW_OK);
  struct tw_principal *ps;
  size_t n;
  assert_int_equal(tw_tenancy_user_list(ten, "default", &ps, &n, NULL), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(ps[0].name, "eve");
  free(ps);
}

static void quota_versions_conflict(void **state) {
  (void)state;
  assert_int_equal(tw_tenancy_tenant_create(ten, "ml", NULL), TW_OK);
  struct tw_quota q, got;
  assert_int_equal(tw_tenancy_quota_get(ten, "ml", &got, NULL), TW_OK);
  assert_int_equal(got.vcpus.limit, -1);
  int64_t v1 = got.version;
  tw_quota_init(&q);
  q.vcpus = (struct tw_quota_limit){64, 16};
  q.gpus[0] = (struct tw_quota_gpu){.name = "A100", .q = {8, 0}};
  q.n_gpus = 1;
  q.spot_share_pct = 50;
  snprintf(q.cohort, sizeof q.cohort, "research");
  assert_int_equal(tw_tenancy_quota_set(ten, "ml", &q, v1, &got, NULL), TW_OK);
  assert_int_equal(got.version, v1 + 1);
  assert_int_equal(got.vcpus.limit, 64);
  assert_int_equal(got.vcpus.borrow, 16);
  assert_string_equal(got.gpus[0].name, "A100");
  assert_string_equal(got.cohort, "research");
  /* a writer that read version v1 lost the race */
  struct tw_err err = {0};
  q.vcpus.limit = 8;
  assert_int_equal(tw_tenancy_quota_set(ten, "ml", &q, v1, &got, &err),
                   TW_E_CONFLICT);
  assert_non_null(strstr(err.msg, "changed meanwhile"));
  assert_int_equal(tw_tenancy_quota_get(ten, "ml", &got, NULL), TW_OK);
  assert_int_equal(got.vcpus.limit, 64);
  q.spot_share_pct = 101;
  assert_int_equal(tw_tenancy_quota_set(ten, "ml", &q, 0, &got, NULL),
                   TW_E_INVALID);
  assert_int_equal(tw_tenancy_quota_set(ten, "nowhere", &q, 0, &got, NULL),
                   TW_E_INVALID);
  q.spot_share_pct = 0;
  assert_int_equal(tw_tenancy_quota_set(ten, "nowhere", &q, 0, &got, NULL),
                   TW_E_NOTFOUND);
}

static void admit(const char *yaml, enum tw_rc want, const char *field,
                  const char *text) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, &err))
    fail_msg("spec: %s", err.msg);
  struct tw_admission adm;
  assert_int_equal(tw_tenancy_admit(ten, &spec, "alice", "req-1", &adm, &err),
                   want);
  if (field)
    assert_string_equal(err.field, field);
  if (text && !strstr(err.msg, text))
    fail_msg("\"%s\" lacks \"%s\"", err.msg, text);
  tw_spec_release(&spec);
}

static void admission_names_the_quota_and_the_numbers(void **state) {
  (void)state;
  assert_int_equal(tw_tenancy_tenant_create(ten, "ml", NULL), TW_OK);
  struct tw_quota q, got;
  tw_quota_init(&q);
  q.vcpus = (struct tw_quota_limit){32, 0};
  q.gpus[0] = (struct tw_quota_gpu){.name = "A100", .q = {8, 4}};
  q.n_gpus = 1;
  q.spot_share_pct = 0;
  snprintf(q.cohort, sizeof q.cohort, "research");
  assert_int_equal(tw_tenancy_quota_set(ten, "ml", &q, 0, &got, NULL), TW_OK);
  admit("name: a\ntenant: ml\nresources:\n  cpus: 16\n", TW_OK, NULL, NULL);
  admit("name: b\ntenant: ml\nnodes: 4\nresources:\n  cpus: 16\n", TW_E_QUOTA,
        "quota.vcpus",
        "the job needs 64 vCPUs (4 nodes x 16), the limit is 32");
  admit("name: c\ntenant: ml\nresources:\n  accelerators: A100-80GB:8\n", TW_OK,
        NULL, NULL);
  admit("name: d\ntenant: ml\nnodes: 2\nresources:\n  accelerators: A100:8\n",
        TW_E_QUOTA, "quota.gpus.A100",
        "needs 16 A100 (2 nodes x 8), the limit is 8 (+4 borrowable)");
  admit("name: e\ntenant: ml\nresources:\n  accelerators: H100:64\n", TW_OK,
        NULL, NULL);
  admit("name: f\ntenant: ml\nresources:\n  use_spot: true\n", TW_E_QUOTA,
        "quota.spot_share_pct", "spot_share_pct of tenant ml is 0%");
  /* a tenant without a quota has no limit */
  assert_int_equal(tw_tenancy_tenant_create(ten, "other", NULL), TW_OK);
  admit("name: g\ntenant: other\nnodes: 99\nresources:\n  cpus: 99\n", TW_OK,
        NULL, NULL);
  /* a tenant that does not exist pays for nothing: refused, naming it */
  admit("name: h\ntenant: nobody\nresources:\n  cpus: 1\n", TW_E_INVALID,
        "tenant", "no tenant named \"nobody\"");
}

/* An admission remembers a tenant it found (tenants are never deleted)
 * but not one it did not: a tenant created after a refusal, by another
 * replica, is admitted at the next submission, and from then on. */
static void a_tenant_made_elsewhere_is_admitted_after_a_refusal(void **state) {
  (void)state;
  admit("name: a\ntenant: late\nresources:\n  cpus: 1\n", TW_E_INVALID,
        "tenant", "no tenant named \"late\"");
  /* another broker's tenancy on the same database */
  struct tw_tenancy *other = NULL;
  struct tw_err err = {0};
  struct tw_tenancy_opts to = {
      .store = store, .clock = &clk, .admin_token_file = tokfile};
  if (tw_tenancy_open(&to, &other, &err))
    fail_msg("tenancy: %s", err.msg);
  assert_int_equal(tw_tenancy_tenant_create(other, "late", NULL), TW_OK);
  tw_tenancy_free(other);
  for (int i = 0; i < 3; i++)
    admit("name: b\ntenant: late\nresources:\n  cpus: 1\n", TW_OK, NULL,
          NULL);
  admit("name: c\ntenant: still-nobody\nresources:\n  cpus: 1\n",
        TW_E_INVALID, "tenant", "no tenant named \"still-nobody\"");
}

static void write_key(const char *name, const char *text) {
  char p[200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void secrets_are_sealed_and_rotate(void **state) {
  (void)state;
  char kp[200], okp[200];
  snprintf(kp, sizeof kp, "%s/key", dir);
  snprintf(okp, sizeof okp, "%s/key.old", dir);
  write_key(
      "key.old",
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n");
  struct tw_secrets *s;
  struct tw_err err = {0};
  struct tw_secrets_opts so = {.store = store, .clock = &clk, .key_file = okp};
  assert_int_equal(tw_secrets_open(&so, &s, &err), TW_OK);
  static const char value[] = "AKIAEXAMPLE/wJalrXUtnFEMI/K7MDENG";
  assert_int_equal(
      tw_secrets_put(s, "aws-main.secret_key", value, strlen(value), NULL),
      TW_OK);
  char *v = NULL;
  size_t n = 0;
  assert_int_equal(tw_secrets_get(s, "aws-main.secret_key", &v, &n, NULL),
                   TW_OK);
  assert_string_equal(v, value);
  tw_secrets_value_free(v, n);
  /* the file holds no plaintext */
  struct tw_db *db = tw_test_db_raw(&pg, path);
  struct tw_db_stmt *st;
  assert_non_null(db);
  assert_int_equal(
      tw_db_prepare(db, "SELECT ciphertext, key_id FROM secrets", &st),
      TW_DB_OK);
  assert_int_equal(tw_db_step(st), TW_DB_ROW);
  assert_int_equal(tw_db_column_bytes(st, 0), (int)strlen(value));
  assert_null(find(tw_db_column_blob(st, 0), strlen(value), "AKIA", 4));
  char old_id[16];
  snprintf(old_id, sizeof old_id, "%s",
           (const char *)tw_db_column_text(st, 1));
  tw_db_finalize(st);
  /* a ciphertext moved to another name does not open (the name is AAD) */
  char *msg = NULL;
  assert_int_equal(tw_db_exec(db,
                              "INSERT INTO secrets SELECT 'stolen', key_id,"
                              " nonce, ciphertext, tag, updated_at_ms FROM"
                              " secrets",
                              &msg),
                   TW_DB_OK);
  assert_int_equal(tw_secrets_get(s, "stolen", &v, &n, &err), TW_E_AUTH);
  /* nor a flipped byte */
  static const unsigned char zero_tag[16];
  assert_int_equal(
      tw_db_prepare(db, "UPDATE secrets SET tag = ?1 WHERE name = 'stolen'",
                    &st),
      TW_DB_OK);
  tw_db_bind_blob(st, 1, zero_tag, sizeof zero_tag);
  assert_int_equal(tw_db_step(st), TW_DB_DONE);
  tw_db_finalize(st);
  assert_int_equal(tw_secrets_get(s, "stolen", &v, &n, NULL), TW_E_AUTH);
  assert_int_equal(
      tw_db_exec(db, "DELETE FROM secrets WHERE name = 'stolen'", &msg),
      TW_DB_OK);
  tw_db_close(db);
  tw_secrets_free(s);
  /* rotation: a new current key (base64 this time), the old as previous */
  write_key("key", "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=");
  struct tw_secrets_opts so2 = {
      .store = store, .clock = &clk, .key_file = kp, .previous_key_file = okp};
  assert_int_equal(tw_secrets_open(&so2, &s, &err), TW_OK);
  assert_string_not_equal(tw_secrets_key_id(s), old_id);
  size_t rotated = 0;
  assert_int_equal(tw_secrets_rotate(s, &rotated, NULL), TW_OK);
  assert_int_equal(rotated, 1);
  tw_secrets_free(s);
  /* the new key alone opens it now */
  struct tw_secrets_opts so3 = {.store = store, .clock = &clk, .key_file = kp};
  assert_int_equal(tw_secrets_open(&so3, &s, &err), TW_OK);
  assert_int_equal(tw_secrets_get(s, "aws-main.secret_key", &v, &n, NULL),
                   TW_OK);
  assert_string_equal(v, value);
  tw_secrets_value_free(v, n);
  struct tw_secret_info *items;
  assert_int_equal(tw_secrets_list(s, &items, &n, NULL), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(items[0].key_id, tw_secrets_key_id(s));
  free(items);
  tw_secrets_free(s);
  /* the old key alone no longer does */
  assert_int_equal(tw_secrets_open(&so, &s, &err), TW_OK);
  assert_int_equal(tw_secrets_get(s, "aws-main.secret_key", &v, &n, &err),
                   TW_E_AUTH);
  tw_secrets_free(s);
  /* keys that are not 32 bytes are refused without echoing them */
  write_key("key", "not-a-key");
  assert_int_equal(tw_secrets_open(&so3, &s, &err), TW_E_INVALID);
  assert_null(strstr(err.msg, "not-a-key"));
}

/* A job's secrets: sealed as one value per job, opened back, never in the
 * file in plain, gone once deleted. */
static void job_secrets_are_sealed(void **state) {
  (void)state;
  char kp[200];
  snprintf(kp, sizeof kp, "%s/key", dir);
  write_key("key",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  struct tw_secrets *s;
  struct tw_err err = {0};
  struct tw_secrets_opts so = {.store = store, .clock = &clk, .key_file = kp};
  assert_int_equal(tw_secrets_open(&so, &s, &err), TW_OK);
  char k1[] = "HF_TOKEN", v1[] = "hf_QmVyeVNlY3JldFRva2Vu\"\n\\x",
       k2[] = "EMPTY", v2[] = "";
  struct tw_kv kv[] = {{k1, v1}, {k2, v2}};
  assert_int_equal(tw_secrets_job_put(s, "j-01", kv, 2, &err), TW_OK);
  struct tw_kv *got = NULL;
  size_t n = 0;
  assert_int_equal(tw_secrets_job_get(s, "j-01", &got, &n, &err), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(got[0].key, "HF_TOKEN");
  assert_string_equal(got[0].value, v1);
  assert_string_equal(got[1].key, "EMPTY");
  assert_string_equal(got[1].value, "");
  tw_secrets_job_free(got, n);
  assert_int_equal(tw_secrets_job_get(s, "j-02", &got, &n, &err),
                   TW_E_NOTFOUND);
  /* no plaintext in the file */
  struct tw_db *db = tw_test_db_raw(&pg, path);
  struct tw_db_stmt *st;
  assert_non_null(db);
  assert_int_equal(
      tw_db_prepare(db, "SELECT ciphertext FROM secrets WHERE name = ?1", &st),
      TW_DB_OK);
  tw_db_bind_text(st, 1, "job.j-01", -1);
  assert_int_equal(tw_db_step(st), TW_DB_ROW);
  assert_null(find(tw_db_column_blob(st, 0), (size_t)tw_db_column_bytes(st, 0),
                   "hf_Qm", 5));
  tw_db_finalize(st);
  tw_db_close(db);
  /* too much together is refused, naming the field */
  size_t big = TW_SECRET_VALUE_MAX;
  char *bv = malloc(big + 1);
  memset(bv, 'x', big);
  bv[big] = '\0';
  struct tw_kv kb[] = {{k1, bv}};
  err = (struct tw_err){0};
  assert_int_equal(tw_secrets_job_put(s, "j-03", kb, 1, &err), TW_E_INVALID);
  assert_string_equal(err.field, "secrets");
  free(bv);
  assert_int_equal(tw_secrets_job_delete(s, "j-01", &err), TW_OK);
  assert_int_equal(tw_secrets_job_get(s, "j-01", &got, &n, &err),
                   TW_E_NOTFOUND);
  assert_int_equal(tw_secrets_job_delete(s, "j-01", &err), TW_OK);
  tw_secrets_free(s);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(first_start_writes_a_private_admin_token,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(tokens_are_kept_only_as_hashes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(token_lifecycle, setup, teardown),
      cmocka_unit_test_setup_teardown(principals_are_validated, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(quota_versions_conflict, setup, teardown),
      cmocka_unit_test_setup_teardown(admission_names_the_quota_and_the_numbers,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_tenant_made_elsewhere_is_admitted_after_a_refusal, setup,
          teardown),
      cmocka_unit_test_setup_teardown(job_secrets_are_sealed, setup, teardown),
      cmocka_unit_test_setup_teardown(secrets_are_sealed_and_rotate, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
