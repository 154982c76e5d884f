/* test_agent_daemon.c - the broker's agent routes over HTTP, played by
 * the test as tradewind-agent would (docs/agent.md): the REST server, the
 * scheduler and the agent module in this process over the in-process fake
 * provider with `agent: true`, on an injected clock the test advances.
 *
 * The bootstrap is read from the launch's user data; its token, attempt
 * and broker address are what the test then calls with:
 *   register -> logs -> exit 3: the job ends failed with exit 3 and its
 *   output reads back through GET /v1/jobs/{id}/logs; a replayed exit
 *   answers 200 and changes nothing, later reports 401;
 *   exit 0: succeeded;
 *   a bad token 401, another attempt's token 403, an agent token on every
 *   non-agent route 403 (the RBAC rows of the agent principal);
 *   heartbeats lost with the instance gone: an interruption, placed again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/sched/agent.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"
#include "tests/twtest.h"

static char dir[64], path[128], base[64];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_agent *agent;
static struct tw_sched *sched;
static struct tw_api *api;

/* ---- HTTP ---------------------------------------------------------------- */

struct resp {
  long status;
  struct tw_buf body;
  char www_auth[256], replayed[16], complete[16];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static void grab(const char *line, size_t len, const char *name, char *dst,
                 size_t dsz) {
  size_t hl = strlen(name);
  if (len > hl && !strncasecmp(line, name, hl)) {
    const char *v = line + hl;
    size_t vl = len - hl;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
      vl--;
    while (vl && *v == ' ')
      v++, vl--;
    snprintf(dst, dsz, "%.*s", (int)vl, v);
  }
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  grab(p, sz * n, "www-authenticate:", r->www_auth, sizeof r->www_auth);
  grab(p, sz * n, "idempotent-replayed:", r->replayed, sizeof r->replayed);
  grab(p, sz * n, "tradewind-output-complete:", r->complete,
       sizeof r->complete);
  return sz * n;
}

/* One request to url_base + p with token (NULL: none) and body (NULL:
 * none; binary for octet-stream). */
static struct resp call(const char *url_base, const char *method, const char *p,
                        const char *token, const char *ctype,
                        const char *body) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", url_base, p);
  struct resp r;
  memset(&r, 0, sizeof r);
  tw_buf_init(&r.body);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  char auth[128];
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
  }
  if (ctype) {
    char ct[96];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    h = curl_slist_append(h, ct);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  TW_CHECK(curl_easy_perform(c) == CURLE_OK, "%s %s: no answer", method, url);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

static void expect(struct resp *r, long status, const char *what) {
  TW_CHECK(r->status == status, "%s: status %ld, expected %ld: %.300s", what,
           r->status, status, r->body.data ? r->body.data : "");
}

static void drop(struct resp *r) { tw_buf_release(&r->body); }

/* ---- the stack ----------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-agentd-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/a.db", dir);
  tw_clock_fake_init(&clk, 1790000000000LL);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  struct tw_node *cfg = NULL;
  static const char CFG[] = "{agent: true}";
  if (tw_store_open(&so, &store, &err) ||
      tw_node_parse_yaml(CFG, sizeof CFG - 1, &cfg, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", cfg, &clk, &prov, &err))
    return -1;
  tw_node_free(cfg);
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.instance_type, sizeof o.instance_type, "node");
  o.vcpus = 2;
  o.market = TW_MARKET_ON_DEMAND;
  o.price_uusd_per_hour = 10000;
  for (int z = 0; z < 3; z++) {
    snprintf(o.zone, sizeof o.zone, "r1%c", 'a' + z);
    o.price_uusd_per_hour += 1000;
    tw_offer_make_id(&o);
    tw_fake_add_offer(tw_fake_of(prov), &o);
  }
  /* the agent's URL is the server's, known once it listens */
  struct tw_agent_opts ao = {.store = store,
                             .clock = &clk,
                             .preinstalled = true,
                             .agent_path = "tradewind-agent",
                             .heartbeat_s = 10,
                             .heartbeat_timeout_s = 120,
                             .max_log_bytes = 1 << 20,
                             .grace_s = 30};
  if (tw_agent_new(&ao, &agent, &err))
    return -1;
  struct tw_sched_opts sopt = {.store = store,
                               .clock = &clk,
                               .providers = &prov,
                               .n_providers = 1,
                               .agent = agent};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = store,
                             .clock = &clk,
                             .providers = &prov,
                             .n_providers = 1,
                             .auth = {.open = true},
                             .agent = agent};
  curl_global_init(CURL_GLOBAL_ALL);
  if (tw_sched_new(&sopt, &sched, &err) || tw_api_start(&aopt, &api, &err))
    return -1;
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(api));
  tw_agent_set_url(agent, base);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_sched_free(sched);
  tw_agent_free(agent);
  tw_provider_free(prov);
  tw_store_close(store);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  curl_global_cleanup();
  return 0;
}

static void tick_ms(int64_t ms) {
  tw_clock_advance(&clk, ms);
  tw_sched_tick(sched);
}

/* ---- what the bootstrap says --------------------------------------------- */

struct boot {
  char token[TW_AGENT_TOKEN_LEN + 1];
  char attempt[64];
  char broker[128];
  char instance[128];
};

/* Between `after` and the next `"` of s. */
static void quoted_after(const char *s, const char *after, char *dst,
                         size_t dsz) {
  const char *p = strstr(s, after);
  TW_CHECK(p != NULL, "no %s in the bootstrap: %.300s", after, s);
  p += strlen(after);
  size_t n = strcspn(p, "\"'");
  snprintf(dst, dsz, "%.*s", (int)n, p);
}

/* Submits a job with script run, places it, and reads its bootstrap. */
static void submit_and_boot(const char *name, const char *run, char id[64],
                            struct boot *b) {
  char body[512];
  snprintf(body, sizeof body,
           "{\"name\":\"%s\",\"resources\":{\"cpus\":2},\"run\":\"%s\"}", name,
           run);
  struct resp r =
      call(base, "POST", "/v1/jobs", NULL, "application/json", body);
  expect(&r, 201, "submit");
  json_t *j = json_loads(r.body.data, 0, NULL);
  snprintf(id, 64, "%s", json_string_value(json_object_get(j, "id")));
  json_decref(j);
  drop(&r);
  struct tw_attempt_rec *at = NULL;
  size_t n = 0;
  for (int i = 0; i < 10; i++) {
    tick_ms(100);
    free(at);
    at = NULL;
    assert_int_equal(tw_store_attempts_of(store, id, &at, &n, NULL), TW_OK);
    if (n && at[n - 1].instance_id[0])
      break;
  }
  TW_CHECK(n && at[n - 1].instance_id[0], "job %s was not launched", id);
  snprintf(b->instance, sizeof b->instance, "%s", at[n - 1].instance_id);
  free(at);
  char ud[8192];
  assert_int_equal(
      tw_fake_user_data(tw_fake_of(prov), b->instance, ud, sizeof ud, NULL),
      TW_OK);
  quoted_after(ud, "printf '%s' '", b->token, sizeof b->token);
  quoted_after(ud, "--attempt \"", b->attempt, sizeof b->attempt);
  quoted_after(ud, "--broker \"", b->broker, sizeof b->broker);
  assert_string_equal(b->broker, base);
  assert_int_equal(strlen(b->token), TW_AGENT_TOKEN_LEN);
}

static struct resp report(const struct boot *b, const char *token,
                          const char *route, const char *body) {
  char p[256];
  snprintf(p, sizeof p, "/v1/agent/attempts/%s/%s", b->attempt, route);
  return call(b->broker, "POST", p, token,
              strncmp(route, "logs", 4) ? "application/json"
                                        : "application/octet-stream",
              body);
}

static void do_register(const struct boot *b) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"instance_id\":\"%s\",\"cloud\":\"local\",\"metadata\":"
           "{\"zone\":\"r1a\"},\"agent_version\":\"0.1.0\"}",
           b->instance);
  struct resp r = report(b, b->token, "register", body);
  expect(&r, 200, "register");
  json_t *j = json_loads(r.body.data, 0, NULL);
  TW_CHECK(j && json_is_string(json_object_get(j, "run")),
           "register answer: %s", r.body.data);
  assert_int_equal(json_integer_value(json_object_get(j, "heartbeat_s")), 10);
  json_t *env = json_object_get(j, "env");
  assert_string_equal(
      json_string_value(json_object_get(env, "TRADEWIND_ATTEMPT")), "1");
  json_decref(j);
  drop(&r);
  /* again, after an agent restart: the same answer */
  struct resp again = report(b, b->token, "register", body);
  expect(&again, 200, "register again");
  drop(&again);
}

static struct resp job(const char *id) {
  char p[128];
  snprintf(p, sizeof p, "/v1/jobs/%s", id);
  return call(base, "GET", p, NULL, NULL, NULL);
}

static const char *state_str(const char *id, char out[32], int *exit_code) {
  struct resp r = job(id);
  expect(&r, 200, "get job");
  json_t *j = json_loads(r.body.data, 0, NULL);
  snprintf(out, 32, "%s", json_string_value(json_object_get(j, "state")));
  json_t *ec = json_object_get(j, "exit_code");
  *exit_code = json_is_integer(ec) ? (int)json_integer_value(ec) : -1;
  json_decref(j);
  drop(&r);
  return out;
}

/* ---- the tests ----------------------------------------------------------- */

static void
exit_3_fails_with_its_output_and_replays_change_nothing(void **state) {
  (void)state;
  char id[64];
  struct boot b;
  submit_and_boot("three", "echo hello; exit 3", id, &b);
  do_register(&b);
  tick_ms(100);
  char st[32];
  int code;
  assert_string_equal(state_str(id, st, &code), "running");

  struct resp r = report(&b, b.token, "logs?stream=stdout&offset=0", "hello\n");
  expect(&r, 200, "logs");
  assert_non_null(strstr(r.body.data, "\"next_offset\":6"));
  drop(&r);
  r = report(&b, b.token, "logs?stream=stdout&offset=0", "hello\n");
  expect(&r, 200, "logs again");
  assert_non_null(strstr(r.body.data, "\"next_offset\":6"));
  drop(&r);
  r = report(&b, b.token, "logs?stream=stdout&offset=100", "x");
  expect(&r, 409, "logs beyond");
  assert_non_null(strstr(r.body.data, "\"next_offset\":6"));
  drop(&r);
  r = report(&b, b.token, "logs?stream=both&offset=0", "x");
  expect(&r, 400, "logs of no stream");
  drop(&r);
  r = report(&b, b.token, "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 200, "heartbeat");
  assert_non_null(strstr(r.body.data, "\"action\":\"none\""));
  drop(&r);
  r = report(&b, b.token, "heartbeat", "{\"phase\":\"walking\"}");
  expect(&r, 400, "heartbeat of no phase");
  assert_non_null(strstr(r.body.data, "\"field\":\"phase\""));
  drop(&r);

  r = report(&b, b.token, "exit",
             "{\"exit_code\":3,\"started_ms\":1,\"ended_ms\":2,"
             "\"after_notice\":false}");
  expect(&r, 200, "exit");
  assert_string_equal(r.replayed, "");
  drop(&r);
  tick_ms(100);
  assert_string_equal(state_str(id, st, &code), "failed");
  assert_int_equal(code, 3);
  char p[128];
  snprintf(p, sizeof p, "/v1/jobs/%s/logs", id);
  r = call(base, "GET", p, NULL, NULL, NULL);
  expect(&r, 200, "job logs");
  assert_string_equal(r.body.data, "hello\n");
  assert_string_equal(r.complete, "true");
  drop(&r);

  /* replayed: 200, no change; anything else now: 401 */
  r = report(&b, b.token, "exit", "{\"exit_code\":0}");
  expect(&r, 200, "replayed exit");
  assert_string_equal(r.replayed, "true");
  drop(&r);
  tick_ms(100);
  assert_string_equal(state_str(id, st, &code), "failed");
  assert_int_equal(code, 3);
  r = report(&b, b.token, "heartbeat", "{\"phase\":\"exited\"}");
  expect(&r, 401, "heartbeat after the end");
  drop(&r);
}

static void exit_0_succeeds(void **state) {
  (void)state;
  char id[64];
  struct boot b;
  submit_and_boot("zero", "true", id, &b);
  do_register(&b);
  struct resp r = report(&b, b.token, "phase", "{\"phase\":\"run\"}");
  expect(&r, 200, "phase");
  drop(&r);
  r = report(&b, b.token, "exit", "{\"exit_code\":0}");
  expect(&r, 200, "exit");
  drop(&r);
  tick_ms(100);
  char st[32];
  int code;
  assert_string_equal(state_str(id, st, &code), "succeeded");
  assert_int_equal(code, 0);
}

static void tokens_reach_their_own_attempt_only(void **state) {
  (void)state;
  char id1[64], id2[64];
  struct boot b1, b2;
  submit_and_boot("one", "sleep 100", id1, &b1);
  submit_and_boot("two", "sleep 100", id2, &b2);
  do_register(&b1);
  /* a bad token: 401 with WWW-Authenticate */
  char bad[TW_AGENT_TOKEN_LEN + 1];
  snprintf(bad, sizeof bad, "twa_%064d", 0);
  struct resp r = report(&b1, bad, "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 401, "unknown token");
  assert_non_null(strstr(r.www_auth, "invalid_token"));
  drop(&r);
  r = report(&b1, "twa_short", "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 401, "malformed token");
  drop(&r);
  r = report(&b1, NULL, "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 403, "no token (the open mode's admin may not report)");
  drop(&r);
  /* another attempt's token: 403, and nothing stored */
  r = report(&b1, b2.token, "exit", "{\"exit_code\":9}");
  expect(&r, 403, "another attempt's token");
  drop(&r);
  tick_ms(100);
  char st[32];
  int code;
  assert_string_equal(state_str(id1, st, &code), "running");
  /* every route that is not an agent's: 403 for an agent token */
  size_t n = 0;
  struct tw_api_route_info *routes = tw_api_route_table(&n);
  size_t checked = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strncmp(routes[i].path, "/v1/agent/", 10) ||
        !strcmp(routes[i].path, "/healthz") ||
        !strcmp(routes[i].path, "/readyz") ||
        !strncmp(routes[i].path, "/ui", 3)) /* the public console files */
      continue;
    char p[256] = "";
    /* every {param} becomes "x" */
    for (const char *s = routes[i].path; *s;) {
      if (*s == '{') {
        strcat(p, "x");
        s = strchr(s, '}') + 1;
      } else {
        strncat(p, s, 1);
        s++;
      }
    }
    r = call(base, routes[i].method, p, b1.token,
             strcmp(routes[i].method, "GET") ? "application/json" : NULL,
             strcmp(routes[i].method, "GET") ? "{}" : NULL);
    TW_CHECK(r.status == 403, "%s %s with an agent token: %ld",
             routes[i].method, p, r.status);
    drop(&r);
    checked++;
  }
  free(routes);
  TW_CHECK(checked >= 30, "only %zu routes checked", checked);
  /* the binary: none served here */
  r = call(base, "GET", "/v1/agent/binary", b1.token, NULL, NULL);
  expect(&r, 404, "binary");
  drop(&r);
}

static void heartbeats_lost_with_the_instance_gone_place_again(void **state) {
  (void)state;
  char id[64];
  struct boot b;
  submit_and_boot("lost", "sleep 1000", id, &b);
  do_register(&b);
  tick_ms(100);
  struct resp r = report(&b, b.token, "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 200, "heartbeat");
  drop(&r);
  assert_int_equal(
      tw_fake_set_state(tw_fake_of(prov), b.instance, TW_INST_TERMINATED),
      TW_OK);
  tick_ms(100000);
  char st[32];
  int code;
  assert_string_equal(state_str(id, st, &code), "running");
  tick_ms(21000);
  tick_ms(1000);
  struct tw_attempt_rec *at = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(store, id, &at, &n, NULL), TW_OK);
  TW_CHECK(n >= 2, "not placed again: %zu attempts", n);
  assert_string_equal(at[0].end_reason, "interrupted");
  free(at);
  state_str(id, st, &code);
  TW_CHECK(strcmp(st, "failed") && strcmp(st, "succeeded"),
           "the job ended %s on an interruption", st);
  /* the old token is revoked with its attempt */
  r = report(&b, b.token, "heartbeat", "{\"phase\":\"run\"}");
  expect(&r, 401, "a revoked token");
  drop(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          exit_3_fails_with_its_output_and_replays_change_nothing, setup,
          teardown),
      cmocka_unit_test_setup_teardown(exit_0_succeeds, setup, teardown),
      cmocka_unit_test_setup_teardown(tokens_reach_their_own_attempt_only,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          heartbeats_lost_with_the_instance_gone_place_again, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
