/* agent_play.h - the unit tests play tradewind-agent on the instances of
 * the in-process fake provider (tests/fakes/fake_provider.h), through the
 * same calls the REST handlers make (broker/sched/agent.h), so a job's
 * outcome comes from an exit report as on a real cloud, never from the
 * broker's clock.
 *
 * Each instance the fake was launched with a bootstrap is a booted
 * machine: while the provider has it pending or running, its agent
 * registers (with the token and node rank its bootstrap carries), sends a
 * heartbeat at every step, and reports exit code 0 once the job's work is
 * done: `duration:` of its spec (60 s without), less the progress its
 * register answer resumes from (TRADEWIND_RESUME_S), at least 1 s, from
 * its registration.  An instance the provider took away (terminated,
 * stopped, shutting down) has no agent left: it goes silent.
 *
 *   struct tw_play *p = tw_play_new(store, clock, prov);
 *   ... tw_sched_new with .agent = tw_play_agent(p) ...
 *   tw_play_step(p); tw_sched_tick(sched);   (each tick)
 *   tw_play_free(p);                          (after the scheduler)
 *
 * The provider must have `agent: true` (tw_play_provider_cfg). */
#ifndef TW_TESTS_UNIT_AGENT_PLAY_H
#define TW_TESTS_UNIT_AGENT_PLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "broker/core/store.h"
#include "broker/sched/agent.h"
#include "providers/provider.h"

struct tw_play;

/* The provider section `{agent: true}` (tw_node_free it). */
struct tw_node *tw_play_provider_cfg(void);

/* The broker's agent module over store (its key kept in plain there,
 * tradewind-agent preinstalled), and the agents of prov's instances
 * (prov made from tw_provider_fake).  NULL on failure. */
struct tw_play *tw_play_new(struct tw_store *store, struct tw_clock *clk,
                            struct tw_provider *prov);
/* The agents of prov's instances too (up to 4 providers in all). */
void tw_play_also(struct tw_play *p, struct tw_provider *prov);
/* The module, for tw_sched_opts.agent. */
struct tw_agent *tw_play_agent(struct tw_play *p);
void tw_play_free(struct tw_play *p);

/* One round of every agent at the clock's now (see above).  Returns how
 * many reports were made. */
int tw_play_step(struct tw_play *p);

/* The agent of instance id reports exit code now (its job ended so),
 * after its registration; the instance's agent then has nothing more to
 * say.  False when the instance has no live registered agent. */
bool tw_play_exit(struct tw_play *p, const char *instance_id, int code);

#endif
