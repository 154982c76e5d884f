/* test_local_provider.c - the local provider's lifecycle (providers/local/):
 * offers sliced from the configured capacity at the chargeback rates, a
 * launch that runs its user data in a sandbox of its own, the same launch
 * sent again, a provider made again on the same directory (a broker
 * restart) that still sees the running instance, terminate killing the
 * instance's whole session, an instance whose processes ended, capacity
 * running out, and config errors naming the field. */
#include "tests/twtest.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "providers/provider.h"
#include "providers/registry.h"

static char dir[128];

static struct tw_provider *provider(const char *extra, struct tw_err *err) {
  char *y = tw_asprintf("type: local\nname: here\ndir: %s/sandboxes\n"
                        "cpus: 4\nmemory_gib: 8\n%s",
                        dir, extra ? extra : "");
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(y, strlen(y), &cfg, err) == TW_OK)
    tw_provider_new(tw_adapters, cfg, NULL, &p, err);
  tw_node_free(cfg);
  free(y);
  return p;
}

static const struct tw_offer *find_offer(const struct tw_offer_list *l,
                                         const char *type) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].instance_type, type))
      return &l->items[i];
  return NULL;
}

static int64_t capacity_of(struct tw_provider *p, const char *type) {
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  struct tw_err err = {0};
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  const struct tw_offer *o = find_offer(&l, type);
  int64_t c = o ? o->capacity : -1;
  tw_offer_list_release(&l);
  return c;
}

static bool wait_file(const char *path, int ms) {
  struct stat st;
  for (int i = 0; i < ms / 50; i++) {
    if (!stat(path, &st) && st.st_size > 0)
      return true;
    usleep(50000);
  }
  return false;
}

static enum tw_rc launch(struct tw_provider *p, const char *type,
                         const char *token, const char *script,
                         struct tw_instance *out, struct tw_err *err) {
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.account, "here");
  TW_SET(o.region, "local");
  TW_SET(o.instance_type, type);
  o.market = TW_MARKET_PRIVATE;
  struct tw_launch req = {.offer = &o,
                          .client_token = token,
                          .job_id = "j-local",
                          .attempt_id = token,
                          .tenant = "t1",
                          .user_data = script};
  return tw_provider_launch(p, &req, out, err);
}

static void offers_from_the_configured_capacity(void **state) {
  struct tw_err err = {0};
  struct tw_provider *p =
      provider("rates: {cpu_hour: \"0.01\", mem_gib_hour: \"0.002\"}\n", &err);
  TW_CHECK(p != NULL, "%s", err.msg);
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(l.n, 3); /* 1, 2 and 4 cpus */
  const struct tw_offer *o = find_offer(&l, "local-2c");
  TW_CHECK(o != NULL);
  TW_CHECK_INT(o->vcpus, 2);
  TW_CHECK_INT(o->memory_mib, 4096);
  TW_CHECK_INT(o->capacity, 2);
  TW_CHECK_INT(o->market, TW_MARKET_PRIVATE);
  TW_CHECK_INT(o->price_uusd_per_hour, 2 * 10000 + 4 * 2000);
  TW_CHECK_STR(o->id, "here:local::local-2c:private");
  TW_CHECK_INT(find_offer(&l, "local-4c")->capacity, 1);
  tw_offer_list_release(&l);
  tw_provider_free(p);

  /* default rate: nothing */
  p = provider(NULL, &err);
  tw_offer_list_init(&l);
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(find_offer(&l, "local-1c")->price_uusd_per_hour, 0);
  tw_offer_list_release(&l);
  tw_provider_free(p);
}

static void lifecycle_survives_a_restart(void **state) {
  struct tw_err err = {0};
  struct tw_provider *p = provider(NULL, &err);
  TW_CHECK(p != NULL, "%s", err.msg);
  struct tw_instance in, again;
  const char *script =
      "echo \"$TRADEWIND_AGENT_DIR|$TRADEWIND_INSTANCE_ID\" > env.txt\n"
      "set -m; (trap '' TERM HUP; sleep 300) & echo $! > pid\n"
      "sleep 300\n";
  TW_CHECK_RC(launch(p, "local-2c", "tok-a", script, &in, &err), TW_OK, err);
  TW_CHECK_INT(in.state, TW_INST_RUNNING);
  TW_CHECK_STR(in.job_id, "j-local");
  TW_CHECK_STR(in.client_token, "tok-a");
  char path[512], want[512];
  snprintf(path, sizeof path, "%s/sandboxes/%s/env.txt", dir, in.id);
  TW_CHECK(wait_file(path, 5000), "the user data never ran");
  FILE *f = fopen(path, "r");
  char got[512] = "";
  if (f) {
    if (!fgets(got, sizeof got, f))
      got[0] = '\0';
    fclose(f);
  }
  snprintf(want, sizeof want, "%s/sandboxes/%s|%s\n", dir, in.id, in.id);
  TW_CHECK_STR(got, want);
  snprintf(path, sizeof path, "%s/sandboxes/%s/pid", dir, in.id);
  TW_CHECK(wait_file(path, 5000));
  f = fopen(path, "r");
  long pid = 0;
  if (f) {
    if (fscanf(f, "%ld", &pid) != 1)
      pid = 0;
    fclose(f);
  }
  TW_CHECK(pid > 0 && kill((pid_t)pid, 0) == 0);

  /* the same launch again: the same instance, nothing more started */
  TW_CHECK_RC(launch(p, "local-2c", "tok-a", script, &again, &err), TW_OK, err);
  TW_CHECK_STR(again.id, in.id);
  TW_CHECK_INT(capacity_of(p, "local-2c"), 1);
  TW_CHECK_INT(capacity_of(p, "local-4c"), 0);
  /* no room for four more cpus */
  struct tw_instance big;
  TW_CHECK_RC(launch(p, "local-4c", "tok-big", script, &big, &err),
              TW_E_CAPACITY, err);
  memset(&err, 0, sizeof err);

  /* a broker restart: a new provider on the same directory */
  tw_provider_free(p);
  p = provider(NULL, &err);
  TW_CHECK(p != NULL);
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, in.id, &d, &err), TW_OK, err);
  TW_CHECK_INT(d.state, TW_INST_RUNNING);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK_INT(l.n, 1);
  if (l.n)
    TW_CHECK_STR(l.items[0].attempt_id, "tok-a");
  tw_instance_list_release(&l);

  /* terminate: the whole session, the group made inside it too */
  TW_CHECK_RC(tw_provider_terminate(p, in.id, &err), TW_OK, err);
  bool gone = false;
  for (int i = 0; i < 40 && !gone; i++) {
    char st[64], buf[256] = "";
    snprintf(st, sizeof st, "/proc/%ld/stat", pid);
    FILE *s = fopen(st, "r");
    size_t n = s ? fread(buf, 1, sizeof buf - 1, s) : 0;
    if (s)
      fclose(s);
    buf[n] = '\0';
    const char *q = strrchr(buf, ')');
    gone = !s || (q && q[2] == 'Z');
    if (!gone)
      usleep(50000);
  }
  TW_CHECK(gone, "terminate left pid %ld", pid);
  TW_CHECK_RC(tw_provider_describe(p, in.id, &d, &err), TW_OK, err);
  TW_CHECK_INT(d.state, TW_INST_TERMINATED);
  TW_CHECK_RC(tw_provider_terminate(p, in.id, &err), TW_OK, err);
  TW_CHECK_INT(capacity_of(p, "local-4c"), 1);

  /* a workload that ends by itself reads as gone */
  TW_CHECK_RC(launch(p, "local-1c", "tok-b", "exit 0\n", &in, &err), TW_OK,
              err);
  bool ended = false;
  for (int i = 0; i < 100 && !ended; i++) {
    TW_CHECK_RC(tw_provider_describe(p, in.id, &d, &err), TW_OK, err);
    ended = d.state == TW_INST_TERMINATED;
    if (!ended)
      usleep(50000);
  }
  TW_CHECK(ended);
  TW_CHECK_STR(d.provider_state, "exited");
  TW_CHECK_RC(tw_provider_describe(p, "lc-00000000000000000000", &d, &err),
              TW_E_NOTFOUND, err);
  tw_provider_free(p);
}

static void config_errors_name_the_field(void **state) {
  struct tw_err err = {0};
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  const char *y = "type: local\nname: here\ncpus: 2\n";
  TW_CHECK_RC(tw_node_parse_yaml(y, strlen(y), &cfg, &err), TW_OK, err);
  TW_CHECK(tw_provider_new(tw_adapters, cfg, NULL, &p, &err) != TW_OK);
  TW_CHECK(strstr(err.msg, "dir"), "%s", err.msg);
  tw_node_free(cfg);
  memset(&err, 0, sizeof err);
  TW_CHECK(provider("cpu: 3\n", &err) == NULL);
  TW_CHECK(strstr(err.msg, "cpu"), "%s", err.msg);
  memset(&err, 0, sizeof err);
  TW_CHECK(provider("rates: {cpu_hour: lots}\n", &err) == NULL);
  TW_CHECK(strstr(err.msg, "rates.cpu_hour"), "%s", err.msg);
}

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-local-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  if (!tw_failures()) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd))
      fprintf(stderr, "cannot remove %s\n", dir);
  }
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(offers_from_the_configured_capacity),
      cmocka_unit_test(lifecycle_survives_a_restart),
      cmocka_unit_test(config_errors_name_the_field),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
