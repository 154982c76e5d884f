/* fault.h - injected failures, from a seeded schedule file (--faults) and
 * from the control API (POST /_fake/faults).
 *
 * A rule has a kind, filters (empty = any) and a budget: a probability
 * per matching call, a count of firings, and a window of fake time.  The
 * probability is rolled on the server's seeded generator, so one --seed
 * and one sequence of calls always fire the same faults.  The JSON form is
 * documented in docs/fakecloud.md.  Not thread-safe: the server's mutex
 * guards the list. */
#ifndef TW_TESTS_FAKECLOUD_FAULT_H
#define TW_TESTS_FAKECLOUD_FAULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "tests/fakecloud/rng.h"

enum fc_fault_kind {
  FC_FAULT_THROTTLE,          /* RequestLimitExceeded 503 */
  FC_FAULT_ERROR,             /* code/status given, default InternalError */
  FC_FAULT_SLOW,              /* answer delay_ms late, then normally */
  FC_FAULT_CAPACITY,          /* InsufficientInstanceCapacity 500 */
  FC_FAULT_QUOTA,             /* VcpuLimitExceeded / MaxSpot...Exceeded */
  FC_FAULT_SPOT_INTERRUPTION, /* two-minute notice, then termination */
  FC_FAULT_REBALANCE,         /* rebalance recommendation */
  FC_FAULT_REGION_DOWN,       /* a region loses power: every live instance
                                 there interrupted after lead_ms, every
                                 launch there refused */
  FC_FAULT_LATE               /* acted on delay_ms late, then answered: a
                                 retry sent meanwhile is served first */
};

struct fc_fault {
  int id;
  enum fc_fault_kind kind;
  char service[16];       /* "ec2"; empty: any */
  char action[64];        /* "RunInstances"; empty: any */
  char instance_type[32]; /* capacity, quota, spot: empty = any */
  char zone[32];
  char region[32];          /* region_down: required; others: a filter */
  char market[16];          /* "spot" or "on-demand"; empty: any */
  char instance_id[32];     /* spot_interruption/rebalance on one instance */
  uint32_t probability_ppm; /* per matching call; 1000000 = always */
  int64_t count;            /* firings left; -1 = unlimited */
  int64_t from_ms;          /* window, fake ms since server start; -1 open */
  int64_t until_ms;
  char code[64]; /* error: EC2 code; default InternalError */
  char message[256];
  int status;           /* error: HTTP status; default 500 */
  int64_t delay_ms;     /* slow, late */
  int64_t lead_ms;      /* spot: notice to termination, default 120000 */
  int64_t after_ms;     /* spot/rebalance: after launch; -1 unset */
  double rate_per_hour; /* spot/rebalance: Poisson rate per instance */
  int64_t fired;        /* times it fired (reported by GET) */
};

struct fc_faults {
  struct fc_fault *v;
  size_t n;
  int next_id;
};

/* What a call offers to the rules; NULL fields match only rules that
 * leave the same filter empty. */
struct fc_fault_query {
  const char *service;
  const char *action;
  const char *instance_type;
  const char *zone;
  const char *region;
  const char *market;
  const char *instance_id;
};

void fc_faults_init(struct fc_faults *f);
void fc_faults_release(struct fc_faults *f);
void fc_faults_clear(struct fc_faults *f);

/* Parses one rule object; errors (TW_E_INVALID) name the field. */
enum tw_rc fc_fault_from_json(const json_t *j, struct fc_fault *out,
                              struct tw_err *err);
/* A new JSON object describing r (json_decref it). */
json_t *fc_fault_to_json(const struct fc_fault *r);

/* Adds a copy of r with a fresh id, which it returns. */
int fc_faults_add(struct fc_faults *f, const struct fc_fault *r);
bool fc_faults_remove(struct fc_faults *f, int id);

/* Loads {"faults": [rule, ...]} (or a bare array) from a file or from
 * text, appending the rules.  Nothing is added on error. */
enum tw_rc fc_faults_load_file(struct fc_faults *f, const char *path,
                               struct tw_err *err);
enum tw_rc fc_faults_load_json(struct fc_faults *f, const json_t *root,
                               struct tw_err *err);

/* The first live rule of kind matching q whose probability roll succeeds;
 * it is charged one firing.  elapsed_ms is fake time since server start.
 * NULL when none fires.  The pointer is valid until the list changes. */
struct fc_fault *fc_faults_fire(struct fc_faults *f, enum fc_fault_kind kind,
                                const struct fc_fault_query *q,
                                int64_t elapsed_ms, struct fc_rng *rng);

/* Whether r matches q by its filters and window (no roll, no charge). */
bool fc_fault_matches(const struct fc_fault *r, const struct fc_fault_query *q,
                      int64_t elapsed_ms);

const char *fc_fault_kind_name(enum fc_fault_kind k);

#endif
