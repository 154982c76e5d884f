/* fake_provider.h - an in-process provider with scripted offers, instances,
 * faults and notices, for tests of the generic layer and the scheduler.
 *
 * `tw_provider_fake` is a struct tw_provider_ops like any adapter's; create
 * it with tw_provider_new_ops(&tw_provider_fake, "fake-a", NULL, clock,
 * &p, &err) and script it through tw_fake_of(p).  It honours client tokens
 * as EC2 does (the same token returns the same instance), names instances
 * "<account>-1", "<account>-2", ..., starts them pending and has them
 * running at the first describe or list that follows.  find_by_token
 * answers from the same table (the instance of that client token, in any
 * state).  Times come from
 * p->clock, so a test's fake clock drives notices' deadlines.
 *
 * Every function is thread-safe (one mutex per fake), so scheduler tests
 * may launch from several threads. */
#ifndef TW_TESTS_FAKES_FAKE_PROVIDER_H
#define TW_TESTS_FAKES_FAKE_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_fake;

/* The tests' registry: the daemon's adapters, then the fake (generated from
 * the list in tests/fakes.cmake, library tw_adapters_test). */
extern const struct tw_provider_ops *const tw_adapters_test[];

struct tw_fake;

/* The script of provider p (which must have been made from
 * tw_provider_fake). */
struct tw_fake *tw_fake_of(struct tw_provider *p);

/* Adds an offer returned by list_offers (copied). */
void tw_fake_add_offer(struct tw_fake *f, const struct tw_offer *o);

/* The next `times` calls of op fail with rc, detail as err->detail
 * (times < 0: until tw_fake_clear_faults). */
void tw_fake_fail(struct tw_fake *f, enum tw_provider_op op, enum tw_rc rc,
                  const char *detail, int times);

/* The next `times` calls of op take effect and then answer rc (detail as
 * err->detail) instead of their result, as a call that timed out after
 * the provider acted does: a launch makes its instance, a terminate ends
 * it (times < 0: until tw_fake_clear_faults).  Checked after the faults
 * of tw_fake_fail, which refuse before anything happens. */
void tw_fake_lose(struct tw_fake *f, enum tw_provider_op op, enum tw_rc rc,
                  const char *detail, int times);

/* fn(ctx) runs at the start of every launch, before the fake's lock is
 * taken or any fault fires: what happens elsewhere while a launch is in
 * flight (a reconcile pass, say).  NULL fn: none. */
void tw_fake_on_launch(struct tw_fake *f, void (*fn)(void *ctx), void *ctx);

/* Launches of the offer with this id fail with rc until cleared, as a
 * zone out of capacity does. */
void tw_fake_fail_offer(struct tw_fake *f, const char *offer_id, enum tw_rc rc,
                        const char *detail);

void tw_fake_clear_faults(struct tw_fake *f);

/* on: calls of op (launch, describe, terminate, find_by_token) block, before
 * anything else, until tw_fake_hold(f, op, false) releases them: a hung cloud.
 * tw_fake_held: how many are blocked now. */
void tw_fake_hold(struct tw_fake *f, enum tw_provider_op op, bool on);
size_t tw_fake_held(struct tw_fake *f, enum tw_provider_op op);

/* Sets the state of instance id; TW_E_NOTFOUND when unknown. */
enum tw_rc tw_fake_set_state(struct tw_fake *f, const char *id,
                             enum tw_instance_state state);

/* Appends text to what instance id's workload printed (read_output);
 * done says nothing more will come.  TW_E_NOTFOUND when unknown. */
enum tw_rc tw_fake_output(struct tw_fake *f, const char *id, const char *text,
                          bool done);

/* The workload of instance id ends on its own with exit_code, as a batch
 * job does (sets `finished`; the instance is terminated).  TW_E_NOTFOUND
 * when unknown. */
enum tw_rc tw_fake_finish(struct tw_fake *f, const char *id, int exit_code);

/* Issues an interruption notice for instance id, taking effect
 * lead_ms after the provider clock's now (AWS: 120000); the instance is
 * terminated when describe or list runs at or after the deadline.
 * TW_E_NOTFOUND when unknown. */
enum tw_rc tw_fake_interrupt(struct tw_fake *f, const char *id,
                             int64_t lead_ms);

/* Issues a rebalance recommendation for instance id. */
enum tw_rc tw_fake_rebalance(struct tw_fake *f, const char *id);

/* How many instances were ever created (a retried launch with a known
 * token creates none), and how many calls each op received. */
size_t tw_fake_instances_created(struct tw_fake *f);
size_t tw_fake_calls(struct tw_fake *f, enum tw_provider_op op);

/* How many instances are live (neither terminated nor shutting down) for
 * job_id's tag. */
size_t tw_fake_live_for_job(struct tw_fake *f, const char *job_id);

/* The user data instance id was first launched with (at most 8 KiB),
 * into out; *differed (may be NULL): a launch resent with the same client
 * token carried other bytes.  TW_E_NOTFOUND when unknown. */
enum tw_rc tw_fake_user_data(struct tw_fake *f, const char *id, char *out,
                             size_t cap, bool *differed);

/* Copies instance id into *out; TW_E_NOTFOUND when unknown. */
enum tw_rc tw_fake_get(struct tw_fake *f, const char *id,
                       struct tw_instance *out);

#endif
