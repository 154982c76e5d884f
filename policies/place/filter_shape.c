/* filter_shape.c - the filters that read what an offer is: architecture,
 * vCPUs, memory, accelerators, and the tenant's quota headroom for them.
 * All TW_SCOPE_SHAPE. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policies/place/policy_int.h"

/* ---- arch -------------------------------------------------------------------
 */

static void arch_filter(const struct tw_policy *self,
                        const struct tw_place_ctx *ctx,
                        const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  enum tw_arch want = s->arch;
  if (s->arch_any) {
    v->pass = true;
  } else if (want == TW_ARCH_ANY) {
    /* unwritten: x86_64, and an offer of unknown architecture is given
     * the benefit of the doubt (a private cluster that does not say) */
    v->pass = o->arch != TW_ARCH_ARM64;
    if (!v->pass)
      snprintf(v->reason, sizeof v->reason,
               "not x86_64 (the default; arch: any allows %s)",
               tw_arch_str(o->arch));
    return;
  } else {
    v->pass = o->arch == want;
  }
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "not %s", tw_arch_str(want));
}

static void arch_key(const struct tw_policy *self,
                     const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->job->arch);
  pi_key_int(b, ctx->job->arch_any);
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

/* A case-insensitive glob: '*' any run, '?' one character. */
static bool glob_ci(const char *p, const char *t) {
  const char *star = NULL, *resume = NULL;
  while (*t) {
    if (*p == '*') {
      star = p++;
      resume = t;
    } else if (*p && (*p == '?' || tolower((unsigned char)*p) ==
                                       tolower((unsigned char)*t))) {
      p++;
      t++;
    } else if (star) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (*p == '*')
    p++;
  return !*p;
}

static bool has_glob(const char *s) { return strpbrk(s, "*?") != NULL; }

const char *tw_place_accel_default(const char *family) {
  /* the catalog's first variant of the family (billing/catalog/normalize.c;
   * test_catalog_normalize checks they agree), as SkyPilot names them */
  static const char *const DEFAULTS[][2] = {{"A100", "A100-40GB"},
                                            {"H100", "H100-80GB"},
                                            {"V100", "V100-16GB"},
                                            {NULL, NULL}};
  for (int i = 0; DEFAULTS[i][0]; i++)
    if (!strcasecmp(DEFAULTS[i][0], family))
      return DEFAULTS[i][1];
  return NULL;
}

bool tw_place_accel_name_matches(const char *want, const char *have) {
  if (!have || !*have)
    return false;
  if (has_glob(want))
    return glob_ci(want, have);
  if (!strcasecmp(want, have))
    return true;
  const char *def = tw_place_accel_default(want);
  return def && !strcasecmp(def, have);
}

bool tw_place_accel_satisfies(const struct tw_job_spec *s, const char *name,
                              int count) {
  if (!s->accel_name)
    return true;
  if (!s->n_accels) /* a spec built in code, without the list */
    return tw_place_accel_name_matches(s->accel_name, name) &&
           count == s->accel_count;
  for (size_t i = 0; i < s->n_accels; i++) {
    const struct tw_accel_ask *a = &s->accels[i];
    if (tw_place_accel_name_matches(a->name, name) &&
        (a->at_least ? count >= a->count : count == a->count))
      return true;
  }
  return false;
}

static void accel_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  if (!s->accel_name)
    return;
  if (!tw_place_accel_satisfies(s, o->accel_name, o->accel_count)) {
    v->pass = false;
    bool plus = s->n_accels && s->accels[0].at_least;
    snprintf(v->reason, sizeof v->reason, "without %s%d %s%s",
             plus ? "at least " : "exactly ", s->accel_count, s->accel_name,
             s->n_accels > 1 ? " (or an alternative)" : "");
  }
}

static void accel_key(const struct tw_policy *self,
                      const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  pi_key_str(b, s->accel_name);
  pi_key_int(b, s->accel_count);
  for (size_t i = 0; i < s->n_accels; i++) {
    pi_key_str(b, s->accels[i].name);
    pi_key_int(b, s->accels[i].count);
    pi_key_int(b, s->accels[i].at_least);
  }
}

const struct tw_policy_ops tw_filter_accelerators = {.name = "accelerators",
                                                     .version =
                                                         TW_POLICY_ABI_VERSION,
                                                     .scope = TW_SCOPE_SHAPE,
                                                     .filter = accel_filter,
                                                     .key = accel_key};

/* ---- instance types and families
 * ------------------------------------------------ */

static bool any_glob(char *const *globs, size_t n, const char *text) {
  for (size_t i = 0; i < n; i++)
    if (glob_ci(globs[i], text))
      return true;
  return false;
}

static void family_of(const struct tw_offer *o, char *out, size_t sz) {
  if (o->family[0])
    snprintf(out, sz, "%s", o->family);
  else
    snprintf(out, sz, "%.*s", (int)strcspn(o->instance_type, ".-"),
             o->instance_type);
}

static void types_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  const struct tw_name_filter *t = &s->instance_types, *f = &s->families;
  char fam[32];
  family_of(o, fam, sizeof fam);
  v->pass = false;
  bool named_type = any_glob(t->include, t->n_include, o->instance_type);
  bool named_family = any_glob(f->include, f->n_include, fam);
  if (t->n_include && !named_type) {
    snprintf(v->reason, sizeof v->reason, "not in resources.instance_types");
  } else if (f->n_include && !named_family) {
    snprintf(v->reason, sizeof v->reason, "not in resources.families");
  } else if (any_glob(t->exclude, t->n_exclude, o->instance_type)) {
    snprintf(v->reason, sizeof v->reason,
             "excluded by resources.instance_types");
  } else if (any_glob(f->exclude, f->n_exclude, fam)) {
    snprintf(v->reason, sizeof v->reason, "excluded by resources.families");
  } else if ((o->type_traits & (TW_TYPE_BURSTABLE | TW_TYPE_CONFIDENTIAL)) &&
             !named_type && !named_family) {
    /* one reason for both: the filter's refusals are counted together */
    snprintf(v->reason, sizeof v->reason,
             "burstable or confidential (%s %s; allowed when "
             "resources.families names it)",
             o->type_traits & TW_TYPE_BURSTABLE ? "burstable" : "confidential",
             fam);
  } else {
    v->pass = true;
  }
}

static void key_list(struct tw_buf *b, char *const *v, size_t n) {
  pi_key_int(b, (int64_t)n);
  for (size_t i = 0; i < n; i++)
    pi_key_str(b, v[i]);
}

static void types_key(const struct tw_policy *self,
                      const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  key_list(b, s->instance_types.include, s->instance_types.n_include);
  key_list(b, s->instance_types.exclude, s->instance_types.n_exclude);
  key_list(b, s->families.include, s->families.n_include);
  key_list(b, s->families.exclude, s->families.n_exclude);
}

const struct tw_policy_ops tw_filter_instance_types = {
    .name = "instance_types",
    .version = TW_POLICY_ABI_VERSION,
    .scope = TW_SCOPE_SHAPE,
    .filter = types_filter,
    .key = types_key};

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
