/* h_workdirs.c - the workdir routes (h_workdirs.h).  api/auth.c has already
 * checked the caller: a submitter of the tenant for the upload, the
 * attempt's own agent for the fetch. */
#include "api/h_workdirs.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/tar.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_workdirs.h"
#include "broker/sched/agent.h"

static bool hex64(const char *s) {
  if (!s || strlen(s) != 64)
    return false;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return false;
  return true;
}

static bool media_is(const char *ct, const char *want) {
  size_t n = strlen(want);
  return !strncasecmp(ct, want, n) &&
         (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

void tw_h_workdirs_put(struct tw_req *r) {
  const char *sha = r->params[0];
  if (!hex64(sha)) {
    tw_problem(r, 400, "invalid-field", "sha256",
               "sha256: expected the archive's SHA-256 as 64 lower-case hex "
               "digits");
    return;
  }
  const char *ct = tw_req_header(r, "Content-Type");
  if (!ct || !(media_is(ct, "application/x-tar") ||
               media_is(ct, "application/octet-stream"))) {
    tw_problem(r, 415, "unsupported-media-type", NULL,
               "Content-Type %s is not accepted: send the archive as "
               "application/x-tar",
               ct ? ct : "(none)");
    return;
  }
  /* api/auth.c filled in the caller's tenant when none was given; the
   * admin's is the default tenant */
  const char *tenant = tw_req_query(r, "tenant");
  if (!tenant || !*tenant)
    tenant = "default";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  char got[65];
  if (!EVP_Digest(r->body.data ? r->body.data : "", r->body.len, md, &mdlen,
                  EVP_sha256(), NULL)) {
    tw_problem(r, 500, "internal", NULL, "cannot hash the archive");
    return;
  }
  for (unsigned i = 0; i < 32; i++)
    snprintf(got + 2 * i, 3, "%02x", md[i]);
  if (strcmp(got, sha)) {
    tw_problem(r, 400, "invalid-field", "sha256",
               "sha256: the body's SHA-256 is %s, not the path's", got);
    return;
  }
  char why[512] = "";
  struct tw_tar_limits lim = {.max_bytes = (uint64_t)r->body.len + 1};
  if (!r->body.len || tw_tar_walk(r->body.data, r->body.len, &lim, NULL, NULL,
                                  why, sizeof why)) {
    tw_problem(r, 400, "invalid-field", "body",
               "body: not a workdir archive: %s", r->body.len ? why : "empty");
    return;
  }
  bool created = false;
  struct tw_err err = {0};
  int64_t now = tw_clock_now_ms(tw_api_clock(r->api));
  if (tw_store_workdir_put(tw_api_store(r->api), tenant, sha, r->body.data,
                           r->body.len, now, &created, &err)) {
    tw_log_error("api", "request=%s workdir not stored: %s", r->request_id,
                 err.msg);
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_printf(&r->out, "{\"sha256\":\"%s\",\"size\":%zu,\"tenant\":", sha,
                r->body.len);
  tw_buf_json_str(&r->out, tenant);
  tw_buf_adds(&r->out, "}");
  tw_req_json(r, created ? 201 : 200);
}

bool tw_workdir_known(struct tw_req *r, const struct tw_job_spec *spec) {
  if (!spec->workdir)
    return true;
  bool found = false;
  struct tw_err err = {0};
  if (tw_store_workdir_has(tw_api_store(r->api), spec->tenant,
                           spec->workdir + 7, &found, NULL, &err)) {
    tw_problem_err(r, &err);
    return false;
  }
  if (!found) {
    tw_problem(r, 400, "invalid-field", "workdir",
               "workdir: %s is not uploaded to tenant %s (PUT "
               "/v1/workdirs/{sha256} first; tradewind submit does)",
               spec->workdir, spec->tenant);
    return false;
  }
  return true;
}

void tw_workdir_hold(struct tw_req *r, const char *job_id,
                     const struct tw_job_spec *spec) {
  if (!spec->workdir)
    return;
  struct tw_err err = {0};
  if (tw_store_workdir_hold(tw_api_store(r->api), job_id, spec->tenant,
                            spec->workdir + 7,
                            tw_clock_now_ms(tw_api_clock(r->api)), &err))
    tw_log_error("api", "request=%s job=%s workdir not held: %s", r->request_id,
                 job_id, err.msg);
}

void tw_h_agent_workdir(struct tw_req *r) {
  const struct tw_agent_caller *c = tw_auth_agent(r);
  if (!c) {
    tw_problem(r, 401, "unauthenticated", NULL, "an agent token is required");
    return;
  }
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_get(tw_api_store(r->api), c->job_id, &job, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  struct tw_job_spec spec;
  enum tw_rc rc = tw_spec_parse(job.spec_json ? job.spec_json : "{}",
                                job.spec_json ? strlen(job.spec_json) : 2, true,
                                &spec, &err);
  if (rc) {
    tw_job_rec_release(&job);
    tw_problem_err(r, &err);
    return;
  }
  if (!spec.workdir) {
    tw_problem(r, 404, "not-found", "workdir", "job %s has no workdir",
               c->job_id);
  } else if ((rc = tw_store_workdir_get(tw_api_store(r->api), job.tenant,
                                        spec.workdir + 7, &r->out, &err))) {
    tw_buf_reset(&r->out);
    tw_problem_err(r, &err);
  } else {
    tw_req_add_header(r, "X-Tradewind-SHA256", spec.workdir + 7);
    r->status = 200;
    r->content_type = "application/x-tar";
  }
  tw_spec_release(&spec);
  tw_job_rec_release(&job);
}
