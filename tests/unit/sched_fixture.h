/* sched_fixture.h - the scheduler over the in-process fake provider, a
 * fake clock and a store in a private temp dir, for the cmocka tests of
 * the scheduler (test_sched.c, test_gang.c, test_fallback_monitor.c).
 *
 * One fixture per test process, held in the sfx_ globals.  A test's setup
 * opens it, adds its offers to sfx_fake, then starts the scheduler; its
 * teardown closes everything and removes the temp dir:
 *
 *   static int setup(void **state) {
 *     if (sfx_open("sched", T0, NULL)) return -1;
 *     ... sfx_add_offer(&o) ...
 *     return sfx_start_sched(NULL);
 *   }
 *   static int teardown(void **state) { sfx_close(); return 0; }
 *
 * Opened with sfx_open_agents, the provider has `agent: true` and the
 * fixture plays tradewind-agent on its instances (agent_play.h): a job
 * ends from its agent's exit report, after its duration, as on a cloud.
 * Opened with sfx_open, nothing reports from inside the instances: the
 * broker follows them by describes alone, so a job there ends only by
 * its instance going (an interruption), a cancel or a batch provider's
 * own report (tw_fake_finish).  sfx_tick() is one round of the agents
 * (if any), then one pass of the scheduler.
 *
 * The job helpers fail the running cmocka test on a store error. */
#ifndef TW_TESTS_UNIT_SCHED_FIXTURE_H
#define TW_TESTS_UNIT_SCHED_FIXTURE_H

#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/sched/sched.h"
#include "broker/core/store.h"
#include "policies/fallback/fallback_strategy.h"
#include "tests/fakes/fake_provider.h"

extern struct tw_clock sfx_clk;
extern struct tw_store *sfx_store;
extern struct tw_provider *sfx_prov; /* account "fake-a" */
extern struct tw_fake *sfx_fake;     /* sfx_prov's offers and instances */
extern struct tw_sched *sfx_sched;   /* NULL until sfx_start_sched */
struct tw_play;
/* the agents of sfx_prov's instances (sfx_open_agents), else NULL */
extern struct tw_play *sfx_play;

/* With --backend=postgres in argv, the fixture's store is on PostgreSQL
 * (tests/unit/pg_store.h), each case in a schema of its own: one suite,
 * two backends.  0, or 77 after saying why PostgreSQL cannot be used (main
 * returns it: ctest shows the test SKIPPED). */
int sfx_backend(int argc, char **argv);

/* Makes /tmp/tw-<tag>-XXXXXX, sets the fake clock to t0_ms, opens the
 * store there and the provider with ops (NULL: tw_provider_fake; ops must
 * outlive the fixture).  Returns 0, or -1 with nothing to close. */
int sfx_open(const char *tag, int64_t t0_ms, const struct tw_provider_ops *ops);
/* The same, the provider with `agent: true` and sfx_play its agents. */
int sfx_open_agents(const char *tag, int64_t t0_ms,
                    const struct tw_provider_ops *ops);

/* Starts the scheduler over the store, clock and provider, with fb (NULL:
 * none).  Returns 0 or -1. */
int sfx_start_sched(const struct tw_fallback_cfg *fb);

/* tw_play_step(sfx_play), then tw_sched_tick(sfx_sched): its changes. */
int sfx_tick(void);

/* Frees the scheduler, provider and store and removes the temp dir. */
void sfx_close(void);

/* An offer of sfx_prov ("fake"/"fake-a", x86_64, per-second billing) with
 * the given place, type, market and hourly price; the caller fills in the
 * rest, then calls sfx_add_offer. */
void sfx_offer(struct tw_offer *o, const char *region, const char *zone,
               const char *type, enum tw_market m, int64_t price_uusd);

/* Gives o its id and adds it to sfx_fake. */
void sfx_add_offer(struct tw_offer *o);

/* Parses the YAML spec and stores it as a new pending job: its id. */
void sfx_submit(const char *yaml, char id[TW_JOB_ID_LEN + 1]);

/* The stored job (tw_job_rec_release it), and just its state. */
struct tw_job_rec sfx_get(const char *id);
enum tw_job_state sfx_state_of(const char *id);

#endif
