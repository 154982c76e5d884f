/* h_plan.c - POST /v1/plan: where a job would run if submitted now, and
 * why: the ranked candidates with their cost breakdown and scores, and
 * the offers filtered out, counted per reason (policies/place/plan.h).  Nothing
 * is stored. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "billing/catalog/catalog.h"
#include "broker/base/clock.h"
#include "broker/core/datasets.h"
#include "broker/core/skypilot.h"
#include "broker/core/spec.h"
#include "api/h_placement.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"

#define PLAN_CANDIDATES_MAX 256

static bool media_is(const char *ct, const char *want) {
  size_t n = strlen(want);
  if (strncasecmp(ct, want, n))
    return false;
  return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

void tw_h_placement_view(struct tw_req *r, struct tw_policy_set **set,
                         struct tw_offer_index **ix) {
  struct tw_placer *pl = tw_api_placer(r->api);
  *set = NULL;
  *ix = NULL;
  if (pl)
    tw_placer_acquire(pl, set, ix);
  else
    *set = tw_policy_set_default();
  if (!*ix) { /* nothing listed yet: a plan over no offers says so */
    struct tw_offer_source none;
    tw_offer_source_array(&none, NULL, 0);
    tw_offer_index_build(&none, ix, NULL);
  }
}

bool tw_h_placement_media(struct tw_req *r, bool *is_json) {
  const char *ct = tw_req_header(r, "Content-Type");
  if (!ct) {
    tw_problem(
        r, 415, "unsupported-media-type", NULL,
        "Content-Type is required: application/json or application/yaml");
    return false;
  }
  if (media_is(ct, "application/json")) {
    *is_json = true;
    return true;
  }
  if (media_is(ct, "application/yaml") || media_is(ct, "application/x-yaml") ||
      media_is(ct, "text/yaml") || media_is(ct, "text/x-yaml")) {
    *is_json = false;
    return true;
  }
  tw_problem(r, 415, "unsupported-media-type", NULL,
             "Content-Type %s is not accepted: use application/json or "
             "application/yaml",
             ct);
  return false;
}

/* The registry's view of the job's datasets (the placer's index is the
 * scheduler's, but datasets registered a moment ago count at once). */
static void job_datasets(struct tw_req *r, const struct tw_job_spec *spec,
                         struct tw_dataset_set *ds) {
  tw_dataset_set_init(ds);
  for (size_t i = 0; i < spec->n_datasets; i++) {
    struct tw_dataset_rec rec;
    if (tw_datasets_get(tw_api_store(r->api), spec->datasets[i].uri, &rec,
                        NULL))
      continue; /* unknown, or no registry: the spec alone speaks */
    const struct tw_principal *who = tw_auth_who(r);
    if (!tw_dataset_readable(
            &rec, who && who->role != TW_ROLE_ADMIN ? who->tenant : NULL)) {
      tw_dataset_rec_release(&rec); /* another tenant's: not shown */
      continue;
    }
    const char *locs[TW_DATASET_LOCATIONS];
    size_t n = 0;
    for (size_t l = 0; l < rec.n_locations && n < TW_DATASET_LOCATIONS; l++)
      locs[n++] = rec.locations[l].location;
    tw_dataset_set_add(ds, rec.uri, rec.size_bytes, locs, n);
    tw_dataset_rec_release(&rec);
  }
  tw_dataset_set_seal(ds);
}

/* A job whose accelerator fits nowhere: the catalog rows for it that were
 * rejected at ingestion are part of why (a GPU the catalog dropped is no
 * GPU to place). */
static void catalog_rejects(struct tw_req *r, const struct tw_job_spec *spec,
                            struct tw_plan *plan) {
  struct tw_catalog *cat = tw_api_catalog(r->api);
  if (!cat)
    return;
  struct tw_cat_snap *snap = tw_catalog_acquire(cat);
  uint64_t rows = 0;
  char example[160] = "";
  for (size_t i = 0; i < tw_cat_snap_nsources(snap); i++) {
    const struct tw_cat_source_info *si = tw_cat_snap_source(snap, i);
    for (size_t k = 0; k < si->report.n_accel_rejected; k++) {
      const struct tw_cat_accel_rej *a = &si->report.accel_rejected[k];
      bool match = false;
      for (size_t j = 0; j < spec->n_accels && !match; j++)
        match = tw_place_accel_name_matches(spec->accels[j].name, a->accel);
      if (!match)
        continue;
      rows += a->rows;
      if (!example[0])
        snprintf(example, sizeof example, "%.60s line %llu: %s", si->name,
                 (unsigned long long)a->first_line,
                 tw_cat_reject_str(a->first_why));
    }
  }
  tw_cat_snap_release(snap);
  if (rows)
    snprintf(plan->note, sizeof plan->note,
             "%llu catalog rows for %.40s were rejected at ingestion (e.g. "
             "%s)",
             (unsigned long long)rows, spec->accel_name, example);
}

void tw_h_plan(struct tw_req *r) {
  bool is_json;
  if (!tw_h_placement_media(r, &is_json))
    return;
  int64_t limit = 10;
  bool explain = true;
  const char *ex = tw_req_query(r, "explain");
  if (ex) {
    if (strcmp(ex, "true") && strcmp(ex, "false")) {
      tw_problem(r, 400, "invalid-field", "explain",
                 "explain: expected true or false, got \"%.32s\"", ex);
      return;
    }
    explain = !strcmp(ex, "true");
  }
  const char *q = tw_req_query(r, "candidates");
  if (q) {
    char *end;
    long long v = strtoll(q, &end, 10);
    if (!*q || *end || v < 1 || v > PLAN_CANDIDATES_MAX) {
      tw_problem(r, 400, "invalid-field", "candidates",
                 "candidates: expected an integer from 1 to %d, got \"%.32s\"",
                 PLAN_CANDIDATES_MAX, q);
      return;
    }
    limit = v;
  }
  if (tw_h_plan_workflow(r, is_json))
    return;
  struct tw_job_spec spec;
  struct tw_err err = {0};
  struct tw_spec_opts sopts = {.providers = tw_api_provider_names(r->api),
                               .fallbacks = tw_api_fallback_names(r->api),
                               .machine = tw_api_machine(r->api)};
  /* a SkyPilot task is read too, every error of it reported at once */
  struct tw_spec_errs *errs = tw_calloc(1, sizeof *errs);
  if (tw_spec_parse_any(r->body.data ? r->body.data : "", r->body.len, is_json,
                        &sopts, &spec, errs, NULL, &err)) {
    tw_problem_spec_errs(r, &err, errs);
    free(errs);
    return;
  }
  free(errs);
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *ix = NULL;
  tw_h_placement_view(r, &set, &ix);
  struct tw_dataset_set ds;
  job_datasets(r, &spec, &ds);
  struct tw_place_snapshot snap = {.index = ix, .datasets = &ds};
  struct tw_plan_input in = {.job = &spec,
                             .now_ms = tw_clock_now_ms(tw_api_clock(r->api))};
  struct tw_plan_opts opts = {
      .counts = explain,
      .candidates = (size_t)limit > set->candidates ? (size_t)limit : 0};
  struct tw_plan plan;
  if (tw_plan_make(set, &snap, &in, &opts, NULL, &plan, &err)) {
    tw_problem_err(r, &err);
  } else {
    if (plan.counted && !plan.feasible && spec.accel_name)
      catalog_rejects(r, &spec, &plan);
    struct tw_buf pj;
    tw_buf_init(&pj);
    tw_plan_to_json(&plan, (size_t)limit, &pj);
    tw_buf_adds(&r->out, "{\"job\":{\"name\":");
    tw_buf_json_str(&r->out, spec.name);
    tw_buf_adds(&r->out, ",\"tenant\":");
    tw_buf_json_str(&r->out, spec.tenant ? spec.tenant : "default");
    tw_buf_printf(&r->out, "},\"policies\":{\"generation\":%llu,\"network\":",
                  (unsigned long long)set->generation);
    tw_buf_json_str(&r->out, set->net_source ? set->net_source : "built-in");
    tw_buf_adds(&r->out, "},");
    tw_buf_add(&r->out, pj.data + 1, pj.len - 1); /* the plan's own members */
    tw_buf_release(&pj);
    tw_req_json(r, 200);
    tw_plan_release(&plan);
  }
  tw_dataset_set_release(&ds);
  tw_placer_release(set, ix);
  tw_spec_release(&spec);
}
