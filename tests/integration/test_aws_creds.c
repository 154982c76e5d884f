/* test_aws_creds.c - the AWS credential chain (providers/aws/aws_creds.h)
 * against the fake STS, IMDSv2 and ECS container endpoints of an
 * in-process tradewind-fakecloud (tests/fakecloud/creds.c): each source
 * of the chain, its order, profile chains through source_profile, the
 * refresh before expiry (once, however many threads ask), and the EC2
 * adapter signing with temporary keys the fake EC2 checks, token and
 * expiry included. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "providers/aws/aws_creds.h"
#include "providers/http.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakecloud/fakecloud.h"

#define START "2026-05-01T12:00:00Z"

static struct fc_server *srv;
static char base[64];
static char dir[] = "/tmp/tw_aws_creds_XXXXXX";
static struct tw_http *http;
static struct tw_clock clk;
static int64_t start_ms;

/* ---- helpers ------------------------------------------------------------ */

static long ctl(const char *method, const char *path, const char *json,
                struct tw_buf *out) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", base, path);
  const struct tw_http_header h[] = {{"Content-Type", "application/json"}};
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = 1,
                                .body = json,
                                .body_len = json ? strlen(json) : 0,
                                .max_attempts = 1};
  struct tw_http_response r;
  struct tw_err err = {0};
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(http, &req, &r, &err);
  long st = rc ? 0 : r.status;
  if (out) {
    *out = r.body;
    tw_buf_init(&r.body);
    tw_buf_addc(out, '\0');
  }
  tw_http_response_release(&r);
  return st;
}

static void ctl_ok(const char *method, const char *path, const char *json) {
  long st = ctl(method, path, json, NULL);
  TW_CHECK(st == 200, "%s %s -> %ld", method, path, st);
}

/* A counter of GET /_fake/creds. */
static long counter(const char *name) {
  struct tw_buf b;
  ctl("GET", "/_fake/creds", NULL, &b);
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *p = b.data ? strstr(b.data, key) : NULL;
  long v = p ? strtol(p + strlen(key), NULL, 10) : -1;
  tw_buf_release(&b);
  return v;
}

/* Both clocks forward: ours (the cache's) and the fake's (its expiries
 * and its signature window). */
static void advance(int64_t ms) {
  tw_clock_advance(&clk, ms);
  char j[64];
  snprintf(j, sizeof j, "{\"advance_ms\":%lld}", (long long)ms);
  ctl_ok("POST", "/_fake/clock", j);
}

static char *write_file(const char *name, const char *text) {
  char *path = tw_asprintf("%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  TW_CHECK(f != NULL, "%s", path);
  fputs(text, f);
  fclose(f);
  return path;
}

static const char *const ENV_VARS[] = {"AWS_ACCESS_KEY_ID",
                                       "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN",
                                       "AWS_PROFILE",
                                       "AWS_CONFIG_FILE",
                                       "AWS_SHARED_CREDENTIALS_FILE",
                                       "AWS_WEB_IDENTITY_TOKEN_FILE",
                                       "AWS_ROLE_ARN",
                                       "AWS_ROLE_SESSION_NAME",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                       "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                       "AWS_EC2_METADATA_DISABLED",
                                       "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                       NULL};

/* Every test starts from an empty environment, empty files and a fresh
 * fake. */
static int fresh(void **state) {
  (void)state;
  for (const char *const *v = ENV_VARS; *v; v++)
    unsetenv(*v);
  char *nf = tw_asprintf("%s/none", dir);
  setenv("AWS_CONFIG_FILE", nf, 1);
  setenv("AWS_SHARED_CREDENTIALS_FILE", nf, 1);
  free(nf);
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  ctl("POST", "/_fake/reset", NULL, NULL);
  return 0;
}

static struct tw_aws_creds_opts opts(void) {
  char *sts = tw_asprintf("%s/sts/", base);
  static char sts_buf[128];
  snprintf(sts_buf, sizeof sts_buf, "%s", sts);
  free(sts);
  return (struct tw_aws_creds_opts){.clock = &clk,
                                    .http = http,
                                    .sts_endpoint = sts_buf,
                                    .imds_endpoint = base};
}

static struct tw_aws_creds *chain(const struct tw_aws_creds_opts *o) {
  struct tw_aws_creds *c = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_aws_creds_new(o, &c, &err), TW_OK, err);
  return c;
}

static void get_ok(struct tw_aws_creds *c, struct tw_aws_key *k) {
  struct tw_err err = {0};
  TW_CHECK_RC(tw_aws_creds_get(c, k, &err), TW_OK, err);
}

/* ---- each source -------------------------------------------------------- */

static void environment_first(void **state) {
  (void)state;
  setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
  /* a credentials file too: the environment comes first */
  char *f =
      write_file("credentials", "[default]\naws_access_key_id = AKIDFILE\n"
                                "aws_secret_access_key = file-secret\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", f, 1);
  struct tw_aws_creds_opts o = opts();
  struct tw_aws_creds *c = chain(&o);
  struct tw_aws_key k;
  get_ok(c, &k);
  TW_CHECK_STR(tw_aws_creds_source(c), "environment");
  TW_CHECK_STR(k.access_key, "AKIDENV");
  TW_CHECK_STR(k.session_token, "");
  tw_aws_creds_free(c);
  /* a profile named in the config skips the environment (botocore) */
  o.profile = "default";
  c = chain(&o);
  get_ok(c, &k);
  TW_CHECK_STR(tw_aws_creds_source(c), "shared-credentials-file");
  TW_CHECK_STR(k.access_key, "AKIDFILE");
  TW_CHECK_STR(k.secret_key, "file-secret");
  tw_aws_creds_free(c);
  free(f);
}

static void profiles_in_files(void **state) {
  (void)state;
  char *cred = write_file("credentials2",
                          "# comment\n[dev]\n  aws_access_key_id=AKIDDEV\n"
                          "aws_secret_access_key = dev secret \n"
                          "aws_session_token = tok-dev\n[other]\n"
                          "aws_access_key_id = AKIDOTHER\n");
  char *conf = write_file("config", "[default]\nregion = us-east-1\n"
                                    "[profile cfgonly]\n"
                                    "aws_access_key_id = AKIDCFG\n"
                                    "aws_secret_access_key = cfg-secret\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
  setenv("AWS_CONFIG_FILE", conf, 1);
  setenv("AWS_PROFILE", "dev", 1);
  struct tw_aws_creds_opts o = opts();
  struct tw_aws_creds *c = chain(&o);
  struct tw_aws_key k;
  get_ok(c, &k);
  TW_CHECK_STR(tw_aws_creds_source(c), "shared-credentials-file");
  TW_CHECK_STR(k.access_key, "AKIDDEV");
  TW_CHECK_STR(k.secret_key, "dev secret");
  TW_CHECK_STR(k.session_token, "tok-dev");
  tw_aws_creds_free(c);
  setenv("AWS_PROFILE", "cfgonly", 1);
  c = chain(&o);
  get_ok(c, &k);
  TW_CHECK_STR(tw_aws_creds_source(c), "config-file");
  TW_CHECK_STR(k.access_key, "AKIDCFG");
  tw_aws_creds_free(c);
  /* a named profile that is nowhere: an error naming it and the files */
  setenv("AWS_PROFILE", "nosuch", 1);
  struct tw_err err = {0};
  TW_CHECK(tw_aws_creds_new(&o, &c, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "aws profile nosuch: not in"), "%s", err.msg);
  TW_CHECK_STR(err.field, "profile");
  /* a profile without complete keys and nothing after it: no credentials */
  setenv("AWS_PROFILE", "other", 1);
  tw_err_clear(&err);
  TW_CHECK(tw_aws_creds_new(&o, &c, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "no credentials"), "%s", err.msg);
  free(cred);
  free(conf);
}

static void role_chain_through_source_profiles(void **state) {
  (void)state;
  /* A assumes RoleA with B's credentials, B assumes RoleB with C's keys */
  char *conf = write_file(
      "config3",
      "[profile A]\nrole_arn = arn:aws:iam::123456789012:role/RoleA\n"
      "source_profile = B\nrole_session_name = build-1\nduration_seconds = "
      "1800\nexternal_id = ext-7\n"
      "[profile B]\nrole_arn = arn:aws:iam::123456789012:role/RoleB\n"
      "source_profile = C\n");
  char *cred = write_file(
      "credentials3", "[C]\naws_access_key_id = " FC_DEFAULT_ACCESS_KEY
                      "\naws_secret_access_key = " FC_DEFAULT_SECRET_KEY "\n");
  setenv("AWS_CONFIG_FILE", conf, 1);
  setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
  struct tw_aws_creds_opts o = opts();
  o.profile = "A";
  struct tw_aws_creds *c = chain(&o);
  TW_CHECK_STR(tw_aws_creds_source(c), "assume-role");
  struct tw_aws_key k;
  get_ok(c, &k);
  TW_CHECK_INT(counter("assume_role"), 2);
  TW_CHECK(!strncmp(k.access_key, "ASIA", 4), "%s", k.access_key);
  TW_CHECK(*k.session_token);
  /* DurationSeconds of the profile: 30 minutes from the fake's now */
  TW_CHECK_INT(k.expires_ms, start_ms + 1800 * 1000LL);
  /* cached: no more calls */
  get_ok(c, &k);
  TW_CHECK_INT(counter("assume_role"), 2);
  tw_aws_creds_free(c);

  /* a loop A -> B -> A */
  char *loop = write_file("config4",
                          "[profile A]\nrole_arn = arn:aws:iam::123456789012:"
                          "role/x\nsource_profile = B\n[profile B]\nrole_arn "
                          "= arn:aws:iam::123456789012:role/y\nsource_profile "
                          "= A\n");
  setenv("AWS_CONFIG_FILE", loop, 1);
  struct tw_err err = {0};
  TW_CHECK(tw_aws_creds_new(&o, &c, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "a loop?"), "%s", err.msg);
  /* credential_source: Environment */
  char *cs = write_file("config5", "[profile A]\nrole_arn = arn:aws:iam::"
                                   "123456789012:role/x\ncredential_source = "
                                   "Environment\n");
  setenv("AWS_CONFIG_FILE", cs, 1);
  setenv("AWS_ACCESS_KEY_ID", FC_DEFAULT_ACCESS_KEY, 1);
  setenv("AWS_SECRET_ACCESS_KEY", FC_DEFAULT_SECRET_KEY, 1);
  c = chain(&o);
  get_ok(c, &k);
  TW_CHECK_INT(counter("assume_role"), 3);
  tw_aws_creds_free(c);
  char *bad = write_file("config6", "[profile A]\nrole_arn = arn:aws:iam::"
                                    "123456789012:role/x\ncredential_source "
                                    "= Laptop\n");
  setenv("AWS_CONFIG_FILE", bad, 1);
  tw_err_clear(&err);
  TW_CHECK(tw_aws_creds_new(&o, &c, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "credential_source Laptop: expected"), "%s",
           err.msg);
  free(conf);
  free(cred);
  free(loop);
  free(cs);
  free(bad);
}

static void web_identity(void **state) {
  (void)state;
  ctl_ok("POST", "/_fake/creds", "{\"web_token\":\"eyJhbGc.eyJzdWI.c2ln\"}");
  char *tok = write_file("token", "eyJhbGc.eyJzdWI.c2ln\n");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tok, 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod", 1);
  setenv("AWS_ROLE_SESSION_NAME", "pod-7", 1);
  struct tw_aws_creds_opts o = opts();
  struct tw_aws_creds *c = chain(&o);
  TW_CHECK_STR(tw_aws_creds_source(c), "web-identity");
  struct tw_aws_key k;
  get_ok(c, &k);
  TW_CHECK_INT(counter("assume_role_web_identity"), 1);
  TW_CHECK(*k.session_token);
  tw_aws_creds_free(c);
  /* a rotated token the identity provider no longer vouches for */
  free(write_file("token", "eyJhbGc.eyJzdWI.b2xk\n"));
  c = chain(&o);
  struct tw_err err = {0};
  TW_CHECK(tw_aws_creds_get(c, &k, &err) == TW_E_AUTH);
  TW_CHECK_STR(err.detail, "InvalidIdentityToken");
  tw_aws_creds_free(c);
  free(tok);
}

static void container_endpoint(void **state) {
  (void)state;
  ctl_ok("POST", "/_fake/creds", "{\"container_token\":\"ecs-auth-1\"}");
  char *uri = tw_asprintf("%s/v2/credentials/task-1", base);
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri, 1);
  char *tf = write_file("ecs_token", "ecs-auth-1\n");
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tf, 1);
  struct tw_aws_creds_opts o = opts();
  struct tw_aws_creds *c = chain(&o);
  TW_CHECK_STR(tw_aws_creds_source(c), "container");
  struct tw_aws_key k;
  get_ok(c, &k);
  TW_CHECK_INT(counter("container"), 1);
  tw_aws_creds_free(c);
  /* the wrong authorization token: refused, and said so */
  unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-auth-2", 1);
  c = chain(&o);
  struct tw_err err = {0};
  TW_CHECK(tw_aws_creds_get(c, &k, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "HTTP 401"), "%s", err.msg);
  TW_CHECK(!strstr(err.msg, "ecs-auth"), "secret in the error: %s", err.msg);
  tw_aws_creds_free(c);
  free(uri);
  free(tf);
}

/* ---- IMDSv2 and the refresh --------------------------------------------- */

struct racer {
  struct tw_aws_creds *c;
  struct tw_aws_key k;
  enum tw_rc rc;
};

static void *race(void *arg) {
  struct racer *r = arg;
  struct tw_err err = {0};
  r->rc = tw_aws_creds_get(r->c, &r->k, &err);
  return NULL;
}

static void instance_role_refreshed_before_expiry(void **state) {
  (void)state;
  unsetenv("AWS_EC2_METADATA_DISABLED");
  ctl_ok("POST", "/_fake/creds", "{\"ttl_s\":1200}");
  struct tw_aws_creds_opts o = opts();
  struct tw_aws_creds *c = chain(&o);
  TW_CHECK_STR(tw_aws_creds_source(c), "instance-metadata");
  struct tw_aws_key k1, k2;
  get_ok(c, &k1);
  TW_CHECK_INT(counter("imds"), 1);
  TW_CHECK_INT(k1.expires_ms, start_ms + 1200 * 1000LL);
  /* 20-minute keys: the advisory window is 10 minutes; at 9 minutes the
   * cached ones are used */
  advance(9 * 60 * 1000);
  get_ok(c, &k2);
  TW_CHECK_INT(counter("imds"), 1);
  TW_CHECK_STR(k2.access_key, k1.access_key);
  /* at 12 minutes: refreshed, once, whoever many threads ask */
  advance(3 * 60 * 1000);
  struct racer r[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    r[i].c = c;
    pthread_create(&t[i], NULL, race, &r[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    TW_CHECK_INT(r[i].rc, TW_OK);
  }
  TW_CHECK_INT(counter("imds"), 2);
  get_ok(c, &k2);
  TW_CHECK(strcmp(k2.access_key, k1.access_key), "not refreshed");
  TW_CHECK_INT(k2.expires_ms, start_ms + (12 + 20) * 60 * 1000LL);
  /* IMDSv1 is not used: the fake refuses a request without the session
   * token, and the chain never sent one */
  TW_CHECK_INT(counter("rejected"), 0);
  tw_aws_creds_free(c);

  /* a refresh that fails while the keys still last keeps them */
  c = chain(&o);
  get_ok(c, &k1);
  ctl_ok("POST", "/_fake/creds", "{\"down\":true}");
  advance(11 * 60 * 1000);
  get_ok(c, &k2);
  TW_CHECK_STR(k2.access_key, k1.access_key);
  /* past expiry nothing is left to sign with: an error, not stale keys */
  advance(10 * 60 * 1000);
  struct tw_err err = {0};
  TW_CHECK(tw_aws_creds_get(c, &k2, &err) != TW_OK);
  ctl_ok("POST", "/_fake/creds", "{\"down\":false}");
  get_ok(c, &k2);
  TW_CHECK(strcmp(k2.access_key, k1.access_key), "not refreshed");
  tw_aws_creds_free(c);
}

/* ---- the adapter ------------------------------------------------------- */

static struct tw_provider *adapter(const char *extra) {
  char *doc = tw_asprintf("name: aws-creds\ntype: aws\nendpoint: %s\n"
                          "regions: [us-east-1]\nimage: ami-0abc\n"
                          "backoff_base_ms: 1\nbackoff_cap_ms: 5\n"
                          "price_list: false\n%s",
                          base, extra);
  struct tw_node *cfg = NULL;
  struct tw_err err = {0};
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err))
    TW_FAIL("provider: %s", err.msg);
  tw_node_free(cfg);
  free(doc);
  return p;
}

static void adapter_signs_with_an_assumed_role(void **state) {
  (void)state;
  setenv("AWS_ACCESS_KEY_ID", FC_DEFAULT_ACCESS_KEY, 1);
  setenv("AWS_SECRET_ACCESS_KEY", FC_DEFAULT_SECRET_KEY, 1);
  char *extra = tw_asprintf("role_arn: arn:aws:iam::123456789012:role/broker\n"
                            "sts_endpoint: %s/sts/\n",
                            base);
  struct tw_provider *p = adapter(extra);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  struct tw_err err = {0};
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(counter("assume_role"), 1);
  /* the session revoked: EC2 answers ExpiredToken, the adapter fetches
   * new keys and signs again */
  ctl_ok("POST", "/_fake/creds", "{\"expire_all\":true}");
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(counter("assume_role"), 2);
  tw_instance_list_release(&l);
  tw_provider_free(p);
  free(extra);
}

static void adapter_on_the_instance_role(void **state) {
  (void)state;
  unsetenv("AWS_EC2_METADATA_DISABLED");
  char *extra = tw_asprintf("imds_endpoint: %s\n", base);
  struct tw_provider *p = adapter(extra);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  struct tw_err err = {0};
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(counter("imds"), 1);
  tw_instance_list_release(&l);
  tw_provider_free(p);
  free(extra);
  /* keys named in the config still win, and a missing one is an error */
  struct tw_node *cfg = NULL;
  const char *doc = "name: a\ntype: aws\nregions: [us-east-1]\n"
                    "access_key_env: TW_NO_SUCH_VAR\n";
  TW_CHECK_RC(tw_node_parse_yaml(doc, strlen(doc), &cfg, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(tw_provider_new(tw_adapters, cfg, NULL, &p, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "TW_NO_SUCH_VAR"), "%s", err.msg);
  tw_node_free(cfg);
}

/* ---- setup -------------------------------------------------------------- */

static int start(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!mkdtemp(dir))
    return -1;
  struct fc_opts o;
  fc_opts_init(&o);
  o.clock_speed = 0;
  tw_time_parse_rfc3339(START, &o.start_ms);
  start_ms = o.start_ms;
  tw_clock_fake_init(&clk, start_ms);
  struct tw_err err = {0};
  if (fc_server_start(&o, &srv, &err) || tw_http_new(NULL, &http, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  return 0;
}

static int stop(void **state) {
  (void)state;
  tw_http_free(http);
  fc_server_stop(srv);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  curl_global_cleanup();
  return 0;
}

/* each test restarts the fake's clock at START with ours */
static int fresh_clock(void **state) {
  fresh(state);
  tw_clock_fake_init(&clk, start_ms);
  ctl_ok("POST", "/_fake/clock", "{\"set\":\"" START "\"}");
  return 0;
}

/* the adapter signs with the real clock: the fake's runs at real time */
static int fresh_real(void **state) {
  fresh(state);
  char now[40], j[80];
  tw_time_fmt_rfc3339(tw_clock_now_ms(tw_clock_real()), now, sizeof now);
  snprintf(j, sizeof j, "{\"set\":\"%s\"}", now);
  ctl_ok("POST", "/_fake/clock", j);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(environment_first, fresh_clock),
      cmocka_unit_test_setup(profiles_in_files, fresh_clock),
      cmocka_unit_test_setup(role_chain_through_source_profiles, fresh_clock),
      cmocka_unit_test_setup(web_identity, fresh_clock),
      cmocka_unit_test_setup(container_endpoint, fresh_clock),
      cmocka_unit_test_setup(instance_role_refreshed_before_expiry,
                             fresh_clock),
      cmocka_unit_test_setup(adapter_signs_with_an_assumed_role, fresh_real),
      cmocka_unit_test_setup(adapter_on_the_instance_role, fresh_real),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
