/* reconcile.c - adopt what a lost answer left behind, terminate orphans
 * and duplicates (reconcile.h). */
#include "broker/sched/reconcile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "providers/provider.h"
#include "broker/core/spec.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"

struct tw_reconcile {
  struct tw_reconcile_opts o;
  pthread_mutex_t pass_mu; /* one pass at a time */
  pthread_mutex_t mu;      /* stats, thread control */
  pthread_cond_t cv;
  struct tw_reconcile_stats stats;
  pthread_t thread;
  bool started, stopping;
};

enum tw_rc tw_reconcile_new(const struct tw_reconcile_opts *opts,
                            struct tw_reconcile **out, struct tw_err *err) {
  *out = NULL;
  if (!opts->store)
    return tw_err_set(err, TW_E_INVALID, "reconcile: a store is required");
  struct tw_reconcile *r = tw_calloc(1, sizeof *r);
  r->o = *opts;
  if (!r->o.clock)
    r->o.clock = tw_clock_real();
  if (r->o.interval_ms <= 0)
    r->o.interval_ms = 60000;
  pthread_mutex_init(&r->pass_mu, NULL);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  *out = r;
  return TW_OK;
}

/* ---- recording -------------------------------------------------------------
 */

static void record(struct tw_reconcile *r,
                   const struct tw_reconcile_action *a) {
  struct tw_err err = {0};
  if (tw_store_reconcile_log_add(r->o.store, a, &err))
    tw_log_warn("reconcile", "instance=%s action not stored: %s",
                a->instance_id, err.msg);
  if (a->job_id[0]) {
    char note[400];
    snprintf(note, sizeof note, "reconciler %s instance %s%s%s: %s", a->action,
             a->instance_id, a->attempt[0] ? " of attempt " : "", a->attempt,
             a->reason);
    struct tw_err nerr = {0};
    tw_store_job_note(r->o.store, a->job_id, note,
                      &nerr); /* no job: nothing to note */
  }
  tw_log_info("reconcile", "provider=%s instance=%s job=%s attempt=%s %s: %s",
              a->provider, a->instance_id, a->job_id, a->attempt, a->action,
              a->reason);
  if (r->o.on_action)
    r->o.on_action(r->o.ctx, a);
}

/* ---- one pass
 * ----------------------------------------------------------------- */

struct seen {
  struct tw_instance inst;
  size_t prov;
};

/* A job's attempts, read once per pass. */
struct job_atts {
  char job_id[TW_MODEL_TAG_MAX];
  struct tw_attempt_rec *a;
  size_t n;
  bool missing; /* the store has no such job (or could not say) */
};

static int by_launch(const void *x, const void *y) {
  const struct seen *a = x, *b = y;
  if (a->inst.launched_ms != b->inst.launched_ms)
    return a->inst.launched_ms < b->inst.launched_ms ? -1 : 1;
  return strcmp(a->inst.id, b->inst.id);
}

static struct job_atts *atts_of(struct tw_reconcile *r, struct job_atts **cache,
                                size_t *n, size_t *cap, const char *job_id) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*cache)[i].job_id, job_id))
      return &(*cache)[i];
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *cache = tw_realloc(*cache, *cap * sizeof **cache);
  }
  struct job_atts *j = &(*cache)[(*n)++];
  memset(j, 0, sizeof *j);
  snprintf(j->job_id, sizeof j->job_id, "%s", job_id);
  struct tw_err err = {0};
  if (tw_store_attempts_of(r->o.store, job_id, &j->a, &j->n, &err)) {
    j->a = NULL;
    j->n = 0;
    j->missing = true;
  }
  return j;
}

static void placement_json(struct tw_buf *b, const struct tw_instance *i,
                           const struct tw_attempt_rec *a) {
  tw_buf_adds(b, "{\"provider\":");
  tw_buf_json_str(b, i->provider);
  tw_buf_adds(b, ",\"account\":");
  tw_buf_json_str(b, i->account);
  tw_buf_adds(b, ",\"region\":");
  tw_buf_json_str(b, i->region);
  tw_buf_adds(b, ",\"zone\":");
  tw_buf_json_str(b, i->zone);
  tw_buf_adds(b, ",\"instance_type\":");
  tw_buf_json_str(b, i->instance_type);
  tw_buf_printf(
      b, ",\"market\":\"%s\",\"price_uusd_per_hour\":%lld,\"attempt\":%d",
      a->market, (long long)a->price_uusd_per_hour, a->n);
  tw_buf_adds(b, ",\"instance_id\":");
  tw_buf_json_str(b, i->id);
  tw_buf_adds(b, ",\"offer_id\":");
  tw_buf_json_str(b, a->offer_id);
  tw_buf_adds(b, ",\"explain\":\"adopted by the reconciler: the launch's "
                 "answer was lost\"}");
}

/* k when client token ct is node k of a gang of attempt token ("<token>-<k>"),
 * else 0. */
static int gang_k(const char *ct, const char *token) {
  size_t n = strlen(token);
  if (strncmp(ct, token, n) || ct[n] != '-' || !ct[n + 1])
    return 0;
  int k = 0;
  for (const char *p = ct + n + 1; *p; p++) {
    if (*p < '0' || *p > '9' || k > 100000)
      return 0;
    k = k * 10 + (*p - '0');
  }
  return k;
}

/* The node count of job_id's spec; 0 when it cannot be read. */
static int nodes_of_job(struct tw_reconcile *r, const char *job_id) {
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_get(r->o.store, job_id, &job, &err))
    return 0;
  int n = 0;
  const struct tw_job_spec *spec =
      tw_spec_cache_acquire(r->o.specs, &job, &err);
  if (spec) {
    n = spec->nodes > 0 ? spec->nodes : 1;
    tw_spec_cache_release(r->o.specs, spec);
  }
  tw_job_rec_release(&job);
  return n;
}

/* Node k of live gang attempt a answers: adopted when its node is not
 * recorded (once all N are, the attempt is launched with node 1 as its
 * instance), left alone when it is that node, terminated when it is
 * beyond the gang or a second instance for one node.  Returns the action
 * (NULL: nothing to record) with reason filled; *failed when a call
 * failed. */
static const char *gang_node(struct tw_reconcile *r, struct tw_provider *prov,
                             const struct tw_instance *in,
                             struct tw_attempt_rec *a, int k, char *reason,
                             size_t rsz, struct tw_reconcile_stats *st) {
  int nodes = nodes_of_job(r, a->job_id);
  if (!nodes)
    return NULL; /* the store could not say: decide nothing on that */
  struct tw_attempt_instance *g = NULL;
  size_t ng = 0;
  struct tw_err err = {0};
  if (tw_store_attempt_instances(r->o.store, a->id, &g, &ng, &err))
    return NULL;
  const struct tw_attempt_instance *mine = NULL;
  for (size_t i = 0; i < ng; i++)
    if (g[i].k == k)
      mine = &g[i];
  const char *action = NULL;
  if (k <= nodes && mine && !strcmp(mine->instance_id, in->id)) {
    /* as it should be */
  } else if (k <= nodes && !mine) {
    if (tw_store_attempt_instance_put(r->o.store, a->id, k, in->id, "launched",
                                      &err) == TW_OK) {
      action = "adopted";
      snprintf(reason, rsz,
               "the launch's answer was lost; node %d of %d of attempt %d", k,
               nodes, a->n);
      st->adopted++;
      if (ng + 1 == (size_t)nodes && !a->instance_id[0]) {
        /* the whole gang is known: the attempt goes on with it */
        const char *first = k == 1 ? in->id : NULL;
        for (size_t i = 0; i < ng && !first; i++)
          if (g[i].k == 1)
            first = g[i].instance_id;
        struct tw_buf pj;
        tw_buf_init(&pj);
        struct tw_instance head = *in;
        snprintf(head.id, sizeof head.id, "%s", first ? first : in->id);
        placement_json(&pj, &head, a);
        if (tw_store_attempt_launched(r->o.store, a->id, head.id, pj.data,
                                      &err) == TW_OK) {
          snprintf(a->instance_id, sizeof a->instance_id, "%s", head.id);
          a->state = TW_ATTEMPT_PROVISIONING;
        }
        tw_buf_release(&pj);
      }
    }
  } else {
    if (k > nodes)
      snprintf(reason, rsz, "beyond its gang: node %d of %d", k, nodes);
    else
      snprintf(reason, rsz, "a duplicate: node %d of attempt %d runs on %s", k,
               a->n, mine->instance_id);
    if (tw_provider_terminate(prov, in->id, &err))
      st->failures++;
    else {
      action = "terminated";
      st->terminated++;
    }
  }
  free(g);
  return action;
}

enum tw_rc tw_reconcile_pass(struct tw_reconcile *r,
                             struct tw_reconcile_stats *done,
                             struct tw_err *err) {
  (void)err;
  struct tw_reconcile_stats st = {.passes = 1};
  pthread_mutex_lock(&r->pass_mu);
  /* 1. list first (see reconcile.h: the order is what makes it safe) */
  struct seen *all = NULL;
  size_t n_all = 0, cap_all = 0;
  for (size_t p = 0; p < r->o.n_providers; p++) {
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    struct tw_err lerr = {0};
    if (tw_provider_list_managed(r->o.providers[p], &l, &lerr)) {
      st.failures++; /* logged by the provider layer; skipped this pass */
      tw_instance_list_release(&l);
      continue;
    }
    for (size_t i = 0; i < l.n; i++) {
      if (n_all == cap_all) {
        cap_all = cap_all ? cap_all * 2 : 64;
        all = tw_realloc(all, cap_all * sizeof *all);
      }
      all[n_all].inst = l.items[i];
      all[n_all].prov = p;
      n_all++;
    }
    tw_instance_list_release(&l);
  }
  st.listed = n_all;
  /* the first launched of several answering for one attempt is adopted */
  if (n_all > 1)
    qsort(all, n_all, sizeof *all, by_launch);

  /* 2. then the store */
  struct job_atts *cache = NULL;
  size_t n_cache = 0, cap_cache = 0;
  for (size_t i = 0; i < n_all; i++) {
    const struct tw_instance *in = &all[i].inst;
    struct tw_provider *prov = r->o.providers[all[i].prov];
    if (tw_instance_state_gone(in->state))
      continue;
    const char *token = in->attempt_id[0] ? in->attempt_id : in->client_token;
    struct job_atts *j =
        in->job_id[0] ? atts_of(r, &cache, &n_cache, &cap_cache, in->job_id)
                      : NULL;
    if (j && j->missing)
      continue; /* the store could not answer: decide nothing on that */
    struct tw_attempt_rec *a = NULL;
    for (size_t k = 0; j && k < j->n && !a; k++)
      if (!strcmp(j->a[k].client_token, token))
        a = &j->a[k];
    int64_t now = tw_clock_now_ms(r->o.clock);
    char reason[200];
    const char *action = NULL;
    int k =
        a && a->state != TW_ATTEMPT_ENDED ? gang_k(in->client_token, token) : 0;
    if (k) {
      action = gang_node(r, prov, in, a, k, reason, sizeof reason, &st);
      if (!action)
        continue;
    } else if (a && a->state != TW_ATTEMPT_ENDED && !a->instance_id[0]) {
      struct tw_buf pj;
      tw_buf_init(&pj);
      placement_json(&pj, in, a);
      struct tw_err aerr = {0};
      enum tw_rc rc =
          tw_store_attempt_launched(r->o.store, a->id, in->id, pj.data, &aerr);
      tw_buf_release(&pj);
      if (rc == TW_OK) {
        snprintf(a->instance_id, sizeof a->instance_id, "%s", in->id);
        a->state = TW_ATTEMPT_PROVISIONING;
        action = "adopted";
        snprintf(reason, sizeof reason,
                 "the launch's answer was lost; attempt %d goes on with it",
                 a->n);
        st.adopted++;
      } else {
        struct tw_job_rec job;
        enum tw_job_state js = TW_JOB_PENDING;
        if (tw_store_job_get(r->o.store, in->job_id, &job, &aerr) == TW_OK) {
          js = job.state;
          tw_job_rec_release(&job);
        }
        bool ended = tw_job_state_terminal(js);
        if (!ended)
          /* the scheduler recorded it meanwhile: look again at the next
           * pass rather than guess */
          continue;
        /* the job finished (cancelled) before its launch was answered */
        struct tw_err terr = {0};
        if (tw_provider_terminate(prov, in->id, &terr)) {
          st.failures++;
          continue;
        }
        action = "terminated";
        snprintf(reason, sizeof reason, "its job is %s", tw_job_state_str(js));
        st.terminated++;
      }
    } else if (a && a->state != TW_ATTEMPT_ENDED &&
               !strcmp(a->instance_id, in->id)) {
      continue; /* as it should be */
    } else {
      if (!a)
        snprintf(reason, sizeof reason, "%s",
                 in->job_id[0] ? "no such attempt in the store"
                               : "it names no job");
      else if (a->state == TW_ATTEMPT_ENDED)
        snprintf(reason, sizeof reason, "its attempt ended (%s)",
                 a->end_reason);
      else
        snprintf(reason, sizeof reason, "a duplicate: attempt %d runs on %s",
                 a->n, a->instance_id);
      struct tw_err terr = {0};
      if (tw_provider_terminate(prov, in->id, &terr)) {
        st.failures++;
        continue; /* logged by the provider layer; next pass tries again */
      }
      action = "terminated";
      st.terminated++;
    }
    struct tw_reconcile_action act = {.at_ms = now,
                                      .provider = tw_provider_account(prov),
                                      .instance_id = in->id,
                                      .job_id = in->job_id,
                                      .attempt = token,
                                      .action = action,
                                      .reason = reason};
    record(r, &act);
  }
  for (size_t i = 0; i < n_cache; i++)
    free(cache[i].a);
  free(cache);
  free(all);
  tw_mem_trim(cap_all * sizeof *all);
  st.last_pass_ms = tw_clock_now_ms(r->o.clock);
  pthread_mutex_lock(&r->mu);
  r->stats.passes++;
  r->stats.listed += st.listed;
  r->stats.adopted += st.adopted;
  r->stats.terminated += st.terminated;
  r->stats.failures += st.failures;
  r->stats.last_pass_ms = st.last_pass_ms;
  pthread_mutex_unlock(&r->mu);
  pthread_mutex_unlock(&r->pass_mu);
  tw_log_info(
      "reconcile",
      "pass done listed=%llu adopted=%llu terminated=%llu failures=%llu",
      (unsigned long long)st.listed, (unsigned long long)st.adopted,
      (unsigned long long)st.terminated, (unsigned long long)st.failures);
  if (done)
    *done = st;
  return TW_OK;
}

void tw_reconcile_stats(struct tw_reconcile *r,
                        struct tw_reconcile_stats *out) {
  pthread_mutex_lock(&r->mu);
  *out = r->stats;
  pthread_mutex_unlock(&r->mu);
}

/* ---- the thread
 * -------------------------------------------------------------- */

static void *loop_main(void *arg) {
  struct tw_reconcile *r = arg;
  pthread_mutex_lock(&r->mu);
  while (!r->stopping) {
    pthread_mutex_unlock(&r->mu);
    tw_reconcile_pass(r, NULL, NULL);
    pthread_mutex_lock(&r->mu);
    if (r->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += r->o.interval_ms / 1000;
    ts.tv_nsec += (r->o.interval_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

enum tw_rc tw_reconcile_start(struct tw_reconcile *r, struct tw_err *err) {
  if (pthread_create(&r->thread, NULL, loop_main, r) != 0)
    return tw_err_set(err, TW_E_INTERNAL, "reconcile: cannot start its thread");
  r->started = true;
  return TW_OK;
}

void tw_reconcile_free(struct tw_reconcile *r) {
  if (!r)
    return;
  if (r->started) {
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
  }
  pthread_mutex_destroy(&r->pass_mu);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}

/* ---- the log ---------------------------------------------------------------
 */

enum tw_rc tw_reconcile_log(struct tw_store *s, int limit,
                            struct tw_reconcile_logrec **out, size_t *n,
                            struct tw_err *err) {
  if (limit < 1 || limit > 10000)
    return tw_err_set(err, TW_E_INVALID,
                      "reconcile log: limit must be 1..10000, got %d", limit);
  return tw_store_reconcile_log_list(s, limit, out, n, err);
}

void tw_reconcile_log_free(struct tw_reconcile_logrec *l) { free(l); }
