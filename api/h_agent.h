/* h_agent.h - the routes tradewind-agent calls (docs/agent.md, "The
 * protocol"), as rows of the server's route table (api/server.c expands
 * TW_AGENT_ROUTES inside tw_routes[]).  Each has its rule in api/rbac.c
 * (target agent: only an agent token, for its own attempt) and its path
 * in api/openapi.yaml.  The handlers parse the bodies
 * (broker/sched/agent_msg.h) and store the reports through the agent
 * module (broker/sched/agent.h); the scheduler applies them. */
#ifndef TW_API_H_AGENT_H
#define TW_API_H_AGENT_H

struct tw_req;

void tw_h_agent_register(struct tw_req *r);
void tw_h_agent_heartbeat(struct tw_req *r);
void tw_h_agent_logs(struct tw_req *r);
void tw_h_agent_phase(struct tw_req *r);
void tw_h_agent_checkpoint(struct tw_req *r);
void tw_h_agent_notice(struct tw_req *r);
void tw_h_agent_exit(struct tw_req *r);
void tw_h_agent_binary(struct tw_req *r);

#define TW_AGENT_ROUTES                                                        \
  {"POST", "/v1/agent/attempts/{attempt}/register", tw_h_agent_register,       \
   "agent_register"},                                                          \
      {"POST", "/v1/agent/attempts/{attempt}/heartbeat", tw_h_agent_heartbeat, \
       "agent_heartbeat"},                                                     \
      {"POST", "/v1/agent/attempts/{attempt}/logs", tw_h_agent_logs,           \
       "agent_logs"},                                                          \
      {"POST", "/v1/agent/attempts/{attempt}/phase", tw_h_agent_phase,         \
       "agent_phase"},                                                         \
      {"POST", "/v1/agent/attempts/{attempt}/checkpoint",                      \
       tw_h_agent_checkpoint, "agent_checkpoint"},                             \
      {"POST", "/v1/agent/attempts/{attempt}/notice", tw_h_agent_notice,       \
       "agent_notice"},                                                        \
      {"POST", "/v1/agent/attempts/{attempt}/exit", tw_h_agent_exit,           \
       "agent_exit"},                                                          \
      {"GET", "/v1/agent/binary", tw_h_agent_binary, "agent_binary"},

#endif
