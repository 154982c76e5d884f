/* test_agent_broker.c - the broker's side of tradewind-agent
 * (broker/sched/agent.h, agent_msg.h, agent_follow.c, store_agent.h):
 *
 *   - the token: HMAC-SHA256 of the client token under the agent key, its
 *     hash, its shape; the key made once and kept, sealed when secrets are
 *     configured (a plain key found then is sealed and dropped);
 *   - the bootstrap: the contract's script, byte for byte, with and
 *     without the CA, fetch and preinstalled; the same attempt the same
 *     bytes;
 *   - the report bodies: what each parser takes and refuses;
 *   - the logs: resumable by offset, bounded;
 *   - the state machine over the scheduler and the in-process fake
 *     provider with `agent: true`: registration makes the attempt running,
 *     exit 3 fails the job with 3, exit 0 succeeds, a replayed exit changes
 *     nothing and the token is revoked with the attempt; heartbeats lost
 *     with the instance gone is an interruption, alive but silent is
 *     terminated and placed again; a cancel is handed over at the heartbeat
 *     and ends on the exit report (or, silent, after grace + timeout); an
 *     agent's notice goes the providers' way and its exit after the notice
 *     interrupts the attempt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_agent.h"
#include "broker/sched/agent.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched.h"
#include "broker/tenancy/secrets.h"
#include "tests/fakes/fake_provider.h"
#include "tests/twtest.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define T0 1790000000000LL

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_fake *fake;
static struct tw_agent *agent;
static struct tw_sched *sched;

static int open_store(void) {
  snprintf(dir, sizeof dir, "/tmp/tw-agentb-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/s.db", dir);
  tw_clock_fake_init(&clk, T0);
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  return tw_store_open(&so, &store, NULL) ? -1 : 0;
}

static int setup_store(void **state) {
  (void)state;
  return open_store();
}

static int teardown_store(void **state) {
  (void)state;
  tw_store_close(store);
  store = NULL;
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

/* ---- the token ----------------------------------------------------------- */

static void the_token_is_the_hmac_of_the_client_token(void **state) {
  (void)state;
  unsigned char key[32];
  for (int i = 0; i < 32; i++)
    key[i] = (unsigned char)i;
  char tok[TW_AGENT_TOKEN_LEN + 1], h[65];
  tw_agent_token_derive(key, "j-abc-1", tok);
  /* HMAC-SHA256 computed independently (Python's hmac module) */
  assert_string_equal(
      tok,
      "twa_e6a1ebf9521187d1d2676195b8d73993e6722e83fb1867710cb2c843448c83c4");
  tw_agent_token_hash(tok, h);
  assert_string_equal(
      h, "4e3e2761753d837fc71ac6c196f2bc569e8784b4da240306e1f1c810d432e57a");
  assert_true(tw_agent_token_shape(tok));
  char other[TW_AGENT_TOKEN_LEN + 1];
  tw_agent_token_derive(key, "j-abc-2", other);
  TW_CHECK(strcmp(tok, other) != 0, "attempts 1 and 2 share a token");
  key[0] ^= 1;
  tw_agent_token_derive(key, "j-abc-1", other);
  TW_CHECK(strcmp(tok, other) != 0, "another key gives the same token");
  assert_false(tw_agent_token_shape("twa_1234"));
  assert_false(tw_agent_token_shape(
      "twt_e6a1ebf9521187d1d2676195b8d73993e6722e83fb1867710cb2c843448c83c4"));
  assert_false(tw_agent_token_shape(
      "twa_E6A1EBF9521187D1D2676195B8D73993E6722E83FB1867710CB2C843448C83C4"));
}

static struct tw_agent *new_agent(struct tw_secrets *sec) {
  struct tw_agent_opts o = {.store = store,
                            .secrets = sec,
                            .clock = &clk,
                            .preinstalled = true,
                            .agent_path = "/opt/tw/tradewind-agent",
                            .broker_url = "http://broker.test:8420",
                            .heartbeat_s = 10,
                            .heartbeat_timeout_s = 120,
                            .max_log_bytes = 4096,
                            .grace_s = 30};
  struct tw_agent *a = NULL;
  struct tw_err err = {0};
  if (tw_agent_new(&o, &a, &err))
    fail_msg("agent: %s", err.msg);
  return a;
}

/* The token the bootstrap in ud carries. */
static void token_of(const char *ud, char tok[TW_AGENT_TOKEN_LEN + 1]) {
  const char *p = strstr(ud, "printf '%s' '");
  TW_CHECK(p != NULL, "no token line in: %.200s", ud);
  memcpy(tok, p + 13, TW_AGENT_TOKEN_LEN);
  tok[TW_AGENT_TOKEN_LEN] = '\0';
}

static void the_key_is_made_once_and_sealed_with_secrets(void **state) {
  (void)state;
  /* an attempt row to hang tokens on */
  struct tw_job_new req = {.name = "k",
                           .tenant = "default",
                           .project = "default",
                           .spec_json = "{\"name\":\"k\"}"};
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_create(store, &req, &j, NULL, NULL), TW_OK);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "fake-a",
                              .offer_id = "o",
                              .market = "on-demand"};
  struct tw_attempt_rec at;
  struct tw_err oerr = {0};
  if (tw_store_attempt_open(store, &an, &at, &oerr))
    fail_msg("attempt: %s", oerr.msg);

  struct tw_agent *a = new_agent(NULL);
  struct tw_buf ud1, ud2;
  tw_buf_init(&ud1);
  tw_buf_init(&ud2);
  if (tw_agent_user_data(a, j.id, at.id, at.n, at.client_token, "aws", &ud1,
                         &oerr))
    fail_msg("user data: %s", oerr.msg);
  tw_agent_free(a);
  /* a restart keeps the key: the same attempt, the same bytes */
  a = new_agent(NULL);
  assert_int_equal(tw_agent_user_data(a, j.id, at.id, at.n, at.client_token,
                                      "aws", &ud2, NULL),
                   TW_OK);
  assert_string_equal(ud1.data, ud2.data);
  char tok[TW_AGENT_TOKEN_LEN + 1];
  token_of(ud1.data, tok);
  struct tw_agent_caller c;
  assert_int_equal(tw_agent_authenticate(a, tok, &c, NULL), TW_OK);
  assert_int_equal(c.attempt_id, at.id);
  assert_string_equal(c.client_token, at.client_token);
  assert_true(c.live);
  tw_agent_free(a);
  bool plain = false;
  unsigned char key[32];
  assert_int_equal(tw_store_agent_key_get(store, &plain, key, NULL), TW_OK);
  assert_true(plain);

  /* secrets configured: the plain key is sealed (tokens stay valid) and
   * the plain row dropped */
  char keyfile[160];
  snprintf(keyfile, sizeof keyfile, "%s/key", dir);
  FILE *f = fopen(keyfile, "w");
  assert_non_null(f);
  fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
        f);
  fclose(f);
  struct tw_secrets_opts so = {
      .store = store, .clock = &clk, .key_file = keyfile};
  struct tw_secrets *sec = NULL;
  assert_int_equal(tw_secrets_open(&so, &sec, NULL), TW_OK);
  a = new_agent(sec);
  assert_int_equal(tw_store_agent_key_get(store, &plain, key, NULL), TW_OK);
  TW_CHECK(!plain, "the key is still kept in plain beside its sealed copy");
  char *v = NULL;
  size_t len = 0;
  assert_int_equal(tw_secrets_get(sec, TW_AGENT_KEY_SECRET, &v, &len, NULL),
                   TW_OK);
  assert_int_equal(len, 64);
  tw_secrets_value_free(v, len);
  assert_int_equal(tw_agent_authenticate(a, tok, &c, NULL), TW_OK);
  tw_agent_free(a);
  /* and from the sealed copy at the next start */
  a = new_agent(sec);
  tw_buf_reset(&ud2);
  assert_int_equal(tw_agent_user_data(a, j.id, at.id, at.n, at.client_token,
                                      "aws", &ud2, NULL),
                   TW_OK);
  assert_string_equal(ud1.data, ud2.data);
  /* an unknown or malformed token is refused */
  tok[10] = tok[10] == 'a' ? 'b' : 'a';
  assert_int_equal(tw_agent_authenticate(a, tok, &c, NULL), TW_E_AUTH);
  assert_int_equal(tw_agent_authenticate(a, "twa_x", &c, NULL), TW_E_AUTH);
  tw_agent_free(a);
  tw_secrets_free(sec);
  tw_buf_release(&ud1);
  tw_buf_release(&ud2);
  tw_job_rec_release(&j);
}

/* ---- the bootstrap ------------------------------------------------------- */

static const char BOOT_FETCH_TLS[] =
    "#!/bin/sh\n"
    "# tradewind bootstrap: job j-1 attempt 2\n"
    "set -eu\n"
    "dir=\"${TRADEWIND_AGENT_DIR:-/var/lib/tradewind/j-1-2}\"\n"
    "mkdir -p \"$dir\" && chmod 700 \"$dir\" && cd \"$dir\"\n"
    "umask 077\n"
    "printf '%s' 'twa_00' > token\n"
    "cat > ca.pem <<'TW_CA'\n"
    "-----BEGIN CERTIFICATE-----\n"
    "MIIB\n"
    "-----END CERTIFICATE-----\n"
    "TW_CA\n"
    "curl -fsS --retry 10 --retry-all-errors --cacert ca.pem \\\n"
    "  -H \"Authorization: Bearer $(cat token)\" \\\n"
    "  -o tradewind-agent \"https://b.example:8420/v1/agent/binary\"\n"
    "echo \"abc123  tradewind-agent\" | sha256sum -c - >/dev/null\n"
    "chmod 700 tradewind-agent\n"
    "exec ./tradewind-agent --broker \"https://b.example:8420\" --attempt "
    "\"j-1-2\" \\\n"
    "  --token-file token --ca ca.pem --cloud azure \\\n"
    "  --dir \"$dir\" >agent.log 2>&1\n";

static const char BOOT_PRE[] =
    "#!/bin/sh\n"
    "# tradewind bootstrap: job j-1 attempt 1\n"
    "set -eu\n"
    "dir=\"${TRADEWIND_AGENT_DIR:-/var/lib/tradewind/j-1-1}\"\n"
    "mkdir -p \"$dir\" && chmod 700 \"$dir\" && cd \"$dir\"\n"
    "umask 077\n"
    "printf '%s' 'twa_00' > token\n"
    "exec '/opt/tw/tradewind-agent' --broker \"http://b:1\" --attempt "
    "\"j-1-1\" \\\n"
    "  --token-file token --cloud local \\\n"
    "  --dir \"$dir\" >agent.log 2>&1\n";

static void the_bootstrap_is_the_contracts_script(void **state) {
  (void)state;
  struct tw_buf b;
  tw_buf_init(&b);
  struct tw_agent_boot fetch = {
      .job_id = "j-1",
      .attempt_n = 2,
      .client_token = "j-1-2",
      .token = "twa_00",
      .broker_url = "https://b.example:8420",
      .ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
      .binary_sha256 = "abc123",
      .cloud = "azure"};
  tw_agent_bootstrap(&fetch, &b);
  assert_string_equal(b.data, BOOT_FETCH_TLS);
  tw_buf_reset(&b);
  struct tw_agent_boot pre = {.job_id = "j-1",
                              .attempt_n = 1,
                              .client_token = "j-1-1",
                              .token = "twa_00",
                              .broker_url = "http://b:1",
                              .preinstalled = true,
                              .agent_path = "/opt/tw/tradewind-agent",
                              .cloud = "fake"};
  tw_agent_bootstrap(&pre, &b);
  assert_string_equal(b.data, BOOT_PRE);
  /* well under EC2's 16 KiB even with a CA */
  assert_true(sizeof BOOT_FETCH_TLS < 16384);
  tw_buf_release(&b);
}

/* ---- the report bodies ----------------------------------------------------
 */

#define BODY(s) s, sizeof s - 1

static void each_body_parses_or_names_its_field(void **state) {
  (void)state;
  struct tw_err err = {0};
#define E (tw_err_clear(&err), &err)
  struct tw_agent_register_msg reg;
  assert_int_equal(
      tw_agent_parse_register(BODY("{\"instance_id\":\"i-1\",\"cloud\":\"aws\","
                                   "\"metadata\":{\"zone\":\"z\"},"
                                   "\"agent_version\":\"0.1.0\",\"new\":1}"),
                              &reg, E),
      TW_OK);
  assert_string_equal(reg.instance_id, "i-1");
  assert_string_equal(reg.metadata_json, "{\"zone\":\"z\"}");
  tw_agent_register_msg_release(&reg);
  assert_int_equal(
      tw_agent_parse_register(BODY("{\"cloud\":\"aws\"}"), &reg, E),
      TW_E_INVALID);
  assert_string_equal(err.field, "instance_id");
  assert_int_equal(tw_agent_parse_register(
                       BODY("{\"instance_id\":\"i\",\"metadata\":3}"), &reg, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "metadata");
  assert_int_equal(tw_agent_parse_register(BODY("[1]"), &reg, E), TW_E_INVALID);
  assert_int_equal(tw_agent_parse_register(BODY("{\"instance_id\":"), &reg, E),
                   TW_E_INVALID);

  struct tw_agent_phase_msg ph;
  assert_int_equal(tw_agent_parse_heartbeat(
                       BODY("{\"phase\":\"exited\",\"at_ms\":5}"), &ph, E),
                   TW_OK);
  assert_string_equal(ph.phase, "exited");
  assert_int_equal(ph.at_ms, 5);
  assert_int_equal(tw_agent_parse_phase(BODY("{\"phase\":\"exited\"}"), &ph, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "phase");
  assert_non_null(strstr(err.msg, "expected setup or run"));
  assert_int_equal(tw_agent_parse_heartbeat(
                       BODY("{\"phase\":\"run\",\"at_ms\":-1}"), &ph, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "at_ms");

  struct tw_agent_checkpoint_msg ck;
  assert_int_equal(
      tw_agent_parse_checkpoint(BODY("{\"progress_s\":40}"), &ck, E), TW_OK);
  assert_int_equal(ck.progress_s, 40);
  assert_int_equal(tw_agent_parse_checkpoint(BODY("{}"), &ck, E), TW_E_INVALID);
  assert_string_equal(err.field, "progress_s");

  struct tw_agent_notice_msg no;
  assert_int_equal(
      tw_agent_parse_notice(BODY("{\"kind\":\"interruption\",\"action\":"
                                 "\"terminate\",\"deadline_ms\":9,\"source\":"
                                 "\"imds\",\"event_id\":\"e1\"}"),
                            &no, E),
      TW_OK);
  assert_string_equal(no.event_id, "e1");
  assert_int_equal(no.deadline_ms, 9);
  assert_int_equal(
      tw_agent_parse_notice(BODY("{\"kind\":\"reboot\",\"source\":\"imds\","
                                 "\"event_id\":\"e1\"}"),
                            &no, E),
      TW_E_INVALID);
  assert_string_equal(err.field, "kind");
  assert_int_equal(tw_agent_parse_notice(BODY("{\"kind\":\"rebalance\","
                                              "\"source\":\"imds\"}"),
                                         &no, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "event_id");

  struct tw_agent_exit_msg ex;
  assert_int_equal(tw_agent_parse_exit(BODY("{\"exit_code\":3,\"started_ms\":1,"
                                            "\"ended_ms\":2,\"after_notice\":"
                                            "false}"),
                                       &ex, E),
                   TW_OK);
  assert_true(ex.has_code);
  assert_int_equal(ex.exit_code, 3);
  assert_int_equal(tw_agent_parse_exit(BODY("{\"signal\":9}"), &ex, E), TW_OK);
  assert_false(ex.has_code);
  assert_int_equal(ex.signal, 9);
  assert_int_equal(
      tw_agent_parse_exit(BODY("{\"exit_code\":0,\"signal\":9}"), &ex, E),
      TW_E_INVALID);
  assert_string_equal(err.field, "exit_code");
  assert_int_equal(tw_agent_parse_exit(BODY("{\"exit_code\":256}"), &ex, E),
                   TW_E_INVALID);
  assert_int_equal(
      tw_agent_parse_exit(BODY("{\"exit_code\":1,\"after_notice\":1}"), &ex, E),
      TW_E_INVALID);
  assert_string_equal(err.field, "after_notice");

  bool is_err;
  int64_t off;
  assert_int_equal(tw_agent_parse_log_query("stderr", "12", &is_err, &off, E),
                   TW_OK);
  assert_true(is_err);
  assert_int_equal(off, 12);
  assert_int_equal(tw_agent_parse_log_query("both", "0", &is_err, &off, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "stream");
  assert_int_equal(tw_agent_parse_log_query("stdout", "-1", &is_err, &off, E),
                   TW_E_INVALID);
  assert_string_equal(err.field, "offset");
}
#undef E

/* ---- the state machine --------------------------------------------------- */

static int setup_sched(void **state) {
  (void)state;
  if (open_store())
    return -1;
  struct tw_node *cfg = NULL;
  static const char CFG[] = "{agent: true}";
  if (tw_node_parse_yaml(CFG, sizeof CFG - 1, &cfg, NULL) ||
      tw_provider_new_ops(&tw_provider_fake, "fake-a", cfg, &clk, &prov, NULL))
    return -1;
  tw_node_free(cfg);
  if (!tw_provider_agent(prov))
    return -1;
  fake = tw_fake_of(prov);
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "r1a");
  snprintf(o.instance_type, sizeof o.instance_type, "m.large");
  o.arch = TW_ARCH_X86_64;
  o.market = TW_MARKET_ON_DEMAND;
  o.price_uusd_per_hour = 100000;
  o.billing_granularity_s = 1;
  o.vcpus = 2;
  o.memory_mib = 8192;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake, &o);
  /* a second zone: an interruption blocklists the first offer */
  snprintf(o.zone, sizeof o.zone, "r1b");
  o.price_uusd_per_hour = 110000;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake, &o);
  agent = new_agent(NULL);
  struct tw_sched_opts so = {.store = store,
                             .clock = &clk,
                             .providers = &prov,
                             .n_providers = 1,
                             .agent = agent};
  return tw_sched_new(&so, &sched, NULL) ? -1 : 0;
}

static int teardown_sched(void **state) {
  (void)state;
  tw_sched_free(sched);
  sched = NULL;
  tw_agent_free(agent);
  agent = NULL;
  tw_provider_free(prov);
  return teardown_store(state);
}

static void submit(const char *yaml, char id[TW_JOB_ID_LEN + 1]) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, &err))
    fail_msg("spec: %s", err.msg);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_job_new req = {.name = spec.name,
                           .tenant = spec.tenant,
                           .project = spec.project,
                           .priority = spec.priority,
                           .spec_json = b.data};
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_create(store, &req, &j, NULL, &err), TW_OK);
  memcpy(id, j.id, TW_JOB_ID_LEN + 1);
  tw_job_rec_release(&j);
  tw_buf_release(&b);
  tw_spec_release(&spec);
}

static struct tw_job_rec job_of(const char *id) {
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  return j;
}

static enum tw_job_state state_of(const char *id) {
  struct tw_job_rec j = job_of(id);
  enum tw_job_state s = j.state;
  tw_job_rec_release(&j);
  return s;
}

/* The job's last attempt. */
static struct tw_attempt_rec last_attempt(const char *id) {
  struct tw_attempt_rec *at = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(store, id, &at, &n, NULL), TW_OK);
  TW_CHECK(n > 0, "job %s has no attempt", id);
  struct tw_attempt_rec r = at[n - 1];
  free(at);
  return r;
}

/* Whether one of the job's events has text in its reason. */
static bool has_event(const char *id, const char *text) {
  struct tw_job_event *ev = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_job_events(store, id, &ev, &n, NULL), TW_OK);
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    found = found || (ev[i].reason && strstr(ev[i].reason, text));
    free(ev[i].reason);
  }
  free(ev);
  return found;
}

static void tick_ms(int64_t ms) {
  tw_clock_advance(&clk, ms);
  tw_sched_tick(sched);
}

/* Places the job and plays the agent up to registration: the caller. */
static void launch_and_register(const char *id, struct tw_agent_caller *c,
                                struct tw_attempt_rec *at) {
  for (int i = 0; i < 5 && state_of(id) != TW_JOB_PROVISIONING; i++)
    tick_ms(100);
  struct tw_job_rec pj = job_of(id);
  TW_CHECK(pj.state == TW_JOB_PROVISIONING, "job %s is %s: %s", id,
           tw_job_state_str(pj.state), pj.reason);
  tw_job_rec_release(&pj);
  *at = last_attempt(id);
  char ud[8192];
  bool differed = true;
  assert_int_equal(
      tw_fake_user_data(fake, at->instance_id, ud, sizeof ud, &differed),
      TW_OK);
  assert_false(differed);
  char head[128];
  snprintf(head, sizeof head,
           "#!/bin/sh\n# tradewind bootstrap: job %s attempt %d\n", id, at->n);
  TW_CHECK(!strncmp(ud, head, strlen(head)), "user data: %.200s", ud);
  char tok[TW_AGENT_TOKEN_LEN + 1];
  token_of(ud, tok);
  assert_int_equal(tw_agent_authenticate(agent, tok, c, NULL), TW_OK);
  assert_string_equal(c->client_token, at->client_token);
  struct tw_agent_register_msg m = {.metadata_json = "{}"};
  snprintf(m.instance_id, sizeof m.instance_id, "%s", at->instance_id);
  snprintf(m.cloud, sizeof m.cloud, "local");
  struct tw_buf ans;
  tw_buf_init(&ans);
  assert_int_equal(tw_agent_on_register(agent, c, &m, &ans, NULL), TW_OK);
  TW_CHECK(strstr(ans.data, "\"grace_s\":30,\"heartbeat_s\":10") != NULL,
           "register answer: %s", ans.data);
  TW_CHECK(strstr(ans.data, "\"TRADEWIND_JOB_ID\":") != NULL,
           "register answer without the job's env: %s", ans.data);
  tw_buf_release(&ans);
  tick_ms(100);
  TW_CHECK(state_of(id) == TW_JOB_RUNNING, "job %s is %s after register", id,
           tw_job_state_str(state_of(id)));
}

static void report_exit(const struct tw_agent_caller *c, bool has_code, int v,
                        bool after_notice, bool want_first) {
  struct tw_agent_exit_msg e = {.has_code = has_code,
                                .exit_code = has_code ? v : 0,
                                .signal = has_code ? 0 : v,
                                .after_notice = after_notice};
  struct tw_agent_caller now;
  /* the caller as the token says now (live or not) */
  now = *c;
  bool first = !want_first;
  assert_int_equal(tw_agent_on_exit(agent, &now, &e, &first, NULL), TW_OK);
  TW_CHECK(first == want_first, "exit report first=%d, expected %d", first,
           want_first);
}

static void exit_3_fails_the_job_and_a_replay_changes_nothing(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: three\nresources: {cpus: 2}\nrun: \"echo hi; exit 3\"\n"
         "duration: 10s\n",
         id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  /* the clock is no longer what ends it: far past its duration it runs */
  tick_ms(60000);
  for (int i = 0; i < 5; i++) {
    struct tw_agent_phase_msg hb = {.phase = "run"};
    const char *action = NULL;
    assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL),
                     TW_OK);
    assert_string_equal(action, "none");
    tick_ms(10000);
  }
  assert_int_equal(state_of(id), TW_JOB_RUNNING);

  /* its output, resumable by offset */
  enum tw_store_log_result res;
  int64_t next = -1;
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 0, "hi\n", 3, &res, &next, NULL),
      TW_OK);
  assert_int_equal(res, TW_STORE_LOG_OK);
  assert_int_equal(next, 3);
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 0, "hi\nmore\n", 8, &res, &next, NULL),
      TW_OK);
  assert_int_equal(next, 8); /* the first 3 bytes skipped */
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 20, "x", 1, &res, &next, NULL), TW_OK);
  assert_int_equal(res, TW_STORE_LOG_GAP);
  assert_int_equal(next, 8);
  assert_int_equal(
      tw_agent_on_logs(agent, &c, true, 0, "oops\n", 5, &res, &next, NULL),
      TW_OK);
  assert_int_equal(next, 5);
  char big[4096];
  memset(big, 'x', sizeof big);
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 8, big, sizeof big, &res, &next, NULL),
      TW_OK);
  assert_int_equal(res, TW_STORE_LOG_FULL); /* max_log_bytes 4096 */
  struct tw_buf out;
  tw_buf_init(&out);
  int64_t total = 0;
  assert_int_equal(tw_store_agent_log_read(store, at.id, TW_AGENT_STDOUT, 1,
                                           100, &out, &total, NULL),
                   TW_OK);
  assert_string_equal(out.data, "i\nmore\n");
  assert_int_equal(total, 8);
  tw_buf_release(&out);

  report_exit(&c, true, 3, false, true);
  tick_ms(100);
  struct tw_job_rec j = job_of(id);
  TW_CHECK(j.state == TW_JOB_FAILED, "job is %s", tw_job_state_str(j.state));
  assert_int_equal(j.exit_code, 3);
  tw_job_rec_release(&j);
  struct tw_attempt_rec end = last_attempt(id);
  assert_int_equal(end.state, TW_ATTEMPT_ENDED);
  assert_string_equal(end.end_reason, "completed");
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  TW_CHECK(tw_instance_state_gone(inst.state),
           "instance %s not terminated after the exit", at.instance_id);

  /* the token is revoked with the attempt; a replayed exit changes
   * nothing */
  char ud[8192], tok[TW_AGENT_TOKEN_LEN + 1];
  tw_fake_user_data(fake, at.instance_id, ud, sizeof ud, NULL);
  token_of(ud, tok);
  struct tw_agent_caller after;
  assert_int_equal(tw_agent_authenticate(agent, tok, &after, NULL), TW_OK);
  assert_false(after.live);
  assert_true(after.exited);
  report_exit(&after, true, 0, false, false);
  tick_ms(100);
  j = job_of(id);
  assert_int_equal(j.state, TW_JOB_FAILED);
  assert_int_equal(j.exit_code, 3);
  tw_job_rec_release(&j);
}

static void exit_0_succeeds(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: zero\nresources: {cpus: 2}\nrun: \"true\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  report_exit(&c, true, 0, false, true);
  report_exit(&c, true, 0, false, false); /* sent twice before the pass */
  tick_ms(100);
  struct tw_job_rec j = job_of(id);
  assert_int_equal(j.state, TW_JOB_SUCCEEDED);
  assert_int_equal(j.exit_code, 0);
  tw_job_rec_release(&j);
}

static void heartbeats_lost_with_the_instance_gone_interrupt(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: lost\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  assert_int_equal(tw_fake_set_state(fake, at.instance_id, TW_INST_TERMINATED),
                   TW_OK);
  tick_ms(60000);
  assert_int_equal(state_of(id), TW_JOB_RUNNING); /* not yet: 60 s < 120 s */
  tick_ms(61000);
  struct tw_attempt_rec end;
  memset(&end, 0, sizeof end);
  struct tw_attempt_rec *all = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(store, id, &all, &n, NULL), TW_OK);
  assert_true(n >= 1);
  end = all[0];
  free(all);
  assert_int_equal(end.state, TW_ATTEMPT_ENDED);
  assert_string_equal(end.end_reason, "interrupted");
  TW_CHECK(has_event(id, "no heartbeat for 121s and the instance is "
                         "terminated"),
           "no event says the heartbeats were lost");
  struct tw_job_rec j = job_of(id);
  TW_CHECK(j.state != TW_JOB_FAILED && j.state != TW_JOB_SUCCEEDED,
           "an interruption ended the job: %s", tw_job_state_str(j.state));
  tw_job_rec_release(&j);
  /* placed again: a second attempt with its own bootstrap and token */
  for (int i = 0; i < 5 && n < 2; i++) {
    tick_ms(1000);
    assert_int_equal(tw_store_attempts_of(store, id, &all, &n, NULL), TW_OK);
    free(all);
  }
  TW_CHECK(n >= 2, "the job was not placed again (%zu attempts)", n);
  struct tw_attempt_rec again = last_attempt(id);
  assert_int_not_equal(again.id, at.id);
}

static void
an_alive_but_silent_instance_is_terminated_and_replaced(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: silent\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  tick_ms(121000);
  struct tw_attempt_rec *all = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(store, id, &all, &n, NULL), TW_OK);
  struct tw_attempt_rec first = all[0];
  free(all);
  assert_int_equal(first.state, TW_ATTEMPT_ENDED);
  assert_string_equal(first.end_reason, "interrupted");
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  TW_CHECK(tw_instance_state_gone(inst.state),
           "the silent instance %s was left running", at.instance_id);
  TW_CHECK(has_event(id, "its agent sent no heartbeat for 121s"),
           "no event says the agent was silent");
}

static void a_cancel_is_handed_over_and_ends_on_the_exit(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: cancel\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "cancelled by the test"};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);
  tick_ms(100);
  /* the attempt waits for its agent; the instance still runs */
  assert_int_equal(last_attempt(id).state, TW_ATTEMPT_RUNNING);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  assert_false(tw_instance_state_gone(inst.state));
  struct tw_agent_phase_msg hb = {.phase = "run"};
  const char *action = NULL;
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  assert_string_equal(action, "cancel");
  report_exit(&c, false, 15, false, true);
  tick_ms(100);
  struct tw_attempt_rec end = last_attempt(id);
  assert_int_equal(end.state, TW_ATTEMPT_ENDED);
  assert_string_equal(end.end_reason, "cancelled");
  assert_int_equal(state_of(id), TW_JOB_CANCELLED);
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  assert_true(tw_instance_state_gone(inst.state));

  /* an agent that never answers: terminated after grace + timeout */
  char id2[TW_JOB_ID_LEN + 1];
  submit("name: cancel2\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id2);
  struct tw_agent_caller c2;
  struct tw_attempt_rec at2;
  launch_and_register(id2, &c2, &at2);
  t.id = id2;
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);
  tick_ms(100);
  tick_ms(100000); /* < 30 s + 120 s */
  assert_int_equal(last_attempt(id2).state, TW_ATTEMPT_RUNNING);
  tick_ms(51000);
  end = last_attempt(id2);
  assert_int_equal(end.state, TW_ATTEMPT_ENDED);
  assert_string_equal(end.end_reason, "cancelled");
  assert_int_equal(tw_fake_get(fake, at2.instance_id, &inst), TW_OK);
  assert_true(tw_instance_state_gone(inst.state));
}

/* One pass that must not wait for a held call: held calls block until
 * released, so any finite bound tells a pass that waited from one that
 * did not (generous for a loaded machine). */
static void timed_tick_ms(int64_t ms) {
  int64_t t0 = tw_sched_mono_ms();
  tick_ms(ms);
  int64_t took = tw_sched_mono_ms() - t0;
  TW_CHECK(took < 3000, "a pass took %lld ms: it waited for a held call",
           (long long)took);
}

/* Passes until attempt id's state is want (the workers' answers are
 * applied by the passes after them); false after ~4 s. */
static bool ticks_until_ended(const char *id, int64_t attempt_id) {
  for (int i = 0; i < 200; i++) {
    struct tw_attempt_rec *all = NULL;
    size_t n = 0;
    assert_int_equal(tw_store_attempts_of(store, id, &all, &n, NULL), TW_OK);
    bool ended = false;
    for (size_t k = 0; k < n; k++)
      ended = ended || (all[k].id == attempt_id &&
                        all[k].state == TW_ATTEMPT_ENDED);
    free(all);
    if (ended)
      return true;
    usleep(20 * 1000);
    tick_ms(100);
  }
  return false;
}

static struct tw_attempt_rec attempt_by_id(const char *id, int64_t attempt_id) {
  struct tw_attempt_rec *all = NULL, r;
  size_t n = 0;
  memset(&r, 0, sizeof r);
  assert_int_equal(tw_store_attempts_of(store, id, &all, &n, NULL), TW_OK);
  for (size_t k = 0; k < n; k++)
    if (all[k].id == attempt_id)
      r = all[k];
  free(all);
  return r;
}

static void a_hung_cloud_holds_no_pass_of_a_silent_agent(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: hung\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  /* silent past the timeout while describes hang: the pass goes on */
  tw_fake_hold(fake, TW_POP_DESCRIBE, true);
  timed_tick_ms(121000);
  timed_tick_ms(100);
  assert_int_equal(tw_fake_held(fake, TW_POP_DESCRIBE), 1);
  assert_int_equal(attempt_by_id(id, at.id).state, TW_ATTEMPT_RUNNING);
  char other[TW_JOB_ID_LEN + 1];
  submit("name: other\nresources: {cpus: 2}\nrun: \"true\"\n", other);
  for (int i = 0; i < 5 && state_of(other) != TW_JOB_PROVISIONING; i++)
    timed_tick_ms(100);
  TW_CHECK(state_of(other) == TW_JOB_PROVISIONING,
           "another job waited for the hung describe: %s",
           tw_job_state_str(state_of(other)));
  /* heard from while the describe hung: its answer changes nothing */
  struct tw_agent_phase_msg hb = {.phase = "run"};
  const char *action = NULL;
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  tw_fake_hold(fake, TW_POP_DESCRIBE, false);
  for (int i = 0; i < 10; i++) {
    usleep(20 * 1000);
    timed_tick_ms(100);
  }
  assert_int_equal(attempt_by_id(id, at.id).state, TW_ATTEMPT_RUNNING);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  assert_false(tw_instance_state_gone(inst.state));

  /* silent again, the terminate hangs: the attempt stays live (its
   * instance may still run) and the pass goes on */
  tw_fake_hold(fake, TW_POP_TERMINATE, true);
  timed_tick_ms(121000);
  for (int i = 0; i < 50 && !tw_fake_held(fake, TW_POP_TERMINATE); i++) {
    usleep(20 * 1000);
    timed_tick_ms(100);
  }
  assert_int_equal(tw_fake_held(fake, TW_POP_TERMINATE), 1);
  assert_int_equal(attempt_by_id(id, at.id).state, TW_ATTEMPT_RUNNING);
  tw_fake_hold(fake, TW_POP_TERMINATE, false);
  TW_CHECK(ticks_until_ended(id, at.id), "the silent attempt never ended");
  struct tw_attempt_rec end = attempt_by_id(id, at.id);
  assert_string_equal(end.end_reason, "interrupted");
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  assert_true(tw_instance_state_gone(inst.state));
  TW_CHECK(has_event(id, "its agent sent no heartbeat for"),
           "no event says the agent was silent");
}

static void a_cancels_terminate_waits_on_the_workers(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: cancel3\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "cancelled by the test"};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);
  tick_ms(100);
  /* no exit report within grace + timeout, and the cloud hangs */
  tw_fake_hold(fake, TW_POP_TERMINATE, true);
  timed_tick_ms(151000);
  for (int i = 0; i < 50 && !tw_fake_held(fake, TW_POP_TERMINATE); i++) {
    usleep(20 * 1000);
    timed_tick_ms(100);
  }
  assert_int_equal(tw_fake_held(fake, TW_POP_TERMINATE), 1);
  timed_tick_ms(100);
  assert_int_equal(attempt_by_id(id, at.id).state, TW_ATTEMPT_RUNNING);
  tw_fake_hold(fake, TW_POP_TERMINATE, false);
  TW_CHECK(ticks_until_ended(id, at.id), "the cancelled attempt never ended");
  struct tw_attempt_rec end = attempt_by_id(id, at.id);
  assert_string_equal(end.end_reason, "cancelled");
  assert_int_equal(state_of(id), TW_JOB_CANCELLED);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, at.instance_id, &inst), TW_OK);
  assert_true(tw_instance_state_gone(inst.state));
}

/* Heartbeats that change nothing but the time are kept in memory and
 * stored in batches; the silence is still measured from the last one. */
static void heartbeats_are_stored_in_batches(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: beats\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  struct tw_agent_phase_msg hb = {.phase = "run"};
  const char *action = NULL;
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  struct tw_store_agent g;
  bool found = false;
  assert_int_equal(tw_store_agent_get(store, at.id, &found, &g, NULL), TW_OK);
  int64_t first = g.last_hb_ms;
  assert_string_equal(g.phase, "run"); /* a new phase is stored at once */
  struct tw_store_stats s0, s1;
  tw_store_stats(store, &s0);
  for (int i = 0; i < 2; i++) {
    tw_clock_advance(&clk, 10000);
    assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL),
                     TW_OK);
  }
  tw_store_stats(store, &s1);
  assert_int_equal(s1.ops, s0.ops); /* nothing new: nothing written */
  assert_int_equal(tw_store_agent_get(store, at.id, &found, &g, NULL), TW_OK);
  assert_int_equal(g.last_hb_ms, first);
  /* the scheduler sees the beats in memory */
  assert_int_equal(tw_agent_last_seen_ms(agent, at.id, g.last_hb_ms),
                   first + 20000);
  tick_ms(100);
  /* a beat 30 s after the last batch stores them all, the latest wins */
  tw_clock_advance(&clk, 15000);
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  assert_int_equal(tw_store_agent_get(store, at.id, &found, &g, NULL), TW_OK);
  assert_int_equal(g.last_hb_ms, tw_clock_now_ms(&clk));
  /* stopping stores what is in memory */
  tw_clock_advance(&clk, 10000);
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  assert_int_equal(tw_store_agent_get(store, at.id, &found, &g, NULL), TW_OK);
  assert_int_equal(g.last_hb_ms, tw_clock_now_ms(&clk) - 10000);
  tw_agent_flush_heartbeats(agent);
  assert_int_equal(tw_store_agent_get(store, at.id, &found, &g, NULL), TW_OK);
  assert_int_equal(g.last_hb_ms, tw_clock_now_ms(&clk));
  /* a broker started later (a restart) counts the silence from its own
   * start: beats its predecessor heard but never stored are not lost
   * ones; an attempt never heard from is not helped */
  tw_clock_advance(&clk, 100000);
  struct tw_agent *later = new_agent(NULL);
  assert_int_equal(tw_agent_last_seen_ms(later, at.id, g.last_hb_ms),
                   tw_clock_now_ms(&clk));
  assert_int_equal(tw_agent_last_seen_ms(later, at.id, 0), 0);
  tw_agent_free(later);
}

static char *read_all(const char *file, size_t *len) {
  FILE *f = fopen(file, "rb");
  if (!f)
    return NULL;
  char *b = malloc(1 << 20);
  *len = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}

static void read_stream(int64_t attempt_id, int64_t from, const char *want) {
  struct tw_buf out;
  tw_buf_init(&out);
  int64_t total = 0;
  assert_int_equal(tw_store_agent_log_read(store, attempt_id, TW_AGENT_STDOUT,
                                           from, 1 << 20, &out, &total, NULL),
                   TW_OK);
  TW_CHECK(out.len == strlen(want) && !memcmp(out.data, want, out.len),
           "read from %lld: \"%.*s\", want \"%s\"", (long long)from,
           (int)out.len, out.data ? out.data : "", want);
  tw_buf_release(&out);
}

/* A file store keeps the agent's output in segment files beside the
 * database, the rows saying where; bytes beyond the committed rows (a
 * crash between the write and the commit) are never read. */
static void the_output_lives_beside_the_database(void **state) {
  (void)state;
  if (pg.on) /* PostgreSQL keeps the bytes in rows, for every replica */
    return;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: seg\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  enum tw_store_log_result res;
  int64_t next = -1;
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 0, "hello\n", 6, &res, &next, NULL),
      TW_OK);
  assert_int_equal(next, 6);
  assert_int_equal(
      tw_agent_on_logs(agent, &c, true, 0, "oops\n", 5, &res, &next, NULL),
      TW_OK);
  char seg[256];
  snprintf(seg, sizeof seg, "%s-logs/seg-000001", path);
  size_t n = 0;
  char *b = read_all(seg, &n);
  TW_CHECK(b != NULL, "no segment file %s", seg);
  TW_CHECK(n == 11 && !memcmp(b, "hello\noops\n", 11), "segment: %.*s",
           (int)n, b ? b : "");
  free(b);
  /* a crash after a write, before its row: bytes the rows do not hold */
  FILE *f = fopen(seg, "ab");
  assert_non_null(f);
  fputs("LOST", f);
  fclose(f);
  read_stream(at.id, 0, "hello\n");
  /* the store reopened (the daemon restarted): appends go after them */
  tw_sched_free(sched);
  sched = NULL;
  tw_agent_free(agent);
  agent = NULL;
  tw_store_close(store);
  struct tw_store_opts so = {.path = path, .clock = &clk};
  assert_int_equal(tw_store_open(&so, &store, NULL), TW_OK);
  agent = new_agent(NULL);
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 6, "world\n", 6, &res, &next, NULL),
      TW_OK);
  assert_int_equal(res, TW_STORE_LOG_OK);
  assert_int_equal(next, 12);
  read_stream(at.id, 0, "hello\nworld\n");
  read_stream(at.id, 3, "lo\nworld\n");
  read_stream(at.id, 8, "rld\n");
  /* resent bytes are skipped, a gap refused, the bound kept */
  assert_int_equal(tw_agent_on_logs(agent, &c, false, 0, "hello\nworld\n!", 13,
                                    &res, &next, NULL),
                   TW_OK);
  assert_int_equal(next, 13);
  read_stream(at.id, 11, "\n!");
  assert_int_equal(
      tw_agent_on_logs(agent, &c, false, 20, "x", 1, &res, &next, NULL), TW_OK);
  assert_int_equal(res, TW_STORE_LOG_GAP);
  char big[4096];
  memset(big, 'x', sizeof big);
  assert_int_equal(tw_agent_on_logs(agent, &c, false, 13, big, sizeof big,
                                    &res, &next, NULL),
                   TW_OK);
  assert_int_equal(res, TW_STORE_LOG_FULL); /* max_log_bytes 4096 */
  b = read_all(seg, &n);
  TW_CHECK(n == 11 + 4 + 6 + 1, "segment of %zu bytes", n);
  free(b);
  struct tw_sched_opts sopt = {.store = store,
                               .clock = &clk,
                               .providers = &prov,
                               .n_providers = 1,
                               .agent = agent};
  assert_int_equal(tw_sched_new(&sopt, &sched, NULL), TW_OK);
}

static void an_agents_notice_goes_the_providers_way(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: notice\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n"
         "checkpoint: {uri: \"s3://b/ck\", interval: 60s}\n",
         id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  struct tw_agent_notice_msg n = {.kind = "interruption",
                                  .action = "terminate",
                                  .source = "imds",
                                  .event_id = "instance-action-1",
                                  .deadline_ms =
                                      tw_clock_now_ms(&clk) + 120000};
  assert_int_equal(tw_agent_on_notice(agent, &c, &n, NULL), TW_OK);
  assert_int_equal(tw_agent_on_notice(agent, &c, &n, NULL), TW_OK); /* again */
  tick_ms(100);
  struct tw_ckpt_request req;
  char cause[16];
  bool asked = false;
  assert_int_equal(
      tw_checkpoint_request_get(store, at.id, &asked, &req, cause, NULL),
      TW_OK);
  assert_true(asked);
  assert_string_equal(cause, "notice");
  /* the agent signalled the job itself: the heartbeat asks nothing */
  struct tw_agent_phase_msg hb = {.phase = "run"};
  const char *action = NULL;
  assert_int_equal(tw_agent_on_heartbeat(agent, &c, &hb, &action, NULL), TW_OK);
  assert_string_equal(action, "none");
  struct tw_agent_checkpoint_msg ck = {.progress_s = 30};
  assert_int_equal(tw_agent_on_checkpoint(agent, &c, &ck, NULL), TW_OK);
  report_exit(&c, false, 15, true, true);
  tick_ms(100);
  struct tw_attempt_rec *all = NULL;
  size_t na = 0;
  assert_int_equal(tw_store_attempts_of(store, id, &all, &na, NULL), TW_OK);
  struct tw_attempt_rec first = all[0];
  free(all);
  assert_int_equal(first.state, TW_ATTEMPT_ENDED);
  assert_string_equal(first.end_reason, "interrupted");
  enum tw_job_state s = state_of(id);
  TW_CHECK(s == TW_JOB_RECOVERING || s == TW_JOB_PROVISIONING ||
               s == TW_JOB_PENDING,
           "after an exit at the notice the job is %s", tw_job_state_str(s));
  TW_CHECK(has_event(id, "interruption notice for"),
           "the agent's notice was not noted on the job");
  TW_CHECK(has_event(id, "killed by signal 15 after its notice"),
           "the end after the notice is not in the job's events");
  /* what the agent saw saved is what the attempt kept, though the job
   * answered its notice at once (too soon for the contract to assume a
   * save) */
  int64_t kept = -1;
  assert_int_equal(tw_checkpoint_progress(store, id, &kept, NULL), TW_OK);
  assert_int_equal(kept, 30);
  TW_CHECK(has_event(id, "progress kept: 30s"), "no event says 30s kept");
}

/* The same interruption seen by the provider's API and by the agent is
 * one notice: one note on the job, whichever comes first. */
static void a_notice_from_two_sources_is_one(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: twice\nresources: {cpus: 2}\nrun: \"sleep 1000\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  assert_int_equal(tw_fake_interrupt(fake, at.instance_id, 120000), TW_OK);
  int64_t deadline = tw_clock_now_ms(&clk) + 120000;
  tick_ms(100); /* the provider's notice */
  /* another word for the action, so a second note would not be the
   * first one's text again */
  struct tw_agent_notice_msg n = {.kind = "interruption",
                                  .action = "stop",
                                  .source = "imds",
                                  .event_id = "instance-action-x",
                                  .deadline_ms = deadline};
  assert_int_equal(tw_agent_on_notice(agent, &c, &n, NULL), TW_OK);
  tick_ms(100); /* the agent's, the same deadline */
  struct tw_job_event *ev = NULL;
  size_t ne = 0;
  assert_int_equal(tw_store_job_events(store, id, &ev, &ne, NULL), TW_OK);
  int notes = 0;
  for (size_t i = 0; i < ne; i++) {
    if (ev[i].reason && strstr(ev[i].reason, "interruption notice for"))
      notes++;
    free(ev[i].reason);
  }
  free(ev);
  assert_int_equal(notes, 1);
}

/* Metering follows the agent's times where the provider gave none: the
 * attempt ran from the agent's registration (not the pass that saw it)
 * and ended when the job exited (not when the report was applied). */
static void the_agents_times_are_the_attempts_run_times(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("name: timed\nresources: {cpus: 2}\nrun: \"sleep 20\"\n", id);
  struct tw_agent_caller c;
  struct tw_attempt_rec at;
  launch_and_register(id, &c, &at);
  /* launch_and_register registers, then runs a pass 100 ms later */
  int64_t reg_ms = tw_clock_now_ms(&clk) - 100;
  struct tw_attempt_rec run = last_attempt(id);
  assert_int_equal(run.running_ms, reg_ms);
  tick_ms(30000);
  struct tw_agent_exit_msg e = {.has_code = true,
                                .exit_code = 0,
                                .started_ms = reg_ms + 400,
                                .ended_ms = reg_ms + 20400};
  bool first = false;
  assert_int_equal(tw_agent_on_exit(agent, &c, &e, &first, NULL), TW_OK);
  assert_true(first);
  tick_ms(100);
  assert_int_equal(state_of(id), TW_JOB_SUCCEEDED);
  struct tw_attempt_rec end = last_attempt(id);
  assert_int_equal(end.running_ms, reg_ms);
  assert_int_equal(end.ended_ms, reg_ms + 20400);

  /* an agent's clock ahead of the broker's is kept within now */
  char id2[TW_JOB_ID_LEN + 1];
  submit("name: ahead\nresources: {cpus: 2}\nrun: \"true\"\n", id2);
  struct tw_agent_caller c2;
  launch_and_register(id2, &c2, &at);
  int64_t now = tw_clock_now_ms(&clk);
  struct tw_agent_exit_msg e2 = {.has_code = true,
                                 .exit_code = 0,
                                 .started_ms = now,
                                 .ended_ms = now + 3600000};
  assert_int_equal(tw_agent_on_exit(agent, &c2, &e2, &first, NULL), TW_OK);
  tick_ms(100);
  end = last_attempt(id2);
  assert_int_equal(end.state, TW_ATTEMPT_ENDED);
  assert_int_equal(end.ended_ms, now + 100);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_notice_from_two_sources_is_one,
                                      setup_sched, teardown_sched),
      cmocka_unit_test(the_token_is_the_hmac_of_the_client_token),
      cmocka_unit_test_setup_teardown(
          the_key_is_made_once_and_sealed_with_secrets, setup_store,
          teardown_store),
      cmocka_unit_test(the_bootstrap_is_the_contracts_script),
      cmocka_unit_test(each_body_parses_or_names_its_field),
      cmocka_unit_test_setup_teardown(
          exit_3_fails_the_job_and_a_replay_changes_nothing, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(exit_0_succeeds, setup_sched,
                                      teardown_sched),
      cmocka_unit_test_setup_teardown(
          the_agents_times_are_the_attempts_run_times, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(
          heartbeats_lost_with_the_instance_gone_interrupt, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(
          an_alive_but_silent_instance_is_terminated_and_replaced, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(
          a_cancel_is_handed_over_and_ends_on_the_exit, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(an_agents_notice_goes_the_providers_way,
                                      setup_sched, teardown_sched),
      cmocka_unit_test_setup_teardown(
          a_hung_cloud_holds_no_pass_of_a_silent_agent, setup_sched,
          teardown_sched),
      cmocka_unit_test_setup_teardown(a_cancels_terminate_waits_on_the_workers,
                                      setup_sched, teardown_sched),
      cmocka_unit_test_setup_teardown(heartbeats_are_stored_in_batches,
                                      setup_sched, teardown_sched),
      cmocka_unit_test_setup_teardown(the_output_lives_beside_the_database,
                                      setup_sched, teardown_sched),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
