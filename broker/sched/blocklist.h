/* blocklist.h - what failed recently, avoided for a while: offers, then
 * zones, then regions as failures repeat.
 *
 * A failure is a capacity (or provider quota) error at launch, or a spot
 * interruption.  Each one blocks its offer (account:region:zone:type:market)
 * for offer_ms, doubled for every further failure of the same offer while
 * it is remembered, up to zone_ms.  When zone_after failures of one market
 * in one zone fall within window_ms, the whole zone is blocked for that
 * market (zone_ms); when region_after zones of one region are blocked for a
 * market at once, the region is (region_ms).  The market is part of every
 * scope on purpose: spot capacity running out says nothing about on-demand
 * capacity, so an on-demand fallback is never blocked by spot failures.
 * Offers without a zone (regional providers) escalate straight to the
 * region after zone_after failures.  "Repeat" means without a success in
 * between: a launch that succeeds in a zone (tw_blocklist_report_ok)
 * forgets the failures remembered there, so a zone where one launch in
 * four fails at random is not taken for one out of capacity.
 *
 * Placement reads a snapshot: tw_blocklist_snapshot() copies the blocks in
 * force into a plain array the placement filter can consult without a lock
 * (tw_blocklist_snap_match), so placement stays a pure function of its
 * inputs; tw_blocklist_place_hook() wraps a snapshot as the hook the
 * policy runner's blocklist filter calls (policies/place/inputs.h).  The
 * blocklist lives in memory: a restart forgets it, and the first failures after
 * the restart rebuild it.
 *
 * Threads: every function taking a struct tw_blocklist is thread-safe; a
 * snapshot is immutable and may be read from any thread. */
#ifndef TW_BROKER_BLOCKLIST_H
#define TW_BROKER_BLOCKLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/model.h"

enum tw_block_scope { TW_BLOCK_OFFER = 0, TW_BLOCK_ZONE, TW_BLOCK_REGION };

/* "offer", "zone", "region". */
const char *tw_block_scope_str(enum tw_block_scope s);

enum tw_block_cause { TW_BLOCK_CAPACITY = 0, TW_BLOCK_INTERRUPTION };

struct tw_blocklist_opts {
  int64_t offer_ms;  /* first block of an offer; default 600000 (10 min) */
  int64_t zone_ms;   /* default 1800000 (30 min) */
  int64_t region_ms; /* default 3600000 (1 h) */
  int64_t window_ms; /* failures older than this are forgotten; default
                        1800000 */
  int zone_after;    /* failures in one zone and market; default 3 */
  int region_after;  /* zones blocked in one region and market; default 2 */
};

/* One block in force.  account/region/zone name the scope (zone "" for a
 * region block); offer_id is set for an offer block only. */
struct tw_block {
  enum tw_block_scope scope;
  enum tw_market market;
  char account[TW_MODEL_NAME_MAX];
  char region[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX];
  char offer_id[TW_MODEL_ID_MAX];
  int64_t since_ms, until_ms;
  int failures;     /* failures that led to it */
  char reason[160]; /* "3 capacity errors in 30 min" */
};

struct tw_blocklist;

/* opts NULL or zero fields: the defaults above.  Free with
 * tw_blocklist_free(). */
struct tw_blocklist *tw_blocklist_new(const struct tw_blocklist_opts *opts);
void tw_blocklist_free(struct tw_blocklist *bl);

/* Records a failure of offer o at now_ms and escalates.  *widest (may be
 * NULL) receives the widest scope now blocked because of it. */
void tw_blocklist_report(struct tw_blocklist *bl, const struct tw_offer *o,
                         enum tw_block_cause cause, int64_t now_ms,
                         enum tw_block_scope *widest);

/* A launch on offer o succeeded at now_ms: the failures remembered in its
 * zone (its region, for an offer without a zone) and market are
 * forgotten.  Blocks already in force stay until they end. */
void tw_blocklist_report_ok(struct tw_blocklist *bl, const struct tw_offer *o,
                            int64_t now_ms);

/* Forgets everything (tests, an operator's reset). */
void tw_blocklist_clear(struct tw_blocklist *bl);

/* ---- snapshots: read-only, for placement --------------------------------- */

struct tw_blocklist_snap {
  struct tw_block *items; /* owned */
  size_t n;
  int64_t at_ms;       /* when it was taken */
  uint64_t generation; /* changes whenever the blocks in force change */
};

/* Copies the blocks in force at now_ms into *out (release it). */
void tw_blocklist_snapshot(struct tw_blocklist *bl, int64_t now_ms,
                           struct tw_blocklist_snap *out);
void tw_blocklist_snap_release(struct tw_blocklist_snap *s);

/* The widest block in s that covers offer o at now_ms, or NULL.  Pure. */
const struct tw_block *
tw_blocklist_snap_match(const struct tw_blocklist_snap *s,
                        const struct tw_offer *o, int64_t now_ms);

/* "zone us-east-1a (spot) until 12:30:00Z: 3 capacity errors in 30 min" */
void tw_block_describe(const struct tw_block *b, char *out, size_t outsz);

/* Fills hook so that placement's blocklist filter answers from s: an offer
 * is blocked when tw_blocklist_snap_match() finds a block, and why reads
 * tw_block_describe().  s is borrowed and must outlive the hook's use (one
 * plan); the hook's generation is the snapshot's. */
struct tw_place_blocklist;
void tw_blocklist_place_hook(const struct tw_blocklist_snap *s,
                             struct tw_place_blocklist *hook);

#endif
