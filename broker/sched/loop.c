/* loop.c - the scheduler's pass and its life cycle (sched.h): the offers
 * from the catalog, then follow.c (notices, live attempts, jobs a restart
 * left half way), then place.c (the pending queue).  The steps are in
 * tw_sched_tick(); the other files never call back into this one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/catalog/catalog.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/sched/sched_int.h"
#include "broker/tenancy/tenancy.h"
#include "policies/place/placer.h"
#include "providers/provider.h"

enum tw_rc tw_sched_new(const struct tw_sched_opts *o, struct tw_sched **out,
                        struct tw_err *err) {
  struct tw_sched *s = tw_calloc(1, sizeof *s);
  s->store = o->store;
  s->clock = o->clock ? o->clock : tw_clock_real();
  s->tick_ms = o->tick_ms > 0 ? o->tick_ms : 1000;
  s->ttl_ms = o->offers_ttl_ms > 0 ? o->offers_ttl_ms : 300000;
  s->max_place = o->max_place_per_tick > 0 ? o->max_place_per_tick : 64;
  s->tenancy = o->tenancy;
  s->meter = o->meter;
  s->agent = o->agent;
  s->tracer = o->tracer;
  sched__obs_init(s);
  s->n_pc = o->n_providers;
  s->pc = tw_calloc(s->n_pc ? s->n_pc : 1, sizeof *s->pc);
  for (size_t i = 0; i < s->n_pc; i++) {
    s->pc[i].p = o->providers[i];
    tw_offer_list_init(&s->pc[i].offers);
  }
  tw_offer_list_init(&s->all);
  s->cat = o->catalog;
  if (!s->cat) {
    /* a private catalog over the providers, refreshed by the pass when
     * offers_ttl_ms has passed, as the scheduler used to list offers */
    struct tw_catalog_opts co = {.clock = s->clock,
                                 .providers = o->providers,
                                 .n_providers = o->n_providers,
                                 .refresh_ms = s->ttl_ms};
    enum tw_rc rc = tw_catalog_new(&co, &s->cat, err);
    if (rc) {
      sched__obs_release(s);
      free(s->pc);
      free(s);
      return rc;
    }
    s->own_cat = true;
  }
  s->placer = o->placer;
  if (!s->placer) {
    s->placer = tw_placer_new(NULL);
    s->own_placer = true;
  }
  s->specs = o->specs;
  if (!s->specs) {
    s->specs = tw_spec_cache_new(0);
    s->own_specs = true;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->pass_budget_ms = o->pass_budget_ms > 0 ? o->pass_budget_ms : 500;
  sched__place_init(s);
  sched__spot_init(s, o);
  sched__calls_init(s);
  *out = s;
  return TW_OK;
}

int64_t tw_sched_stalled_ms(struct tw_sched *s) {
  int64_t beat = __atomic_load_n(&s->beat_ms, __ATOMIC_ACQUIRE);
  if (beat == 0)
    return -1;
  /* a pass takes up to its budget plus the launches it waits for; a loop
   * that has not come round in 20 ticks (at least 60 s) is stuck */
  int64_t limit = 20 * s->tick_ms > 60000 ? 20 * s->tick_ms : 60000;
  int64_t ago = sched__mono_ms() - beat;
  return ago > limit ? ago : 0;
}

struct tw_placer *tw_sched_placer(struct tw_sched *s) {
  return s->placer;
}

/* 1. offers: placement's array follows the catalog's snapshot, rebuilt
 * only when a new snapshot was published.  A provider whose refresh
 * fails keeps its previous offers there (the catalog keeps its table). */
static void refresh_offers(struct tw_sched *s, int64_t now) {
  if (!s->cat || (!s->n_pc && s->own_cat))
    return;
  if (s->own_cat)
    tw_catalog_refresh_due(s->cat, now);
  else /* the first pass places on complete offers, as it did when it
        * listed them itself */
    tw_catalog_wait_ready(s->cat);
  struct tw_cat_snap *snap = tw_catalog_acquire(s->cat);
  if (tw_cat_snap_version(snap) != s->cat_version) {
    const char **accounts =
        tw_calloc(s->n_pc ? s->n_pc : 1, sizeof *accounts);
    for (size_t i = 0; i < s->n_pc; i++)
      accounts[i] = tw_provider_account(s->pc[i].p);
    sched__offers_changing(s);
    tw_offer_list_release(&s->all);
    size_t launchable =
        s->n_pc ? tw_cat_snap_offers_of(snap, accounts, s->n_pc, &s->all) : 0;
    /* a seed catalog's other clouds: plans show them ("no account can
     * launch this"), the launchable filter keeps jobs off them */
    size_t unserved =
        tw_cat_snap_offers_unserved(snap, accounts, s->n_pc, &s->all);
    free(accounts);
    s->cat_version = tw_cat_snap_version(snap);
    tw_log_info("sched", "catalog=%llu offers=%zu unserved=%zu refreshed",
                (unsigned long long)s->cat_version, launchable, unserved);
    if (s->tenancy) /* admission projects costs over the launchable ones,
                     * which come first */
      tw_tenancy_set_offers(s->tenancy, s->all.items, launchable);
  }
  tw_cat_snap_release(snap);
}

/* A completed call: a launch's outcome stored (launch.c), then what it
 * means for its job: a first launch refused places the job again (its
 * next candidate, or after a back-off), a settling call's answer goes to
 * follow.c, as do describes and terminates. */
static int apply_call(struct tw_sched *s, struct sched_call *c, bool timed_out,
                      int64_t now) {
  if (c->kind != SCHED_CALL_LAUNCH) /* a describe or a terminate */
    return sched__follow_applied(s, c, timed_out, now);
  enum tw_rc rc = TW_OK;
  enum sched_launch_outcome r = sched__launch_apply(s, c, timed_out, &rc);
  if (!c->first)
    return sched__follow_resolved(s, c, r, now);
  if (r == SCHED_LAUNCH_REFUSED)
    return 1 + sched__place_refused(s, c->job.id, rc, now);
  return r == SCHED_LAUNCH_OK;
}

/* The pass's collect: the attempts its answers show running are stored
 * together once it returns (follow.c), one transaction for all. */
static int collect(struct tw_sched *s, int64_t until_mono_ms, int64_t now) {
  s->defer_running = true;
  int changes = sched__calls_collect(s, until_mono_ms, apply_call, now);
  s->defer_running = false;
  sched__follow_flush(s);
  return changes;
}

int tw_sched_tick(struct tw_sched *s) {
  int changes = 0;
  int64_t start = sched__mono_ms();
  memset(&s->pass, 0, sizeof s->pass);
  s->backlog = false;
  s->no_room = 0;
  int64_t t0 = tw_mono_us(), t = t0, u;
  int64_t now = tw_clock_now_ms(s->clock);
  refresh_offers(s, now);
  u = tw_mono_us();
  s->pass.offers_us = u - t;
  t = u;
  if (s->tenancy) { /* what each tenant holds: live attempts' reservations */
    const struct tw_attempt_rec *live = NULL;
    size_t n_live = 0;
    struct tw_err err = {0};
    if (sched__live(s, &live, &n_live, &err) == TW_OK)
      tw_tenancy_place_begin_live(s->tenancy, live, n_live);
    else
      tw_log_warn("tenancy", "placement phase without fresh usage: %s",
                  err.msg);
  }
  /* what came back since the last pass, without waiting */
  changes += collect(s, 0, now);
  /* 2.-3. notices and live attempts first: an interrupted job is placed
   * again in this pass, ahead of the queue */
  changes += sched__follow(s, now);
  u = tw_mono_us();
  s->pass.follow_us = u - t;
  t = u;
  /* 4. the queue: what dependencies released joins it first */
  changes += sched__flow(s, now);
  u = tw_mono_us();
  s->pass.flow_us = u - t;
  t = u;
  changes += sched__place_pending(s, now); /* times its own steps */
  /* the calls of this pass, waited for within its budget: what does not
   * come back by then is applied by a later pass.  With a backlog the
   * next pass follows at once and collects them instead, so the loop
   * places the next jobs while these launches run; when jobs found the
   * pools full, what comes back makes room for the next pass, which then
   * follows at once too. */
  if (s->backlog) {
    changes += collect(s, 0, now);
  } else {
    size_t before = s->collected;
    changes += collect(s, start + s->pass_budget_ms, now);
    if (s->no_room && s->collected != before)
      tw_sched_wake(s);
  }
  u = tw_mono_us();
  /* the rest of the queue's step: its attempts opened, their launches
   * sent, and this collect */
  s->pass.launch_us =
      u - t - s->pass.queue_us - s->pass.plan_us - s->pass.notes_us;
  s->pass.total_us = u - t0;
  pthread_mutex_lock(&s->mu);
  s->last_pass = s->pass;
  pthread_mutex_unlock(&s->mu);
  sched__obs_pass(s, u - t0);
  return changes;
}

int64_t tw_sched_warm(struct tw_sched *s) {
  int64_t t0 = tw_mono_us();
  /* not the offers: the daemon's catalog may still be listing them, and
   * the first pass waits for that as it always did */
  struct tw_err err = {0};
  if (tw_store_warm(s->store, &err))
    tw_log_warn("sched", "statements not prepared ahead: %s", err.msg);
  sched__place_warm(s);
  return (tw_mono_us() - t0) / 1000;
}

void tw_sched_last_pass(struct tw_sched *s, struct tw_sched_pass_stats *out) {
  pthread_mutex_lock(&s->mu);
  *out = s->last_pass;
  pthread_mutex_unlock(&s->mu);
}

static void *loop_main(void *arg) {
  struct tw_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    pthread_mutex_unlock(&s->mu);
    __atomic_store_n(&s->beat_ms, sched__mono_ms(), __ATOMIC_RELEASE);
    tw_sched_tick(s);
    __atomic_store_n(&s->beat_ms, sched__mono_ms(), __ATOMIC_RELEASE);
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
    if (!s->woken)
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    s->woken = false;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

void tw_sched_wake(struct tw_sched *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->woken = true;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

enum tw_rc tw_sched_start(struct tw_sched *s, struct tw_err *err) {
  if (pthread_create(&s->thread, NULL, loop_main, s) != 0)
    return tw_err_set(err, TW_E_INTERNAL,
                      "sched: cannot start the loop thread");
  s->started = true;
  return TW_OK;
}

static void stop_thread(struct tw_sched *s) {
  if (!s->started)
    return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  s->started = false;
}

size_t tw_sched_drain(struct tw_sched *s, int64_t deadline_mono_ms) {
  if (!s)
    return 0;
  /* no pass starts after this one; the current one stops between two
   * cloud calls (follow.c checks sched__stopping), so the join waits for
   * one call at most, bounded by the adapter's timeout */
  stop_thread(s);
  /* the launches in flight are handed back as they answer, until the
   * deadline; placing nothing new (the loop is stopped) */
  sched__calls_collect(s, deadline_mono_ms, apply_call,
                       tw_clock_now_ms(s->clock));
  size_t n = sched__calls_abandon(s);
  if (n)
    tw_log_warn("sched",
                "drain: %zu call%s still in flight at the deadline, "
                "abandoned; their attempts stay launching with their tokens",
                n, n == 1 ? "" : "s");
  return n;
}

int64_t tw_sched_mono_ms(void) { return sched__mono_ms(); }

void tw_sched_free(struct tw_sched *s) {
  if (!s)
    return;
  stop_thread(s);
  sched__calls_release(s);
  if (s->own_cat)
    tw_catalog_free(s->cat);
  for (size_t i = 0; i < s->n_pc; i++)
    tw_offer_list_release(&s->pc[i].offers);
  sched__offers_changing(s);
  tw_offer_list_release(&s->all);
  sched__place_release(s);
  sched__follow_release(s);
  sched__spot_release(s);
  /* after the index (place.c) gave up its reference */
  if (s->own_placer)
    tw_placer_free(s->placer);
  if (s->own_specs)
    tw_spec_cache_free(s->specs);
  free(s->pc);
  sched__obs_release(s);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
