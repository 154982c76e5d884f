/* agent_play.c - see agent_play.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/spec.h"
#include "broker/sched/agent_msg.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/agent_play.h"

/* Run time of a job whose spec gives no duration. */
#define PLAY_DEFAULT_RUN_S 60
#define PLAY_PROVS 4

struct play_inst {
  bool seen; /* its bootstrap was read (booted, or none to run) */
  char id[128];
  char tok[TW_AGENT_TOKEN_LEN + 1];
  struct tw_agent_caller c;
  int rank; /* its node's in a gang, -1: none */
  int64_t registered_ms, run_ms;
  bool done; /* exited, or its instance went: nothing more from it */
};

struct tw_play {
  struct tw_agent *agent;
  struct tw_store *store;
  struct tw_clock *clk;
  struct tw_provider *prov[PLAY_PROVS];
  size_t n_prov;
  /* each provider's instances, by number: "<account>-<i>" is in[k][i-1] */
  struct play_inst *in[PLAY_PROVS];
  size_t n_in[PLAY_PROVS];
};

struct tw_node *tw_play_provider_cfg(void) {
  static const char CFG[] = "{agent: true}";
  struct tw_node *cfg = NULL;
  if (tw_node_parse_yaml(CFG, sizeof CFG - 1, &cfg, NULL))
    return NULL;
  return cfg;
}

struct tw_play *tw_play_new(struct tw_store *store, struct tw_clock *clk,
                            struct tw_provider *prov) {
  struct tw_play *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  struct tw_agent_opts o = {.store = store,
                            .clock = clk,
                            .preinstalled = true,
                            .agent_path = "/opt/tradewind/tradewind-agent",
                            .broker_url = "http://broker.test:8420",
                            .heartbeat_s = 10,
                            .heartbeat_timeout_s = 120,
                            .max_log_bytes = 1 << 20,
                            .grace_s = 30};
  if (tw_agent_new(&o, &p->agent, NULL)) {
    free(p);
    return NULL;
  }
  p->store = store;
  p->clk = clk;
  p->prov[p->n_prov++] = prov;
  return p;
}

void tw_play_also(struct tw_play *p, struct tw_provider *prov) {
  if (p->n_prov < PLAY_PROVS)
    p->prov[p->n_prov++] = prov;
}

struct tw_agent *tw_play_agent(struct tw_play *p) {
  return p->agent;
}

void tw_play_free(struct tw_play *p) {
  if (!p)
    return;
  tw_agent_free(p->agent);
  for (size_t k = 0; k < p->n_prov; k++)
    free(p->in[k]);
  free(p);
}

static struct play_inst *inst_of(struct tw_play *p, const char *id) {
  for (size_t k = 0; k < p->n_prov; k++)
    for (size_t i = 0; i < p->n_in[k]; i++)
      if (p->in[k][i].seen && !strcmp(p->in[k][i].id, id))
        return &p->in[k][i];
  return NULL;
}

/* The token and node rank (-1: none) the bootstrap ud carries. */
static bool boot_args(const char *ud, char tok[TW_AGENT_TOKEN_LEN + 1],
                      int *rank) {
  const char *t = strstr(ud, "printf '%s' '");
  if (!t || strlen(t + 13) < TW_AGENT_TOKEN_LEN)
    return false;
  memcpy(tok, t + 13, TW_AGENT_TOKEN_LEN);
  tok[TW_AGENT_TOKEN_LEN] = '\0';
  const char *r = strstr(ud, "--node-rank ");
  *rank = r ? atoi(r + 12) : -1;
  return tw_agent_token_shape(tok);
}

/* How long the job of caller c runs, from the register answer ans. */
static int64_t run_ms_of(struct tw_play *p, const struct tw_agent_caller *c,
                         const char *ans) {
  int64_t run_s = PLAY_DEFAULT_RUN_S;
  struct tw_job_rec j;
  if (tw_store_job_get(p->store, c->job_id, &j, NULL) == TW_OK) {
    struct tw_job_spec spec;
    if (j.spec_json && tw_spec_parse(j.spec_json, strlen(j.spec_json), true,
                                     &spec, NULL) == TW_OK) {
      if (spec.duration_s > 0)
        run_s = spec.duration_s;
      tw_spec_release(&spec);
    }
    tw_job_rec_release(&j);
  }
  const char *r = strstr(ans, "\"TRADEWIND_RESUME_S\":\"");
  if (r)
    run_s -= atoll(r + 22);
  return (run_s < 1 ? 1 : run_s) * 1000;
}

/* Instance id boots: its agent, authenticated by the token of its
 * bootstrap, registers (in->done when it has no bootstrap).  Returns
 * reports made. */
static int boot(struct tw_play *p, struct tw_fake *f, const char *id,
                struct play_inst *in) {
  char ud[8192], tok[TW_AGENT_TOKEN_LEN + 1];
  int rank = -1;
  memset(in, 0, sizeof *in);
  in->seen = true;
  in->done = true;
  snprintf(in->id, sizeof in->id, "%s", id);
  if (tw_fake_user_data(f, id, ud, sizeof ud, NULL) ||
      !boot_args(ud, tok, &rank))
    return 0;
  memcpy(in->tok, tok, sizeof in->tok);
  in->rank = rank;
  if (tw_agent_authenticate(p->agent, tok, &in->c, NULL) || !in->c.live)
    return 0;
  struct tw_agent_register_msg m = {.metadata_json = "{}", .node_rank = rank};
  snprintf(m.instance_id, sizeof m.instance_id, "%s", id);
  snprintf(m.cloud, sizeof m.cloud, "local");
  struct tw_buf ans;
  tw_buf_init(&ans);
  enum tw_rc rc = tw_agent_on_register(p->agent, &in->c, &m, &ans, NULL);
  if (rc == TW_OK) {
    in->registered_ms = tw_clock_now_ms(p->clk);
    in->run_ms = run_ms_of(p, &in->c, ans.data ? ans.data : "");
    in->done = false;
  }
  tw_buf_release(&ans);
  return rc == TW_OK;
}

/* code >= 0: exited with it; < 0: killed by signal -code. */
static bool report_exit(struct tw_play *p, struct play_inst *in, int code,
                        int64_t ended_ms) {
  struct tw_agent_exit_msg e = {.has_code = code >= 0,
                                .exit_code = code >= 0 ? code : 0,
                                .signal = code < 0 ? -code : 0,
                                .started_ms = in->registered_ms,
                                .ended_ms = ended_ms,
                                .node_rank = in->rank};
  bool first = false;
  in->done = true;
  return tw_agent_on_exit(p->agent, &in->c, &e, &first, NULL) == TW_OK;
}

/* One round of the agents of prov's instances. */
static int step_of(struct tw_play *p, size_t k, int64_t now) {
  int made = 0;
  struct tw_provider *prov = p->prov[k];
  struct tw_fake *f = tw_fake_of(prov);
  size_t created = tw_fake_instances_created(f);
  if (created > p->n_in[k]) {
    p->in[k] = realloc(p->in[k], created * sizeof *p->in[k]);
    if (!p->in[k])
      abort();
    memset(p->in[k] + p->n_in[k], 0, (created - p->n_in[k]) * sizeof *p->in[k]);
    p->n_in[k] = created;
  }
  for (size_t i = 1; i <= created; i++) {
    struct play_inst *in = &p->in[k][i - 1];
    if (in->seen && in->done)
      continue;
    char id[128];
    snprintf(id, sizeof id, "%s-%zu", tw_provider_account(prov), i);
    struct tw_instance inst;
    if (tw_fake_get(f, id, &inst))
      continue;
    bool up = inst.state == TW_INST_PENDING || inst.state == TW_INST_RUNNING;
    if (!in->seen) {
      if (up)
        made += boot(p, f, id, in);
      continue;
    }
    if (!up) {
      in->done = true; /* the machine went, and its agent with it */
      continue;
    }
    /* the token as the broker holds it now: revoked when the attempt
     * ended (interrupted, moved): that agent's instance is going */
    if (tw_agent_authenticate(p->agent, in->tok, &in->c, NULL) || !in->c.live) {
      in->done = true;
      continue;
    }
    if (now >= in->registered_ms + in->run_ms) {
      made += report_exit(p, in, 0, in->registered_ms + in->run_ms);
      continue;
    }
    struct tw_agent_phase_msg hb = {.at_ms = now};
    snprintf(hb.phase, sizeof hb.phase, "run");
    const char *action = NULL;
    if (tw_agent_on_heartbeat(p->agent, &in->c, &hb, &action, NULL) == TW_OK)
      made++;
    if (action && !strcmp(action, "cancel")) /* SIGTERM to the job */
      made += report_exit(p, in, -15, now);
  }
  return made;
}

int tw_play_step(struct tw_play *p) {
  int made = 0;
  int64_t now = tw_clock_now_ms(p->clk);
  for (size_t i = 0; i < p->n_prov; i++)
    made += step_of(p, i, now);
  return made;
}

bool tw_play_exit(struct tw_play *p, const char *instance_id, int code) {
  struct play_inst *in = inst_of(p, instance_id);
  if (!in || in->done)
    return false;
  return report_exit(p, in, code, tw_clock_now_ms(p->clk));
}
