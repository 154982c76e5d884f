/* test_agent_gang.c - each node of a gang its rank, the node list and the
 * head address (docs/agent.md, "Gangs"):
 *
 *   - the bootstrap of node k names --node-rank, the others' bytes are
 *     unchanged;
 *   - the register answer's variables (Tradewind's and SkyPilot's), ready
 *     only with every address, the broker's names winning over the spec's;
 *   - registration over the store: a gang of 2 is ready once both nodes
 *     registered, each told the same list in rank order; a rank beyond the
 *     gang is refused;
 *   - the report bodies' node_rank and ip, and which exits hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/sched/agent.h"
#include "broker/sched/agent_msg.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define T0 1790000000000LL

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;

static int setup_store(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-gang-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/s.db", dir);
  tw_clock_fake_init(&clk, T0);
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  return tw_store_open(&so, &store, NULL) ? -1 : 0;
}

static int teardown_store(void **state) {
  (void)state;
  tw_store_close(store);
  store = NULL;
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static void has(const char *hay, const char *needle) {
  TW_CHECK(hay && strstr(hay, needle), "%s lacks %s", hay ? hay : "(null)",
           needle);
}

static void lacks(const char *hay, const char *needle) {
  TW_CHECK(hay && !strstr(hay, needle), "%s has %s", hay ? hay : "(null)",
           needle);
}

static void the_bootstrap_names_the_nodes_rank(void **state) {
  (void)state;
  struct tw_agent_boot b = {.job_id = "j-1",
                            .attempt_n = 1,
                            .client_token = "j-1-1",
                            .token = "twa_00",
                            .broker_url = "http://b:1",
                            .preinstalled = true,
                            .agent_path = "tradewind-agent",
                            .cloud = "local"};
  struct tw_buf one, node;
  tw_buf_init(&one);
  tw_buf_init(&node);
  tw_agent_bootstrap(&b, &one);
  b.has_rank = true;
  b.node_rank = 1;
  tw_agent_bootstrap(&b, &node);
  lacks(one.data, "--node-rank");
  has(node.data, "  --token-file token --cloud local \\\n"
                 "  --node-rank 1 \\\n"
                 "  --dir \"$dir\" >agent.log 2>&1\n");
  /* only that line differs */
  TW_CHECK_INT(node.len - one.len, strlen("  --node-rank 1 \\\n"));
  tw_buf_release(&one);
  tw_buf_release(&node);
}

static void the_answer_places_the_node_in_its_gang(void **state) {
  (void)state;
  static const char SPEC[] =
      "{\"name\":\"g\",\"nodes\":2,\"resources\":{\"accelerators\":"
      "\"H100:8\"},\"run\":\"x\",\"env\":{\"SKYPILOT_NODE_RANK\":\"7\","
      "\"MINE\":\"1\"}}";
  struct tw_job_spec sp;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_spec_parse(SPEC, strlen(SPEC), true, &sp, &err), TW_OK, err);
  struct tw_agent_job j = {.job_id = "j-1",
                           .attempt_n = 1,
                           .spec = &sp,
                           .grace_s = 30,
                           .heartbeat_s = 10,
                           .node_rank = 1,
                           .nodes = 2};
  struct tw_buf a;
  tw_buf_init(&a);
  tw_agent_register_answer(&j, &a);
  has(a.data, "\"TW_NODE_RANK\":\"1\",\"TW_NUM_NODES\":\"2\"");
  has(a.data, "\"SKYPILOT_NODE_RANK\":\"1\",\"SKYPILOT_NUM_NODES\":\"2\"");
  has(a.data, "\"SKYPILOT_NUM_GPUS_PER_NODE\":\"8\"");
  has(a.data, "\"MINE\":\"1\"");
  lacks(a.data, "\"7\""); /* the broker's rank wins over the spec's */
  lacks(a.data, "NODE_IPS");
  has(a.data, "\"gang\":{\"rank\":1,\"nodes\":2,\"ready\":false}");
  const char *ips[] = {"10.0.0.1", "10.0.0.2"};
  j.ips = ips;
  tw_buf_reset(&a);
  tw_agent_register_answer(&j, &a);
  has(a.data, "\"TW_NODE_IPS\":\"10.0.0.1\\n10.0.0.2\"");
  has(a.data, "\"SKYPILOT_NODE_IPS\":\"10.0.0.1\\n10.0.0.2\"");
  has(a.data, "\"TW_HEAD_IP\":\"10.0.0.1\"");
  has(a.data, "\"gang\":{\"rank\":1,\"nodes\":2,\"ready\":true}");
  tw_buf_release(&a);
  tw_spec_release(&sp);
}

static void report_bodies_carry_rank_and_address(void **state) {
  (void)state;
  struct tw_agent_register_msg m;
  struct tw_err err = {0};
  static const char R1[] =
      "{\"instance_id\":\"i-1\",\"node_rank\":1,\"ip\":\"10.1.2.3\"}";
  TW_CHECK_RC(tw_agent_parse_register(R1, strlen(R1), &m, &err), TW_OK, err);
  TW_CHECK_INT(m.node_rank, 1);
  TW_CHECK_STR(m.ip, "10.1.2.3");
  tw_agent_register_msg_release(&m);
  static const char R0[] = "{\"instance_id\":\"i-1\"}";
  TW_CHECK_RC(tw_agent_parse_register(R0, strlen(R0), &m, &err), TW_OK, err);
  TW_CHECK_INT(m.node_rank, -1);
  TW_CHECK_STR(m.ip, "");
  tw_agent_register_msg_release(&m);
  static const char *const bad[] = {
      "{\"instance_id\":\"i-1\",\"ip\":\"10.0.0.1; rm -rf /\"}",
      "{\"instance_id\":\"i-1\",\"node_rank\":-1}",
      "{\"instance_id\":\"i-1\",\"node_rank\":\"1\"}"};
  for (size_t i = 0; i < 3; i++) {
    tw_err_clear(&err);
    TW_CHECK_INT(tw_agent_parse_register(bad[i], strlen(bad[i]), &m, &err),
                 TW_E_INVALID);
  }
  struct tw_agent_exit_msg e;
  static const char E1[] = "{\"exit_code\":0,\"node_rank\":1}";
  TW_CHECK_RC(tw_agent_parse_exit(E1, strlen(E1), &e, &err), TW_OK, err);
  TW_CHECK(tw_agent_exit_holds(&e), "rank 1's exit 0 does not hold");
  static const char E0[] = "{\"exit_code\":0,\"node_rank\":0}";
  TW_CHECK_RC(tw_agent_parse_exit(E0, strlen(E0), &e, &err), TW_OK, err);
  TW_CHECK(!tw_agent_exit_holds(&e), "the head's exit holds");
  static const char E3[] = "{\"exit_code\":3,\"node_rank\":1}";
  TW_CHECK_RC(tw_agent_parse_exit(E3, strlen(E3), &e, &err), TW_OK, err);
  TW_CHECK(!tw_agent_exit_holds(&e), "a node's failure holds");
  static const char EN[] =
      "{\"exit_code\":0,\"node_rank\":1,\"after_notice\":true}";
  TW_CHECK_RC(tw_agent_parse_exit(EN, strlen(EN), &e, &err), TW_OK, err);
  TW_CHECK(!tw_agent_exit_holds(&e), "an exit after a notice holds");
  static const char EX[] = "{\"exit_code\":0}";
  TW_CHECK_RC(tw_agent_parse_exit(EX, strlen(EX), &e, &err), TW_OK, err);
  TW_CHECK_INT(e.node_rank, -1);
  TW_CHECK(!tw_agent_exit_holds(&e), "a single node's exit holds");
}

static void register_one(struct tw_agent *a, const struct tw_agent_caller *c,
                         int rank, const char *ip, struct tw_buf *ans,
                         enum tw_rc want) {
  struct tw_agent_register_msg m = {.metadata_json = "{}", .node_rank = rank};
  snprintf(m.instance_id, sizeof m.instance_id, "i-%d", rank);
  snprintf(m.cloud, sizeof m.cloud, "local");
  snprintf(m.ip, sizeof m.ip, "%s", ip);
  struct tw_err err = {0};
  tw_buf_reset(ans);
  TW_CHECK_RC(tw_agent_on_register(a, c, &m, ans, &err), want, err);
}

static void a_gang_is_ready_once_every_node_registered(void **state) {
  (void)state;
  struct tw_job_new req = {
      .name = "g",
      .tenant = "default",
      .project = "default",
      .spec_json = "{\"name\":\"g\",\"nodes\":2,\"run\":\"x\"}"};
  struct tw_job_rec j;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_job_create(store, &req, &j, NULL, &err), TW_OK, err);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "here",
                              .offer_id = "o",
                              .market = "private"};
  struct tw_attempt_rec at;
  TW_CHECK_RC(tw_store_attempt_open(store, &an, &at, &err), TW_OK, err);
  struct tw_agent_opts o = {.store = store,
                            .clock = &clk,
                            .preinstalled = true,
                            .broker_url = "http://b:1"};
  struct tw_agent *a = NULL;
  TW_CHECK_RC(tw_agent_new(&o, &a, &err), TW_OK, err);
  struct tw_buf ud0, ud1, ans;
  tw_buf_init(&ud0);
  tw_buf_init(&ud1);
  tw_buf_init(&ans);
  TW_CHECK_RC(tw_agent_user_data_node(a, j.id, at.id, at.n, at.client_token,
                                      "local", 0, &ud0, &err),
              TW_OK, err);
  TW_CHECK_RC(tw_agent_user_data_node(a, j.id, at.id, at.n, at.client_token,
                                      "local", 1, &ud1, &err),
              TW_OK, err);
  has(ud0.data, "--node-rank 0");
  has(ud1.data, "--node-rank 1");
  const char *p = strstr(ud0.data, "printf '%s' '");
  TW_CHECK(p != NULL, "no token in %s", ud0.data);
  char tok[TW_AGENT_TOKEN_LEN + 1];
  memcpy(tok, p + 13, TW_AGENT_TOKEN_LEN);
  tok[TW_AGENT_TOKEN_LEN] = '\0';
  has(ud1.data, tok); /* one token for the gang */
  struct tw_agent_caller c;
  TW_CHECK_RC(tw_agent_authenticate(a, tok, &c, &err), TW_OK, err);

  register_one(a, &c, 1, "10.0.0.2", &ans, TW_OK);
  has(ans.data, "\"ready\":false");
  lacks(ans.data, "TW_HEAD_IP");
  register_one(a, &c, 0, "10.0.0.1", &ans, TW_OK);
  has(ans.data, "\"TW_NODE_RANK\":\"0\"");
  has(ans.data, "\"TW_NODE_IPS\":\"10.0.0.1\\n10.0.0.2\"");
  has(ans.data, "\"TW_HEAD_IP\":\"10.0.0.1\"");
  register_one(a, &c, 1, "10.0.0.2", &ans, TW_OK);
  has(ans.data, "\"TW_NODE_RANK\":\"1\"");
  has(ans.data, "\"SKYPILOT_NODE_IPS\":\"10.0.0.1\\n10.0.0.2\"");
  register_one(a, &c, 2, "10.0.0.3", &ans, TW_E_INVALID);

  tw_buf_release(&ud0);
  tw_buf_release(&ud1);
  tw_buf_release(&ans);
  tw_agent_free(a);
  tw_job_rec_release(&j);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_bootstrap_names_the_nodes_rank),
      cmocka_unit_test(the_answer_places_the_node_in_its_gang),
      cmocka_unit_test(report_bodies_carry_rank_and_address),
      cmocka_unit_test_setup_teardown(
          a_gang_is_ready_once_every_node_registered, setup_store,
          teardown_store),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
