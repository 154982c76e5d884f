/* h_workdirs.h - a SkyPilot task's working directory (docs/skypilot.md,
 * "workdir"): uploaded by `tradewind submit` before the job, fetched by
 * the job's tradewind-agent.  Rows of the server's route table (api/server.c
 * expands TW_WORKDIR_ROUTES inside tw_routes[]), each with its rule in
 * api/rbac.c and its path in api/openapi.yaml. */
#ifndef TW_API_H_WORKDIRS_H
#define TW_API_H_WORKDIRS_H

#include <stdbool.h>

struct tw_req;
struct tw_job_spec;

/* PUT /v1/workdirs/{sha256}?tenant=T: the archive (application/x-tar), its
 * SHA-256 the path's, checked (broker/base/tar.h) and kept for tenant T. */
void tw_h_workdirs_put(struct tw_req *r);
/* GET /v1/agent/attempts/{attempt}/workdir: the attempt's job's archive. */
void tw_h_agent_workdir(struct tw_req *r);

/* For POST /v1/jobs: a spec's workdir is uploaded to its tenant; false
 * when answered (400 naming the field). */
bool tw_workdir_known(struct tw_req *r, const struct tw_job_spec *spec);
/* The new job job_id holds its spec's workdir (logged when it fails: the
 * job stands, its archive may be swept before it runs). */
void tw_workdir_hold(struct tw_req *r, const char *job_id,
                     const struct tw_job_spec *spec);

#define TW_WORKDIR_ROUTES                                                      \
  {"PUT", "/v1/workdirs/{sha256}", tw_h_workdirs_put, "workdirs_put"},         \
      {"GET", "/v1/agent/attempts/{attempt}/workdir", tw_h_agent_workdir,      \
       "agent_workdir"},

#endif
