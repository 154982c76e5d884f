/* test_agent_parse.c - the agent's parsers of outside input
 * (agent/agent_parse.h): the broker's answers and the clouds' metadata
 * documents, in the shapes their references give. */
#include "tests/twtest.h"

#include "agent/agent_parse.h"

#define P(s) s, strlen(s)

static void register_answer(void **state) {
  struct tw_agent_job j;
  char err[128];
  const char *ok =
      "{\"job_id\":\"j-1\",\"attempt\":2,\"setup\":\"pip install x\","
      "\"run\":\"python train.py\",\"env\":{\"TRADEWIND_JOB_ID\":\"j-1\","
      "\"A_B\":\"x=y\"},\"time_limit_s\":3600,\"grace_s\":20,"
      "\"heartbeat_s\":10,\"checkpoint\":{\"uri\":\"s3://b/k/\","
      "\"interval_s\":600,\"resume_s\":30},\"user\":\"tradewind\"}";
  TW_CHECK_INT(tw_agent_parse_register(P(ok), &j, err, sizeof err), 0);
  TW_CHECK_STR(j.job_id, "j-1");
  TW_CHECK_INT(j.attempt, 2);
  TW_CHECK_STR(j.setup, "pip install x");
  TW_CHECK_STR(j.run, "python train.py");
  TW_CHECK_INT(j.n_env, 2);
  TW_CHECK_STR(j.env[1], "A_B=x=y");
  TW_CHECK_INT(j.time_limit_s, 3600);
  TW_CHECK_INT(j.grace_s, 20);
  TW_CHECK(j.has_checkpoint);
  TW_CHECK_STR(j.checkpoint_uri, "s3://b/k/");
  TW_CHECK_INT(j.checkpoint_resume_s, 30);
  TW_CHECK_STR(j.user, "tradewind");
  tw_agent_job_free(&j);

  /* defaults, nulls */
  TW_CHECK_INT(tw_agent_parse_register(
                   P("{\"job_id\":\"j\",\"run\":\"true\",\"setup\":null,"
                     "\"checkpoint\":null,\"user\":null}"),
                   &j, err, sizeof err),
               0);
  TW_CHECK_STR(j.setup, "");
  TW_CHECK_INT(j.grace_s, 30);
  TW_CHECK_INT(j.heartbeat_s, 10);
  TW_CHECK(j.user == NULL && !j.has_checkpoint);
  TW_CHECK_STR(j.workdir_sha, ""); /* no workdir */
  tw_agent_job_free(&j);

  /* a workdir to fetch: its hash */
  TW_CHECK_INT(
      tw_agent_parse_register(
          P("{\"job_id\":\"j\",\"run\":\"true\",\"workdir\":{\"sha256\":"
            "\"28f801cac0e80495295217d464ce99cfe5d783e94129e26d53a4b10f670c87d6"
            "\"}}"),
          &j, err, sizeof err),
      0);
  TW_CHECK_STR(
      j.workdir_sha,
      "28f801cac0e80495295217d464ce99cfe5d783e94129e26d53a4b10f670c87d6");
  tw_agent_job_free(&j);

  /* errors name the field */
  static const struct {
    const char *body, *field;
  } bad[] = {
      {"[]", "(body)"},
      {"{\"run\":\"x\"}", "job_id"},
      {"{\"job_id\":\"j\"}", "run"},
      {"{\"job_id\":\"j\",\"run\":1}", "run"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"env\":{\"1A\":\"v\"}}", "env"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"env\":{\"A\":1}}", "env"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"heartbeat_s\":0}", "heartbeat_s"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"time_limit_s\":-1}", "time_limit_s"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"user\":\"\"}", "user"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"checkpoint\":3}", "checkpoint"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"workdir\":\"abc\"}", "workdir"},
      {"{\"job_id\":\"j\",\"run\":\"x\",\"workdir\":{\"sha256\":\"../x\"}}",
       "workdir"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    TW_CHECK_INT(tw_agent_parse_register(P(bad[i].body), &j, err, sizeof err),
                 -1);
    TW_CHECK(!strncmp(err, bad[i].field, strlen(bad[i].field)), "%s: %s",
             bad[i].body, err);
  }
}

/* A gang's node: its rank, the gang's size, ready once all registered. */
static void register_answer_gang(void **state) {
  (void)state;
  struct tw_agent_job j;
  char err[128];
  TW_CHECK_INT(tw_agent_parse_register(P("{\"job_id\":\"j\",\"run\":\"x\"}"),
                                       &j, err, sizeof err),
               0);
  TW_CHECK(j.gang_ready && j.gang_rank == 0 && j.gang_nodes == 1);
  tw_agent_job_free(&j);
  TW_CHECK_INT(
      tw_agent_parse_register(P("{\"job_id\":\"j\",\"run\":\"x\",\"gang\":"
                                "{\"rank\":1,\"nodes\":2,\"ready\":false}}"),
                              &j, err, sizeof err),
      0);
  TW_CHECK(!j.gang_ready && j.gang_rank == 1 && j.gang_nodes == 2);
  tw_agent_job_free(&j);
  static const char *const bad[] = {
      "{\"job_id\":\"j\",\"run\":\"x\",\"gang\":3}",
      "{\"job_id\":\"j\",\"run\":\"x\",\"gang\":{\"rank\":2,\"nodes\":2,"
      "\"ready\":true}}",
      "{\"job_id\":\"j\",\"run\":\"x\",\"gang\":{\"rank\":0,\"nodes\":2}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    TW_CHECK_INT(tw_agent_parse_register(P(bad[i]), &j, err, sizeof err), -1);
    TW_CHECK(!strncmp(err, "gang", 4), "%s: %s", bad[i], err);
  }
}

static void heartbeat_and_logs_answers(void **state) {
  TW_CHECK_INT(tw_agent_parse_action(P("{\"action\":\"none\"}")),
               TW_ACTION_NONE);
  TW_CHECK_INT(tw_agent_parse_action(P("{\"action\":\"cancel\"}")),
               TW_ACTION_CANCEL);
  TW_CHECK_INT(tw_agent_parse_action(P("{\"action\":\"checkpoint\"}")),
               TW_ACTION_CHECKPOINT);
  TW_CHECK_INT(tw_agent_parse_action(P("{}")), TW_ACTION_NONE);
  TW_CHECK_INT(tw_agent_parse_action(P("{\"action\":\"reboot\"}")),
               TW_ACTION_BAD);
  TW_CHECK_INT(tw_agent_parse_action(P("nope")), TW_ACTION_BAD);
  int64_t n = -1;
  TW_CHECK_INT(tw_agent_parse_next_offset(P("{\"next_offset\":1234}"), &n), 0);
  TW_CHECK_INT(n, 1234);
  TW_CHECK_INT(tw_agent_parse_next_offset(P("{\"next_offset\":-1}"), &n), -1);
  TW_CHECK_INT(tw_agent_parse_next_offset(P("{\"title\":\"x\"}"), &n), -1);
}

static void aws_documents(void **state) {
  struct tw_agent_notice n;
  /* as the EC2 user guide shows spot/instance-action */
  TW_CHECK_INT(
      tw_agent_parse_aws_action(P("{\"action\": \"terminate\", \"time\": "
                                  "\"2017-09-18T08:22:00Z\"}"),
                                &n),
      0);
  TW_CHECK_STR(n.action, "terminate");
  TW_CHECK_INT(n.deadline_ms, INT64_C(1505722920000));
  TW_CHECK_STR(n.source, "imds");
  TW_CHECK_INT(n.kind, TW_NOTICE_INTERRUPTION);
  TW_CHECK_INT(tw_agent_parse_aws_action(P("{\"action\":\"terminate\"}"), &n),
               -1);
  TW_CHECK_INT(tw_agent_parse_aws_rebalance(
                   P("{\"noticeTime\": \"2020-10-27T08:22:00Z\"}"), &n),
               0);
  TW_CHECK_INT(n.kind, TW_NOTICE_REBALANCE);
  TW_CHECK_INT(n.deadline_ms, 0);
}

static void azure_documents(void **state) {
  struct tw_agent_notice n;
  int64_t inc = 0;
  const char *doc =
      "{\"DocumentIncarnation\": 3, \"Events\": ["
      "{\"EventId\": \"A-1\", \"EventType\": \"Reboot\", \"ResourceType\": "
      "\"VirtualMachine\", \"Resources\": [\"vm1\"], \"EventStatus\": "
      "\"Scheduled\", \"NotBefore\": \"Mon, 19 Sep 2016 18:29:47 GMT\"},"
      "{\"EventId\": \"B-2\", \"EventType\": \"Preempt\", \"ResourceType\": "
      "\"VirtualMachine\", \"Resources\": [\"other\"], \"EventStatus\": "
      "\"Scheduled\", \"NotBefore\": \"Mon, 19 Sep 2016 18:29:47 GMT\"},"
      "{\"EventId\": \"C-3\", \"EventType\": \"Preempt\", \"ResourceType\": "
      "\"VirtualMachine\", \"Resources\": [\"VM1\"], \"EventStatus\": "
      "\"Scheduled\", \"NotBefore\": \"Mon, 19 Sep 2016 18:29:47 GMT\", "
      "\"Description\": \"\", \"EventSource\": \"Platform\", "
      "\"DurationInSeconds\": -1}]}";
  TW_CHECK_INT(tw_agent_parse_azure_events(P(doc), "vm1", &n, &inc), 1);
  TW_CHECK_STR(n.event_id, "C-3");
  TW_CHECK_STR(n.source, "scheduled-events");
  TW_CHECK_INT(n.deadline_ms, INT64_C(1474309787000));
  TW_CHECK_INT(inc, 3);
  TW_CHECK_INT(tw_agent_parse_azure_events(P(doc), "vm9", &n, &inc), 0);
  TW_CHECK_INT(
      tw_agent_parse_azure_events(
          P("{\"DocumentIncarnation\":1,\"Events\":[]}"), "vm1", &n, &inc),
      0);
  TW_CHECK_INT(tw_agent_parse_azure_events(P("{\"Events\":3}"), NULL, &n, &inc),
               -1);
  int64_t ms;
  TW_CHECK_INT(tw_agent_parse_http_date("Thu, 01 Jan 1970 00:00:10 GMT", &ms),
               0);
  TW_CHECK_INT(ms, 10000);
  TW_CHECK_INT(tw_agent_parse_http_date("Thu, 01 Foo 1970 00:00:10 GMT", &ms),
               -1);
  TW_CHECK_INT(tw_agent_parse_http_date("1970-01-01T00:00:10Z", &ms), -1);
}

static void alibaba_document(void **state) {
  struct tw_agent_notice n;
  TW_CHECK_INT(tw_agent_parse_alibaba_time(P("2015-01-05T18:02:00Z\n"), &n), 0);
  TW_CHECK_INT(n.deadline_ms, INT64_C(1420480920000));
  TW_CHECK_STR(n.source, "meta-server");
  TW_CHECK_INT(tw_agent_parse_alibaba_time(P("soon"), &n), -1);
  TW_CHECK_INT(tw_agent_parse_alibaba_time(P(""), &n), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(register_answer),
      cmocka_unit_test(register_answer_gang),
      cmocka_unit_test(heartbeat_and_logs_answers),
      cmocka_unit_test(aws_documents),
      cmocka_unit_test(azure_documents),
      cmocka_unit_test(alibaba_document),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
