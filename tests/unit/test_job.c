/* The job lifecycle: every pair of states against the documented graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "broker/core/job.h"

static bool expected(enum tw_job_state a, enum tw_job_state b) {
#define E(x, y)                                                                \
  if (a == TW_JOB_##x && b == TW_JOB_##y)                                      \
  return true
  E(PENDING, PLACING);
  E(PENDING, CANCELLED);
  E(PENDING, FAILED);
  E(PLACING, PROVISIONING);
  E(PLACING, PENDING);
  E(PLACING, FAILED);
  E(PLACING, CANCELLED);
  E(PROVISIONING, RUNNING);
  E(PROVISIONING, PLACING);
  E(PROVISIONING, FAILED);
  E(PROVISIONING, CANCELLED);
  E(PROVISIONING, INTERRUPTED);
  E(RUNNING, SUCCEEDED);
  E(RUNNING, FAILED);
  E(RUNNING, CANCELLED);
  E(RUNNING, INTERRUPTED);
  E(INTERRUPTED, RECOVERING);
  E(INTERRUPTED, FAILED);
  E(INTERRUPTED, CANCELLED);
  E(RECOVERING, PROVISIONING);
  E(RECOVERING, PENDING);
  E(RECOVERING, FAILED);
  E(RECOVERING, CANCELLED);
  E(WAITING, PENDING);
  E(WAITING, FAILED);
  E(WAITING, CANCELLED);
#undef E
  return false;
}

static void every_pair_matches_the_graph(void **state) {
  (void)state;
  int allowed = 0;
  for (int a = 0; a < TW_JOB_NSTATES; a++)
    for (int b = 0; b < TW_JOB_NSTATES; b++) {
      struct tw_err err = {0};
      enum tw_rc rc = tw_job_transition_check(a, b, &err);
      if (expected(a, b)) {
        assert_int_equal(rc, TW_OK);
        allowed++;
      } else {
        assert_int_equal(rc, TW_E_CONFLICT);
        assert_non_null(strstr(err.msg, tw_job_state_str(b)));
      }
    }
  assert_int_equal(allowed, 26);
}

static void terminal_states_are_final(void **state) {
  (void)state;
  enum tw_job_state term[] = {TW_JOB_SUCCEEDED, TW_JOB_FAILED,
                              TW_JOB_CANCELLED};
  for (int i = 0; i < 3; i++) {
    assert_true(tw_job_state_terminal(term[i]));
    for (int b = 0; b < TW_JOB_NSTATES; b++)
      assert_int_not_equal(tw_job_transition_check(term[i], b, NULL), TW_OK);
  }
  assert_false(tw_job_state_terminal(TW_JOB_RUNNING));
}

static void names_round_trip(void **state) {
  (void)state;
  for (int s = 0; s < TW_JOB_NSTATES; s++) {
    enum tw_job_state back;
    assert_true(tw_job_state_parse(tw_job_state_str(s), &back));
    assert_int_equal(back, s);
  }
  enum tw_job_state x;
  assert_false(tw_job_state_parse("done", &x));
  assert_int_equal(
      tw_job_transition_check(TW_JOB_NSTATES, TW_JOB_PENDING, NULL),
      TW_E_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_pair_matches_the_graph),
      cmocka_unit_test(terminal_states_are_final),
      cmocka_unit_test(names_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
