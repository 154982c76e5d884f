/* sched_int.h - what the scheduler's files share (sched.c: the loop and
 * placement; monitor.c: following attempts) and nobody else. */
#ifndef TW_BROKER_SCHED_INT_H
#define TW_BROKER_SCHED_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker/mem.h"
#include "broker/model.h"
#include "broker/spec.h"
#include "broker/store.h"
#include "sched.h"

struct tw_provider;

struct pcache {
  struct tw_provider *p;
  struct tw_offer_list offers;
  int64_t fetched_ms; /* 0: never */
};

struct tw_sched {
  struct tw_store *store;
  struct tw_clock *clock;
  struct pcache *pc;
  size_t n_pc;
  struct tw_offer_list all; /* every provider's offers, for placement */
  int64_t tick_ms, ttl_ms;
  int max_place;

  /* Jobs whose last launch failed for a reason that is not the offer's
   * (throttled, auth, provider down) wait before the next try, doubling
   * from 1 s to 60 s, so a broken provider is not hammered every pass.
   * In memory only: a restart simply tries at once. */
  struct backoff {
    char job_id[TW_JOB_ID_LEN + 1];
    int64_t not_before_ms;
    int64_t delay_ms;
  } *backoff;
  size_t n_backoff, cap_backoff;

  pthread_t thread;
  bool started, stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

/* sched.c */
struct pcache *sched__provider(struct tw_sched *s, const char *account);
const struct tw_offer *sched__offer(struct tw_sched *s, const char *offer_id);
bool sched__parse_spec(const struct tw_job_rec *job, struct tw_job_spec *spec);
/* Calls the provider for attempt a on offer o and stores the outcome. */
enum tw_rc sched__launch(struct tw_sched *s, const struct tw_job_rec *job,
                         const struct tw_job_spec *spec,
                         const struct tw_attempt_rec *a, const struct tw_offer *o,
                         int64_t cost, const char *explain);

/* monitor.c: notices, then every live attempt; returns state changes. */
int sched__follow(struct tw_sched *s, int64_t now);

#endif
