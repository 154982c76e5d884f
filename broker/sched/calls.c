/* calls.c - the scheduler's cloud calls off its thread: one bounded pool
 * of worker threads per provider account (tw_provider_concurrency), a
 * queue of at most SCHED_CALLS_QUEUE_PER_WORKER calls per worker, and a
 * deadline per call (tw_provider_call_deadline_ms).
 *
 * The pass submits a call and goes on; what a call needs it owns (a copy
 * of the job, the attempt, the offer, the request), so the worker touches
 * nothing of the scheduler's.  Completions are collected by the pass
 * (sched__calls_collect) and applied on the scheduler's thread.  A call
 * past its deadline is applied as timed out (for a launch: unknown, never
 * a failure) and abandoned: its worker's late answer is dropped, and the
 * attempt stays busy until that worker returns, so that an attempt never
 * has two calls in flight.  Calls none of the scheduler's other files. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/sched/sched_int.h"

/* CALL_STORING: its worker is done with it, the store not yet
 * (sched__call_storing) */
enum call_status { CALL_QUEUED, CALL_RUNNING, CALL_STORING, CALL_DONE };

struct sched_pool {
  struct sched_calls *owner;
  struct tw_provider *p;
  int n_threads;
  pthread_t *th;
  pthread_cond_t work; /* a call was queued, or stopping */
  struct sched_call *queue, *queue_tail;
  struct sched_call *out; /* running and done, unordered */
  size_t n_queued, n_running;
};

/* The attempts with a call of theirs queued, running or done and not yet
 * applied, counted (open addressing, linear probing, deletion by
 * backward shift): sched__call_busy is asked for every live attempt each
 * pass, and a batched describe holds hundreds of them. */
struct busy_set {
  int64_t *key; /* 0: free (attempt ids are never 0) */
  uint32_t *cnt;
  size_t cap, n;
};

struct sched_calls {
  pthread_mutex_t mu;
  struct busy_set busy;
  pthread_cond_t done; /* a call finished */
  struct sched_pool *pools;
  size_t n_pools;
  bool stopping;
  bool leaked; /* calls were abandoned at a drain: workers left running */
};

static size_t busy_slot(int64_t k, size_t mask) {
  return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

static void busy_put(struct busy_set *b, int64_t k, uint32_t cnt) {
  size_t mask = b->cap - 1, i = busy_slot(k, mask);
  while (b->key[i] && b->key[i] != k)
    i = (i + 1) & mask;
  if (!b->key[i]) {
    b->key[i] = k;
    b->n++;
  }
  b->cnt[i] += cnt;
}

static void busy_add(struct busy_set *b, int64_t k) {
  if (!k)
    return;
  if ((b->n + 1) * 2 > b->cap) {
    struct busy_set old = *b;
    b->cap = old.cap ? old.cap * 2 : 256;
    b->key = tw_calloc(b->cap, sizeof *b->key);
    b->cnt = tw_calloc(b->cap, sizeof *b->cnt);
    b->n = 0;
    for (size_t i = 0; i < old.cap; i++)
      if (old.key[i])
        busy_put(b, old.key[i], old.cnt[i]);
    free(old.key);
    free(old.cnt);
  }
  busy_put(b, k, 1);
}

static bool busy_has(const struct busy_set *b, int64_t k) {
  if (!k || !b->cap)
    return false;
  size_t mask = b->cap - 1;
  for (size_t i = busy_slot(k, mask); b->key[i]; i = (i + 1) & mask)
    if (b->key[i] == k)
      return true;
  return false;
}

static void busy_del(struct busy_set *b, int64_t k) {
  if (!k || !b->cap)
    return;
  size_t mask = b->cap - 1, i = busy_slot(k, mask);
  while (b->key[i] && b->key[i] != k)
    i = (i + 1) & mask;
  if (!b->key[i] || --b->cnt[i])
    return;
  /* backward shift: move later entries of the run into the hole */
  b->key[i] = 0;
  b->n--;
  for (size_t j = (i + 1) & mask; b->key[j]; j = (j + 1) & mask) {
    size_t h = busy_slot(b->key[j], mask);
    /* the entry at j may move to the hole at i when its home h does not
     * lie cyclically in (i, j] */
    bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
    if (stays)
      continue;
    b->key[i] = b->key[j];
    b->cnt[i] = b->cnt[j];
    b->key[j] = 0;
    b->cnt[j] = 0;
    i = j;
  }
}

/* c's attempts into (or out of) the busy set, under cs->mu. */
static void busy_mark(struct sched_calls *cs, const struct sched_call *c,
                      bool on) {
  if (on)
    busy_add(&cs->busy, c->attempt_id);
  else
    busy_del(&cs->busy, c->attempt_id);
  for (size_t i = 0; i < c->n_batch; i++)
    if (on)
      busy_add(&cs->busy, c->batch[i].id);
    else
      busy_del(&cs->busy, c->batch[i].id);
}

int64_t sched__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *worker_main(void *arg) {
  struct sched_pool *pl = arg;
  struct sched_calls *cs = pl->owner;
  pthread_mutex_lock(&cs->mu);
  for (;;) {
    while (!pl->queue && !cs->stopping)
      pthread_cond_wait(&pl->work, &cs->mu);
    if (!pl->queue)
      break; /* stopping, and nothing left to run */
    struct sched_call *c = pl->queue;
    pl->queue = c->next;
    if (!pl->queue)
      pl->queue_tail = NULL;
    pl->n_queued--;
    c->status = CALL_RUNNING;
    c->next = pl->out;
    pl->out = c;
    pl->n_running++;
    pthread_mutex_unlock(&cs->mu);
    sched__obs_run_call(c); /* c->run(c), in its span when traced */
    pthread_mutex_lock(&cs->mu);
    /* a call whose answer is being stored is done when the store says so
     * (sched__call_stored); this worker takes its next call meanwhile */
    c->status =
        c->storing && !c->store_answered ? CALL_STORING : CALL_DONE;
    pl->n_running--;
    pthread_cond_broadcast(&cs->done);
  }
  pthread_mutex_unlock(&cs->mu);
  return NULL;
}

void sched__calls_init(struct tw_sched *s) {
  struct sched_calls *cs = tw_calloc(1, sizeof *cs);
  pthread_mutex_init(&cs->mu, NULL);
  pthread_cond_init(&cs->done, NULL);
  cs->n_pools = s->n_pc;
  cs->pools = tw_calloc(s->n_pc ? s->n_pc : 1, sizeof *cs->pools);
  for (size_t i = 0; i < s->n_pc; i++) {
    struct sched_pool *pl = &cs->pools[i];
    pl->owner = cs;
    pl->p = s->pc[i].p;
    pthread_cond_init(&pl->work, NULL);
    int n = tw_provider_concurrency(pl->p);
    pl->th = tw_calloc((size_t)n, sizeof *pl->th);
    for (int k = 0; k < n; k++) {
      if (pthread_create(&pl->th[k], NULL, worker_main, pl) != 0) {
        tw_log_error("sched", "provider=%s: %d of %d call workers started",
                     tw_provider_account(pl->p), k, n);
        break;
      }
      pl->n_threads++;
    }
    s->pc[i].pool = pl;
  }
  s->calls = cs;
}

/* Whether a call of cs is storing, under cs->mu. */
static bool any_storing(struct sched_calls *cs) {
  for (size_t i = 0; i < cs->n_pools; i++)
    for (struct sched_call *c = cs->pools[i].out; c; c = c->next)
      if (c->status == CALL_STORING)
        return true;
  return false;
}

/* Frees the calls of list l (never started, or done). */
static void free_list(struct tw_sched *s, struct sched_call *l) {
  while (l) {
    struct sched_call *n = l->next;
    sched__call_free(s, l);
    l = n;
  }
}

void sched__calls_release(struct tw_sched *s) {
  struct sched_calls *cs = s->calls;
  if (!cs)
    return;
  pthread_mutex_lock(&cs->mu);
  cs->stopping = true;
  for (size_t i = 0; i < cs->n_pools; i++) {
    /* calls never started are dropped: their attempts stay launching and
     * the next pass (or start) asks for their tokens */
    free_list(s, cs->pools[i].queue);
    cs->pools[i].queue = cs->pools[i].queue_tail = NULL;
    cs->pools[i].n_queued = 0;
    pthread_cond_broadcast(&cs->pools[i].work);
  }
  /* Abandoned calls that have answered meanwhile use nothing any more:
   * only workers still inside a call keep what they use alive. */
  size_t running = 0;
  for (size_t i = 0; i < cs->n_pools; i++)
    running += cs->pools[i].n_running;
  bool leaked = cs->leaked && running > 0;
  pthread_mutex_unlock(&cs->mu);
  if (leaked) {
    /* Workers still wait on a cloud past the drain's deadline: they, and
     * what they use, are left to the process's exit. */
    s->calls = NULL;
    for (size_t i = 0; i < s->n_pc; i++)
      s->pc[i].pool = NULL;
    return;
  }
  for (size_t i = 0; i < cs->n_pools; i++) {
    struct sched_pool *pl = &cs->pools[i];
    for (int k = 0; k < pl->n_threads; k++)
      pthread_join(pl->th[k], NULL);
  }
  /* the answers being stored: the store's writer still holds them */
  pthread_mutex_lock(&cs->mu);
  while (any_storing(cs))
    pthread_cond_wait(&cs->done, &cs->mu);
  pthread_mutex_unlock(&cs->mu);
  for (size_t i = 0; i < cs->n_pools; i++) {
    struct sched_pool *pl = &cs->pools[i];
    free_list(s, pl->out);
    free(pl->th);
    pthread_cond_destroy(&pl->work);
    s->pc[i].pool = NULL;
  }
  free(cs->pools);
  free(cs->busy.key);
  free(cs->busy.cnt);
  pthread_mutex_destroy(&cs->mu);
  pthread_cond_destroy(&cs->done);
  free(cs);
  s->calls = NULL;
}

bool sched__call_room(struct tw_sched *s, struct pcache *pc) {
  struct sched_calls *cs = s->calls;
  struct sched_pool *pl = pc ? pc->pool : NULL;
  if (!cs || !pl)
    return false;
  pthread_mutex_lock(&cs->mu);
  bool room = !cs->stopping &&
              pl->n_queued + pl->n_running + pc->deferred <
                  (size_t)pl->n_threads * SCHED_CALLS_QUEUE_PER_WORKER;
  pthread_mutex_unlock(&cs->mu);
  return room;
}

bool sched__any_room(struct tw_sched *s) {
  for (size_t i = 0; i < s->n_pc; i++)
    if (sched__call_room(s, &s->pc[i]))
      return true;
  return false;
}

bool sched__call_abandoned(const struct sched_call *c) {
  struct sched_calls *cs = c->owner;
  if (!cs)
    return false;
  pthread_mutex_lock(&cs->mu);
  bool gone = c->abandoned || cs->leaked;
  pthread_mutex_unlock(&cs->mu);
  return gone;
}

void sched__call_storing(struct sched_call *c) {
  c->storing = true; /* the worker's own until its run() returns */
  c->store_answered = false;
}

void sched__call_stored(struct sched_call *c) {
  struct sched_calls *cs = c->owner;
  pthread_mutex_lock(&cs->mu);
  c->store_answered = true;
  if (c->status == CALL_STORING) {
    c->status = CALL_DONE;
    pthread_cond_broadcast(&cs->done);
  }
  pthread_mutex_unlock(&cs->mu);
}

/* A call done but not yet collected counts too: the attempt's stored
 * state does not show its answer yet (the busy set holds a call's
 * attempts from its submit to its apply). */
bool sched__call_busy(struct tw_sched *s, int64_t attempt_id) {
  struct sched_calls *cs = s->calls;
  if (!cs)
    return false;
  pthread_mutex_lock(&cs->mu);
  bool busy = busy_has(&cs->busy, attempt_id);
  pthread_mutex_unlock(&cs->mu);
  return busy;
}

bool sched__call_submit(struct tw_sched *s, struct pcache *pc,
                        struct sched_call *c) {
  struct sched_calls *cs = s->calls;
  struct sched_pool *pl = pc ? pc->pool : NULL;
  if (!cs || !pl || !pl->n_threads)
    return false;
  pthread_mutex_lock(&cs->mu);
  if (cs->stopping) {
    pthread_mutex_unlock(&cs->mu);
    return false;
  }
  c->status = CALL_QUEUED;
  c->abandoned = false;
  c->storing = c->store_answered = false;
  c->owner = cs;
  c->deadline_ms = sched__mono_ms() + tw_provider_call_deadline_ms(pl->p);
  c->next = NULL;
  if (pl->queue_tail)
    pl->queue_tail->next = c;
  else
    pl->queue = c;
  pl->queue_tail = c;
  pl->n_queued++;
  busy_mark(cs, c, true);
  pthread_cond_signal(&pl->work);
  pthread_mutex_unlock(&cs->mu);
  return true;
}

/* Whether a call is waited for: queued, or running and not abandoned. */
static bool waited_for(struct sched_calls *cs) {
  for (size_t i = 0; i < cs->n_pools; i++) {
    struct sched_pool *pl = &cs->pools[i];
    if (pl->queue)
      return true;
    for (struct sched_call *c = pl->out; c; c = c->next)
      if (!c->abandoned)
        return true;
  }
  return false;
}

/* Takes, under cs->mu, the calls done and the calls newly past their
 * deadline (marked abandoned, left in place) into *ready. */
static void take_ready(struct sched_calls *cs, int64_t mono,
                       struct sched_call **done, struct sched_call **late) {
  for (size_t i = 0; i < cs->n_pools; i++) {
    struct sched_pool *pl = &cs->pools[i];
    struct sched_call **pp = &pl->out;
    while (*pp) {
      struct sched_call *c = *pp;
      if (c->status == CALL_DONE) {
        *pp = c->next;
        c->next = *done;
        *done = c;
        continue;
      }
      if (!c->abandoned && mono >= c->deadline_ms) {
        c->abandoned = true;
        c->late_next = *late;
        *late = c;
      }
      pp = &c->next;
    }
  }
}

int sched__calls_collect(struct tw_sched *s, int64_t until_mono_ms,
                         sched_apply_fn apply, int64_t now) {
  struct sched_calls *cs = s->calls;
  if (!cs)
    return 0;
  int changes = 0;
  for (;;) {
    struct sched_call *done = NULL, *late = NULL;
    pthread_mutex_lock(&cs->mu);
    int64_t mono = sched__mono_ms();
    take_ready(cs, mono, &done, &late);
    if (!done && !late) {
      if (mono >= until_mono_ms || !waited_for(cs) || cs->leaked) {
        pthread_mutex_unlock(&cs->mu);
        return changes;
      }
      /* wake at the budget's end, or at the first deadline before it */
      int64_t wake = until_mono_ms;
      for (size_t i = 0; i < cs->n_pools; i++)
        for (struct sched_call *c = cs->pools[i].out; c; c = c->next)
          if (!c->abandoned && c->deadline_ms < wake)
            wake = c->deadline_ms;
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t wait_ms = wake - mono;
      ts.tv_sec += wait_ms / 1000;
      ts.tv_nsec += (wait_ms % 1000) * 1000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&cs->done, &cs->mu, &ts);
      pthread_mutex_unlock(&cs->mu);
      continue;
    }
    pthread_mutex_unlock(&cs->mu);
    /* late calls first: their worker still runs, so only the outcome is
     * applied (unknown); the call itself is freed once it returns */
    for (struct sched_call *c = late; c; c = c->late_next)
      changes += apply(s, c, true, now);
    while (done) {
      struct sched_call *c = done;
      done = c->next;
      pthread_mutex_lock(&cs->mu);
      busy_mark(cs, c, false); /* c's own apply may send the next call */
      pthread_mutex_unlock(&cs->mu);
      if (!c->abandoned)
        changes += apply(s, c, false, now);
      s->collected++;
      sched__call_free(s, c);
    }
  }
}

size_t sched__calls_abandon(struct tw_sched *s) {
  struct sched_calls *cs = s->calls;
  if (!cs)
    return 0;
  size_t n = 0;
  pthread_mutex_lock(&cs->mu);
  for (size_t i = 0; i < cs->n_pools; i++)
    n += cs->pools[i].n_running;
  if (n)
    cs->leaked = true;
  pthread_mutex_unlock(&cs->mu);
  return n;
}
