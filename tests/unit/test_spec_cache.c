/* test_spec_cache.c - parsed specs kept per job version
 * (broker/core/spec_cache.h): one parse per version, shared; a new stamp
 * with the same text keeps the parse; finished jobs and a full cache let
 * entries go while the specs handed out stay valid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/job.h"
#include "broker/core/spec.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"

/* A job record as the store gives it: canonical JSON of a YAML spec. */
static struct tw_job_rec job(const char *id, const char *yaml,
                             int64_t updated_ms) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  assert_int_equal(tw_spec_parse(yaml, strlen(yaml), false, &spec, &err), 0);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  tw_spec_release(&spec);
  struct tw_job_rec r = {.state = TW_JOB_PENDING, .updated_ms = updated_ms};
  snprintf(r.id, sizeof r.id, "%s", id);
  r.spec_json = tw_buf_detach(&b);
  return r;
}

static const char SMALL[] = "name: a\nresources: {cpus: 2}\n";
static const char BIG[] = "name: b\nresources: {cpus: 8}\n";

static void a_job_is_parsed_once_and_shared(void **state) {
  (void)state;
  struct tw_spec_cache *c = tw_spec_cache_new(0);
  struct tw_job_rec j = job("j-1", SMALL, 10);
  const struct tw_job_spec *a = tw_spec_cache_acquire(c, &j, NULL);
  const struct tw_job_spec *b = tw_spec_cache_acquire(c, &j, NULL);
  assert_non_null(a);
  assert_ptr_equal(a, b);
  assert_int_equal(a->cpus, 2);
  struct tw_spec_cache_stats st;
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.parses, 1);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.entries, 1);
  tw_spec_cache_release(c, a);
  tw_spec_cache_release(c, b);
  free(j.spec_json);
  tw_spec_cache_free(c);
}

static void a_new_stamp_with_the_same_text_keeps_the_parse(void **state) {
  (void)state;
  struct tw_spec_cache *c = tw_spec_cache_new(0);
  struct tw_job_rec j = job("j-1", SMALL, 10);
  const struct tw_job_spec *a = tw_spec_cache_acquire(c, &j, NULL);
  j.updated_ms = 20; /* a note or a state change */
  const struct tw_job_spec *b = tw_spec_cache_acquire(c, &j, NULL);
  assert_ptr_equal(a, b);
  /* another text under a new stamp is parsed again; the old spec stays
   * valid for whoever holds it */
  struct tw_job_rec k = job("j-1", BIG, 30);
  const struct tw_job_spec *d = tw_spec_cache_acquire(c, &k, NULL);
  assert_ptr_not_equal(d, a);
  assert_int_equal(d->cpus, 8);
  assert_int_equal(a->cpus, 2);
  struct tw_spec_cache_stats st;
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.parses, 2);
  assert_int_equal(st.entries, 1);
  tw_spec_cache_release(c, a);
  tw_spec_cache_release(c, b);
  tw_spec_cache_release(c, d);
  free(j.spec_json);
  free(k.spec_json);
  tw_spec_cache_free(c);
}

static void a_finished_job_leaves_the_cache(void **state) {
  (void)state;
  struct tw_spec_cache *c = tw_spec_cache_new(0);
  struct tw_job_rec j = job("j-1", SMALL, 10);
  tw_spec_cache_release(c, tw_spec_cache_acquire(c, &j, NULL));
  j.state = TW_JOB_SUCCEEDED;
  j.updated_ms = 20;
  const struct tw_job_spec *a = tw_spec_cache_acquire(c, &j, NULL);
  assert_non_null(a);
  struct tw_spec_cache_stats st;
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.entries, 0);
  tw_spec_cache_release(c, a);
  /* and forget drops an entry whatever its state */
  j.state = TW_JOB_RUNNING;
  tw_spec_cache_release(c, tw_spec_cache_acquire(c, &j, NULL));
  tw_spec_cache_forget(c, "j-1");
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.entries, 0);
  free(j.spec_json);
  tw_spec_cache_free(c);
}

static void a_full_cache_drops_the_least_recent_unused(void **state) {
  (void)state;
  struct tw_spec_cache *c = tw_spec_cache_new(2);
  struct tw_job_rec j[3] = {job("j-1", SMALL, 1), job("j-2", SMALL, 1),
                            job("j-3", SMALL, 1)};
  const struct tw_job_spec *held = tw_spec_cache_acquire(c, &j[0], NULL);
  tw_spec_cache_release(c, tw_spec_cache_acquire(c, &j[1], NULL));
  tw_spec_cache_release(c, tw_spec_cache_acquire(c, &j[2], NULL));
  struct tw_spec_cache_stats st;
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.entries, 2);
  assert_int_equal(st.evictions, 1); /* j-2: j-1 is held */
  assert_ptr_equal(tw_spec_cache_acquire(c, &j[0], NULL), held);
  tw_spec_cache_release(c, held);
  /* every entry held: the next one is parsed but not kept */
  const struct tw_job_spec *h3 = tw_spec_cache_acquire(c, &j[2], NULL);
  const struct tw_job_spec *h2 = tw_spec_cache_acquire(c, &j[1], NULL);
  assert_non_null(h2);
  tw_spec_cache_stats(c, &st);
  assert_int_equal(st.entries, 2);
  tw_spec_cache_release(c, h2);
  tw_spec_cache_release(c, h3);
  tw_spec_cache_release(c, held);
  for (int i = 0; i < 3; i++)
    free(j[i].spec_json);
  tw_spec_cache_free(c);
}

static void without_a_cache_each_caller_parses(void **state) {
  (void)state;
  struct tw_job_rec j = job("j-1", SMALL, 10);
  const struct tw_job_spec *a = tw_spec_cache_acquire(NULL, &j, NULL);
  const struct tw_job_spec *b = tw_spec_cache_acquire(NULL, &j, NULL);
  assert_ptr_not_equal(a, b);
  tw_spec_cache_release(NULL, a);
  tw_spec_cache_release(NULL, b);
  free(j.spec_json);
}

static void a_spec_that_does_not_parse_is_an_error(void **state) {
  (void)state;
  struct tw_spec_cache *c = tw_spec_cache_new(0);
  struct tw_job_rec j = {.state = TW_JOB_PENDING, .spec_json = "{\"name\":"};
  snprintf(j.id, sizeof j.id, "j-bad");
  struct tw_err err = {0};
  assert_null(tw_spec_cache_acquire(c, &j, &err));
  assert_int_equal(err.rc, TW_E_INVALID);
  tw_spec_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_job_is_parsed_once_and_shared),
      cmocka_unit_test(a_new_stamp_with_the_same_text_keeps_the_parse),
      cmocka_unit_test(a_finished_job_leaves_the_cache),
      cmocka_unit_test(a_full_cache_drops_the_least_recent_unused),
      cmocka_unit_test(without_a_cache_each_caller_parses),
      cmocka_unit_test(a_spec_that_does_not_parse_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
