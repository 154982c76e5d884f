/* Config: defaults, every file in configs/, errors that name the key, and
 * what a reload may change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/config.h"
#include "broker/base/node.h"

static struct tw_cfg *load(const char *text, enum tw_rc want,
                           struct tw_err *err) {
  struct tw_cfg *c = NULL;
  tw_err_clear(err);
  assert_int_equal(tw_cfg_load_text(text, strlen(text), &c, err), want);
  return c;
}

static void empty_file_gives_defaults(void **state) {
  (void)state;
  struct tw_err err;
  struct tw_cfg *c = load("# nothing\n", TW_OK, &err);
  assert_string_equal(c->listen, "127.0.0.1:8420");
  assert_string_equal(c->db, "tradewind.db");
  assert_int_equal(c->log_level, TW_LOG_INFO);
  assert_int_equal(c->api_max_body_bytes, 1048576);
  assert_int_equal(c->api_max_per_address, 128);
  assert_int_equal(c->api_threads, 64);
  assert_int_equal(c->api_head_timeout_s, 10);
  assert_int_equal(c->api_body_timeout_s, 60);
  assert_string_equal(c->api_probe_listen, "");
  assert_true(c->store_sync_full);
  assert_null(c->providers);
  tw_cfg_free(c);
}

static void every_shipped_config_loads(void **state) {
  (void)state;
  const char *src = getenv("TW_SOURCE_DIR");
  if (!src)
    src = ".";
  char dirp[1024];
  snprintf(dirp, sizeof dirp, "%s/configs", src);
  DIR *d = opendir(dirp);
  assert_non_null(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".yaml"))
      continue;
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dirp, e->d_name);
    struct tw_cfg *c = NULL;
    struct tw_err err = {0};
    if (tw_cfg_load_file(p, &c, &err) != TW_OK)
      fail_msg("%s: %s", p, err.msg);
    tw_cfg_free(c);
    n++;
  }
  closedir(d);
  assert_true(n >= 1);
}

static void values_are_read(void **state) {
  (void)state;
  struct tw_err err;
  struct tw_cfg *c =
      load("listen: 0.0.0.0:9000\nlog: {level: debug, debug: [api, store]}\n"
           "store: {synchronous: normal, max_batch: 64}\n"
           "providers:\n  - {name: aws, type: aws}\n",
           TW_OK, &err);
  assert_string_equal(c->listen, "0.0.0.0:9000");
  assert_int_equal(c->log_level, TW_LOG_DEBUG);
  assert_string_equal(c->log_debug, "api,store");
  assert_false(c->store_sync_full);
  assert_int_equal(c->store_max_batch, 64);
  assert_non_null(c->providers);
  assert_int_equal(c->providers->n, 1);
  tw_cfg_free(c);
  /* the agent section: its defaults, then values */
  c = load("listen: 0.0.0.0:9000\n", TW_OK, &err);
  assert_string_equal(c->agent_install, "fetch");
  assert_string_equal(c->agent_path, "tradewind-agent");
  assert_string_equal(c->agent_binary, "");
  assert_string_equal(c->agent_broker_url, "");
  assert_int_equal(c->agent_heartbeat_s, 10);
  assert_int_equal(c->agent_heartbeat_timeout_s, 120);
  assert_int_equal(c->agent_max_log_bytes, 64 << 20);
  assert_int_equal(c->agent_grace_s, 30);
  tw_cfg_free(c);
  c = load("agent: {install: preinstalled, path: /opt/tw/agent,"
           " broker_url: \"https://b.example:8420\", heartbeat_s: 5,"
           " heartbeat_timeout_s: 30, max_log_bytes: 8192, grace_s: 60}\n",
           TW_OK, &err);
  assert_string_equal(c->agent_install, "preinstalled");
  assert_string_equal(c->agent_path, "/opt/tw/agent");
  assert_string_equal(c->agent_broker_url, "https://b.example:8420");
  assert_int_equal(c->agent_heartbeat_s, 5);
  assert_int_equal(c->agent_heartbeat_timeout_s, 30);
  assert_int_equal(c->agent_max_log_bytes, 8192);
  assert_int_equal(c->agent_grace_s, 60);
  tw_cfg_free(c);
}

static const struct {
  const char *text;
  const char *field;
  const char *msg;
} BAD[] = {
    {"store: {max_batch: 0}\n", "store.max_batch",
     "store.max_batch: must be between 1 and 10000, got 0"},
    {"store: {max_batch: many}\n", "store.max_batch", "expected an integer"},
    {"store: {synchronous: always}\n", "store.synchronous",
     "expected full or normal"},
    {"log: {level: loud}\n", "log.level",
     "expected one of debug, info, warn, error"},
    {"lisen: 1.2.3.4:5\n", "lisen", "did you mean \"listen\""},
    {"store: {max_bach: 3}\n", "store.max_bach", "did you mean \"max_batch\""},
    {"listen: nowhere\n", "listen", "expected HOST:PORT"},
    {"listen: host:99999\n", "listen", "expected HOST:PORT"},
    {"api: 3\n", "api", "expected a mapping"},
    {"api: {max_body_bytes: 10}\n", "api.max_body_bytes",
     "must be between 1024"},
    {"api: {probe_listen: nowhere}\n", "api.probe_listen",
     "expected HOST:PORT"},
    {"api: {threads: 0}\n", "api.threads", "must be between 1"},
    {"api: {max_head_bytes: 100000}\n", "api.max_head_bytes",
     "must be between 1024"},
    {"providers: {aws: 1}\n", "providers", "expected a list of providers"},
    {"db:\n", "db", "a value is required"},
    {"zzzzzz: 1\n", "zzzzzz", "unknown key"},
    {"agent: {install: docker}\n", "agent.install",
     "expected fetch or preinstalled"},
    {"agent: {broker_url: ftp://x}\n", "agent.broker_url",
     "expected an http:// or https:// URL"},
    {"agent: {broker_url: \"http://x/$(id)\"}\n", "agent.broker_url",
     "without quotes, spaces or '$'"},
    {"agent: {path: \"a'b\"}\n", "agent.path", "a path without quotes"},
    {"agent: {heartbeat_s: 0}\n", "agent.heartbeat_s",
     "must be between 1 and 3600"},
    {"agent: {heartbeat_s: 60, heartbeat_timeout_s: 60}\n",
     "agent.heartbeat_timeout_s", "must be more than agent.heartbeat_s (60)"},
    {"agent: {grace_s: 5}\n", "agent.grace_s", "must be between 10 and 3600"},
    {"agent: {max_log_bytes: 100}\n", "agent.max_log_bytes",
     "must be between 4096"},
    {"agent: {heartbeet_s: 3}\n", "agent.heartbeet_s",
     "did you mean \"heartbeat_s\""},
};

static void errors_name_the_key(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_err err;
    struct tw_cfg *c = NULL;
    tw_err_clear(&err);
    enum tw_rc rc =
        tw_cfg_load_text(BAD[i].text, strlen(BAD[i].text), &c, &err);
    if (rc != TW_E_INVALID || strcmp(err.field, BAD[i].field) ||
        !strstr(err.msg, BAD[i].msg))
      fail_msg("case %zu (%s): rc=%d field=%s msg=%s", i, BAD[i].text, rc,
               err.field, err.msg);
    assert_null(c);
  }
}

static void malformed_yaml_is_refused(void **state) {
  (void)state;
  struct tw_err err;
  load("listen: [unclosed\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "malformed YAML at line"));
  load("- a\n- b\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "expected a mapping"));
}

static void reload_keeps_fixed_keys(void **state) {
  (void)state;
  struct tw_err err;
  struct tw_cfg *old = load("listen: 127.0.0.1:1\ndb: a.db\n", TW_OK, &err);
  struct tw_cfg *next =
      load("listen: 127.0.0.1:2\ndb: a.db\nlog: {level: warn}\n"
           "api: {max_body_bytes: 2048}\n",
           TW_OK, &err);
  char *report = NULL;
  tw_cfg_keep_fixed(old, next, &report);
  assert_non_null(report);
  assert_non_null(strstr(report, "listen: changed"));
  assert_null(strstr(report, "db:"));
  assert_string_equal(next->listen, "127.0.0.1:1");
  assert_int_equal(next->log_level, TW_LOG_WARN);
  assert_int_equal(next->api_max_body_bytes, 2048);
  free(report);
  struct tw_cfg *same = load("listen: 127.0.0.1:1\ndb: a.db\n", TW_OK, &err);
  tw_cfg_keep_fixed(old, same, &report);
  assert_null(report);
  tw_cfg_free(old);
  tw_cfg_free(next);
  tw_cfg_free(same);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(empty_file_gives_defaults),
      cmocka_unit_test(every_shipped_config_loads),
      cmocka_unit_test(values_are_read),
      cmocka_unit_test(errors_name_the_key),
      cmocka_unit_test(malformed_yaml_is_refused),
      cmocka_unit_test(reload_keeps_fixed_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
