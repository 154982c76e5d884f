/* filter_shape.c - the filters that read what an offer is: architecture,
 * vCPUs, memory, accelerators, and the tenant's quota headroom for them.
 * All TW_SCOPE_SHAPE. */
#include <stdio.h>
#include <string.h>

#include "policies/place/policy_int.h"

/* ---- arch -------------------------------------------------------------------
 */

static void arch_filter(const struct tw_policy *self,
                        const struct tw_place_ctx *ctx,
                        const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  enum tw_arch want = ctx->job->arch;
  v->pass = want == TW_ARCH_ANY || o->arch == want;
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "not %s", tw_arch_str(want));
}

static void arch_key(const struct tw_policy *self,
                     const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->job->arch);
}

const struct tw_policy_ops tw_filter_arch = {.name = "arch",
                                             .version = TW_POLICY_ABI_VERSION,
                                             .scope = TW_SCOPE_SHAPE,
                                             .filter = arch_filter,
                                             .key = arch_key};

/* ---- cpus
 * --------------------------------------------------------------------- */

static void cpus_filter(const struct tw_policy *self,
                        const struct tw_place_ctx *ctx,
                        const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = !s->cpus ||
            (s->cpus_at_least ? o->vcpus >= s->cpus : o->vcpus == s->cpus);
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "without %s%d vCPUs",
             s->cpus_at_least ? "" : "exactly ", s->cpus);
}

static void cpus_key(const struct tw_policy *self,
                     const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->job->cpus);
  pi_key_int(b, ctx->job->cpus_at_least);
}

const struct tw_policy_ops tw_filter_cpus = {.name = "cpus",
                                             .version = TW_POLICY_ABI_VERSION,
                                             .scope = TW_SCOPE_SHAPE,
                                             .filter = cpus_filter,
                                             .key = cpus_key};

/* ---- memory
 * ------------------------------------------------------------------- */

static void memory_filter(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass =
      !s->memory_mib || (s->memory_at_least ? o->memory_mib >= s->memory_mib
                                            : o->memory_mib == s->memory_mib);
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "without %s%lld GiB of memory",
             s->memory_at_least ? "" : "exactly ",
             (long long)(s->memory_mib / 1024));
}

static void memory_key(const struct tw_policy *self,
                       const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->job->memory_mib);
  pi_key_int(b, ctx->job->memory_at_least);
}

const struct tw_policy_ops tw_filter_memory = {.name = "memory",
                                               .version = TW_POLICY_ABI_VERSION,
                                               .scope = TW_SCOPE_SHAPE,
                                               .filter = memory_filter,
                                               .key = memory_key};

/* ---- accelerators
 * -------------------------------------------------------------- */

static void accel_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  if (!s->accel_name)
    return;
  if (!o->accel_name[0] || !tw_accel_matches(s->accel_name, o->accel_name) ||
      o->accel_count < s->accel_count) {
    v->pass = false;
    if (s->accel_count > 1)
      snprintf(v->reason, sizeof v->reason, "without %d %s", s->accel_count,
               s->accel_name);
    else
      snprintf(v->reason, sizeof v->reason, "without %s", s->accel_name);
  }
}

static void accel_key(const struct tw_policy *self,
                      const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_str(b, ctx->job->accel_name);
  pi_key_int(b, ctx->job->accel_count);
}

const struct tw_policy_ops tw_filter_accelerators = {.name = "accelerators",
                                                     .version =
                                                         TW_POLICY_ABI_VERSION,
                                                     .scope = TW_SCOPE_SHAPE,
                                                     .filter = accel_filter,
                                                     .key = accel_key};

/* ---- quota: the tenancy module's headroom
 * ------------------------------------ */

static void quota_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_quota_state *q = ctx->quota;
  v->pass = true;
  if (!q->headroom)
    return;
  int64_t nodes = ctx->nodes > 0 ? ctx->nodes : 1;
  char res[48];
  int64_t have = q->headroom(q->ctx, ctx->tenant, "jobs");
  if (have < 1) {
    v->pass = false;
    snprintf(v->reason, sizeof v->reason,
             "over quota: tenant %.40s may start no more jobs", ctx->tenant);
    return;
  }
  have = q->headroom(q->ctx, ctx->tenant, "vcpus");
  if (have < (int64_t)o->vcpus * nodes) {
    v->pass = false;
    v->amount = (int64_t)o->vcpus * nodes - have;
    snprintf(v->reason, sizeof v->reason,
             "over quota: tenant %.40s has %lld vCPUs free", ctx->tenant,
             (long long)(have < 0 ? 0 : have));
    return;
  }
  if (o->accel_name[0] && o->accel_count > 0) {
    snprintf(res, sizeof res, "gpus:%s", o->accel_name);
    have = q->headroom(q->ctx, ctx->tenant, res);
    if (have < (int64_t)o->accel_count * nodes) {
      v->pass = false;
      v->amount = (int64_t)o->accel_count * nodes - have;
      snprintf(v->reason, sizeof v->reason,
               "over quota: tenant %.40s has %lld %s free", ctx->tenant,
               (long long)(have < 0 ? 0 : have), o->accel_name);
    }
  }
}

static void quota_key(const struct tw_policy *self,
                      const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, (int64_t)ctx->quota->generation);
  pi_key_int(b, ctx->quota->headroom != NULL);
  pi_key_str(b, ctx->tenant);
  pi_key_int(b, ctx->nodes);
}

const struct tw_policy_ops tw_filter_quota = {.name = "quota",
                                              .version = TW_POLICY_ABI_VERSION,
                                              .scope = TW_SCOPE_SHAPE,
                                              .filter = quota_filter,
                                              .key = quota_key};
