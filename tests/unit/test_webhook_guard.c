/* Budget webhooks are no request forgery (issue 16, finding 10): loopback,
 * link-local (cloud metadata), private and other special addresses are
 * refused as targets unless tenancy.webhook_allow lists them, when the
 * budget is set (address literals, localhost, user information) and, for
 * names, at connect time: the HTTP helper's allow_addr hook sees every
 * address before a socket exists. */
#include "tests/twtest.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "broker/tenancy/tenancy_int.h"
#include "providers/http.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_store *store;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-hook-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  struct tw_store_opts so = {.path = path};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  return tw_store_open(&so, &store, NULL) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static enum tw_rc set_hook(struct tw_tenancy *t, const char *url,
                           struct tw_err *err) {
  struct tw_budget b, out;
  tw_budget_init(&b);
  snprintf(b.tenant, sizeof b.tenant, "ml");
  b.limit_uusd = 1000000;
  snprintf(b.webhook, sizeof b.webhook, "%s", url);
  /* the version of what is stored, so each call replaces the last */
  struct tw_budget cur;
  int64_t ver =
      tw_tenancy_budget_get(t, "ml", "", &cur, NULL) == TW_OK ? cur.version : 0;
  return tw_tenancy_budget_set(t, &b, ver, &out, err);
}

static void special_targets_refused_unless_listed(void **state) {
  (void)state;
  static const char *const allow[] = {"10.1.0.0/16", "fd12::/16", NULL};
  struct tw_tenancy_opts to = {.store = store, .webhook_allow = allow};
  struct tw_tenancy *t = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_tenancy_open(&to, &t, &err), TW_OK, err);
  tw_tenancy_tenant_create(t, "ml", NULL);
  static const struct {
    const char *url, *why;
  } REFUSED[] = {
      {"http://127.0.0.1:9/x", "a loopback address"},
      {"http://127.1.2.3/x", "a loopback address"},
      {"http://localhost:8080/x", "a loopback address"},
      {"http://api.localhost/x", "a loopback address"},
      {"http://[::1]:80/x", "a loopback address"},
      {"http://[::ffff:127.0.0.1]/x", "a loopback address"},
      {"http://169.254.169.254/latest/meta-data/", "a link-local address"},
      {"http://[fe80::1]/x", "a link-local address"},
      {"http://10.0.0.1/x", "a private address"},
      {"http://172.16.5.5/x", "a private address"},
      {"http://192.168.1.1/x", "a private address"},
      {"http://[fd00::5]/x", "a private (unique local) address"},
      {"http://0.0.0.0:80/x", "a \"this network\" address"},
      {"http://100.64.0.1/x", "a shared (carrier NAT) address"},
      {"http://user:pw@example.com/x", "user information"},
  };
  for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
    tw_err_clear(&err);
    TW_CHECK(set_hook(t, REFUSED[i].url, &err) == TW_E_INVALID, "%s accepted",
             REFUSED[i].url);
    TW_CHECK_STR(err.field, "webhook");
    TW_CHECK(strstr(err.msg, REFUSED[i].why), "%s: %s", REFUSED[i].url,
             err.msg);
  }
  /* listed blocks, public addresses and names pass (names are checked
   * again when the webhook is sent) */
  static const char *const OK[] = {"http://10.1.2.3/x", "http://[fd12::9]/x",
                                   "https://203.0.113.7/hook",
                                   "https://hooks.example.com/budget"};
  for (size_t i = 0; i < sizeof OK / sizeof OK[0]; i++) {
    tw_err_clear(&err);
    TW_CHECK(set_hook(t, OK[i], &err) == TW_OK, "%s: %s", OK[i], err.msg);
  }
  tw_tenancy_free(t);
  /* a bad block stops the start, named */
  static const char *const bad[] = {"10.1.0.0/33", NULL};
  to.webhook_allow = bad;
  tw_err_clear(&err);
  TW_CHECK(tw_tenancy_open(&to, &t, &err) == TW_E_INVALID);
  TW_CHECK_STR(err.field, "tenancy.webhook_allow[0]");
}

/* ---- the connect-time check -------------------------------------------------
 */

static int hits;
static pthread_mutex_t hits_mu = PTHREAD_MUTEX_INITIALIZER;

static enum MHD_Result on_hook(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **ctx) {
  (void)cls, (void)url, (void)method, (void)version, (void)data;
  if (!*ctx) {
    *ctx = (void *)1;
    return MHD_YES;
  }
  if (*size) {
    *size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&hits_mu);
  hits++;
  pthread_mutex_unlock(&hits_mu);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(c, 204, r);
  MHD_destroy_response(r);
  return ret;
}

static bool guard(void *ctx, const struct sockaddr *sa, char *why,
                  size_t whysz) {
  const char *r = tn_webhook_addr_refused(ctx, sa);
  if (r)
    snprintf(why, whysz, "%s", r);
  return !r;
}

static void names_are_checked_when_connecting(void **state) {
  (void)state;
  struct MHD_Daemon *hook =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_hook,
                       NULL, MHD_OPTION_END);
  TW_CHECK(hook != NULL);
  int port = MHD_get_daemon_info(hook, MHD_DAEMON_INFO_BIND_PORT)->port;
  struct tw_http *h = NULL;
  TW_CHECK_RC(tw_http_new(NULL, &h, NULL), TW_OK, (struct tw_err){0});
  struct tw_tenancy_opts to = {.store = store};
  struct tw_tenancy *t = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_tenancy_open(&to, &t, &err), TW_OK, err);
  /* "localhost" by name, the way a name resolving to loopback arrives:
   * the literal check at set time would refuse it, the hook must too */
  char url[96];
  snprintf(url, sizeof url, "http://localhost:%d/budget", port);
  struct tw_http_request req = {.method = "POST",
                                .url = url,
                                .body = "{}",
                                .body_len = 2,
                                .max_attempts = 1,
                                .allow_addr = guard,
                                .allow_ctx = t};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  TW_CHECK(tw_http_do(h, &req, &resp, &err) == TW_E_FORBIDDEN, "connected: %s",
           err.msg);
  TW_CHECK(strstr(err.msg, "loopback"), "%s", err.msg);
  TW_CHECK_INT(hits, 0);
  tw_tenancy_free(t);
  /* listed, the same request goes through */
  static const char *const allow[] = {"127.0.0.0/8", "::1", NULL};
  to.webhook_allow = allow;
  TW_CHECK_RC(tw_tenancy_open(&to, &t, &err), TW_OK, err);
  req.allow_ctx = t;
  tw_err_clear(&err);
  TW_CHECK_RC(tw_http_do(h, &req, &resp, &err), TW_OK, err);
  TW_CHECK_INT(resp.status, 204);
  TW_CHECK_INT(hits, 1);
  tw_http_response_release(&resp);
  tw_tenancy_free(t);
  tw_http_free(h);
  MHD_stop_daemon(hook);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(special_targets_refused_unless_listed),
      cmocka_unit_test(names_are_checked_when_connecting),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
