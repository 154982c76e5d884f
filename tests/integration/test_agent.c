/* test_agent.c - tradewind-agent against a test broker (docs/agent.md):
 * register, exit codes and signals, output by offset through broker and
 * agent restarts with no byte twice, cancel by heartbeat, the time limit,
 * backoff while the broker is down, the on-disk buffer bound, checkpoint
 * reports. */
#include "tests/twtest.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/twtest_agent_broker.h"

#define TOKEN                                                                  \
  "twa_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ATTEMPT "j-test-1"

struct fx {
  char dir[256];
  struct tb b;
};

static char *answer(const char *run, const char *setup, int time_limit_s,
                    int grace_s) {
  json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:{s:s,s:s},s:i,s:i,s:i,s:n,s:n}",
                        "job_id", "j-test", "attempt", 1, "setup", setup, "run",
                        run, "env", "TRADEWIND_JOB_ID", "j-test", "GREETING",
                        "hello", "time_limit_s", time_limit_s, "grace_s",
                        grace_s, "heartbeat_s", 1, "checkpoint", "user");
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

static void fx_start(struct fx *f, const char *ans) {
  snprintf(f->dir, sizeof f->dir, "/tmp/tw-agent-test-XXXXXX");
  TW_CHECK(mkdtemp(f->dir) != NULL);
  strcat(f->dir, "/a");
  TW_CHECK(tb_start(&f->b, 0, ATTEMPT, TOKEN, ans) == 0);
}

static void fx_end(struct fx *f, int failures_before) {
  if (tw_failures() != failures_before)
    tb_agent_log(f->dir);
  tb_free(&f->b);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strlen(f->dir) - 2), f->dir);
  if (tw_failures() == failures_before && system(cmd))
    fprintf(stderr, "cannot remove %s\n", f->dir);
}

static long long jint(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Runs one job to its end; returns the agent's exit code. */
static int run_job(struct fx *f, int timeout_ms) {
  pid_t a = tb_agent_start(&f->b, f->dir, "local", NULL, NULL);
  return tb_agent_wait(&f->b, a, timeout_ms);
}

static void exit_zero_with_output(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans =
      answer("echo $GREETING; echo oops >&2; echo done", "echo set", 0, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(f.b.registers, 1);
  TW_CHECK_INT(f.b.exits, 1);
  TW_CHECK(f.b.exit_body != NULL);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 0);
  TW_CHECK(json_object_get(f.b.exit_body, "signal") == NULL);
  TW_CHECK(json_is_false(json_object_get(f.b.exit_body, "after_notice")));
  TW_CHECK(jint(f.b.exit_body, "ended_ms") >=
           jint(f.b.exit_body, "started_ms"));
  TW_CHECK_STR(f.b.log[0].data, "set\nhello\ndone\n");
  TW_CHECK_STR(f.b.log[1].data, "oops\n");
  TW_CHECK_INT(f.b.phases, 2);
  TW_CHECK_STR(f.b.last_phase, "run");
  TW_CHECK_INT(f.b.unauthorized, 0);
  fx_end(&f, fails);
}

static bool first_line(struct tb *b) {
  return b->log[0].data && strstr(b->log[0].data, "line 1\n");
}

/* A job that prints a line every 100 ms: its first line reaches the
 * broker at once, the rest together (one report per 5 s while it
 * prints), not one report per line. */
static void a_chatty_job_is_sent_in_few_chunks(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer(
      "i=1; while [ $i -le 30 ]; do echo line $i; i=$((i+1)); sleep 0.1; done",
      "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, first_line, 10000), "the first line never came");
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 30000), 0);
  char want[512];
  size_t n = 0;
  for (int i = 1; i <= 30; i++)
    n += (size_t)snprintf(want + n, sizeof want - n, "line %d\n", i);
  TW_CHECK_STR(f.b.log[0].data, want);
  /* 30 lines over 3 s or more: the first at once, the rest at the 5 s
   * mark or at the exit (a loaded machine may stretch it to a second
   * mark) */
  TW_CHECK(f.b.log_posts >= 2 && f.b.log_posts <= 4,
           "%d log reports for 30 lines", f.b.log_posts);
  fx_end(&f, fails);
}

static void exit_three_and_setup_failure(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("echo hello; exit 3", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 3);
  TW_CHECK_STR(f.b.log[0].data, "hello\n");
  fx_end(&f, fails);

  /* a failing setup: run never starts, the setup's code is the job's */
  ans = answer("echo never", "exit 7", 0, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 7);
  TW_CHECK(f.b.log[0].data == NULL);
  TW_CHECK_INT(f.b.phases, 1);
  fx_end(&f, fails);
}

static void a_signal_is_reported_as_such(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("kill -USR1 $$", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(jint(f.b.exit_body, "signal"), SIGUSR1);
  TW_CHECK(json_object_get(f.b.exit_body, "exit_code") == NULL);
  fx_end(&f, fails);
}

static bool running(struct tb *b) { return !strcmp(b->last_phase, "run"); }

static void cancel_by_heartbeat(void **state) {
  int fails = tw_failures();
  struct fx f;
  /* the job traps TERM, says so and leaves with 0 within the grace */
  char *ans = answer("trap 'echo got-term; exit 0' TERM; "
                     "while :; do sleep 0.1; done",
                     "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, running, 10000));
  int64_t t0 = tb_now_ms();
  tb_set_action(&f.b, "cancel");
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 20000), 0);
  TW_CHECK(tb_now_ms() - t0 < 5000, "cancel took %lld ms",
           (long long)(tb_now_ms() - t0));
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 0);
  TW_CHECK_STR(f.b.log[0].data, "got-term\n");
  fx_end(&f, fails);

  /* one that ignores TERM is killed after grace_s */
  ans = answer("trap '' TERM; while :; do sleep 0.1; done", "", 0, 1);
  fx_start(&f, ans);
  free(ans);
  a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, running, 10000));
  tb_set_action(&f.b, "cancel");
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 20000), 0);
  TW_CHECK_INT(jint(f.b.exit_body, "signal"), SIGKILL);
  fx_end(&f, fails);
}

static void time_limit_terms_then_kills(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans =
      answer("trap '' TERM; echo start; while :; do sleep 0.1; done", "", 1, 1);
  fx_start(&f, ans);
  free(ans);
  int64_t t0 = tb_now_ms();
  TW_CHECK_INT(run_job(&f, 20000), 0);
  int64_t took = tb_now_ms() - t0;
  TW_CHECK(took >= 2000 && took < 8000, "took %lld ms", (long long)took);
  TW_CHECK_INT(jint(f.b.exit_body, "signal"), SIGKILL);
  TW_CHECK_STR(f.b.log[0].data, "start\n");
  fx_end(&f, fails);

  /* a job that heeds TERM ends by it */
  ans = answer("sleep 30", "", 1, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(jint(f.b.exit_body, "signal"), SIGTERM);
  fx_end(&f, fails);
}

static bool some_output(struct tb *b) { return b->log[0].len > 20; }

static char *seq_text(int n) {
  char *s = calloc(1, (size_t)n * 12 + 1);
  for (int i = 1; i <= n; i++)
    sprintf(s + strlen(s), "line %d\n", i);
  return s;
}

/* The broker goes away in the middle of the job and comes back on the
 * same port: the job keeps running, the agent backs off and resends from
 * the broker's offset; answers lost after the bytes were stored make it
 * resend bytes the broker skips. */
static void broker_restart_loses_no_byte_and_doubles_none(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("i=1; while [ $i -le 60 ]; do echo line $i; i=$((i+1)); "
                     "sleep 0.05; done",
                     "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  f.b.fail_logs_after_store = 2;
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, some_output, 10000));
  tb_pause(&f.b);
  sleep(3); /* the job finishes meanwhile */
  TW_CHECK(f.b.exits == 0);
  TW_CHECK_INT(tb_serve(&f.b), 0);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 60000), 0);
  char *want = seq_text(60);
  TW_CHECK_STR(f.b.log[0].data, want);
  free(want);
  TW_CHECK(f.b.dup_bytes > 0, "lost answers made the agent resend");
  TW_CHECK_INT(f.b.exits, 1);
  TW_CHECK_INT(f.b.registers, 1);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 0);
  fx_end(&f, fails);
}

/* Started while the broker is down: the agent retries register with
 * backoff (1 s, 2 s, ...) and goes on once the broker is there. */
static void backoff_while_the_broker_is_down(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("echo up", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  tb_pause(&f.b);
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  sleep(4);
  TW_CHECK_INT(tb_serve(&f.b), 0);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 60000), 0);
  TW_CHECK_STR(f.b.log[0].data, "up\n");
  /* the agent's log shows growing delays */
  char path[300], *log = NULL;
  snprintf(path, sizeof path, "%s/agent.log", f.dir);
  FILE *fl = fopen(path, "r");
  TW_CHECK(fl != NULL);
  size_t cap = 0;
  ssize_t n = getdelim(&log, &cap, '\0', fl);
  fclose(fl);
  TW_CHECK(n > 0);
  int retries = 0;
  for (const char *p = log; (p = strstr(p, "unreachable; retrying")); p++)
    retries++;
  TW_CHECK(retries >= 2 && retries <= 5, "%d retries in 4 s", retries);
  free(log);
  fx_end(&f, fails);
}

/* The agent is killed in the middle of the job and started again on the
 * same directory: it adopts the job and reports nothing twice.  The job
 * ends only once a gate file exists, made after the restart: on a slow
 * machine it could otherwise end, and be reported, before the kill. */
static void agent_restart_adopts_the_job(void **state) {
  int fails = tw_failures();
  struct fx f;
  char gate[64], run[256];
  snprintf(gate, sizeof gate, "/tmp/tw-agent-gate-%d", (int)getpid());
  unlink(gate);
  snprintf(run, sizeof run,
           "i=1; while [ $i -le 40 ]; do echo line $i; i=$((i+1)); "
           "sleep 0.05; done; while [ ! -e %s ]; do sleep 0.05; done; exit 5",
           gate);
  char *ans = answer(run, "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, some_output, 10000));
  kill(a, SIGKILL);
  tb_agent_wait(&f.b, a, 5000);
  pthread_mutex_lock(&f.b.mu); /* the broker's thread writes it */
  int early_exits = f.b.exits;
  pthread_mutex_unlock(&f.b.mu);
  TW_CHECK_INT(early_exits, 0); /* killed before the job could end */
  a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  FILE *g = fopen(gate, "w");
  TW_CHECK(g != NULL);
  if (g)
    fclose(g);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 30000), 0);
  char *want = seq_text(40);
  TW_CHECK_STR(f.b.log[0].data, want);
  free(want);
  TW_CHECK_INT(f.b.exits, 1);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 5);
  TW_CHECK_INT(f.b.phases, 2); /* setup and run, once each */
  unlink(gate);
  fx_end(&f, fails);
}

/* The broker lost bytes it had acknowledged (a store restored from
 * backup): 409 with its offset, and the agent sends them again. */
static bool lost_done(struct tb *b) { return b->log[0].len >= 9; }
static void offset_beyond_is_rewound(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("echo first-part; sleep 2; echo second", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  TW_CHECK(tb_wait(&f.b, lost_done, 10000));
  pthread_mutex_lock(&f.b.mu);
  f.b.log[0].len = 5; /* keeps "first" */
  pthread_mutex_unlock(&f.b.mu);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 20000), 0);
  TW_CHECK_STR(f.b.log[0].data, "first-part\nsecond\n");
  fx_end(&f, fails);
}

/* With the broker away, at most --max-buffer-bytes of unsent output is
 * kept; a line says how much was dropped. */
static void buffer_bound_drops_the_oldest(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("i=0; while [ $i -lt 2000 ]; do "
                     "echo 0123456789012345678901234567890123456789; "
                     "i=$((i+1)); done",
                     "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  /* registered, then the broker goes away before the output */
  pid_t a;
  {
    const char *extra[] = {"--max-buffer-bytes", "8192", NULL};
    char cached[300];
    snprintf(cached, sizeof cached, "%s", f.dir);
    mkdir(cached, 0700);
    snprintf(cached, sizeof cached, "%s/register.json", f.dir);
    FILE *fc = fopen(cached, "w");
    TW_CHECK(fc != NULL);
    fputs(f.b.register_answer, fc);
    fclose(fc);
    tb_pause(&f.b);
    a = tb_agent_start(&f.b, f.dir, "local", NULL, extra);
  }
  sleep(3);
  TW_CHECK_INT(tb_serve(&f.b), 0);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 60000), 0);
  const char *s = f.b.log[0].data;
  TW_CHECK(s && strstr(s, "bytes of stdout dropped]"), "%s", s ? s : "");
  TW_CHECK(f.b.log[0].len <= 8192 + 100, "kept %zu", f.b.log[0].len);
  /* what is kept is the newest output, whole lines at the end */
  TW_CHECK(f.b.log[0].len > 4096);
  TW_CHECK(!strcmp(s + f.b.log[0].len - 41,
                   "0123456789012345678901234567890123456789\n"));
  fx_end(&f, fails);
}

static void checkpoint_saved_is_reported(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans =
      answer("echo 120 > \"$TRADEWIND_CHECKPOINT_SAVED\"; sleep 1.5", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  TW_CHECK_INT(f.b.checkpoints, 1);
  TW_CHECK_INT(jint(f.b.checkpoint_body, "progress_s"), 120);
  TW_CHECK(jint(f.b.checkpoint_body, "at_ms") > 0);
  fx_end(&f, fails);
}

/* As root, with a user that exists here: the scripts run as that user,
 * in work/ under the agent's directory, and cannot read the token. */
static void drops_to_the_user_when_root(void **state) {
  struct passwd *pw = getpwnam("nobody");
  if (geteuid() != 0 || !pw) {
    print_message("not root or no user nobody: nothing to drop to\n");
    return;
  }
  int fails = tw_failures();
  struct fx f;
  json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:i,s:s}", "job_id", "j-user",
                        "attempt", 1, "setup", "", "run",
                        "id -un; pwd; cat ../token || echo no-token; "
                        "echo 5 > \"$TRADEWIND_CHECKPOINT_SAVED\"",
                        "heartbeat_s", 1, "user", "nobody");
  char *ans = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  fx_start(&f, ans);
  free(ans);
  /* the job's user must be able to reach the agent's directory */
  char parent[256];
  snprintf(parent, sizeof parent, "%.*s", (int)(strlen(f.dir) - 2), f.dir);
  chmod(parent, 0711);
  TW_CHECK_INT(run_job(&f, 20000), 0);
  char want[512];
  snprintf(want, sizeof want, "nobody\n%s/work\nno-token\n", f.dir);
  TW_CHECK_STR(f.b.log[0].data, want);
  TW_CHECK_INT(jint(f.b.exit_body, "exit_code"), 0);
  TW_CHECK_INT(f.b.checkpoints, 1);
  fx_end(&f, fails);
}

static void a_bad_token_is_final(void **state) {
  int fails = tw_failures();
  struct fx f;
  char *ans = answer("echo never", "", 0, 5);
  fx_start(&f, ans);
  free(ans);
  snprintf(f.b.token, sizeof f.b.token, "twa_other");
  pid_t a = tb_agent_start(&f.b, f.dir, "local", NULL, NULL);
  /* the agent read "twa_other" from the token file; make the broker want
   * another one */
  pthread_mutex_lock(&f.b.mu);
  snprintf(f.b.token, sizeof f.b.token, "%s", TOKEN);
  pthread_mutex_unlock(&f.b.mu);
  TW_CHECK_INT(tb_agent_wait(&f.b, a, 20000), 1);
  TW_CHECK_INT(f.b.registers, 0);
  TW_CHECK(f.b.unauthorized >= 1);
  TW_CHECK_INT(f.b.exits, 0);
  fx_end(&f, fails);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exit_zero_with_output),
      cmocka_unit_test(exit_three_and_setup_failure),
      cmocka_unit_test(a_chatty_job_is_sent_in_few_chunks),
      cmocka_unit_test(a_signal_is_reported_as_such),
      cmocka_unit_test(cancel_by_heartbeat),
      cmocka_unit_test(time_limit_terms_then_kills),
      cmocka_unit_test(broker_restart_loses_no_byte_and_doubles_none),
      cmocka_unit_test(backoff_while_the_broker_is_down),
      cmocka_unit_test(agent_restart_adopts_the_job),
      cmocka_unit_test(offset_beyond_is_rewound),
      cmocka_unit_test(buffer_bound_drops_the_oldest),
      cmocka_unit_test(checkpoint_saved_is_reported),
      cmocka_unit_test(drops_to_the_user_when_root),
      cmocka_unit_test(a_bad_token_is_final),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
