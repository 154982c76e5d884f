/* main.c - tradewind-agent: the command line over agent/agent.h. */
#include "agent/agent.h"

int main(int argc, char **argv) {
  struct tw_agent_opts o;
  int rc = tw_agent_parse_args(argc, argv, &o);
  if (rc == 1)
    return 0;
  if (rc)
    return rc;
  return tw_agent_main(&o);
}
