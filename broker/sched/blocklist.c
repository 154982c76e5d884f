/* blocklist.c - offers, zones and regions avoided after failures
 * (blocklist.h). */
#include "broker/sched/blocklist.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "policies/place/inputs.h"
#include "broker/core/spec.h"

struct failure {
  char account[TW_MODEL_NAME_MAX];
  char region[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX];
  char offer_id[TW_MODEL_ID_MAX];
  enum tw_market market;
  enum tw_block_cause cause;
  int64_t at_ms;
};

struct tw_blocklist {
  pthread_mutex_t mu;
  struct tw_blocklist_opts o;
  struct failure *fail;
  size_t n_fail, cap_fail;
  struct tw_block *blocks;
  size_t n_blocks, cap_blocks;
  uint64_t generation; /* bumped whenever the blocks in force change */
};

static const char *const SCOPE_NAMES[] = {"offer", "zone", "region"};

const char *tw_block_scope_str(enum tw_block_scope s) {
  return (unsigned)s <= TW_BLOCK_REGION ? SCOPE_NAMES[s] : "unknown";
}

struct tw_blocklist *tw_blocklist_new(const struct tw_blocklist_opts *opts) {
  struct tw_blocklist *bl = tw_calloc(1, sizeof *bl);
  pthread_mutex_init(&bl->mu, NULL);
  struct tw_blocklist_opts o = opts ? *opts : (struct tw_blocklist_opts){0};
  if (o.offer_ms <= 0)
    o.offer_ms = 10 * 60 * 1000;
  if (o.zone_ms <= 0)
    o.zone_ms = 30 * 60 * 1000;
  if (o.region_ms <= 0)
    o.region_ms = 60 * 60 * 1000;
  if (o.window_ms <= 0)
    o.window_ms = 30 * 60 * 1000;
  if (o.zone_after <= 0)
    o.zone_after = 3;
  if (o.region_after <= 0)
    o.region_after = 2;
  bl->o = o;
  return bl;
}

void tw_blocklist_free(struct tw_blocklist *bl) {
  if (!bl)
    return;
  free(bl->fail);
  free(bl->blocks);
  pthread_mutex_destroy(&bl->mu);
  free(bl);
}

void tw_blocklist_clear(struct tw_blocklist *bl) {
  pthread_mutex_lock(&bl->mu);
  bl->n_fail = bl->n_blocks = 0;
  bl->generation++;
  pthread_mutex_unlock(&bl->mu);
}

/* Drops failures out of the window and blocks that expired.  Lock held. */
static void prune(struct tw_blocklist *bl, int64_t now) {
  size_t k = 0;
  for (size_t i = 0; i < bl->n_fail; i++)
    if (now - bl->fail[i].at_ms < bl->o.window_ms)
      bl->fail[k++] = bl->fail[i];
  bl->n_fail = k;
  k = 0;
  for (size_t i = 0; i < bl->n_blocks; i++)
    if (bl->blocks[i].until_ms > now)
      bl->blocks[k++] = bl->blocks[i];
  if (k != bl->n_blocks)
    bl->generation++;
  bl->n_blocks = k;
}

static bool same_block(const struct tw_block *b, enum tw_block_scope scope,
                       const struct tw_offer *o) {
  if (b->scope != scope || b->market != o->market ||
      strcmp(b->account, o->account) || strcmp(b->region, o->region))
    return false;
  if (scope == TW_BLOCK_ZONE)
    return !strcmp(b->zone, o->zone);
  if (scope == TW_BLOCK_OFFER)
    return !strcmp(b->offer_id, o->id);
  return true;
}

/* Counts the remembered failures matching o at scope, by cause. */
static int count_failures(const struct tw_blocklist *bl,
                          enum tw_block_scope scope, const struct tw_offer *o,
                          int *capacity, int *interrupted) {
  int n = 0;
  *capacity = *interrupted = 0;
  for (size_t i = 0; i < bl->n_fail; i++) {
    const struct failure *f = &bl->fail[i];
    if (f->market != o->market || strcmp(f->account, o->account) ||
        strcmp(f->region, o->region))
      continue;
    if (scope == TW_BLOCK_ZONE && strcmp(f->zone, o->zone))
      continue;
    if (scope == TW_BLOCK_OFFER && strcmp(f->offer_id, o->id))
      continue;
    n++;
    if (f->cause == TW_BLOCK_CAPACITY)
      (*capacity)++;
    else
      (*interrupted)++;
  }
  return n;
}

/* Blocks scope of o until now + dur_ms (never shortening a block already
 * in force).  Lock held. */
static void block(struct tw_blocklist *bl, enum tw_block_scope scope,
                  const struct tw_offer *o, int64_t now, int64_t dur_ms,
                  int failures, const char *reason) {
  struct tw_block *b = NULL;
  for (size_t i = 0; i < bl->n_blocks && !b; i++)
    if (same_block(&bl->blocks[i], scope, o))
      b = &bl->blocks[i];
  if (!b) {
    if (bl->n_blocks == bl->cap_blocks) {
      bl->cap_blocks = bl->cap_blocks ? bl->cap_blocks * 2 : 16;
      bl->blocks = tw_realloc(bl->blocks, bl->cap_blocks * sizeof *bl->blocks);
    }
    b = &bl->blocks[bl->n_blocks++];
    memset(b, 0, sizeof *b);
    b->scope = scope;
    b->market = o->market;
    TW_SET(b->account, o->account);
    TW_SET(b->region, o->region);
    if (scope != TW_BLOCK_REGION)
      TW_SET(b->zone, o->zone);
    if (scope == TW_BLOCK_OFFER)
      TW_SET(b->offer_id, o->id);
    b->since_ms = now;
  }
  if (now + dur_ms > b->until_ms)
    b->until_ms = now + dur_ms;
  bl->generation++;
  b->failures = failures;
  snprintf(b->reason, sizeof b->reason, "%s", reason);
}

static void reason_text(char *out, size_t outsz, int capacity, int interrupted,
                        int64_t window_ms, const char *extra) {
  int n = 0;
  if (capacity)
    n = snprintf(out, outsz, "%d capacity error%s", capacity,
                 capacity > 1 ? "s" : "");
  if (interrupted && n >= 0 && (size_t)n < outsz)
    n += snprintf(out + n, outsz - (size_t)n, "%s%d interruption%s",
                  n ? " and " : "", interrupted, interrupted > 1 ? "s" : "");
  if (n >= 0 && (size_t)n < outsz)
    snprintf(out + n, outsz - (size_t)n, " in %lld min%s",
             (long long)(window_ms / 60000), extra ? extra : "");
}

void tw_blocklist_report(struct tw_blocklist *bl, const struct tw_offer *o,
                         enum tw_block_cause cause, int64_t now,
                         enum tw_block_scope *widest) {
  pthread_mutex_lock(&bl->mu);
  prune(bl, now);
  if (bl->n_fail == bl->cap_fail) {
    bl->cap_fail = bl->cap_fail ? bl->cap_fail * 2 : 32;
    bl->fail = tw_realloc(bl->fail, bl->cap_fail * sizeof *bl->fail);
  }
  struct failure *f = &bl->fail[bl->n_fail++];
  memset(f, 0, sizeof *f);
  TW_SET(f->account, o->account);
  TW_SET(f->region, o->region);
  TW_SET(f->zone, o->zone);
  TW_SET(f->offer_id, o->id);
  f->market = o->market;
  f->cause = cause;
  f->at_ms = now;

  enum tw_block_scope top = TW_BLOCK_OFFER;
  char why[160];
  int cap, intr;
  /* the offer: doubled for each repeat, so an offer failing again and again
   * is left alone longer, but never longer than a zone would be */
  int k = count_failures(bl, TW_BLOCK_OFFER, o, &cap, &intr);
  int64_t dur = bl->o.offer_ms;
  for (int i = 1; i < k && dur < bl->o.zone_ms; i++)
    dur *= 2;
  if (dur > bl->o.zone_ms)
    dur = bl->o.zone_ms;
  reason_text(why, sizeof why, cap, intr, bl->o.window_ms, NULL);
  block(bl, TW_BLOCK_OFFER, o, now, dur, k, why);

  if (o->zone[0]) {
    k = count_failures(bl, TW_BLOCK_ZONE, o, &cap, &intr);
    if (k >= bl->o.zone_after) {
      reason_text(why, sizeof why, cap, intr, bl->o.window_ms, " in the zone");
      block(bl, TW_BLOCK_ZONE, o, now, bl->o.zone_ms, k, why);
      top = TW_BLOCK_ZONE;
    }
    /* the region: enough of its zones blocked at once for this market */
    int zones = 0;
    for (size_t i = 0; i < bl->n_blocks; i++) {
      const struct tw_block *b = &bl->blocks[i];
      if (b->scope == TW_BLOCK_ZONE && b->market == o->market &&
          !strcmp(b->account, o->account) && !strcmp(b->region, o->region))
        zones++;
    }
    if (zones >= bl->o.region_after) {
      snprintf(why, sizeof why, "%d zones blocked at once", zones);
      block(bl, TW_BLOCK_REGION, o, now, bl->o.region_ms, zones, why);
      top = TW_BLOCK_REGION;
    }
  } else {
    k = count_failures(bl, TW_BLOCK_REGION, o, &cap, &intr);
    if (k >= bl->o.zone_after) {
      reason_text(why, sizeof why, cap, intr, bl->o.window_ms,
                  " in the region");
      block(bl, TW_BLOCK_REGION, o, now, bl->o.region_ms, k, why);
      top = TW_BLOCK_REGION;
    }
  }
  pthread_mutex_unlock(&bl->mu);
  if (widest)
    *widest = top;
}

void tw_blocklist_report_ok(struct tw_blocklist *bl, const struct tw_offer *o,
                            int64_t now) {
  pthread_mutex_lock(&bl->mu);
  prune(bl, now);
  size_t k = 0;
  for (size_t i = 0; i < bl->n_fail; i++) {
    const struct failure *f = &bl->fail[i];
    bool there = f->market == o->market && !strcmp(f->account, o->account) &&
                 !strcmp(f->region, o->region) && !strcmp(f->zone, o->zone);
    if (!there)
      bl->fail[k++] = *f;
  }
  bl->n_fail = k;
  pthread_mutex_unlock(&bl->mu);
}

void tw_blocklist_snapshot(struct tw_blocklist *bl, int64_t now,
                           struct tw_blocklist_snap *out) {
  pthread_mutex_lock(&bl->mu);
  prune(bl, now);
  out->n = bl->n_blocks;
  out->at_ms = now;
  out->generation = bl->generation;
  out->items = NULL;
  if (out->n) {
    out->items = tw_malloc(out->n * sizeof *out->items);
    memcpy(out->items, bl->blocks, out->n * sizeof *out->items);
  }
  pthread_mutex_unlock(&bl->mu);
}

void tw_blocklist_snap_release(struct tw_blocklist_snap *s) {
  free(s->items);
  s->items = NULL;
  s->n = 0;
}

const struct tw_block *
tw_blocklist_snap_match(const struct tw_blocklist_snap *s,
                        const struct tw_offer *o, int64_t now) {
  const struct tw_block *best = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const struct tw_block *b = &s->items[i];
    if (b->until_ms <= now || !same_block(b, b->scope, o))
      continue;
    if (!best || b->scope > best->scope)
      best = b;
  }
  return best;
}

static bool hook_blocked(const void *ctx, const struct tw_offer *o,
                         int64_t now_ms, char *why, size_t whysz) {
  const struct tw_block *b = tw_blocklist_snap_match(ctx, o, now_ms);
  if (b && why && whysz)
    tw_block_describe(b, why, whysz);
  return b != NULL;
}

void tw_blocklist_place_hook(const struct tw_blocklist_snap *s,
                             struct tw_place_blocklist *hook) {
  hook->ctx = s;
  hook->blocked = hook_blocked;
  hook->generation = s->generation;
}

void tw_block_describe(const struct tw_block *b, char *out, size_t outsz) {
  char until[40];
  tw_time_fmt_rfc3339(b->until_ms, until, sizeof until);
  const char *what = b->scope == TW_BLOCK_OFFER  ? b->offer_id
                     : b->scope == TW_BLOCK_ZONE ? b->zone
                                                 : b->region;
  snprintf(out, outsz, "%s %s (%s) until %s: %s", tw_block_scope_str(b->scope),
           what, tw_market_str(b->market), until, b->reason);
}
