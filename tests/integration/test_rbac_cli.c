/* The tenancy commands of the `tradewind` client against the live server
 * with real tokens: an admin sets up a tenant, a principal and its token;
 * the token's holder sees only its tenant; quota and budget changes go
 * through If-Match; the audit chain verifies from the server's entries
 * and from the database file, and `audit verify --db` names the entry an
 * edit of the file altered (exit 1). */
#include <curl/curl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "cli/cli.h"
#include "tests/twtest.h"

static char url[64];
static struct {
  int code;
  char *out, *err;
} last;

static void no_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  (void)ms;
}

/* Runs `tradewind ARGS...` (NULL-terminated) with token. */
static int cli(const char *token, ...) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = "tradewind";
  va_list ap;
  va_start(ap, token);
  for (char *a; argc < 31 && (a = va_arg(ap, char *));)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  free(last.out);
  free(last.err);
  size_t ol, el;
  FILE *out = open_memstream(&last.out, &ol);
  FILE *err = open_memstream(&last.err, &el);
  struct tw_cli_io io = {.out = out,
                         .err = err,
                         .in = stdin,
                         .env_url = url,
                         .env_token = token,
                         .clock = tw_clock_real(),
                         .sleep_ms = no_sleep};
  last.code = tw_cli_run(argc, argv, &io);
  fclose(out);
  fclose(err);
  return last.code;
}

static bool has(const char *hay, const char *needle) {
  return hay && strstr(hay, needle);
}

static char dir[64], path[128];
static struct tw_store *store;
static struct tw_tenancy *ten;
static struct tw_api *api;
/* The admin's token from the file; ann's (tenant-admin of ml) and the CI
 * account's as the CLI printed them. */
static char admin[TW_TOKEN_LEN + 2], ann[TW_TOKEN_LEN + 2],
    ci[TW_TOKEN_LEN + 2];

/* The admin sets up a tenant, a principal and its token. */
static void admin_sets_up_a_tenant(void **state) {
  /* without a token */
  TW_CHECK(cli(NULL, "tenant", "list", NULL) == 5 &&
               has(last.err, "rejected (401)"),
           "no token: %d %s", last.code, last.err);
  /* the admin sets up */
  TW_CHECK(cli(admin, "tenant", "create", "ml", NULL) == 0 &&
               has(last.out, "ml\n"),
           "tenant create: %d %s", last.code, last.err);
  TW_CHECK(cli(admin, "tenant", "create", "vision", NULL) == 0,
           "tenant create vision");
  TW_CHECK(cli(admin, "user", "create", "ann", "--tenant", "ml", "--role",
               "tenant-admin", NULL) == 0 &&
               has(last.out, "ann   ml      tenant-admin"),
           "user create: %d %s %s", last.code, last.out, last.err);
  TW_CHECK(cli(admin, "user", "create", "x", "--role", "boss", NULL) == 5 &&
               has(last.err, "role"),
           "bad role: %d %s", last.code, last.err);
  TW_CHECK(cli(admin, "token", "create", "--principal", "ann", "--ttl", "7d",
               NULL) == 0,
           "token create: %d %s", last.code, last.err);
  snprintf(ann, sizeof ann, "%s", last.out ? last.out : "");
  ann[strcspn(ann, "\n")] = '\0';
  TW_CHECK(strlen(ann) == TW_TOKEN_LEN && !strncmp(ann, "twt_", 4),
           "stdout holds the token alone: \"%s\"", ann);
  TW_CHECK(has(last.err, "for ann (tenant ml)") &&
               has(last.err, "shown this once"),
           "token create says what: %s", last.err);
}

/* The tenant-admin makes a CI account and sees its own tenant only. */
static void tenant_admin_sees_its_tenant(void **state) {
  /* the tenant-admin makes a CI account and sees its own tenant only */
  TW_CHECK(cli(ann, "user", "create", "ci-bot", "--role", "ci", "--service",
               NULL) == 0 &&
               has(last.out, "ci-bot  ml      ci    service"),
           "ci user: %d %s %s", last.code, last.out, last.err);
  TW_CHECK(cli(ann, "user", "create", "spy", "--tenant", "vision", "--role",
               "viewer", NULL) == 5 &&
               has(last.err, "(404)"),
           "another tenant's user: %d %s", last.code, last.err);
  TW_CHECK(cli(ann, "tenant", "list", NULL) == 0 && has(last.out, "ml") &&
               !has(last.out, "vision"),
           "tenant list: %s", last.out);
  TW_CHECK(cli(ann, "token", "create", "--principal", "ci-bot", "--name",
               "pipeline", NULL) == 0,
           "ci token: %s", last.err);
  snprintf(ci, sizeof ci, "%s", last.out ? last.out : "");
  ci[strcspn(ci, "\n")] = '\0';
  TW_CHECK(cli(ann, "token", "list", NULL) == 0 && has(last.out, "pipeline") &&
               !has(last.out, "twt_"),
           "token list: %s", last.out);
}

static void quotas_need_the_admin_and_if_match(void **state) {
  /* quotas: admin only, through If-Match */
  TW_CHECK(cli(ann, "quota", "set", "ml", "--vcpus", "8", NULL) == 5 &&
               has(last.err, "(403)"),
           "tenant-admin sets a quota: %d %s", last.code, last.err);
  TW_CHECK(
      cli(admin, "quota", "set", "ml", "--vcpus", "64:16", "--gpus", "A100=8",
          "--spot-share", "50", "--cohort", "research", NULL) == 0 &&
          has(last.out, "Cohort      research") && has(last.out, "64     16"),
      "quota set: %d %s %s", last.code, last.out, last.err);
  TW_CHECK(cli(admin, "quota", "set", "ml", "--jobs", "4", NULL) == 0 &&
               has(last.out, "64     16") && has(last.out, "jobs       4"),
           "quota set keeps the rest: %s", last.out);
  TW_CHECK(cli(ann, "quota", "get", "ml", NULL) == 0 &&
               has(last.out, "gpus.A100  8"),
           "quota get: %s", last.out);
  TW_CHECK(cli(ann, "quota", "get", "vision", NULL) == 5 &&
               has(last.err, "(404)"),
           "another tenant's quota: %d", last.code);
  /* admission names the quota */
  char spec[160];
  snprintf(spec, sizeof spec, "%s/big.yaml", dir);
  FILE *f = fopen(spec, "w");
  fputs("name: big\nresources:\n  cpus: 99\n", f);
  fclose(f);
  TW_CHECK(cli(ci, "submit", spec, NULL) == 5 &&
               has(last.err, "quota vcpus of tenant ml"),
           "quota refusal: %d %s", last.code, last.err);
}

static void budgets(void **state) {
  /* budgets */
  TW_CHECK(cli(ann, "budget", "set", "ml", "--limit", "250", "--hard",
               "--stop-running", NULL) == 0 &&
               has(last.out, "Limit       $250.00") &&
               has(last.out, "hard, stops running jobs"),
           "budget set: %d %s %s", last.code, last.out, last.err);
  TW_CHECK(cli(ann, "budget", "set", "ml", "--project", "train", "--limit",
               "99.50", "--thresholds", "80,100", NULL) == 0 &&
               has(last.out, "Thresholds  80% 100%"),
           "project budget: %s %s", last.out, last.err);
  TW_CHECK(cli(ann, "budget", "set", "ml", "--limit", "300", NULL) == 0 &&
               has(last.out, "Limit       $300.00") && has(last.out, "hard"),
           "budget change keeps the mode: %s", last.out);
  TW_CHECK(cli(ann, "budget", "status", "ml", NULL) == 0 &&
               has(last.out, "train") && has(last.out, "$300.00") &&
               has(last.out, "$99.50"),
           "budget status: %s", last.out);
  TW_CHECK(cli(ci, "budget", "get", "ml", NULL) == 5 && has(last.err, "(403)"),
           "ci reads a budget: %d", last.code);
}

static void audit_lists_and_verifies(void **state) {
  /* audit */
  TW_CHECK(cli(ann, "audit", "list", "--action",
               "PUT /v1/tenants/{tenant}/budget", NULL) == 0 &&
               has(last.out, "ann") && has(last.out, "ok"),
           "audit list: %s %s", last.out, last.err);
  TW_CHECK(cli(ann, "audit", "verify", NULL) == 5 && has(last.err, "(403)"),
           "verify needs the admin: %d %s", last.code, last.err);
  TW_CHECK(cli(admin, "audit", "verify", NULL) == 0 &&
               has(last.out, "audit log intact: "),
           "verify: %d %s %s", last.code, last.out, last.err);
  TW_CHECK(cli(admin, "audit", "export", NULL) == 0 &&
               has(last.out, "\"prev_hash\""),
           "export: %d", last.code);
  int lines = 0;
  for (const char *p = last.out; p && (p = strchr(p, '\n')); p++)
    lines++;
  TW_CHECK(lines > 10, "export: %d lines", lines);
}

static void audit_verify_db_names_an_altered_entry(void **state) {
  /* tamper with the file; verify --db names the entry */
  tw_api_stop(api);
  tw_tenancy_free(ten);
  tw_store_close(store);
  api = NULL;
  ten = NULL;
  store = NULL;
  TW_CHECK(cli(NULL, "audit", "verify", "--db", path, NULL) == 0,
           "--db intact: %s", last.out);
  sqlite3 *db;
  sqlite3_open(path, &db);
  sqlite3_exec(db, "UPDATE audit_log SET principal = 'nobody' WHERE seq = 4",
               NULL, NULL, NULL);
  sqlite3_close(db);
  TW_CHECK(cli(NULL, "audit", "verify", "--db", path, NULL) == 1 &&
               has(last.out, "audit log broken: entry 4 was altered"),
           "--db altered: %d %s", last.code, last.out);
}

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-rbac-cli-XXXXXX");
  char tokfile[128];
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/c.db", dir);
  snprintf(tokfile, sizeof tokfile, "%s/admin.token", dir);
  curl_global_init(CURL_GLOBAL_ALL);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .sync_full = false};
  if (tw_store_open(&so, &store, &err))
    return -1;
  struct tw_tenancy_opts to = {.store = store, .admin_token_file = tokfile};
  if (tw_tenancy_open(&to, &ten, &err))
    return -1;
  struct tw_api_opts ao = {
      .listen = "127.0.0.1:0", .store = store, .auth = {.tenancy = ten}};
  if (tw_api_start(&ao, &api, &err))
    return -1;
  snprintf(url, sizeof url, "http://127.0.0.1:%d", tw_api_port(api));
  FILE *f = fopen(tokfile, "r");
  if (!f || !fgets(admin, sizeof admin, f))
    return -1;
  fclose(f);
  admin[strcspn(admin, "\n")] = '\0';
  return 0;
}

static int teardown(void **state) {
  free(last.out);
  free(last.err);
  last.out = last.err = NULL;
  tw_api_stop(api);
  tw_tenancy_free(ten);
  tw_store_close(store);
  curl_global_cleanup();
  const char *files[] = {"c.db", "c.db-wal", "c.db-shm", "admin.token",
                         "big.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[200];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

int main(void) {
  /* In order: each test works on what the ones before set up. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(admin_sets_up_a_tenant),
      cmocka_unit_test(tenant_admin_sees_its_tenant),
      cmocka_unit_test(quotas_need_the_admin_and_if_match),
      cmocka_unit_test(budgets),
      cmocka_unit_test(audit_lists_and_verifies),
      cmocka_unit_test(audit_verify_db_names_an_altered_entry),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
