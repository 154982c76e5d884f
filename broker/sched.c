#include "sched_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/log.h"
#include "broker/mem.h"
#include "broker/model.h"
#include "broker/spec.h"
#include "broker/store.h"
#include "broker/tenancy.h"
#include "policies/place.h"
#include "providers/provider.h"

enum tw_rc tw_sched_new(const struct tw_sched_opts *o, struct tw_sched **out,
                        struct tw_err *err) {
  (void)err;
  struct tw_sched *s = tw_calloc(1, sizeof *s);
  s->store = o->store;
  s->clock = o->clock ? o->clock : tw_clock_real();
  s->tick_ms = o->tick_ms > 0 ? o->tick_ms : 1000;
  s->ttl_ms = o->offers_ttl_ms > 0 ? o->offers_ttl_ms : 300000;
  s->max_place = o->max_place_per_tick > 0 ? o->max_place_per_tick : 64;
  s->tenancy = o->tenancy;
  s->n_pc = o->n_providers;
  s->pc = tw_calloc(s->n_pc ? s->n_pc : 1, sizeof *s->pc);
  for (size_t i = 0; i < s->n_pc; i++) {
    s->pc[i].p = o->providers[i];
    tw_offer_list_init(&s->pc[i].offers);
  }
  tw_offer_list_init(&s->all);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  sched__spot_init(s, o);
  *out = s;
  return TW_OK;
}

struct pcache *sched__provider(struct tw_sched *s, const char *acct) {
  for (size_t i = 0; i < s->n_pc; i++)
    if (!strcmp(tw_provider_account(s->pc[i].p), acct))
      return &s->pc[i];
  return NULL;
}

const struct tw_offer *sched__offer(struct tw_sched *s, const char *id) {
  for (size_t i = 0; i < s->all.n; i++)
    if (!strcmp(s->all.items[i].id, id))
      return &s->all.items[i];
  return NULL;
}

/* 1. offers */
static void refresh_offers(struct tw_sched *s, int64_t now) {
  bool changed = false;
  for (size_t i = 0; i < s->n_pc; i++) {
    struct pcache *c = &s->pc[i];
    if (c->fetched_ms && now - c->fetched_ms < s->ttl_ms)
      continue;
    struct tw_offer_list fresh;
    struct tw_err err = {0};
    tw_offer_list_init(&fresh);
    if (tw_provider_list_offers(c->p, &fresh, &err) == TW_OK) {
      tw_offer_list_release(&c->offers);
      c->offers = fresh;
      c->fetched_ms = now;
      changed = true;
      tw_log_info("sched", "provider=%s offers=%zu refreshed",
                  tw_provider_account(c->p), c->offers.n);
    } else {
      /* keep the previous offers; try again next pass (logged by the
       * provider layer) */
      tw_offer_list_release(&fresh);
    }
  }
  if (!changed)
    return;
  tw_offer_list_release(&s->all);
  for (size_t i = 0; i < s->n_pc; i++)
    for (size_t k = 0; k < s->pc[i].offers.n; k++)
      tw_offer_list_push(&s->all, &s->pc[i].offers.items[k]);
  if (s->tenancy) /* admission projects costs over the same offers */
    tw_tenancy_set_offers(s->tenancy, s->all.items, s->all.n);
}

bool sched__parse_spec(const struct tw_job_rec *job, struct tw_job_spec *spec) {
  struct tw_err err = {0};
  if (tw_spec_parse(job->spec_json, strlen(job->spec_json), true, spec, &err)) {
    tw_log_error("sched", "job=%s stored spec does not parse: %s", job->id, err.msg);
    return false;
  }
  return true;
}

static void placement_json(struct tw_buf *b, const struct tw_offer *o,
                           const struct tw_attempt_rec *a, const char *instance_id,
                           int64_t cost, const char *explain) {
  tw_buf_adds(b, "{\"provider\":");
  tw_buf_json_str(b, o->provider);
  tw_buf_adds(b, ",\"account\":");
  tw_buf_json_str(b, o->account);
  tw_buf_adds(b, ",\"region\":");
  tw_buf_json_str(b, o->region);
  tw_buf_adds(b, ",\"zone\":");
  tw_buf_json_str(b, o->zone);
  tw_buf_adds(b, ",\"instance_type\":");
  tw_buf_json_str(b, o->instance_type);
  tw_buf_printf(b, ",\"market\":\"%s\",\"price_uusd_per_hour\":%lld",
                tw_market_str(o->market), (long long)o->price_uusd_per_hour);
  tw_buf_printf(b, ",\"expected_cost_uusd\":%lld,\"attempt\":%d,\"instance_id\":",
                (long long)cost, a->n);
  tw_buf_json_str(b, instance_id);
  tw_buf_adds(b, ",\"offer_id\":");
  tw_buf_json_str(b, o->id);
  tw_buf_adds(b, ",\"explain\":");
  tw_buf_json_str(b, explain);
  tw_buf_addc(b, '}');
}

/* Calls the provider for attempt a on offer o; stores the outcome.
 * Returns the rc of the launch. */
enum tw_rc sched__launch(struct tw_sched *s, const struct tw_job_rec *job,
                                 const struct tw_job_spec *spec,
                                 const struct tw_attempt_rec *a,
                                 const struct tw_offer *o, int64_t cost,
                                 const char *explain) {
  struct pcache *pc = sched__provider(s, o->account);
  struct tw_err err = {0};
  if (!pc)
    return tw_err_set(&err, TW_E_INVALID, "provider %s is not configured", o->account);
  /* the same attempt always gets the same user data (the checkpoint
   * contract's prelude is a function of the attempt), so a launch resent
   * with its client token matches the first one */
  struct tw_buf ud;
  tw_buf_init(&ud);
  struct tw_launch req = {.offer = o,
                          .client_token = a->client_token,
                          .job_id = job->id,
                          .attempt_id = a->client_token,
                          .tenant = job->tenant,
                          .max_price_uusd_per_hour = spec->max_price_uusd_per_hour,
                          .user_data = sched__spot_user_data(s, job, spec, a, o, &ud),
                          .duration_s = spec->duration_s,
                          .nodes = spec->nodes,
                          .env = spec->env,
                          .n_env = spec->n_env};
  struct tw_instance inst;
  enum tw_rc rc = tw_provider_launch(pc->p, &req, &inst, &err);
  tw_buf_release(&ud);
  if (rc == TW_OK) {
    struct tw_buf pj;
    tw_buf_init(&pj);
    placement_json(&pj, o, a, inst.id, cost, explain);
    struct tw_err serr = {0};
    if (tw_store_attempt_launched(s->store, a->id, inst.id, pj.data, &serr))
      tw_log_warn("sched", "job=%s attempt=%d launched %s but not recorded: %s",
                  job->id, a->n, inst.id, serr.msg);
    else
      tw_log_info("sched", "job=%s attempt=%d offer=%s instance=%s launched", job->id,
                  a->n, o->id, inst.id);
    if (s->tenancy)
      tw_tenancy_audit_launch(s->tenancy, job, a->n, o, TW_OK, NULL, explain);
    tw_buf_release(&pj);
    sched__spot_launch_ok(s, o, tw_clock_now_ms(s->clock));
    return TW_OK;
  }
  /* capacity: that offer is full now; rejected: that offer refuses this
   * request (an image missing in that region, say), so both are avoided
   * for this job; failed: nothing wrong with the offer (throttled, auth) */
  sched__spot_launch_failed(s, o, rc, tw_clock_now_ms(s->clock));
  const char *end = rc == TW_E_CAPACITY || rc == TW_E_QUOTA ? "capacity"
                    : rc == TW_E_INVALID                   ? "rejected"
                                                           : "failed";
  if (s->tenancy)
    tw_tenancy_audit_launch(s->tenancy, job, a->n, o, rc, err.msg, explain);
  struct tw_attempt_close c = {.attempt_id = a->id, .end_reason = end,
                               .job_to = TW_JOB_NSTATES};
  struct tw_err serr = {0};
  tw_store_attempt_close(s->store, &c, &serr);
  char note[768];
  snprintf(note, sizeof note, "launch on %s refused (%s%s%s): %s", o->id, tw_rc_str(rc),
           err.detail[0] ? " " : "", err.detail, err.msg);
  tw_store_job_note(s->store, job->id, note, &serr);
  return rc;
}

static struct backoff *backoff_find(struct tw_sched *s, const char *job_id) {
  for (size_t i = 0; i < s->n_backoff; i++)
    if (!strcmp(s->backoff[i].job_id, job_id))
      return &s->backoff[i];
  return NULL;
}

static void backoff_clear(struct tw_sched *s, const char *job_id) {
  struct backoff *b = backoff_find(s, job_id);
  if (b)
    *b = s->backoff[--s->n_backoff];
}

static int64_t backoff_bump(struct tw_sched *s, const char *job_id, int64_t now) {
  struct backoff *b = backoff_find(s, job_id);
  if (!b) {
    if (s->n_backoff == s->cap_backoff) {
      s->cap_backoff = s->cap_backoff ? s->cap_backoff * 2 : 16;
      s->backoff = tw_realloc(s->backoff, s->cap_backoff * sizeof *s->backoff);
    }
    b = &s->backoff[s->n_backoff++];
    snprintf(b->job_id, sizeof b->job_id, "%s", job_id);
    b->delay_ms = 500;
  }
  b->delay_ms = b->delay_ms * 2 > 60000 ? 60000 : b->delay_ms * 2;
  b->not_before_ms = now + b->delay_ms;
  return b->delay_ms;
}

/* 4. one pending job (or, from monitor.c, a recovering one) */
int sched__place_job(struct tw_sched *s, const struct tw_job_rec *job, int64_t now) {
  struct backoff *b = backoff_find(s, job->id);
  if (b && now < b->not_before_ms)
    return 0;
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (!sched__parse_spec(job, &spec))
    return 0;
  int changes = 0;
  struct tw_attempt_rec *past = NULL;
  size_t n_past = 0;
  tw_store_attempts_of(s->store, job->id, &past, &n_past, &err);
  const char **excl = tw_calloc(n_past + 1, sizeof *excl);
  size_t n_excl = 0;
  for (size_t i = 0; i < n_past; i++)
    if (sched__spot_excludes(s, &past[i], now))
      excl[n_excl++] = past[i].offer_id;

  /* the spot lifecycle: blocklisted offers, the fallback strategy's
   * market and order */
  struct spot_plan plan;
  sched__spot_plan(s, job, &spec, past, n_past, now, &excl, &n_excl, &plan);

  struct tw_placement pl;
  tw_place_rank(&spec, s->all.items, s->all.n, excl, n_excl, &pl);
  char explain[512];
  tw_placement_explain(&pl, explain, sizeof explain);
  sched__spot_order(s, job, &plan, &pl, explain, sizeof explain, now);
  if (spec.nodes > 1) {
    tw_store_job_note(s->store, job->id,
                      "waiting: multi-node gangs are not placed on clouds yet", &err);
    goto out;
  }
  if (pl.n == 0) {
    char note[600];
    snprintf(note, sizeof note, "no offer fits: %s", explain);
    tw_store_job_note(s->store, job->id, note, &err);
    goto out;
  }
  if (s->tenancy && tw_tenancy_place_filter(s->tenancy, job, &spec, &pl))
    goto out; /* nothing within the tenant's quota now (noted once) */
  bool placed = false, opened = false, retry_later = false;
  for (size_t i = 0; i < pl.n && !placed; i++) {
    const struct tw_offer *o = pl.cands[i].offer;
    char why[1100];
    snprintf(why, sizeof why, "cheapest feasible offer %s (%s)", o->id, explain);
    struct tw_attempt_new an = {.job_id = job->id, .provider = o->account,
                                .offer_id = o->id, .market = tw_market_str(o->market),
                                .price_uusd_per_hour = o->price_uusd_per_hour,
                                .reason = why};
    struct tw_attempt_rec a;
    struct tw_err aerr = {0};
    if (s->tenancy) /* the job's share, held while its attempt lives */
      tw_tenancy_place_commit(s->tenancy, job, &spec, o);
    if (tw_store_attempt_open(s->store, &an, &a, &aerr)) {
      /* cancelled meanwhile, most likely */
      break;
    }
    opened = true;
    changes++;
    enum tw_rc rc = sched__launch(s, job, &spec, &a, o, pl.cands[i].cost_uusd, explain);
    if (rc == TW_OK)
      placed = true;
    else if (rc != TW_E_CAPACITY && rc != TW_E_QUOTA && rc != TW_E_INVALID) {
      retry_later = true; /* throttled, auth, down: not the offer's fault */
      break;
    }
  }
  if (opened && !placed) {
    char why[128] = "launch failed; waiting to place again";
    if (retry_later)
      snprintf(why, sizeof why, "launch failed; trying again in %lld s",
               (long long)(backoff_bump(s, job->id, now) / 1000));
    struct tw_job_transition t = {.id = job->id, .to = TW_JOB_PENDING, .reason = why};
    tw_store_job_transition(s->store, &t, NULL, &err);
  }
  if (placed)
    backoff_clear(s, job->id);
out:
  tw_placement_release(&pl);
  free(excl);
  free(past);
  tw_spec_release(&spec);
  return changes;
}

int tw_sched_tick(struct tw_sched *s) {
  int changes = 0;
  int64_t now = tw_clock_now_ms(s->clock);
  struct tw_err err = {0};
  refresh_offers(s, now);
  if (s->tenancy) /* what each tenant holds: live attempts' reservations */
    tw_tenancy_place_begin(s->tenancy);

  changes += sched__follow(s, now);

  struct tw_job_rec *queue = NULL;
  size_t n = 0;
  if (tw_store_jobs_queued(s->store, TW_JOB_PENDING, s->max_place, &queue, &n, &err) == TW_OK)
    for (size_t i = 0; i < n; i++) {
      changes += sched__place_job(s, &queue[i], now);
      tw_job_rec_release(&queue[i]);
    }
  free(queue);
  return changes;
}

static void *loop_main(void *arg) {
  struct tw_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    pthread_mutex_unlock(&s->mu);
    tw_sched_tick(s);
    pthread_mutex_lock(&s->mu);
    if (s->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += s->tick_ms / 1000;
    ts.tv_nsec += (s->tick_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

enum tw_rc tw_sched_start(struct tw_sched *s, struct tw_err *err) {
  if (pthread_create(&s->thread, NULL, loop_main, s) != 0)
    return tw_err_set(err, TW_E_INTERNAL, "sched: cannot start the loop thread");
  s->started = true;
  return TW_OK;
}

void tw_sched_free(struct tw_sched *s) {
  if (!s)
    return;
  if (s->started) {
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
  }
  for (size_t i = 0; i < s->n_pc; i++)
    tw_offer_list_release(&s->pc[i].offers);
  tw_offer_list_release(&s->all);
  free(s->pc);
  free(s->backoff);
  sched__spot_free(s);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
