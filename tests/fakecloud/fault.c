/* fault.c - see fault.h. */
#include "tests/fakecloud/fault.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

static const char *const kind_names[] = {
    [FC_FAULT_THROTTLE] = "throttle",
    [FC_FAULT_ERROR] = "error",
    [FC_FAULT_SLOW] = "slow",
    [FC_FAULT_CAPACITY] = "capacity",
    [FC_FAULT_QUOTA] = "quota",
    [FC_FAULT_SPOT_INTERRUPTION] = "spot_interruption",
    [FC_FAULT_REBALANCE] = "rebalance",
    [FC_FAULT_REGION_DOWN] = "region_down",
    [FC_FAULT_LATE] = "late",
};
#define N_KINDS (sizeof kind_names / sizeof kind_names[0])

const char *fc_fault_kind_name(enum fc_fault_kind k) {
  return (unsigned)k < N_KINDS ? kind_names[k] : "?";
}

void fc_faults_init(struct fc_faults *f) {
  f->v = NULL;
  f->n = 0;
  f->next_id = 1;
}

void fc_faults_release(struct fc_faults *f) {
  free(f->v);
  fc_faults_init(f);
}

void fc_faults_clear(struct fc_faults *f) { f->n = 0; }

static enum tw_rc get_str(const json_t *j, const char *key, char *out,
                          size_t outsz, struct tw_err *err) {
  json_t *v = json_object_get(j, key);
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_is_string(v) || json_string_length(v) >= outsz)
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: expected a string of at most %zu bytes", key,
                        outsz - 1);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return TW_OK;
}

static enum tw_rc get_int(const json_t *j, const char *key, int64_t lo,
                          int64_t hi, int64_t *out, struct tw_err *err) {
  json_t *v = json_object_get(j, key);
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi)
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: expected an integer in %lld..%lld", key,
                        (long long)lo, (long long)hi);
  *out = json_integer_value(v);
  return TW_OK;
}

static enum tw_rc get_num(const json_t *j, const char *key, double lo,
                          double hi, double *out, struct tw_err *err) {
  json_t *v = json_object_get(j, key);
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_is_number(v) || !(json_number_value(v) >= lo) ||
      !(json_number_value(v) <= hi))
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: expected a number in %g..%g", key, lo, hi);
  *out = json_number_value(v);
  return TW_OK;
}

enum tw_rc fc_fault_from_json(const json_t *j, struct fc_fault *out,
                              struct tw_err *err) {
  static const char *const known[] = {
      "id",       "kind",     "service",     "action",        "instance_type",
      "zone",     "market",   "instance_id", "probability",   "count",
      "from_ms",  "until_ms", "code",        "message",       "status",
      "delay_ms", "lead_ms",  "after_ms",    "rate_per_hour", "fired",
      "comment",  "region",   NULL};
  enum tw_rc rc;
  memset(out, 0, sizeof *out);
  out->probability_ppm = 1000000;
  out->count = -1;
  out->from_ms = out->until_ms = -1;
  out->lead_ms = 120000;
  out->after_ms = -1;
  if (!json_is_object(j))
    return tw_err_set(err, TW_E_INVALID, "a fault rule must be an object");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)j, key, val) {
    bool ok = false;
    for (const char *const *k = known; *k && !ok; k++)
      ok = !strcmp(*k, key);
    if (!ok)
      return tw_err_field(err, TW_E_INVALID, key, "unknown field \"%s\"", key);
  }
  char kind[32] = "";
  if ((rc = get_str(j, "kind", kind, sizeof kind, err)))
    return rc;
  size_t k;
  for (k = 0; k < N_KINDS; k++)
    if (!strcmp(kind, kind_names[k]))
      break;
  if (k == N_KINDS)
    return tw_err_field(err, TW_E_INVALID, "kind",
                        "kind: expected one of throttle, error, slow, "
                        "capacity, quota, spot_interruption, rebalance, "
                        "region_down; got \"%s\"",
                        kind);
  out->kind = (enum fc_fault_kind)k;
  double prob = 1.0;
  int64_t status = 0;
  if ((rc = get_str(j, "service", out->service, sizeof out->service, err)) ||
      (rc = get_str(j, "action", out->action, sizeof out->action, err)) ||
      (rc = get_str(j, "instance_type", out->instance_type,
                    sizeof out->instance_type, err)) ||
      (rc = get_str(j, "zone", out->zone, sizeof out->zone, err)) ||
      (rc = get_str(j, "region", out->region, sizeof out->region, err)) ||
      (rc = get_str(j, "market", out->market, sizeof out->market, err)) ||
      (rc = get_str(j, "instance_id", out->instance_id, sizeof out->instance_id,
                    err)) ||
      (rc = get_str(j, "code", out->code, sizeof out->code, err)) ||
      (rc = get_str(j, "message", out->message, sizeof out->message, err)) ||
      (rc = get_num(j, "probability", 0.0, 1.0, &prob, err)) ||
      (rc = get_int(j, "count", -1, INT64_MAX, &out->count, err)) ||
      (rc = get_int(j, "from_ms", -1, INT64_MAX, &out->from_ms, err)) ||
      (rc = get_int(j, "until_ms", -1, INT64_MAX, &out->until_ms, err)) ||
      (rc = get_int(j, "status", 0, 599, &status, err)) ||
      (rc = get_int(j, "delay_ms", 0, 60000, &out->delay_ms, err)) ||
      (rc = get_int(j, "lead_ms", 0, INT64_MAX / 4, &out->lead_ms, err)) ||
      (rc = get_int(j, "after_ms", -1, INT64_MAX / 4, &out->after_ms, err)) ||
      (rc = get_num(j, "rate_per_hour", 0.0, 1e6, &out->rate_per_hour, err)))
    return rc;
  out->probability_ppm = (uint32_t)llround(prob * 1e6);
  out->status = (int)status;
  if (out->market[0] && strcmp(out->market, "spot") &&
      strcmp(out->market, "on-demand"))
    return tw_err_field(err, TW_E_INVALID, "market",
                        "market: expected \"spot\" or \"on-demand\"");
  if (out->kind == FC_FAULT_ERROR) {
    if (!out->code[0])
      snprintf(out->code, sizeof out->code, "%s",
               out->status == 503 ? "Unavailable" : "InternalError");
    if (!out->status)
      out->status = 500;
    if (out->status < 400)
      return tw_err_field(err, TW_E_INVALID, "status",
                          "status: an error needs a 4xx or 5xx status");
  }
  if (out->kind == FC_FAULT_REGION_DOWN && !out->region[0])
    return tw_err_field(err, TW_E_INVALID, "region",
                        "region: a region_down fault names its region");
  if ((out->kind == FC_FAULT_SLOW || out->kind == FC_FAULT_LATE) &&
      out->delay_ms <= 0)
    return tw_err_field(err, TW_E_INVALID, "delay_ms",
                        "delay_ms: a %s fault needs a delay > 0", kind);
  if ((out->kind == FC_FAULT_SPOT_INTERRUPTION ||
       out->kind == FC_FAULT_REBALANCE) &&
      !out->instance_id[0] && out->after_ms < 0 && out->rate_per_hour <= 0)
    return tw_err_set(err, TW_E_INVALID,
                      "%s: give instance_id, after_ms or rate_per_hour", kind);
  return TW_OK;
}

json_t *fc_fault_to_json(const struct fc_fault *r) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_integer(r->id));
  json_object_set_new(o, "kind", json_string(fc_fault_kind_name(r->kind)));
#define S(f)                                                                   \
  if (r->f[0])                                                                 \
    json_object_set_new(o, #f, json_string(r->f));
  S(service)
  S(action)
  S(instance_type)
  S(zone) S(region) S(market) S(instance_id) S(code) S(message)
#undef S
      json_object_set_new(o, "probability",
                          json_real((double)r->probability_ppm / 1e6));
  json_object_set_new(o, "count", json_integer(r->count));
  if (r->from_ms >= 0)
    json_object_set_new(o, "from_ms", json_integer(r->from_ms));
  if (r->until_ms >= 0)
    json_object_set_new(o, "until_ms", json_integer(r->until_ms));
  if (r->status)
    json_object_set_new(o, "status", json_integer(r->status));
  if (r->delay_ms)
    json_object_set_new(o, "delay_ms", json_integer(r->delay_ms));
  if (r->kind == FC_FAULT_SPOT_INTERRUPTION || r->kind == FC_FAULT_REGION_DOWN)
    json_object_set_new(o, "lead_ms", json_integer(r->lead_ms));
  if (r->after_ms >= 0)
    json_object_set_new(o, "after_ms", json_integer(r->after_ms));
  if (r->rate_per_hour > 0)
    json_object_set_new(o, "rate_per_hour", json_real(r->rate_per_hour));
  json_object_set_new(o, "fired", json_integer(r->fired));
  return o;
}

int fc_faults_add(struct fc_faults *f, const struct fc_fault *r) {
  f->v = tw_realloc(f->v, (f->n + 1) * sizeof *f->v);
  f->v[f->n] = *r;
  f->v[f->n].id = f->next_id++;
  f->v[f->n].fired = 0;
  return f->v[f->n++].id;
}

bool fc_faults_remove(struct fc_faults *f, int id) {
  for (size_t i = 0; i < f->n; i++) {
    if (f->v[i].id == id) {
      memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof *f->v);
      f->n--;
      return true;
    }
  }
  return false;
}

enum tw_rc fc_faults_load_json(struct fc_faults *f, const json_t *root,
                               struct tw_err *err) {
  const json_t *arr =
      json_is_array(root) ? root : json_object_get(root, "faults");
  if (!json_is_array(arr))
    return tw_err_set(err, TW_E_INVALID,
                      "faults: expected {\"faults\": [...]} or an array");
  size_t n = json_array_size(arr);
  struct fc_fault *tmp = tw_calloc(n ? n : 1, sizeof *tmp);
  for (size_t i = 0; i < n; i++) {
    enum tw_rc rc = fc_fault_from_json(json_array_get(arr, i), &tmp[i], err);
    if (rc) {
      if (err) {
        char *msg = tw_asprintf("faults[%zu]: %s", i, err->msg);
        snprintf(err->msg, sizeof err->msg, "%.240s", msg);
        free(msg);
      }
      free(tmp);
      return rc;
    }
  }
  for (size_t i = 0; i < n; i++)
    fc_faults_add(f, &tmp[i]);
  free(tmp);
  return TW_OK;
}

enum tw_rc fc_faults_load_file(struct fc_faults *f, const char *path,
                               struct tw_err *err) {
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return tw_err_set(err, TW_E_INVALID, "%s:%d:%d: %s", path, je.line,
                      je.column, je.text);
  enum tw_rc rc = fc_faults_load_json(f, root, err);
  json_decref(root);
  return rc;
}

static bool field_ok(const char *rule, const char *q) {
  if (!rule[0])
    return true;
  return q && !strcmp(rule, q);
}

bool fc_fault_matches(const struct fc_fault *r, const struct fc_fault_query *q,
                      int64_t elapsed_ms) {
  if (r->count == 0)
    return false;
  if (r->from_ms >= 0 && elapsed_ms < r->from_ms)
    return false;
  if (r->until_ms >= 0 && elapsed_ms >= r->until_ms)
    return false;
  return field_ok(r->service, q->service) && field_ok(r->action, q->action) &&
         field_ok(r->instance_type, q->instance_type) &&
         field_ok(r->zone, q->zone) && field_ok(r->region, q->region) &&
         field_ok(r->market, q->market) &&
         field_ok(r->instance_id, q->instance_id);
}

struct fc_fault *fc_faults_fire(struct fc_faults *f, enum fc_fault_kind kind,
                                const struct fc_fault_query *q,
                                int64_t elapsed_ms, struct fc_rng *rng) {
  for (size_t i = 0; i < f->n; i++) {
    struct fc_fault *r = &f->v[i];
    if (r->kind != kind || !fc_fault_matches(r, q, elapsed_ms))
      continue;
    if (!fc_rng_chance_ppm(rng, r->probability_ppm))
      continue;
    if (r->count > 0)
      r->count--;
    r->fired++;
    return r;
  }
  return NULL;
}
