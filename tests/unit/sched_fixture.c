/* sched_fixture.c - see sched_fixture.h. */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/core/spec.h"
#include "tests/unit/agent_play.h"
#include "tests/unit/sched_fixture.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

struct tw_clock sfx_clk;
struct tw_store *sfx_store;
struct tw_provider *sfx_prov;
struct tw_fake *sfx_fake;
struct tw_sched *sfx_sched;
struct tw_play *sfx_play;

static char dir[64], path[128];
static struct tw_test_pg sfx_pg; /* on: the store is on PostgreSQL */

int sfx_backend(int argc, char **argv) {
  return tw_test_pg_wanted(argc, argv) ? tw_test_pg_init(&sfx_pg) : 0;
}

static int open_with(const char *tag, int64_t t0_ms,
                     const struct tw_provider_ops *ops, bool agents) {
  snprintf(dir, sizeof dir, "/tmp/tw-%s-XXXXXX", tag);
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/s.db", dir);
  tw_clock_fake_init(&sfx_clk, t0_ms);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &sfx_clk};
  if (sfx_pg.on && tw_test_pg_schema_new(&sfx_pg))
    return -1;
  tw_test_pg_opts(&sfx_pg, &so);
  if (tw_store_open(&so, &sfx_store, &err))
    return -1;
  struct tw_node *cfg = agents ? tw_play_provider_cfg() : NULL;
  enum tw_rc rc = tw_provider_new_ops(ops ? ops : &tw_provider_fake, "fake-a",
                                      cfg, &sfx_clk, &sfx_prov, &err);
  tw_node_free(cfg);
  if (rc)
    return -1;
  sfx_fake = tw_fake_of(sfx_prov);
  sfx_play = agents ? tw_play_new(sfx_store, &sfx_clk, sfx_prov) : NULL;
  if (agents && !sfx_play)
    return -1;
  sfx_sched = NULL;
  return 0;
}

int sfx_open(const char *tag, int64_t t0_ms,
             const struct tw_provider_ops *ops) {
  return open_with(tag, t0_ms, ops, false);
}

int sfx_open_agents(const char *tag, int64_t t0_ms,
                    const struct tw_provider_ops *ops) {
  return open_with(tag, t0_ms, ops, true);
}

int sfx_start_sched(const struct tw_fallback_cfg *fb) {
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = &sfx_prov,
                            .n_providers = 1,
                            .fallback = fb,
                            .agent = sfx_play ? tw_play_agent(sfx_play) : NULL};
  return tw_sched_new(&o, &sfx_sched, NULL) ? -1 : 0;
}

void sfx_close(void) {
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  tw_play_free(sfx_play);
  sfx_play = NULL;
  tw_provider_free(sfx_prov);
  tw_store_close(sfx_store);
  tw_test_pg_schema_drop(&sfx_pg);
  tw_test_store_remove(path, dir);
}

void sfx_offer(struct tw_offer *o, const char *region, const char *zone,
               const char *type, enum tw_market m, int64_t price_uusd) {
  tw_offer_init(o);
  snprintf(o->provider, sizeof o->provider, "fake");
  snprintf(o->account, sizeof o->account, "fake-a");
  snprintf(o->region, sizeof o->region, "%s", region);
  snprintf(o->zone, sizeof o->zone, "%s", zone);
  snprintf(o->instance_type, sizeof o->instance_type, "%s", type);
  o->arch = TW_ARCH_X86_64;
  o->market = m;
  o->price_uusd_per_hour = price_uusd;
  o->billing_granularity_s = 1;
}

void sfx_add_offer(struct tw_offer *o) {
  tw_offer_make_id(o);
  tw_fake_add_offer(sfx_fake, o);
}

void sfx_submit(const char *yaml, char id[TW_JOB_ID_LEN + 1]) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, &err))
    fail_msg("spec: %s", err.msg);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_job_new req = {.name = spec.name,
                           .tenant = spec.tenant,
                           .project = spec.project,
                           .priority = spec.priority,
                           .spec_json = b.data};
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_create(sfx_store, &req, &j, NULL, &err), TW_OK);
  memcpy(id, j.id, TW_JOB_ID_LEN + 1);
  tw_job_rec_release(&j);
  tw_buf_release(&b);
  tw_spec_release(&spec);
}

struct tw_job_rec sfx_get(const char *id) {
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(sfx_store, id, &j, NULL), TW_OK);
  return j;
}

enum tw_job_state sfx_state_of(const char *id) {
  struct tw_job_rec j = sfx_get(id);
  enum tw_job_state s = j.state;
  tw_job_rec_release(&j);
  return s;
}

int sfx_tick(void) {
  if (sfx_play)
    tw_play_step(sfx_play);
  return tw_sched_tick(sfx_sched);
}
