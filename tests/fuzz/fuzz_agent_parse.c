/* fuzz_agent_parse.c - tradewind-agent's parsers of outside input on
 * arbitrary bytes: the broker's register, heartbeat and logs answers and
 * the AWS, Azure and Alibaba metadata documents (agent/agent_parse.h).
 *
 * Besides not crashing: a register answer that parses has a job id and a
 * run script and only NAME=value environment entries; a notice that
 * parses names its source; the first byte picks the vm name Azure's
 * parser filters on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_parse.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct tw_agent_job j;
  char err[128];
  if (tw_agent_parse_register(s, size, &j, err, sizeof err) == 0) {
    if (!j.job_id || !*j.job_id || !j.run || !j.setup || j.heartbeat_s < 1)
      abort();
    for (size_t i = 0; i < j.n_env; i++)
      if (!strchr(j.env[i], '=') || j.env[i][0] == '=')
        abort();
    if (j.env && j.env[j.n_env])
      abort();
    tw_agent_job_free(&j);
  } else if (!err[0]) {
    abort();
  }
  enum tw_agent_action a = tw_agent_parse_action(s, size);
  if (a < TW_ACTION_BAD || a > TW_ACTION_CHECKPOINT)
    abort();
  int64_t off;
  if (tw_agent_parse_next_offset(s, size, &off) == 0 && off < 0)
    abort();
  struct tw_agent_notice n;
  if (tw_agent_parse_aws_action(s, size, &n) == 0 && strcmp(n.source, "imds"))
    abort();
  if (tw_agent_parse_aws_rebalance(s, size, &n) == 0 &&
      n.kind != TW_NOTICE_REBALANCE)
    abort();
  int64_t inc = 0;
  const char *vm = size && (data[0] & 1) ? "vm1" : NULL;
  int r = tw_agent_parse_azure_events(s, size, vm, &n, &inc);
  if (r < -1 || r > 1 ||
      (r == 1 && (!n.event_id[0] || strcmp(n.source, "scheduled-events"))))
    abort();
  if (tw_agent_parse_alibaba_time(s, size, &n) == 0 &&
      strcmp(n.source, "meta-server"))
    abort();
  char date[64];
  size_t m = size < sizeof date - 1 ? size : sizeof date - 1;
  memcpy(date, data, m);
  date[m] = '\0';
  int64_t ms;
  tw_agent_parse_http_date(date, &ms);
  return 0;
}
