/* test_slurm_adapter.c - the Slurm adapter against a real cluster.
 *
 * The cluster is the one scripts/slurm.sh started for this build (the ctest
 * fixture slurm_cluster, state in $TW_SLURM_DIR); without it the test is
 * skipped.  Jobs really run, so the waits below are on the wall clock,
 * bounded, polling every 100 ms.
 *
 * list_offers and launch are called through the adapter's table: the
 * generic layer (providers/provider.c) does not yet pass offers of market
 * private.  Everything else goes through tw_provider_*(). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "providers/provider.h"
#include "providers/slurm/slurm.h"
#include "tests/twtest.h"

static char url[256], token_file[512], output_dir[512], state_dir[512];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Reads $TW_SLURM_DIR/slurm.env; 0 when the cluster is up. */
static int load_env(void) {
  const char *d = getenv("TW_SLURM_DIR");
  if (!d || !*d)
    return -1;
  snprintf(state_dir, sizeof state_dir, "%s", d);
  char path[600], line[1024];
  snprintf(path, sizeof path, "%s/slurm.env", d);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *eq = strchr(line, '=');
    if (strncmp(line, "export ", 7) || !eq)
      continue;
    *eq = '\0';
    const char *k = line + 7, *v = eq + 1;
    if (!strcmp(k, "TW_SLURM_URL"))
      snprintf(url, sizeof url, "%s", v);
    else if (!strcmp(k, "TW_SLURM_TOKEN_FILE"))
      snprintf(token_file, sizeof token_file, "%s", v);
    else if (!strcmp(k, "TW_SLURM_OUTPUT_DIR"))
      snprintf(output_dir, sizeof output_dir, "%s", v);
  }
  fclose(f);
  return url[0] && token_file[0] && output_dir[0] ? 0 : -1;
}

static struct tw_provider *make(const char *tokfile, struct tw_clock *clock) {
  char cfg[2048];
  snprintf(cfg, sizeof cfg,
           "name: lab\ntype: slurm\nendpoint: %s\napi_version: v0.0.38\n"
           "user: root\ntoken_file: %s\noutput_dir: %s\ncluster: lab\n"
           "max_attempts: 1\nlabels: {jurisdiction: EU}\n"
           "rates: {cpu_hour: \"0.02\", gpu_hour: {A100: \"1.10\"}, "
           "mem_gib_hour: \"0.002\"}\n",
           url, tokfile, output_dir);
  struct tw_node *n = NULL;
  struct tw_err err = {0};
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(cfg, strlen(cfg), &n, &err) ||
      tw_provider_new_ops(&tw_provider_slurm, "lab", n, clock, &p, &err))
    fprintf(stderr, "provider: %s\n", err.msg);
  tw_node_free(n);
  return p;
}

static enum tw_rc offers(struct tw_provider *p, struct tw_offer_list *l,
                         struct tw_err *err) {
  tw_offer_list_release(l);
  return p->ops->list_offers(p, l, err);
}

static const struct tw_offer *find(const struct tw_offer_list *l,
                                   const char *zone, const char *type) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].zone, zone) &&
        !strcmp(l->items[i].instance_type, type))
      return &l->items[i];
  return NULL;
}

static enum tw_rc launch(struct tw_provider *p, const struct tw_offer *o,
                         const char *token, const char *script,
                         struct tw_instance *out, struct tw_err *err) {
  struct tw_launch req = {.offer = o,
                          .client_token = token,
                          .job_id = "job-it",
                          .attempt_id = token,
                          .tenant = "acme corp",
                          .user_data = script,
                          .duration_s = 120};
  tw_instance_init(out);
  return p->ops->launch(p, &req, out, err);
}

/* Describes id until pred holds or ms pass. */
static bool wait_for(struct tw_provider *p, const char *id,
                     bool (*pred)(const struct tw_instance *), int ms,
                     struct tw_instance *out) {
  int64_t end = now_ms() + ms;
  do {
    struct tw_err err = {0};
    if (tw_provider_describe(p, id, out, &err) == TW_OK && pred(out))
      return true;
    nap(100);
  } while (now_ms() < end);
  return false;
}
static bool is_finished(const struct tw_instance *i) { return i->finished; }
static bool is_running(const struct tw_instance *i) {
  return i->state == TW_INST_RUNNING;
}
static bool is_gone(const struct tw_instance *i) {
  return i->state == TW_INST_TERMINATED;
}

static void unique_token(char *out, size_t size, const char *what) {
  snprintf(out, size, "it-%s-%ld-%lld", what, (long)getpid(),
           (long long)now_ms());
}

/* ---- cleanup ------------------------------------------------------------ */

/* Jobs a case launched: its teardown cancels them, so that a case that
 * failed half-way leaves the nodes free for the next (terminate is
 * idempotent). */
static char launched[8][sizeof((struct tw_instance *)0)->id];
static size_t n_launched;

static void remember(const struct tw_instance *i) {
  if (i->id[0] && n_launched < sizeof launched / sizeof launched[0])
    snprintf(launched[n_launched++], sizeof launched[0], "%s", i->id);
}

static int cancel_launched(void **state) {
  struct tw_provider *p = *state;
  for (size_t i = 0; i < n_launched; i++) {
    struct tw_err err = {0};
    tw_provider_terminate(p, launched[i], &err);
  }
  n_launched = 0;
  return 0;
}

/* ---- cases -------------------------------------------------------------- */

/* Waits (up to 30 s) until an earlier test's jobs have left the nodes. */
static void wait_idle(struct tw_provider *p, struct tw_offer_list *l) {
  struct tw_err err = {0};
  int64_t end = now_ms() + 30000;
  for (;;) {
    const struct tw_offer *g, *c;
    if (offers(p, l, &err) == TW_OK &&
        (g = find(l, "gpu", "c8-m8000-a100x2")) && g->capacity == 2 &&
        (c = find(l, "cpu", "c8-m8000")) && c->capacity == 2)
      return;
    if (now_ms() > end)
      return;
    nap(200);
  }
}

static void inventory_becomes_offers(void **state) {
  struct tw_provider *p = *state;
  struct tw_offer_list l;
  struct tw_err err = {0};
  tw_offer_list_init(&l);
  wait_idle(p, &l);
  TW_CHECK_RC(offers(p, &l, &err), TW_OK, err);
  /* gpu nodes: 8 CPUs, 8000 MB, 2 x A100 -> slices of 1 and 2 GPUs;
   * cpu nodes: 8 CPUs -> 1, 2, 4, 8 */
  const struct tw_offer *g1 = find(&l, "gpu", "c4-m4000-a100x1");
  const struct tw_offer *g2 = find(&l, "gpu", "c8-m8000-a100x2");
  const struct tw_offer *c1 = find(&l, "cpu", "c1-m1000");
  const struct tw_offer *c8 = find(&l, "cpu", "c8-m8000");
  TW_CHECK(g1 && g2 && c1 && c8);
  TW_CHECK(find(&l, "cpu", "c2-m2000") && find(&l, "cpu", "c4-m4000"));
  TW_CHECK(l.n == 6);
  if (g1) {
    TW_CHECK(g1->market == TW_MARKET_PRIVATE);
    TW_CHECK(!strcmp(g1->region, "lab") && !strcmp(g1->rack, "r1"));
    TW_CHECK(!strcmp(g1->accel_name, "A100") && g1->accel_count == 1);
    TW_CHECK(g1->vcpus == 4 && g1->memory_mib == 4000);
    /* 4 x 0.02 + 1.10 + 4000/1024 x 0.002 (7812.5 -> 7813 uUSD) */
    TW_CHECK(g1->price_uusd_per_hour == 80000 + 1100000 + 7813);
    TW_CHECK(g1->capacity == 4);
    TW_CHECK(!strcmp(g1->id, "lab:lab:gpu/r1:c4-m4000-a100x1:private"));
    TW_CHECK(tw_offer_label(g1, "jurisdiction") &&
             !strcmp(tw_offer_label(g1, "jurisdiction"), "EU"));
    TW_CHECK(tw_offer_label(g1, "partition") &&
             !strcmp(tw_offer_label(g1, "partition"), "gpu"));
  }
  if (g2)
    TW_CHECK(g2->capacity == 2);
  if (c1) {
    TW_CHECK(c1->accel_count == 0 && !strcmp(c1->rack, "r2"));
    TW_CHECK(c1->capacity == 16);
    TW_CHECK(c1->price_uusd_per_hour == 20000 + 1954); /* 1000 MB: 1953.125 */
    TW_CHECK(c1->arch == TW_ARCH_X86_64);
  }
  if (c8)
    TW_CHECK(c8->capacity == 2);
  tw_offer_list_release(&l);
}

static void jobs_run_and_report_exit_codes(void **state) {
  struct tw_provider *p = *state;
  struct tw_offer_list l;
  struct tw_err err = {0};
  tw_offer_list_init(&l);
  offers(p, &l, &err);
  const struct tw_offer *c1 = find(&l, "cpu", "c1-m1000");
  TW_CHECK(c1 != NULL);
  if (!c1)
    return;
  char t0[64], t3[64];
  unique_token(t0, sizeof t0, "ok");
  unique_token(t3, sizeof t3, "three");
  struct tw_instance a, b, d;
  TW_CHECK_RC(launch(p, c1, t0,
                     "echo hello from $TRADEWIND_TENANT\necho to-err >&2\n", &a,
                     &err),
              TW_OK, err);
  remember(&a);
  TW_CHECK_RC(
      launch(p, c1, t3, "#!/bin/bash\necho about to fail\nexit 3\n", &b, &err),
      TW_OK, err);
  remember(&b);
  TW_CHECK(a.state == TW_INST_PENDING && a.id[0]);
  TW_CHECK(!strcmp(a.client_token, t0) && !strcmp(a.job_id, "job-it"));
  TW_CHECK(wait_for(p, a.id, is_finished, 30000, &d));
  TW_CHECK(d.finished && d.exit_code == 0 && d.state == TW_INST_TERMINATED);
  TW_CHECK(!strcmp(d.provider_state, "COMPLETED"));
  TW_CHECK(!strcmp(d.job_id, "job-it") && !strcmp(d.tenant, "acme corp"));
  TW_CHECK(!strcmp(d.attempt_id, t0) && !strcmp(d.client_token, t0));
  TW_CHECK(!strcmp(d.instance_type, "c1-m1000") && !strcmp(d.zone, "cpu"));
  TW_CHECK(wait_for(p, b.id, is_finished, 30000, &d));
  TW_CHECK(d.finished && d.exit_code == 3);
  TW_CHECK(!strcmp(d.provider_state, "FAILED"));

  /* the output comes back, whole, then eof */
  struct tw_buf out;
  bool eof = false;
  tw_buf_init(&out);
  TW_CHECK_RC(tw_provider_read_output(p, a.id, 0, 1 << 20, &out, &eof, &err),
              TW_OK, err);
  TW_CHECK(out.data && !strcmp(out.data, "hello from acme corp\nto-err\n"));
  TW_CHECK(eof);
  /* from an offset, in small pieces */
  tw_buf_reset(&out);
  TW_CHECK_RC(tw_provider_read_output(p, a.id, 6, 4, &out, &eof, &err), TW_OK,
              err);
  TW_CHECK(out.len == 4 && !memcmp(out.data, "from", 4) && !eof);
  tw_buf_reset(&out);
  TW_CHECK_RC(tw_provider_read_output(p, a.id, 1000, 4, &out, &eof, &err),
              TW_OK, err);
  TW_CHECK(out.len == 0 && eof);
  tw_buf_reset(&out);
  TW_CHECK_RC(tw_provider_read_output(p, b.id, 0, 100, &out, &eof, &err), TW_OK,
              err);
  TW_CHECK(out.data && !strcmp(out.data, "about to fail\n") && eof);
  tw_buf_release(&out);
  tw_offer_list_release(&l);
}

static void terminate_a_sleeping_job(void **state) {
  struct tw_provider *p = *state;
  struct tw_offer_list l;
  struct tw_err err = {0};
  tw_offer_list_init(&l);
  offers(p, &l, &err);
  const struct tw_offer *c2 = find(&l, "cpu", "c2-m2000");
  TW_CHECK(c2 != NULL);
  if (!c2)
    return;
  char t[64];
  unique_token(t, sizeof t, "sleep");
  struct tw_instance a, d;
  TW_CHECK_RC(launch(p, c2, t, "echo started\nsleep 300\n", &a, &err), TW_OK,
              err);
  remember(&a);
  TW_CHECK(wait_for(p, a.id, is_running, 30000, &d));
  struct tw_buf out;
  bool eof = true;
  tw_buf_init(&out);
  /* running: output so far, not the end */
  int64_t end = now_ms() + 10000;
  while (out.len == 0 && now_ms() < end) {
    tw_provider_read_output(p, a.id, 0, 100, &out, &eof, &err);
    if (!out.len)
      nap(100);
  }
  TW_CHECK(out.data && !strcmp(out.data, "started\n") && !eof);
  tw_buf_release(&out);

  /* listed while it runs, with its tags */
  struct tw_instance_list il;
  tw_instance_list_init(&il);
  TW_CHECK_RC(tw_provider_list_managed(p, &il, &err), TW_OK, err);
  size_t seen = 0;
  for (size_t i = 0; i < il.n; i++)
    if (!strcmp(il.items[i].id, a.id)) {
      seen++;
      TW_CHECK(il.items[i].state == TW_INST_RUNNING);
      TW_CHECK(!strcmp(il.items[i].client_token, t));
      TW_CHECK(!strcmp(il.items[i].job_id, "job-it"));
    }
  TW_CHECK(seen == 1);
  tw_instance_list_release(&il);

  TW_CHECK_RC(tw_provider_terminate(p, a.id, &err), TW_OK, err);
  TW_CHECK(wait_for(p, a.id, is_gone, 30000, &d));
  TW_CHECK(!d.finished); /* cancelled: an interruption, not an outcome */
  TW_CHECK(!strcmp(d.provider_state, "CANCELLED"));
  TW_CHECK_RC(tw_provider_terminate(p, a.id, &err), TW_OK,
              err); /* idempotent */
  TW_CHECK_RC(tw_provider_terminate(p, "99999999", &err), TW_OK, err);
  tw_offer_list_release(&l);
}

static void retried_launch_yields_one_job(void **state) {
  struct tw_provider *p = *state;
  struct tw_offer_list l;
  struct tw_err err = {0};
  tw_offer_list_init(&l);
  offers(p, &l, &err);
  const struct tw_offer *c1 = find(&l, "cpu", "c1-m1000");
  if (!c1) {
    TW_CHECK(c1 != NULL);
    return;
  }
  char t[64];
  unique_token(t, sizeof t, "retry");
  struct tw_instance a, b;
  TW_CHECK_RC(launch(p, c1, t, "sleep 2\n", &a, &err), TW_OK, err);
  remember(&a);
  /* the answer was lost; the scheduler sends it again with the token */
  TW_CHECK_RC(launch(p, c1, t, "sleep 2\n", &b, &err), TW_OK, err);
  TW_CHECK(a.id[0] && !strcmp(a.id, b.id));
  TW_CHECK(!strcmp(b.client_token, t) && !strcmp(b.job_id, "job-it"));
  struct tw_instance_list il;
  tw_instance_list_init(&il);
  TW_CHECK_RC(tw_provider_list_managed(p, &il, &err), TW_OK, err);
  size_t n = 0;
  for (size_t i = 0; i < il.n; i++)
    n += !strcmp(il.items[i].client_token, t);
  TW_CHECK(n == 1);
  tw_instance_list_release(&il);
  tw_provider_terminate(p, a.id, &err);
  tw_offer_list_release(&l);
}

struct racer {
  struct tw_provider *p;
  const struct tw_offer *o;
  char token[64];
  enum tw_rc rc;
  struct tw_instance inst;
};

static void *race(void *arg) {
  struct racer *r = arg;
  struct tw_err err = {0};
  r->rc = launch(r->p, r->o, r->token, "sleep 300\n", &r->inst, &err);
  return NULL;
}

static void placements_never_oversubscribe(void **state) {
  struct tw_provider *p = *state;
  struct tw_offer_list l;
  struct tw_err err = {0};
  tw_offer_list_init(&l);
  offers(p, &l, &err);
  const struct tw_offer *g2 = find(&l, "gpu", "c8-m8000-a100x2");
  if (!g2 || g2->capacity != 2) {
    TW_CHECK(g2 && g2->capacity == 2);
    tw_offer_list_release(&l);
    return;
  }
  /* four launches at once for two whole GPU nodes: two get them */
  struct racer r[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].p = p;
    r[i].o = g2;
    char what[16];
    snprintf(what, sizeof what, "race%d", i);
    unique_token(r[i].token, sizeof r[i].token, what);
    pthread_create(&th[i], NULL, race, &r[i]);
  }
  int ok = 0, full = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ok += r[i].rc == TW_OK;
    full += r[i].rc == TW_E_CAPACITY;
    if (r[i].rc == TW_OK)
      remember(&r[i].inst);
  }
  TW_CHECK(ok == 2 && full == 2);
  /* the refused ones never reached Slurm */
  struct tw_instance_list il;
  tw_instance_list_init(&il);
  TW_CHECK_RC(tw_provider_list_managed(p, &il, &err), TW_OK, err);
  for (int i = 0; i < 4; i++) {
    size_t n = 0;
    for (size_t k = 0; k < il.n; k++)
      n += !strcmp(il.items[k].client_token, r[i].token);
    TW_CHECK(n == (r[i].rc == TW_OK ? 1u : 0u));
  }
  tw_instance_list_release(&il);
  /* a fresh inventory agrees: nothing left of that shape */
  offers(p, &l, &err);
  const struct tw_offer *again = find(&l, "gpu", "c8-m8000-a100x2");
  TW_CHECK(again && again->capacity == 0);
  for (int i = 0; i < 4; i++)
    if (r[i].rc == TW_OK) {
      struct tw_instance d;
      tw_provider_terminate(p, r[i].inst.id, &err);
      TW_CHECK(wait_for(p, r[i].inst.id, is_gone, 30000, &d));
    }
  /* and the capacity comes back once Slurm has freed the nodes */
  int64_t end = now_ms() + 20000;
  do {
    offers(p, &l, &err);
    again = find(&l, "gpu", "c8-m8000-a100x2");
    if (again && again->capacity == 2)
      break;
    nap(200);
  } while (now_ms() < end);
  TW_CHECK(again && again->capacity == 2);
  tw_offer_list_release(&l);
}

static void unknown_ids(void **state) {
  struct tw_provider *p = *state;
  struct tw_instance d;
  struct tw_buf out;
  bool eof;
  struct tw_err err = {0};
  tw_buf_init(&out);
  TW_CHECK_RC(tw_provider_describe(p, "99999999", &d, &err), TW_E_NOTFOUND,
              err);
  TW_CHECK_RC(tw_provider_describe(p, "../etc", &d, &err), TW_E_NOTFOUND, err);
  TW_CHECK_RC(tw_provider_read_output(p, "99999999", 0, 10, &out, &eof, &err),
              TW_E_NOTFOUND, err);
  TW_CHECK_RC(
      tw_provider_read_output(p, "../../etc/passwd", 0, 10, &out, &eof, &err),
      TW_E_NOTFOUND, err);
  tw_buf_release(&out);
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

static char *read_token(void) {
  FILE *f = fopen(token_file, "r");
  static char tok[4096];
  if (!f || !fgets(tok, sizeof tok, f)) {
    if (f)
      fclose(f);
    return NULL;
  }
  fclose(f);
  tok[strcspn(tok, "\r\n")] = '\0';
  return tok;
}

/* The token file a case wrote; its teardown removes it. */
static char tok_path[700];

static int remove_token_file(void **state) {
  if (tok_path[0])
    unlink(tok_path);
  tok_path[0] = '\0';
  return 0;
}

static void tokens_refused_or_expired_are_auth(void **state) {
  char *good = read_token();
  TW_CHECK(good != NULL);
  if (!good)
    return;
  char bad[4200];
  /* same claims, another signature: slurmctld refuses it */
  snprintf(bad, sizeof bad, "%s", good);
  char *sig = strrchr(bad, '.');
  TW_CHECK(sig != NULL);
  if (!sig)
    return;
  snprintf(sig + 1, sizeof bad - (size_t)(sig + 1 - bad),
           "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo");
  snprintf(tok_path, sizeof tok_path, "%s/it-token-%ld", state_dir,
           (long)getpid());
  TW_CHECK(write_file(tok_path, bad) == 0);
  struct tw_provider *p = make(tok_path, NULL);
  TW_CHECK(p != NULL);
  if (p) {
    struct tw_offer_list l;
    struct tw_err err = {0};
    tw_offer_list_init(&l);
    TW_CHECK_RC(offers(p, &l, &err), TW_E_AUTH, err);
    TW_CHECK(l.n == 0);
    /* a rotated token is written to the file: the next call re-reads it */
    TW_CHECK(write_file(tok_path, good) == 0);
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(offers(p, &l, &err), TW_OK, err);
    TW_CHECK(l.n > 0);
    tw_offer_list_release(&l);
    tw_provider_free(p);
  }
  /* an expired token: the clock says so, nothing is sent */
  struct tw_clock fake;
  tw_clock_fake_init(&fake, (int64_t)time(NULL) * 1000);
  tw_clock_advance(&fake, 400LL * 86400 * 1000);
  p = make(tok_path, &fake);
  TW_CHECK(p != NULL);
  if (p) {
    struct tw_offer_list l;
    struct tw_err err = {0};
    tw_offer_list_init(&l);
    TW_CHECK_RC(offers(p, &l, &err), TW_E_AUTH, err);
    TW_CHECK(!strcmp(err.detail, "TokenExpired"));
    struct tw_instance d;
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_describe(p, "1", &d, &err), TW_E_AUTH, err);
    tw_offer_list_release(&l);
    tw_provider_free(p);
  }
}

static int setup(void **state) {
  *state = make(token_file, NULL);
  if (!*state) {
    fprintf(stderr, "cannot create the provider\n");
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  tw_provider_free(*state);
  return 0;
}

int main(void) {
  if (load_env()) {
    printf("SKIPPED: no Slurm cluster (TW_SLURM_DIR/slurm.env; the fixture "
           "slurm_cluster_start starts it)\n");
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(inventory_becomes_offers, cancel_launched),
      cmocka_unit_test_teardown(jobs_run_and_report_exit_codes,
                                cancel_launched),
      cmocka_unit_test_teardown(terminate_a_sleeping_job, cancel_launched),
      cmocka_unit_test_teardown(retried_launch_yields_one_job, cancel_launched),
      cmocka_unit_test_teardown(placements_never_oversubscribe,
                                cancel_launched),
      cmocka_unit_test(unknown_ids),
      cmocka_unit_test_teardown(tokens_refused_or_expired_are_auth,
                                remove_token_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
