/* azure.c - the Azure module of tradewind-fakecloud: the identity
 * platform's OpenID configuration and client-credentials token endpoint,
 * Azure Resource Manager for Microsoft.Compute virtual machines (PUT with
 * long-running operations, GET with the instance view, DELETE, lists,
 * resource SKUs, tag queries on resources), the Retail Prices API and the
 * instance metadata service's Scheduled Events.
 *
 * Bearer tokens are checked on every ARM request against the ones this
 * server issued (an unknown one is InvalidAuthenticationToken, an expired
 * one ExpiredAuthenticationToken, both 401).  Operations walk InProgress
 * to Succeeded or Failed on the fake clock.  The module runs with the
 * server's mutex held (module.h) and keeps plain arrays; every entry point
 * first applies the transitions due (az_tick). */
#include <math.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/sigv4.h"
#include "tests/fakecloud/azure.h"
#include "tests/fakecloud/azure_catalog.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/fakecloud/boot.h"
#include "tests/fakecloud/clock.h"
#include "tests/fakecloud/fakecloud.h"
#include "tests/fakecloud/module.h"
#include "tests/fakecloud/params.h"

#define AZ_JSON_CT "application/json; charset=utf-8"
#define AZ_PREEMPT_MIN_MS 30000 /* Scheduled Events: Preempt >= 30 s */
#define AZ_EVENTS_VERSION "2020-07-01"

/* The api-versions accepted per resource provider: the adapter's defaults,
 * the pinned SDK's, and their neighbours. */
static const char *const compute_versions[] = {
    "2022-08-01", "2022-11-01", "2023-03-01", "2023-07-01",
    "2023-09-01", "2024-03-01", "2024-07-01", "2024-11-01",
    "2025-04-01", "2025-11-01", "2026-03-01", NULL};
static const char *const skus_versions[] = {"2019-04-01", "2021-07-01", NULL};
static const char *const resources_versions[] = {
    "2019-10-01", "2020-06-01", "2021-04-01", "2022-09-01",
    "2024-03-01", "2024-07-01", "2025-04-01", NULL};
/* Microsoft.Resources' subscriptions and locations. */
static const char *const subscriptions_versions[] = {
    "2016-06-01", "2019-11-01", "2020-01-01", "2021-01-01", "2022-12-01", NULL};
static const char *const events_versions[] = {"2017-11-01", "2019-01-01",
                                              "2019-08-01", "2020-07-01", NULL};

enum vm_state {
  VM_CREATING,
  VM_RUNNING,
  VM_FAILED,
  VM_DELETING,
  VM_DEALLOCATED,
  /* Power actions (POST .../deallocate, start, powerOff, restart): each
   * transient state lasts delete_ms, then the next_state's. */
  VM_DEALLOCATING,
  VM_STOPPING,
  VM_STOPPED,
  VM_STARTING
};

struct az_vm {
  char name[FC_AZ_NAME_MAX];
  char rg[FC_AZ_NAME_MAX];
  char vm_id[40];
  struct fc_az_vm_req req; /* location, size, priority, profiles, tags */
  const struct fc_az_size *size;
  enum vm_state state;
  int64_t created_ms;
  int64_t next_ms; /* end of Creating or Deleting */
  int etag;
  char fail_code[64];
  char fail_msg[384];
  /* Scheduled Events: a Preempt notice at notice_ms, eviction at
   * evict_ms; -1 none.  phase: 0 none, 1 Scheduled, 2 Started, 3 over. */
  int64_t notice_ms, evict_ms, event_end_ms;
  int phase;
  char event_id[40];
  bool evicted;
  /* --boot (boot.h): the decoded customData and the booted session. */
  char *user_data;
  size_t user_data_len;
  struct fc_boot boot;
};

struct az_op {
  char id[40];
  char location[32];
  int64_t start_ms, end_ms;
  bool failed;
  char code[64];
  char msg[384];
};

struct az_token {
  char token[72];
  int64_t expires_ms;
};

struct az_rg {
  char name[FC_AZ_NAME_MAX];
  char location[32];
};

struct counter {
  char name[48];
  int64_t n;
};

struct azure {
  struct fc_server *s;
  struct fc_az_catalog *cat;
  struct az_vm **vms;
  size_t n_vms;
  struct az_op *ops;
  size_t n_ops;
  struct az_token *tokens;
  size_t n_tokens;
  struct az_rg *rgs;
  size_t n_rgs;
  struct counter calls[32], errors[64];
  int64_t incarnation;
  /* /_fake/azure/config */
  int64_t create_ms, delete_ms, token_ttl_s, retry_after_s, page_size;
  int64_t vcpu_limit, spot_vcpu_limit;
  char lro_header[32];
  /* /_fake/azure/identity: the client's certificate (its public key and
   * x5t) and the federated token a workload identity presents */
  EVP_PKEY *client_key;
  char client_x5t[40], client_x5t256[48]; /* SHA-1 and SHA-256 thumbprints */
  char federated[4096];
  int64_t msi_tokens, assertion_tokens;
};

/* One request in flight. */
struct call {
  struct azure *a;
  const struct fc_request *req;
  struct fc_response *resp;
  struct fc_params q;
  struct fc_az_path path;
  char base[160]; /* scheme://host of this request */
  const char *action;
};

/* ---- helpers ------------------------------------------------------------ */

static void count(struct counter *c, size_t max, const char *name) {
  size_t i;
  for (i = 0; i < max && c[i].name[0]; i++)
    if (!strcmp(c[i].name, name)) {
      c[i].n++;
      return;
    }
  if (i < max) {
    snprintf(c[i].name, sizeof c[i].name, "%s", name);
    c[i].n = 1;
  }
}

static json_t *counters_json(const struct counter *c, size_t max) {
  json_t *o = json_object();
  for (size_t i = 0; i < max && c[i].name[0]; i++)
    json_object_set_new(o, c[i].name, json_integer(c[i].n));
  return o;
}

/* Resource ids (vmId, operations, events) replay by seed; request and
 * trace ids come from fc_request_id and never repeat. */
static void uuid(struct azure *a, char out[40]) { fc_uuid_seeded(a->s, out); }

static void iso(int64_t ms, char out[40]) { tw_time_fmt_rfc3339(ms, out, 40); }

/* Prices print as Azure prints them (0.096, not 0.096000000000000002):
 * twelve significant digits are plenty for six decimals. */
static void reply(struct call *c, int status, json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(12));
  c->resp->status = status;
  c->resp->content_type = AZ_JSON_CT;
  tw_buf_reset(&c->resp->body);
  tw_buf_adds(&c->resp->body, text ? text : "null");
  free(text);
  json_decref(body);
}

static void arm_error_t(struct call *c, int status, const char *code,
                        const char *target, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void arm_error_t(struct call *c, int status, const char *code,
                        const char *target, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_pack("{s:s,s:s}", "code", code, "message", msg);
  if (target && *target)
    json_object_set_new(e, "target", json_string(target));
  count(c->a->errors, 64, code);
  reply(c, status, json_pack("{s:o}", "error", e));
}

#define arm_error(c, status, code, ...)                                        \
  arm_error_t(c, status, code, NULL, __VA_ARGS__)

static void az_error(struct call *c, const struct fc_az_error *e) {
  arm_error_t(c, e->status, e->code, e->target, "%s", e->message);
}

/* The identity platform's error shape. */
static void oauth_error(struct call *c, int status, const char *code,
                        const char *desc) {
  char t[40], trace[40];
  iso(fc_now_ms(c->a->s), t);
  fc_request_id(c->a->s, trace);
  count(c->a->errors, 64, code);
  reply(c, status,
        json_pack("{s:s,s:s,s:s,s:s}", "error", code, "error_description", desc,
                  "timestamp", t, "trace_id", trace));
}

static bool in_list(const char *v, const char *const *list) {
  for (; v && *list; list++)
    if (!strcmp(v, *list))
      return true;
  return false;
}

static struct az_vm *find_vm(struct azure *a, const char *rg,
                             const char *name) {
  for (size_t i = 0; i < a->n_vms; i++)
    if (!strcasecmp(a->vms[i]->name, name) &&
        (!rg || !strcasecmp(a->vms[i]->rg, rg)))
      return a->vms[i];
  return NULL;
}

static struct az_rg *find_rg(struct azure *a, const char *name) {
  for (size_t i = 0; i < a->n_rgs; i++)
    if (!strcasecmp(a->rgs[i].name, name))
      return &a->rgs[i];
  return NULL;
}

static void add_rg(struct azure *a, const char *name, const char *location) {
  a->rgs = tw_realloc(a->rgs, (a->n_rgs + 1) * sizeof *a->rgs);
  struct az_rg *r = &a->rgs[a->n_rgs++];
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->location, sizeof r->location, "%s", location);
}

static void vm_free(struct az_vm *vm) {
  if (!vm)
    return;
  fc_boot_kill(&vm->boot);
  free(vm->user_data);
  fc_az_vm_req_release(&vm->req);
  free(vm);
}

static bool vm_spot(const struct az_vm *vm) {
  return strcmp(vm->req.priority, "Regular") != 0;
}

static bool vm_live(const struct az_vm *vm) {
  return vm->state == VM_CREATING || vm->state == VM_RUNNING;
}

/* Whether the VM holds its cores (quota): allocated, running or not; a
 * deallocated VM gives them back, as in Azure. */
static bool vm_allocated(const struct az_vm *vm) {
  return vm_live(vm) || vm->state == VM_STARTING || vm->state == VM_STOPPING ||
         vm->state == VM_STOPPED;
}

/* ---- time: transitions due ---------------------------------------------- */

static void schedule_preempt(struct azure *a, struct az_vm *vm, int64_t at,
                             int64_t lead) {
  if (vm->notice_ms >= 0)
    return;
  vm->notice_ms = at;
  vm->evict_ms = at + (lead < AZ_PREEMPT_MIN_MS ? AZ_PREEMPT_MIN_MS : lead);
  uuid(a, vm->event_id);
}

/* Applies what is due at `now`, in time order per VM, so a long jump of
 * the clock walks Creating -> running -> notice -> evicted -> gone. */
static void az_tick(struct azure *a) {
  int64_t now = fc_now_ms(a->s);
  struct fc_faults *faults = fc_faults(a->s);
  /* Rules naming one VM: the notice starts when the rule fires. */
  for (size_t r = 0; r < faults->n; r++) {
    struct fc_fault *f = &faults->v[r];
    if (f->kind != FC_FAULT_SPOT_INTERRUPTION || !f->instance_id[0])
      continue;
    struct az_vm *vm = find_vm(a, NULL, f->instance_id);
    if (!vm || !vm_spot(vm) || vm->state != VM_RUNNING || vm->notice_ms >= 0)
      continue;
    struct fc_fault_query q = {.service = "azure",
                               .instance_id = vm->name,
                               .instance_type = vm->req.vm_size,
                               .zone = vm->req.zone,
                               .market = "spot"};
    if (!fc_fault_matches(f, &q, fc_elapsed_ms(a->s)) ||
        !fc_rng_chance_ppm(fc_rng(a->s), f->probability_ppm))
      continue;
    if (f->count > 0)
      f->count--;
    f->fired++;
    schedule_preempt(a, vm, now, f->lead_ms);
  }
  size_t w = 0;
  for (size_t i = 0; i < a->n_vms; i++) {
    struct az_vm *vm = a->vms[i];
    bool gone = false;
    for (;;) {
      if (vm->state == VM_CREATING && now >= vm->next_ms) {
        vm->state = vm->fail_code[0] ? VM_FAILED : VM_RUNNING;
        continue;
      }
      /* A notice is published once the VM runs. */
      if (vm->phase == 0 && vm->notice_ms >= 0 && vm->state == VM_RUNNING &&
          now >= vm->notice_ms) {
        vm->phase = 1;
        a->incarnation++;
        continue;
      }
      if (vm->phase == 1 && now >= vm->evict_ms) {
        vm->phase = 2;
        a->incarnation++;
        vm->evicted = true;
        if (!strcmp(vm->req.eviction_policy, "Delete")) {
          vm->state = VM_DELETING;
          vm->next_ms = vm->evict_ms + a->delete_ms;
          vm->event_end_ms = vm->next_ms;
        } else {
          vm->state = VM_DEALLOCATED;
          vm->event_end_ms = vm->evict_ms + a->delete_ms;
        }
        continue;
      }
      if (vm->phase == 2 && now >= vm->event_end_ms) {
        vm->phase = 3;
        a->incarnation++;
        continue;
      }
      if ((vm->state == VM_DEALLOCATING || vm->state == VM_STOPPING ||
           vm->state == VM_STARTING) &&
          now >= vm->next_ms) {
        vm->state = vm->state == VM_DEALLOCATING ? VM_DEALLOCATED
                    : vm->state == VM_STOPPING   ? VM_STOPPED
                                                 : VM_RUNNING;
        continue;
      }
      if (vm->state == VM_DELETING && now >= vm->next_ms) {
        gone = true;
        if (vm->phase == 1 || vm->phase == 2)
          a->incarnation++;
      }
      break;
    }
    /* --boot: up while running, down once it leaves. */
    if (vm->user_data && !gone && vm->state == VM_RUNNING && !vm->boot.sid)
      fc_boot_start(a->s, vm->name, vm->user_data, vm->user_data_len,
                    &vm->boot);
    else if (gone || (vm->state != VM_RUNNING && vm->state != VM_CREATING))
      fc_boot_kill(&vm->boot);
    if (gone)
      vm_free(vm);
    else
      a->vms[w++] = vm;
  }
  a->n_vms = w;
  /* Expired tokens are forgotten a day later: until then they answer
   * ExpiredAuthenticationToken rather than InvalidAuthenticationToken. */
  w = 0;
  for (size_t i = 0; i < a->n_tokens; i++)
    if (now < a->tokens[i].expires_ms + 86400000LL)
      a->tokens[w++] = a->tokens[i];
  a->n_tokens = w;
  /* Finished operations stay readable for a day, as ARM keeps them. */
  w = 0;
  for (size_t i = 0; i < a->n_ops; i++)
    if (now < a->ops[i].end_ms + 86400000LL)
      a->ops[w++] = a->ops[i];
  a->n_ops = w;
}

/* ---- JSON views --------------------------------------------------------- */

static const char *prov_state(const struct az_vm *vm) {
  switch (vm->state) {
  case VM_CREATING:
    return "Creating";
  case VM_FAILED:
    return "Failed";
  case VM_DELETING:
    return "Deleting";
  case VM_DEALLOCATING:
  case VM_STOPPING:
  case VM_STARTING:
    return "Updating";
  case VM_RUNNING:
  case VM_DEALLOCATED:
  case VM_STOPPED:
    break;
  }
  return "Succeeded";
}

static json_t *status_json(const char *code, const char *level,
                           const char *display, const char *msg,
                           int64_t time_ms) {
  json_t *s = json_pack("{s:s,s:s,s:s}", "code", code, "level", level,
                        "displayStatus", display);
  if (msg)
    json_object_set_new(s, "message", json_string(msg));
  if (time_ms > 0) {
    char t[40];
    iso(time_ms, t);
    json_object_set_new(s, "time", json_string(t));
  }
  return s;
}

static json_t *instance_view_json(const struct az_vm *vm) {
  json_t *st = json_array();
  char code[96];
  switch (vm->state) {
  case VM_CREATING:
    json_array_append_new(st, status_json("ProvisioningState/creating", "Info",
                                          "Creating", NULL, 0));
    json_array_append_new(
        st, status_json("PowerState/starting", "Info", "VM starting", NULL, 0));
    break;
  case VM_RUNNING:
    json_array_append_new(st, status_json("ProvisioningState/succeeded", "Info",
                                          "Provisioning succeeded", NULL,
                                          vm->next_ms));
    json_array_append_new(
        st, status_json("PowerState/running", "Info", "VM running", NULL, 0));
    break;
  case VM_FAILED:
    snprintf(code, sizeof code, "ProvisioningState/failed/%s", vm->fail_code);
    json_array_append_new(st, status_json(code, "Error", "Provisioning failed",
                                          vm->fail_msg, vm->next_ms));
    break;
  case VM_DELETING:
    json_array_append_new(st, status_json("ProvisioningState/deleting", "Info",
                                          "Deleting", NULL, 0));
    json_array_append_new(st, status_json("PowerState/deallocating", "Info",
                                          "VM deallocating", NULL, 0));
    break;
  case VM_DEALLOCATED:
    json_array_append_new(st, status_json("ProvisioningState/succeeded", "Info",
                                          "Provisioning succeeded", NULL,
                                          vm->evict_ms));
    json_array_append_new(st, status_json("PowerState/deallocated", "Info",
                                          "VM deallocated", NULL, 0));
    break;
  case VM_DEALLOCATING:
  case VM_STOPPING:
  case VM_STARTING:
    json_array_append_new(st, status_json("ProvisioningState/updating", "Info",
                                          "Updating", NULL, 0));
    json_array_append_new(
        st,
        vm->state == VM_DEALLOCATING
            ? status_json("PowerState/deallocating", "Info", "VM deallocating",
                          NULL, 0)
        : vm->state == VM_STOPPING
            ? status_json("PowerState/stopping", "Info", "VM stopping", NULL, 0)
            : status_json("PowerState/starting", "Info", "VM starting", NULL,
                          0));
    break;
  case VM_STOPPED:
    json_array_append_new(st, status_json("ProvisioningState/succeeded", "Info",
                                          "Provisioning succeeded", NULL,
                                          vm->next_ms));
    json_array_append_new(
        st, status_json("PowerState/stopped", "Info", "VM stopped", NULL, 0));
    break;
  }
  json_t *iv = json_pack("{s:s,s:o}", "computerName", vm->req.computer_name,
                         "statuses", st);
  if (vm->state == VM_RUNNING) {
    json_object_set_new(iv, "osName", json_string("ubuntu"));
    json_object_set_new(iv, "osVersion", json_string("24.04"));
    json_object_set_new(
        iv, "vmAgent",
        json_pack("{s:s,s:[o]}", "vmAgentVersion", "2.11.1.12", "statuses",
                  status_json("ProvisioningState/succeeded", "Info", "Ready",
                              "Guest Agent is running", vm->next_ms)));
  }
  return iv;
}

static void vm_id(const struct az_vm *vm, char *out, size_t size) {
  snprintf(out, size,
           "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
           "virtualMachines/%s",
           FC_AZ_SUBSCRIPTION, vm->rg, vm->name);
}

static json_t *vm_json(const struct az_vm *vm, bool expand) {
  char id[400], t[40], etag[16];
  vm_id(vm, id, sizeof id);
  iso(vm->created_ms, t);
  snprintf(etag, sizeof etag, "\"%d\"", vm->etag);
  json_t *props =
      json_pack("{s:s,s:{s:s},s:O,s:O,s:O,s:s,s:s,s:s}", "vmId", vm->vm_id,
                "hardwareProfile", "vmSize", vm->req.vm_size, "storageProfile",
                vm->req.storage_profile, "osProfile", vm->req.os_profile,
                "networkProfile", vm->req.network_profile, "provisioningState",
                prov_state(vm), "timeCreated", t, "priority", vm->req.priority);
  json_t *vm_identity =
      vm->req.identity ? json_deep_copy(vm->req.identity) : NULL;
  if (vm_identity &&
      strstr(json_string_value(json_object_get(vm_identity, "type")),
             "SystemAssigned")) {
    json_object_set_new(vm_identity, "principalId", json_string(vm->vm_id));
    json_object_set_new(vm_identity, "tenantId", json_string(FC_AZ_TENANT));
  }
  if (vm_spot(vm)) {
    json_object_set_new(props, "evictionPolicy",
                        json_string(vm->req.eviction_policy));
    json_object_set_new(props, "billingProfile",
                        json_pack("{s:f}", "maxPrice",
                                  vm->req.max_price_uusd < 0
                                      ? -1.0
                                      : (double)vm->req.max_price_uusd / 1e6));
  }
  if (expand)
    json_object_set_new(props, "instanceView", instance_view_json(vm));
  json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:O,s:s,s:o}", "name", vm->name, "id",
                        id, "type", "Microsoft.Compute/virtualMachines",
                        "location", vm->req.location, "tags", vm->req.tags,
                        "etag", etag, "properties", props);
  if (vm->req.zone[0])
    json_object_set_new(o, "zones", json_pack("[s]", vm->req.zone));
  if (vm_identity)
    json_object_set_new(o, "identity", vm_identity);
  return o;
}

/* ---- operations ---------------------------------------------------------- */

static struct az_op *new_op(struct azure *a, const char *location,
                            int64_t duration_ms) {
  a->ops = tw_realloc(a->ops, (a->n_ops + 1) * sizeof *a->ops);
  struct az_op *op = &a->ops[a->n_ops++];
  memset(op, 0, sizeof *op);
  uuid(a, op->id);
  snprintf(op->location, sizeof op->location, "%s", location);
  op->start_ms = fc_now_ms(a->s);
  op->end_ms = op->start_ms + duration_ms;
  return op;
}

/* Azure-AsyncOperation (or Operation-Location) and Retry-After headers
 * pointing at op's status monitor; with location, also the Location
 * monitor (the same operation with monitor=true) that Compute sends with
 * a DELETE's or a power action's 202. */
static void lro_headers_at(struct call *c, const struct az_op *op,
                           const char *api_version, bool location) {
  char url[512], ra[24];
  snprintf(url, sizeof url,
           "%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/"
           "operations/%s?p=%.8s&api-version=%s",
           c->base, FC_AZ_SUBSCRIPTION, op->location, op->id, op->id,
           api_version);
  /* Header names must be static strings (module.h): MHD reads them after
   * the server lock is released, when a control call may be rewriting
   * a->lro_header. */
  const char *name = !strcmp(c->a->lro_header, "Operation-Location")
                         ? "Operation-Location"
                         : "Azure-AsyncOperation";
  fc_response_header(c->resp, name, url);
  if (location) {
    snprintf(url, sizeof url,
             "%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/"
             "operations/%s?p=%.8s&monitor=true&api-version=%s",
             c->base, FC_AZ_SUBSCRIPTION, op->location, op->id, op->id,
             api_version);
    fc_response_header(c->resp, "Location", url);
  }
  snprintf(ra, sizeof ra, "%lld", (long long)c->a->retry_after_s);
  fc_response_header(c->resp, "Retry-After", ra);
}

static void lro_headers(struct call *c, const struct az_op *op,
                        const char *api_version) {
  lro_headers_at(c, op, api_version, false);
}

static void act_operation(struct call *c) {
  struct azure *a = c->a;
  struct az_op *op = NULL;
  for (size_t i = 0; i < a->n_ops && !op; i++)
    if (!strcmp(a->ops[i].id, c->path.op_id) &&
        !strcasecmp(a->ops[i].location, c->path.location))
      op = &a->ops[i];
  if (!op) {
    arm_error(c, 404, "NotFound", "The operation '%.64s' was not found.",
              c->path.op_id);
    return;
  }
  int64_t now = fc_now_ms(a->s);
  const char *monitor = fc_params_get(&c->q, "monitor");
  if (monitor && !strcmp(monitor, "true")) {
    /* The Location monitor: 202 while running, then the result (200, no
     * body for deletes and power actions), or the error itself. */
    char ra[24];
    tw_buf_reset(&c->resp->body);
    if (now < op->end_ms) {
      snprintf(ra, sizeof ra, "%lld", (long long)a->retry_after_s);
      fc_response_header(c->resp, "Retry-After", ra);
      char url[512];
      snprintf(url, sizeof url,
               "%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/"
               "operations/%s?p=%.8s&monitor=true&api-version=%s",
               c->base, FC_AZ_SUBSCRIPTION, op->location, op->id, op->id,
               fc_params_get(&c->q, "api-version"));
      fc_response_header(c->resp, "Location", url);
      c->resp->status = 202;
    } else if (op->failed) {
      arm_error(c, 409, op->code, "%s", op->msg);
    } else {
      c->resp->status = 200;
    }
    return;
  }
  char t[40];
  iso(op->start_ms, t);
  json_t *o = json_pack("{s:s,s:s}", "startTime", t, "name", op->id);
  if (now < op->end_ms) {
    json_object_set_new(o, "status", json_string("InProgress"));
    char ra[24];
    snprintf(ra, sizeof ra, "%lld", (long long)a->retry_after_s);
    fc_response_header(c->resp, "Retry-After", ra);
  } else {
    iso(op->end_ms, t);
    json_object_set_new(o, "endTime", json_string(t));
    json_object_set_new(o, "status",
                        json_string(op->failed ? "Failed" : "Succeeded"));
    if (op->failed)
      json_object_set_new(o, "error",
                          json_pack("{s:s,s:s,s:[]}", "code", op->code,
                                    "message", op->msg, "details"));
  }
  reply(c, 200, o);
}

/* ---- virtual machines ---------------------------------------------------- */

static int64_t vcpus_in_use(struct azure *a, const char *location, bool spot) {
  int64_t n = 0;
  for (size_t i = 0; i < a->n_vms; i++) {
    const struct az_vm *vm = a->vms[i];
    if (vm_allocated(vm) && vm_spot(vm) == spot &&
        !strcasecmp(vm->req.location, location))
      n += vm->size->vcpus;
  }
  return n;
}

static void quota_error(struct call *c, const struct fc_az_size *sz,
                        const char *location, bool spot, int64_t limit,
                        int64_t usage, const char *code) {
  arm_error(c, 409, code && *code ? code : "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding "
            "approved %s quota. Additional details - Deployment Model: "
            "Resource Manager, Location: %s, Current Limit: %lld, Current "
            "Usage: %lld, Additional Required: %d, (Minimum) New Limit "
            "Required: %lld. Submit a request for Quota increase at "
            "https://aka.ms/ProdportalCRP.",
            spot ? "LowPriorityCores" : sz->family, location, (long long)limit,
            (long long)usage, sz->vcpus, (long long)(usage + sz->vcpus));
}

static const char *capacity_message(const char *code) {
  if (!strcmp(code, "ZonalAllocationFailed"))
    return "Allocation failed. We do not have sufficient capacity for the "
           "requested VM size in this zone. Read more about improving "
           "likelihood of allocation success at "
           "http://aka.ms/allocation-guidance";
  if (!strncmp(code, "Overconstrained", 15))
    return "Allocation failed. VM(s) with the following constraints cannot "
           "be allocated, because the condition is too restrictive. Please "
           "remove some constraints and try again.";
  return "Allocation failed. We do not have sufficient capacity for the "
         "requested VM size in this region. Read more about improving "
         "likelihood of allocation success at "
         "http://aka.ms/allocation-guidance";
}

static void sku_not_available(struct call *c, const char *id,
                              const char *location, const char *zone) {
  arm_error_t(c, 409, "SkuNotAvailable", "vmSize",
              "The requested size for resource '%s' is currently not "
              "available in location '%s' zones '%s' for subscription '%s'. "
              "Please try another size or deploy to a different location or "
              "zones. See https://aka.ms/azureskunotavailable for details.",
              id, location, zone, FC_AZ_SUBSCRIPTION);
}

/* An existing VM: only tags may change, as a create-or-update that
 * repeats the creation's body does (or changes tags). */
static void update_vm(struct call *c, struct az_vm *vm, struct fc_az_vm_req *r,
                      const char *api) {
  if (vm->state == VM_DELETING) {
    arm_error(c, 409, "OperationNotAllowed",
              "Operation 'createOrUpdate' is not allowed on VM '%s' since the "
              "VM is marked for deletion.",
              vm->name);
    return;
  }
  const char *what = NULL;
  if (strcasecmp(r->location, vm->req.location))
    what = "location";
  else if (strcasecmp(r->vm_size, vm->req.vm_size) && vm->state == VM_RUNNING)
    what = "hardwareProfile.vmSize";
  else if (strcmp(r->priority, vm->req.priority))
    what = "priority";
  else if (strcmp(r->zone, vm->req.zone))
    what = "zones";
  if (what) {
    arm_error_t(c, 409, "PropertyChangeNotAllowed", what,
                "Changing property '%s' is not allowed.", what);
    return;
  }
  json_decref(vm->req.tags);
  vm->req.tags = json_incref(r->tags);
  vm->etag++;
  struct az_op *op = new_op(c->a, vm->req.location, 0);
  lro_headers(c, op, api);
  reply(c, 200, vm_json(vm, false));
}

static void act_put_vm(struct call *c, const char *api) {
  struct azure *a = c->a;
  const struct fc_az_path *pa = &c->path;
  if (!fc_az_valid_vm_name(pa->name)) {
    arm_error_t(c, 400, "InvalidResourceName", "vmName",
                "Resource name %.96s is invalid. The name can be up to 64 "
                "characters long and can contain letters, numbers, "
                "underscores, periods and hyphens; it must start with a "
                "letter or number and end with a letter, number or "
                "underscore.",
                pa->name);
    return;
  }
  struct az_vm *existing = find_vm(a, pa->resource_group, pa->name);
  const char *inm = fc_header(c->req, "If-None-Match");
  const char *im = fc_header(c->req, "If-Match");
  char etag[16];
  if (existing)
    snprintf(etag, sizeof etag, "\"%d\"", existing->etag);
  if ((inm && !strcmp(inm, "*") && existing) ||
      (im && (!existing || (strcmp(im, "*") && strcmp(im, etag))))) {
    arm_error(c, 412, "PreconditionFailed",
              "The condition specified using HTTP conditional header(s) is "
              "not met.");
    return;
  }
  if (inm && strcmp(inm, "*")) {
    arm_error(c, 400, "InvalidParameter",
              "The value of header If-None-Match is invalid: only '*' is "
              "supported.");
    return;
  }
  struct fc_az_vm_req r;
  struct fc_az_error e;
  if (!fc_az_parse_vm_put(c->req->body, c->req->body_len, pa->name, &r, &e)) {
    fc_az_vm_req_release(&r);
    az_error(c, &e);
    return;
  }
  if (existing) {
    update_vm(c, existing, &r, api);
    fc_az_vm_req_release(&r);
    return;
  }
  char id[400];
  snprintf(id, sizeof id,
           "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
           "virtualMachines/%s",
           FC_AZ_SUBSCRIPTION, pa->resource_group, pa->name);
  const struct fc_az_region *region = fc_az_catalog_region(a->cat, r.location);
  const struct fc_az_size *sz = fc_az_catalog_size(a->cat, r.vm_size);
  if (!region) {
    arm_error_t(c, 400, "LocationNotAvailableForResourceType", "location",
                "The provided location '%.32s' is not available for resource "
                "type 'Microsoft.Compute/virtualMachines'.",
                r.location);
    fc_az_vm_req_release(&r);
    return;
  }
  if (!sz) {
    arm_error_t(c, 400, "InvalidParameter", "vmSize",
                "The value %.64s provided for the VM size is not valid.",
                r.vm_size);
    fc_az_vm_req_release(&r);
    return;
  }
  const struct fc_az_price *price =
      fc_az_catalog_price(a->cat, sz->name, region->name);
  bool spot = strcmp(r.priority, "Regular") != 0;
  bool zone_ok = !r.zone[0];
  for (size_t z = 0; z < region->n_zones; z++)
    zone_ok |= !strcmp(region->zones[z], r.zone);
  if (!price || !zone_ok || (spot && price->spot_uusd < 0)) {
    sku_not_available(c, id, region->name, r.zone);
    fc_az_vm_req_release(&r);
    return;
  }
  if (spot && r.max_price_uusd >= 0 && r.max_price_uusd < price->spot_uusd) {
    char want[32], now_p[32];
    fc_price_fmt(r.max_price_uusd, want);
    fc_price_fmt(price->spot_uusd, now_p);
    arm_error_t(c, 409, "OperationNotAllowed", "billingProfile.maxPrice",
                "Unable to perform operation: the max price %s USD is lower "
                "than the current Spot price %s USD for %s in %s.",
                want, now_p, sz->name, region->name);
    fc_az_vm_req_release(&r);
    return;
  }
  struct fc_fault_query q = {.service = "azure",
                             .action = c->action,
                             .instance_type = sz->name,
                             .zone = r.zone,
                             .market = spot ? "spot" : "on-demand"};
  struct fc_faults *fl = fc_faults(a->s);
  struct fc_fault *f;
  if ((f = fc_faults_fire(fl, FC_FAULT_QUOTA, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s)))) {
    int64_t limit = spot ? a->spot_vcpu_limit : a->vcpu_limit;
    quota_error(c, sz, region->name, spot, limit, limit, f->code);
    fc_az_vm_req_release(&r);
    return;
  }
  int64_t limit = spot ? a->spot_vcpu_limit : a->vcpu_limit;
  int64_t used = vcpus_in_use(a, region->name, spot);
  if (used + sz->vcpus > limit) {
    quota_error(c, sz, region->name, spot, limit, used, NULL);
    fc_az_vm_req_release(&r);
    return;
  }
  /* Capacity: with a status the rule answers at once (SkuNotAvailable is
   * a synchronous 409); without, the operation fails later
   * (AllocationFailed, ZonalAllocationFailed, OverconstrainedAllocation-
   * Request come that way). */
  const char *fail_code = NULL;
  if ((f = fc_faults_fire(fl, FC_FAULT_CAPACITY, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s)))) {
    if (f->status) {
      const char *code = f->code[0] ? f->code : "SkuNotAvailable";
      if (!strcmp(code, "SkuNotAvailable"))
        sku_not_available(c, id, region->name, r.zone);
      else
        arm_error(c, f->status, code, "%s",
                  f->message[0] ? f->message : capacity_message(code));
      fc_az_vm_req_release(&r);
      return;
    }
    fail_code = f->code[0]  ? f->code
                : r.zone[0] ? "ZonalAllocationFailed"
                            : "AllocationFailed";
  }

  struct az_vm *vm = tw_calloc(1, sizeof *vm);
  snprintf(vm->name, sizeof vm->name, "%s", pa->name);
  snprintf(vm->rg, sizeof vm->rg, "%s", find_rg(a, pa->resource_group)->name);
  uuid(a, vm->vm_id);
  vm->req = r; /* takes the JSON */
  if (vm->req.custom_data && fc_boot_enabled(a->s))
    vm->user_data = fc_base64_decode(vm->req.custom_data, &vm->user_data_len);
  vm->size = sz;
  vm->state = VM_CREATING;
  vm->created_ms = fc_now_ms(a->s);
  vm->next_ms = vm->created_ms + a->create_ms;
  vm->etag = 1;
  vm->notice_ms = vm->evict_ms = vm->event_end_ms = -1;
  struct az_op *op = new_op(a, region->name, a->create_ms);
  if (fail_code) {
    snprintf(vm->fail_code, sizeof vm->fail_code, "%s", fail_code);
    snprintf(vm->fail_msg, sizeof vm->fail_msg, "%s",
             f->message[0] ? f->message : capacity_message(fail_code));
    op->failed = true;
    snprintf(op->code, sizeof op->code, "%s", vm->fail_code);
    snprintf(op->msg, sizeof op->msg, "%s", vm->fail_msg);
  }
  if (spot && !fail_code) {
    /* Scheduled evictions that apply to this offer: after a fixed delay
     * or at a Poisson rate, counted from when the VM runs. */
    for (size_t i = 0; i < fl->n; i++) {
      struct fc_fault *rule = &fl->v[i];
      if (rule->kind != FC_FAULT_SPOT_INTERRUPTION || rule->instance_id[0])
        continue;
      struct fc_fault_query sq = q;
      sq.action = NULL; /* the notice is not an API call */
      if (!fc_fault_matches(rule, &sq, fc_elapsed_ms(a->s)) ||
          !fc_rng_chance_ppm(fc_rng(a->s), rule->probability_ppm))
        continue;
      int64_t after = rule->after_ms;
      if (after < 0) {
        double u = ((double)fc_rng_below(fc_rng(a->s), 1000000) + 0.5) / 1e6;
        after = (int64_t)(-log(u) / rule->rate_per_hour * 3600000.0);
      }
      if (rule->count > 0)
        rule->count--;
      rule->fired++;
      schedule_preempt(a, vm, vm->next_ms + after, rule->lead_ms);
    }
  }
  a->vms = tw_realloc(a->vms, (a->n_vms + 1) * sizeof *a->vms);
  a->vms[a->n_vms++] = vm;
  lro_headers(c, op, api);
  reply(c, 201, vm_json(vm, false));
}

static void not_found_vm(struct call *c) {
  arm_error(c, 404, "ResourceNotFound",
            "The Resource 'Microsoft.Compute/virtualMachines/%.64s' under "
            "resource group '%.90s' was not found. For more details please "
            "go to https://aka.ms/ARMResourceNotFoundFix",
            c->path.name, c->path.resource_group);
}

static void act_get_vm(struct call *c) {
  struct az_vm *vm = find_vm(c->a, c->path.resource_group, c->path.name);
  const char *expand = fc_params_get(&c->q, "$expand");
  if (expand && strcmp(expand, "instanceView") && strcmp(expand, "userData")) {
    arm_error_t(c, 400, "InvalidParameter", "$expand",
                "The value '%.32s' of parameter '$expand' is invalid. "
                "Allowed values: instanceView, userData.",
                expand);
    return;
  }
  if (!vm) {
    not_found_vm(c);
    return;
  }
  if (c->path.route == FC_AZ_VM_VIEW)
    reply(c, 200, instance_view_json(vm));
  else
    reply(c, 200, vm_json(vm, expand && !strcmp(expand, "instanceView")));
}

static void act_delete_vm(struct call *c, const char *api) {
  struct azure *a = c->a;
  struct az_vm *vm = find_vm(a, c->path.resource_group, c->path.name);
  if (!vm) {
    c->resp->status = 204;
    tw_buf_reset(&c->resp->body);
    return;
  }
  if (vm->state != VM_DELETING) {
    vm->state = VM_DELETING;
    vm->next_ms = fc_now_ms(a->s) + a->delete_ms;
    if (vm->phase == 1)
      vm->phase = 3; /* the notice is moot */
  }
  struct az_op *op = new_op(a, vm->req.location, vm->next_ms - fc_now_ms(a->s));
  lro_headers_at(c, op, api, true);
  c->resp->status = 202;
  tw_buf_reset(&c->resp->body);
}

/* POST .../virtualMachines/{name}/{deallocate|start|powerOff|restart}:
 * 202 with the operation's monitors, the power state moving after
 * delete_ms (see enum vm_state).  An action with nothing to do (start on
 * a running VM) is an operation that has already succeeded. */
static void act_vm_action(struct call *c, const char *api) {
  struct azure *a = c->a;
  struct az_vm *vm = find_vm(a, c->path.resource_group, c->path.name);
  const char *act = c->path.vm_action;
  if (!vm) {
    not_found_vm(c);
    return;
  }
  if (vm->state == VM_DELETING || vm->state == VM_CREATING ||
      vm->state == VM_FAILED) {
    arm_error(c, 409, "OperationNotAllowed",
              "Operation '%s' is not allowed on VM '%.64s' since the VM is %s.",
              act, vm->name,
              vm->state == VM_DELETING   ? "marked for deletion"
              : vm->state == VM_CREATING ? "being created"
                                         : "in a failed state");
    return;
  }
  int64_t now = fc_now_ms(a->s), dur = 0;
  bool allocated = vm->state != VM_DEALLOCATED && vm->state != VM_DEALLOCATING;
  if (!strcmp(act, "deallocate")) {
    if (allocated) {
      vm->state = VM_DEALLOCATING;
      dur = a->delete_ms;
    }
  } else if (!strcmp(act, "powerOff")) {
    if (vm->state == VM_RUNNING || vm->state == VM_STARTING) {
      vm->state = VM_STOPPING;
      dur = a->delete_ms;
    } else if (!allocated) {
      arm_error(c, 409, "OperationNotAllowed",
                "Operation 'powerOff' is not allowed on VM '%.64s' since the "
                "VM is deallocated or being deallocated.",
                vm->name);
      return;
    }
  } else if (!strcmp(act, "restart")) {
    if (vm->state != VM_RUNNING) {
      arm_error(c, 409, "OperationNotAllowed",
                "Cannot restart VM '%.64s' since it is not running.", vm->name);
      return;
    }
    vm->state = VM_STARTING;
    dur = a->delete_ms;
  } else if (vm->state != VM_RUNNING) { /* start */
    vm->state = VM_STARTING;
    dur = a->create_ms;
  }
  if (dur) {
    vm->next_ms = now + dur;
    vm->etag++;
  }
  struct az_op *op = new_op(a, vm->req.location, dur);
  lro_headers_at(c, op, api, true);
  c->resp->status = 202;
  tw_buf_reset(&c->resp->body);
}

/* Pages of a JSON array: items [skip, skip + page) and a nextLink naming
 * the next skip when more remain. */
static size_t page_skip(struct call *c) {
  const char *t = fc_params_get(&c->q, "$skiptoken");
  if (!t)
    t = fc_params_get(&c->q, "$skip");
  char *end;
  unsigned long long v = t ? strtoull(t, &end, 10) : 0;
  return t && *t && !*end && v < 1000000 ? (size_t)v : 0;
}

static void next_link(struct call *c, json_t *out, const char *member,
                      size_t next) {
  struct tw_buf u;
  tw_buf_init(&u);
  tw_buf_printf(&u, "%s%s?", c->base, c->req->raw_path);
  /* The query as it came, with the skip token replaced. */
  for (size_t i = 0; i < c->q.n; i++) {
    const char *k = c->q.v[i].key;
    if (!strcmp(k, "$skiptoken") || !strcmp(k, "$skip"))
      continue;
    char *enc = NULL;
    tw_buf_adds(&u, k[0] == '$' ? "$" : "");
    tw_sigv4_uri_encode(k + (k[0] == '$'), strlen(k + (k[0] == '$')), 0, &enc);
    tw_buf_adds(&u, enc);
    free(enc);
    tw_buf_addc(&u, '=');
    tw_sigv4_uri_encode(c->q.v[i].value, strlen(c->q.v[i].value), 0, &enc);
    tw_buf_adds(&u, enc);
    free(enc);
    tw_buf_addc(&u, '&');
  }
  tw_buf_printf(&u, "%s=%zu",
                c->path.route == FC_AZ_PRICES ? "$skip" : "$skiptoken", next);
  json_object_set_new(out, member, json_string(u.data));
  tw_buf_release(&u);
}

static void act_list_vms(struct call *c) {
  struct azure *a = c->a;
  size_t skip = page_skip(c), n = 0, i;
  json_t *arr = json_array();
  for (i = 0; i < a->n_vms; i++) {
    struct az_vm *vm = a->vms[i];
    if (c->path.route == FC_AZ_VM_LIST &&
        strcasecmp(vm->rg, c->path.resource_group))
      continue;
    if (n++ < skip)
      continue;
    if ((int64_t)json_array_size(arr) == a->page_size)
      break;
    json_array_append_new(arr, vm_json(vm, false));
  }
  json_t *out = json_pack("{s:o}", "value", arr);
  if (i < a->n_vms)
    next_link(c, out, "nextLink", skip + json_array_size(arr));
  reply(c, 200, out);
}

/* OData getter over one VM and one of its tags. */
struct res_ctx {
  const struct az_vm *vm;
  const char *tag_name, *tag_value;
};

static const char *res_field(void *vctx, const char *field) {
  struct res_ctx *r = vctx;
  if (!strcasecmp(field, "tagName"))
    return r->tag_name;
  if (!strcasecmp(field, "tagValue"))
    return r->tag_value;
  if (!strcasecmp(field, "resourceType"))
    return "Microsoft.Compute/virtualMachines";
  if (!strcasecmp(field, "name"))
    return r->vm->name;
  if (!strcasecmp(field, "location"))
    return r->vm->req.location;
  return NULL;
}

/* Matches when some tag of the VM (or, for an untagged one, no tag)
 * satisfies the filter: tagName and tagValue then refer to one pair. */
static bool res_matches(const struct fc_odata *f, const struct az_vm *vm) {
  struct res_ctx r = {.vm = vm};
  if (!f)
    return true;
  const char *k;
  json_t *v;
  json_object_foreach(vm->req.tags, k, v) {
    r.tag_name = k;
    r.tag_value = json_string_value(v);
    if (fc_odata_eval(f, res_field, &r))
      return true;
  }
  r.tag_name = r.tag_value = NULL;
  return !json_object_size(vm->req.tags) && fc_odata_eval(f, res_field, &r);
}

static void act_resources(struct call *c) {
  struct azure *a = c->a;
  struct fc_odata *f = NULL;
  struct fc_az_error e;
  const char *filter = fc_params_get(&c->q, "$filter");
  if (filter && !fc_odata_parse(filter, &f, &e)) {
    az_error(c, &e);
    return;
  }
  size_t skip = page_skip(c), n = 0, i;
  json_t *arr = json_array();
  for (i = 0; i < a->n_vms; i++) {
    struct az_vm *vm = a->vms[i];
    if (strcasecmp(vm->rg, c->path.resource_group) || !res_matches(f, vm))
      continue;
    if (n++ < skip)
      continue;
    if ((int64_t)json_array_size(arr) == a->page_size)
      break;
    char id[400];
    vm_id(vm, id, sizeof id);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:O}", "id", id, "name", vm->name,
                          "type", "Microsoft.Compute/virtualMachines",
                          "location", vm->req.location, "tags", vm->req.tags);
    if (vm->req.zone[0])
      json_object_set_new(o, "zones", json_pack("[s]", vm->req.zone));
    json_array_append_new(arr, o);
  }
  fc_odata_free(f);
  json_t *out = json_pack("{s:o}", "value", arr);
  if (i < a->n_vms)
    next_link(c, out, "nextLink", skip + json_array_size(arr));
  reply(c, 200, out);
}

static json_t *rg_json(const struct az_rg *rg);

static void act_rg(struct call *c) {
  struct azure *a = c->a;
  struct az_rg *rg = find_rg(a, c->path.resource_group);
  if (!strcmp(c->req->method, "PUT")) {
    json_error_t je;
    json_t *b = json_loadb(c->req->body, c->req->body_len, 0, &je);
    const char *loc = json_is_object(b)
                          ? json_string_value(json_object_get(b, "location"))
                          : NULL;
    if (!fc_az_valid_rg_name(c->path.resource_group)) {
      arm_error(c, 400, "InvalidResourceGroupName",
                "Resource group name '%.96s' is invalid.",
                c->path.resource_group);
    } else if (!loc || !fc_az_catalog_region(a->cat, loc)) {
      arm_error(c, 400, "LocationRequired",
                "The location property is required for this definition.");
    } else {
      int status = rg ? 200 : 201;
      if (!rg) {
        char norm[32];
        fc_az_norm_location(loc, norm, sizeof norm);
        add_rg(a, c->path.resource_group, norm);
        rg = &a->rgs[a->n_rgs - 1];
      }
      char id[300];
      snprintf(id, sizeof id, "/subscriptions/%s/resourceGroups/%s",
               FC_AZ_SUBSCRIPTION, rg->name);
      reply(c, status,
            json_pack("{s:s,s:s,s:s,s:s,s:{s:s}}", "id", id, "name", rg->name,
                      "type", "Microsoft.Resources/resourceGroups", "location",
                      rg->location, "properties", "provisioningState",
                      "Succeeded"));
    }
    json_decref(b);
    return;
  }
  if (!strcmp(c->req->method, "HEAD")) {
    /* Resource Groups - Check Existence: 204 or 404, never a body. */
    c->resp->status = rg ? 204 : 404;
    tw_buf_reset(&c->resp->body);
    return;
  }
  if (!rg) {
    arm_error(c, 404, "ResourceGroupNotFound",
              "Resource group '%.90s' could not be found.",
              c->path.resource_group);
    return;
  }
  reply(c, 200, rg_json(rg));
}

/* ---- subscription, locations, groups, sizes ------------------------------ */

static json_t *subscription_json(void) {
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:[],s:{s:s,s:s,s:s}}", "id",
                   "/subscriptions/" FC_AZ_SUBSCRIPTION, "subscriptionId",
                   FC_AZ_SUBSCRIPTION, "tenantId", FC_AZ_TENANT, "displayName",
                   "Tradewind fake subscription", "state", "Enabled",
                   "authorizationSource", "RoleBased", "managedByTenants",
                   "subscriptionPolicies", "locationPlacementId",
                   "Public_2014-09-01", "quotaId", "PayAsYouGo_2014-09-01",
                   "spendingLimit", "Off");
}

static void act_subscriptions(struct call *c) {
  if (c->path.route == FC_AZ_SUB_GET) {
    reply(c, 200, subscription_json());
    return;
  }
  reply(c, 200,
        json_pack("{s:[o],s:{s:s,s:i}}", "value", subscription_json(), "count",
                  "type", "Total", "value", 1));
}

static void act_locations(struct call *c) {
  json_t *arr = json_array();
  for (size_t i = 0; i < c->a->cat->n_regions; i++) {
    const struct fc_az_region *r = &c->a->cat->regions[i];
    char id[200];
    snprintf(id, sizeof id, "/subscriptions/%s/locations/%s",
             FC_AZ_SUBSCRIPTION, r->name);
    json_t *zones = json_array();
    for (size_t z = 0; z < r->n_zones; z++)
      json_array_append_new(zones,
                            json_pack("{s:s,s:s}", "logicalZone", r->zones[z],
                                      "physicalZone", r->zones[z]));
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s},s:o}", "id", id,
                       "name", r->name, "type", "Region", "displayName",
                       r->display, "regionalDisplayName", r->display,
                       "metadata", "regionType", "Physical", "regionCategory",
                       "Recommended", "availabilityZoneMappings", zones));
  }
  reply(c, 200, json_pack("{s:o}", "value", arr));
}

static json_t *rg_json(const struct az_rg *rg) {
  char id[300];
  snprintf(id, sizeof id, "/subscriptions/%s/resourceGroups/%s",
           FC_AZ_SUBSCRIPTION, rg->name);
  return json_pack("{s:s,s:s,s:s,s:s,s:{s:s}}", "id", id, "name", rg->name,
                   "type", "Microsoft.Resources/resourceGroups", "location",
                   rg->location, "properties", "provisioningState",
                   "Succeeded");
}

static void act_rg_list(struct call *c) {
  json_t *arr = json_array();
  for (size_t i = 0; i < c->a->n_rgs; i++)
    json_array_append_new(arr, rg_json(&c->a->rgs[i]));
  reply(c, 200, json_pack("{s:o}", "value", arr));
}

/* Virtual Machine Sizes - List: the sizes sold in a location. */
static void act_vm_sizes(struct call *c) {
  const struct fc_az_catalog *cat = c->a->cat;
  char loc[32];
  fc_az_norm_location(c->path.location, loc, sizeof loc);
  const struct fc_az_region *reg = fc_az_catalog_region(cat, loc);
  if (!reg) {
    arm_error(c, 404, "NoRegisteredProviderFound",
              "No registered resource provider found for location '%.32s' "
              "and API version '%.32s' for type 'locations/vmSizes'.",
              c->path.location, fc_params_get(&c->q, "api-version"));
    return;
  }
  json_t *arr = json_array();
  for (size_t i = 0; i < cat->n_sizes; i++) {
    const struct fc_az_size *sz = &cat->sizes[i];
    if (!fc_az_catalog_price(cat, sz->name, reg->name))
      continue;
    double gb = strtod(sz->memory_gb, NULL);
    json_array_append_new(
        arr, json_pack("{s:s,s:i,s:i,s:i,s:I,s:i}", "name", sz->name,
                       "numberOfCores", sz->vcpus, "osDiskSizeInMB", 1047552,
                       "resourceDiskSizeInMB", 0, "memoryInMB",
                       (json_int_t)(gb * 1024.0 + 0.5), "maxDataDiskCount",
                       sz->vcpus * 2 < 64 ? sz->vcpus * 2 : 64));
  }
  reply(c, 200, json_pack("{s:o}", "value", arr));
}

static const char *sku_field(void *vctx, const char *field) {
  const char *const *kv = vctx;
  return !strcasecmp(field, "location") ? kv[0] : NULL;
}

static void act_skus(struct call *c) {
  struct azure *a = c->a;
  struct fc_odata *f = NULL;
  struct fc_az_error e;
  const char *filter = fc_params_get(&c->q, "$filter");
  if (filter && !fc_odata_parse(filter, &f, &e)) {
    az_error(c, &e);
    return;
  }
  json_t *arr = json_array();
  size_t skip = page_skip(c), n = 0, p;
  for (p = 0; p < a->cat->n_prices; p++) {
    const struct fc_az_price *pr = &a->cat->prices[p];
    const struct fc_az_size *sz = &a->cat->sizes[pr->size];
    const struct fc_az_region *rg = &a->cat->regions[pr->region];
    const char *kv[] = {rg->name};
    if (f && !fc_odata_eval(f, sku_field, (void *)kv))
      continue;
    if (n++ < skip)
      continue;
    if ((int64_t)json_array_size(arr) == a->page_size)
      break;
    json_t *zones = json_array();
    for (size_t z = 0; z < rg->n_zones; z++)
      json_array_append_new(zones, json_string(rg->zones[z]));
    char size_short[48];
    snprintf(size_short, sizeof size_short, "%s",
             strncmp(sz->name, "Standard_", 9) ? sz->name : sz->name + 9);
    char vcpus[16], gpus[16];
    snprintf(vcpus, sizeof vcpus, "%d", sz->vcpus);
    snprintf(gpus, sizeof gpus, "%d", sz->gpus);
    json_t *caps = json_pack(
        "[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "name", "vCPUs",
        "value", vcpus, "name", "MemoryGB", "value", sz->memory_gb, "name",
        "CpuArchitectureType", "value", sz->arch, "name", "LowPriorityCapable",
        "value", pr->spot_uusd >= 0 ? "True" : "False", "name",
        "HyperVGenerations", "value", "V1,V2");
    if (sz->gpus)
      json_array_append_new(
          caps, json_pack("{s:s,s:s}", "name", "GPUs", "value", gpus));
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s],s:[{s:s,s:o,s:[]}],s:o,"
                       "s:[]}",
                       "resourceType", "virtualMachines", "name", sz->name,
                       "tier", "Standard", "size", size_short, "family",
                       sz->family, "locations", rg->name, "locationInfo",
                       "location", rg->name, "zones", zones, "zoneDetails",
                       "capabilities", caps, "restrictions"));
  }
  fc_odata_free(f);
  json_t *out = json_pack("{s:o}", "value", arr);
  if (p < a->cat->n_prices)
    next_link(c, out, "nextLink", skip + json_array_size(arr));
  reply(c, 200, out);
}

/* ---- Retail Prices API ----------------------------------------------------
 */

struct price_row {
  const struct fc_az_size *size;
  const struct fc_az_region *region;
  const struct fc_az_price *price;
  bool spot, windows, devtest;
  char meter[64], product[80], price_text[32];
};

static const char *price_field(void *vctx, const char *field) {
  const struct price_row *r = vctx;
  if (!strcasecmp(field, "serviceName"))
    return "Virtual Machines";
  if (!strcasecmp(field, "serviceFamily"))
    return "Compute";
  if (!strcasecmp(field, "armRegionName"))
    return r->region->name;
  if (!strcasecmp(field, "location"))
    return r->region->display;
  if (!strcasecmp(field, "armSkuName"))
    return r->size->name;
  if (!strcasecmp(field, "skuName") || !strcasecmp(field, "meterName"))
    return r->meter;
  if (!strcasecmp(field, "productName"))
    return r->product;
  if (!strcasecmp(field, "priceType") || !strcasecmp(field, "type"))
    return r->devtest ? "DevTestConsumption" : "Consumption";
  if (!strcasecmp(field, "currencyCode"))
    return "USD";
  if (!strcasecmp(field, "unitOfMeasure"))
    return "1 Hour";
  return NULL;
}

/* Rows per catalog price: Linux and Windows, pay-as-you-go and Spot, and
 * the Windows DevTest rows billed at the Linux price, as the real feed
 * has them. */
static size_t price_rows(const struct fc_az_catalog *cat, size_t p,
                         struct price_row out[6]) {
  const struct fc_az_price *pr = &cat->prices[p];
  const struct fc_az_size *sz = &cat->sizes[pr->size];
  size_t n = 0;
  for (int spot = 0; spot < 2; spot++) {
    int64_t base = spot ? pr->spot_uusd : pr->on_demand_uusd;
    if (base < 0)
      continue;
    /* Windows licence uplift per vCPU-hour, from the recorded D2s_v3
     * eastus page: 0.092 and 0.018032 USD over 2 vCPUs. */
    int64_t win = base + (int64_t)sz->vcpus * (spot ? 9016 : 46000);
    for (int w = 0; w < 3; w++) {
      struct price_row *r = &out[n++];
      memset(r, 0, sizeof *r);
      r->size = sz;
      r->region = &cat->regions[pr->region];
      r->price = pr;
      r->spot = spot;
      r->windows = w > 0;
      r->devtest = w == 2;
      snprintf(r->meter, sizeof r->meter, "%s%s", sz->meter,
               spot ? " Spot" : "");
      snprintf(r->product, sizeof r->product, "%s%s", sz->product,
               w ? " Windows" : "");
      fc_price_fmt(w == 1 ? win : base, r->price_text);
    }
  }
  return n;
}

static void act_prices(struct call *c) {
  struct azure *a = c->a;
  struct fc_odata *f = NULL;
  struct fc_az_error e;
  const char *filter = fc_params_get(&c->q, "$filter");
  if (filter && !fc_odata_parse(filter, &f, &e)) {
    json_t *o = json_pack("{s:{s:s,s:s}}", "Error", "Code", "BadRequest",
                          "Message", e.message);
    count(a->errors, 64, "BadRequest");
    reply(c, 400, o);
    return;
  }
  size_t skip = page_skip(c), n = 0, count_items = 0;
  bool more = false;
  json_t *arr = json_array();
  for (size_t p = 0; p < a->cat->n_prices && !more; p++) {
    struct price_row rows[6];
    size_t nr = price_rows(a->cat, p, rows);
    for (size_t i = 0; i < nr; i++) {
      if (f && !fc_odata_eval(f, price_field, &rows[i]))
        continue;
      if (n++ < skip)
        continue;
      if ((int64_t)count_items == a->page_size) {
        more = true;
        break;
      }
      const struct price_row *r = &rows[i];
      char sku_id[64];
      snprintf(sku_id, sizeof sku_id, "DZH318Z0%04zX/%04zX", r->price->size,
               p * 6 + i);
      double price = atof(r->price_text); /* six decimals: exact enough */
      json_array_append_new(
          arr,
          json_pack("{s:s,s:f,s:f,s:f,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,"
                    "s:s,s:s,s:s,s:b,s:s}",
                    "currencyCode", "USD", "tierMinimumUnits", 0.0,
                    "retailPrice", price, "unitPrice", price, "armRegionName",
                    r->region->name, "location", r->region->display,
                    "effectiveStartDate", "2024-01-01T00:00:00Z", "meterName",
                    r->meter, "productName", r->product, "skuName", r->meter,
                    "skuId", sku_id, "serviceName", "Virtual Machines",
                    "serviceFamily", "Compute", "unitOfMeasure", "1 Hour",
                    "type", r->devtest ? "DevTestConsumption" : "Consumption",
                    "armSkuName", r->size->name, "isPrimaryMeterRegion", 1,
                    "serviceId", "DZH313Z7MMC8"));
      count_items++;
    }
  }
  fc_odata_free(f);
  json_t *out = json_pack("{s:s,s:s,s:s,s:o}", "BillingCurrency", "USD",
                          "CustomerEntityId", "Default", "CustomerEntityType",
                          "Retail", "Items", arr);
  if (more)
    next_link(c, out, "NextPageLink", skip + count_items);
  else
    json_object_set_new(out, "NextPageLink", json_null());
  json_object_set_new(out, "Count", json_integer((json_int_t)count_items));
  reply(c, 200, out);
}

/* ---- Scheduled Events ---------------------------------------------------- */

static json_t *events_json(struct azure *a, const char *only_vm) {
  json_t *arr = json_array();
  for (size_t i = 0; i < a->n_vms; i++) {
    const struct az_vm *vm = a->vms[i];
    if ((vm->phase != 1 && vm->phase != 2) ||
        (only_vm && strcasecmp(vm->name, only_vm)))
      continue;
    char nb[32] = "";
    if (vm->phase == 1)
      fc_http_date(vm->evict_ms, nb);
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:s,s:s,s:[s],s:s,s:s,s:s,s:i}", "EventId",
                       vm->event_id, "EventStatus",
                       vm->phase == 1 ? "Scheduled" : "Started", "EventType",
                       "Preempt", "ResourceType", "VirtualMachine", "Resources",
                       vm->name, "NotBefore", nb, "Description", "",
                       "EventSource", "Platform", "DurationInSeconds", -1));
  }
  return json_pack("{s:I,s:o}", "DocumentIncarnation",
                   (json_int_t)a->incarnation, "Events", arr);
}

static void act_events(struct call *c) {
  struct azure *a = c->a;
  const char *md = fc_header(c->req, "Metadata");
  const char *v = fc_params_get(&c->q, "api-version");
  /* The metadata service's own error shapes. */
  if (!md || strcasecmp(md, "true")) {
    count(a->errors, 64, "MetadataHeaderMissing");
    reply(c, 400,
          json_pack("{s:s}", "error",
                    "Bad request. Required metadata header not specified"));
    return;
  }
  if (!v || !in_list(v, events_versions)) {
    count(a->errors, 64, "InvalidApiVersion");
    reply(c, 400,
          json_pack("{s:s,s:[s]}", "error",
                    v ? "Bad request. api-version is invalid or was not "
                        "specified in the request."
                      : "Bad request. api-version was not specified in the "
                        "request.",
                    "newest-versions", AZ_EVENTS_VERSION));
    return;
  }
  if (!strcmp(c->req->method, "POST")) {
    /* StartRequests: approve events so they start now. */
    json_error_t je;
    json_t *b = json_loadb(c->req->body, c->req->body_len, 0, &je);
    json_t *sr = json_object_get(b, "StartRequests");
    size_t i;
    json_t *x;
    if (!json_is_array(sr)) {
      json_decref(b);
      reply(c, 400, json_pack("{s:s}", "error", "Bad request."));
      return;
    }
    json_array_foreach(sr, i, x) {
      const char *id = json_string_value(json_object_get(x, "EventId"));
      for (size_t k = 0; id && k < a->n_vms; k++)
        if (a->vms[k]->phase == 1 && !strcmp(a->vms[k]->event_id, id))
          a->vms[k]->evict_ms = fc_now_ms(a->s);
    }
    json_decref(b);
    az_tick(a);
    c->resp->status = 200;
    tw_buf_reset(&c->resp->body);
    return;
  }
  reply(c, 200, events_json(a, NULL));
}

/* ---- identity -------------------------------------------------------------
 */

static bool tenant_known(const char *t) { return !strcmp(t, FC_AZ_TENANT); }

static void act_openid(struct call *c) {
  const char *t = c->path.tenant;
  if (!tenant_known(t)) {
    oauth_error(c, 400, "invalid_tenant",
                "AADSTS90002: Tenant not found. Check to make sure you have "
                "the correct tenant ID and are signing into the correct "
                "cloud.");
    return;
  }
  char tok[300], iss[300], auth[300], keys[300], logout[300];
  snprintf(tok, sizeof tok, "%s/%s/oauth2/v2.0/token", c->base, t);
  snprintf(iss, sizeof iss, "%s/%s/v2.0", c->base, t);
  snprintf(auth, sizeof auth, "%s/%s/oauth2/v2.0/authorize", c->base, t);
  snprintf(keys, sizeof keys, "%s/%s/discovery/v2.0/keys", c->base, t);
  snprintf(logout, sizeof logout, "%s/%s/oauth2/v2.0/logout", c->base, t);
  reply(c, 200,
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s],s:[s,s],s:[s],s:[s],s:s}",
                  "token_endpoint", tok, "issuer", iss,
                  "authorization_endpoint", auth, "jwks_uri", keys,
                  "end_session_endpoint", logout, "response_types_supported",
                  "code", "token_endpoint_auth_methods_supported",
                  "client_secret_post", "private_key_jwt",
                  "subject_types_supported", "pairwise",
                  "id_token_signing_alg_values_supported", "RS256",
                  "tenant_region_scope", "NA"));
}

/* ---- client assertions and managed identity ------------------------------ */

static void b64url(const unsigned char *in, unsigned n, char *out) {
  static const char T[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  for (unsigned i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[o++] = T[(v >> 18) & 63];
    out[o++] = T[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = T[(v >> 6) & 63];
    if (i + 2 < n)
      out[o++] = T[v & 63];
  }
  out[o] = '\0';
}

static unsigned char *b64url_dec(const char *s, size_t n, size_t *out_n) {
  unsigned char *o = tw_malloc(n * 3 / 4 + 3);
  unsigned v = 0;
  int bits = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *t = strchr(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        s[i]);
    if (!t || !s[i]) {
      free(o);
      return NULL;
    }
    v = (v << 6) | (unsigned)(t - "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                  "qrstuvwxyz0123456789-_");
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[k++] = (unsigned char)(v >> bits);
    }
  }
  *out_n = k;
  return o;
}

static json_t *jwt_part(const char *s, size_t n) {
  size_t len = 0;
  unsigned char *d = b64url_dec(s, n, &len);
  json_t *j = d ? json_loadb((const char *)d, len, 0, NULL) : NULL;
  free(d);
  return j;
}

/* Checks a client assertion as Entra ID does: a certificate's RS256 JWT
 * (x5t, aud = this token endpoint, iss = sub = client_id, in its time) or
 * the federated token registered for workload identity. */
static bool check_assertion(struct call *c, const struct fc_params *form,
                            struct fc_az_error *e) {
  struct azure *a = c->a;
  const char *type = fc_params_get(form, "client_assertion_type");
  const char *as = fc_params_get(form, "client_assertion");
  const char *id = fc_params_get(form, "client_id");
  const char *gt = fc_params_get(form, "grant_type");
  if (!gt || strcmp(gt, "client_credentials"))
    return fc_az_fail(e, 400, "unsupported_grant_type",
                      "AADSTS70003: The app requested an unsupported grant "
                      "type.");
  if (!type || strcmp(type, "urn:ietf:params:oauth:client-assertion-type:"
                            "jwt-bearer"))
    return fc_az_fail(e, 400, "invalid_request",
                      "AADSTS700025: Client assertion type is invalid.");
  if (!id || strcmp(id, FC_AZ_CLIENT_ID))
    return fc_az_fail(e, 400, "unauthorized_client",
                      "AADSTS700016: Application with identifier '%.64s' was "
                      "not found in the directory.",
                      id ? id : "");
  if (*a->federated && !strcmp(as, a->federated))
    return true;
  const char *d1 = strchr(as, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d2)
    return fc_az_fail(e, 400, "invalid_client",
                      *a->federated ? "AADSTS70021: No matching federated "
                                      "identity record found for presented "
                                      "assertion."
                                    : "AADSTS50027: JWT token is invalid or "
                                      "malformed.");
  json_t *h = jwt_part(as, (size_t)(d1 - as));
  json_t *pl = jwt_part(d1 + 1, (size_t)(d2 - d1 - 1));
  bool ok = false;
  char aud[300];
  snprintf(aud, sizeof aud, "%s/%s/oauth2/v2.0/token", c->base, c->path.tenant);
  /* MSAL sends the SHA-256 thumbprint (x5t#S256) when it has one, older
   * clients the SHA-1 one (x5t); Entra ID takes either */
  const char *x5t = json_string_value(json_object_get(h, "x5t"));
  const char *x5t256 = json_string_value(json_object_get(h, "x5t#S256"));
  bool thumb_ok =
      a->client_key && ((x5t && !strcmp(x5t, a->client_x5t)) ||
                        (x5t256 && !strcmp(x5t256, a->client_x5t256)));
  if (!x5t)
    x5t = x5t256;
  const char *alg = json_string_value(json_object_get(h, "alg"));
  int64_t now = fc_now_ms(a->s) / 1000;
  json_int_t exp = json_integer_value(json_object_get(pl, "exp"));
  json_int_t nbf = json_integer_value(json_object_get(pl, "nbf"));
  const char *iss = json_string_value(json_object_get(pl, "iss"));
  const char *sub = json_string_value(json_object_get(pl, "sub"));
  const char *jaud = json_string_value(json_object_get(pl, "aud"));
  if (*a->federated && (!x5t || !h)) {
    /* not a certificate's assertion: a federated token that is not the
     * registered one */
    fc_az_fail(e, 400, "invalid_client",
               "AADSTS70021: No matching federated identity record found "
               "for presented assertion.");
  } else if (!h || !pl || !alg ||
             (strcmp(alg, "RS256") && strcmp(alg, "PS256"))) {
    fc_az_fail(e, 400, "invalid_client",
               "AADSTS50027: JWT token is invalid or malformed.");
  } else if (!thumb_ok) {
    fc_az_fail(e, 401, "invalid_client",
               "AADSTS700027: The certificate with identifier used to sign "
               "the client assertion is not registered on application.");
  } else if (!jaud || strcmp(jaud, aud)) {
    fc_az_fail(e, 401, "invalid_client",
               "AADSTS700024: Client assertion audience claim does not match "
               "Realm issuer.");
  } else if (!iss || !sub || strcmp(iss, id) || strcmp(sub, id)) {
    fc_az_fail(e, 401, "invalid_client",
               "AADSTS700023: Client assertion issuer and subject must be "
               "the client id.");
  } else if (exp <= now || nbf > now + 300) {
    fc_az_fail(e, 401, "invalid_client",
               "AADSTS700024: Client assertion is not within its valid time "
               "range.");
  } else {
    size_t slen = 0;
    unsigned char *sig = b64url_dec(d2 + 1, strlen(d2 + 1), &slen);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    /* RS256: PKCS #1 v1.5; PS256 (MSAL with a SHA-256 thumbprint):
     * PSS, salt as long as the digest (RFC 7518 3.5) */
    EVP_PKEY_CTX *pc = NULL;
    ok =
        sig && md &&
        EVP_DigestVerifyInit(md, &pc, EVP_sha256(), NULL, a->client_key) == 1 &&
        (!strcmp(alg, "RS256") ||
         (EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1 &&
          EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, 32) == 1)) &&
        EVP_DigestVerify(md, sig, slen, (const unsigned char *)as,
                         (size_t)(d2 - as)) == 1;
    EVP_MD_CTX_free(md);
    free(sig);
    if (!ok)
      fc_az_fail(e, 401, "invalid_client",
                 "AADSTS700027: Client assertion failed signature "
                 "validation.");
  }
  json_decref(h);
  json_decref(pl);
  return ok;
}

/* GET /metadata/identity/oauth2/token: the managed identity (IMDS). */
static void act_msi(struct call *c) {
  struct azure *a = c->a;
  const char *md = fc_header(c->req, "Metadata");
  const char *api = fc_params_get(&c->q, "api-version");
  const char *res = fc_params_get(&c->q, "resource");
  if (!md || strcmp(md, "true")) {
    reply(c, 400,
          json_pack("{s:s,s:s}", "error", "invalid_request",
                    "error_description",
                    "Required metadata header not specified"));
    return;
  }
  if (!api || !res || !*res) {
    reply(c, 400,
          json_pack("{s:s,s:s}", "error", "invalid_request",
                    "error_description",
                    !api ? "Required query variable 'api-version' is missing"
                         : "Required query variable 'resource' is missing"));
    return;
  }
  a->tokens = tw_realloc(a->tokens, (a->n_tokens + 1) * sizeof *a->tokens);
  struct az_token *t = &a->tokens[a->n_tokens++];
  char id[40], ttl[24], on[24];
  uuid(a, id);
  snprintf(t->token, sizeof t->token, "fake.msi.%s.%016llx", id,
           (unsigned long long)fc_rng_next(fc_rng(a->s)));
  t->expires_ms = fc_now_ms(a->s) + a->token_ttl_s * 1000;
  snprintf(ttl, sizeof ttl, "%lld", (long long)a->token_ttl_s);
  snprintf(on, sizeof on, "%lld", (long long)(t->expires_ms / 1000));
  a->msi_tokens++;
  reply(c, 200,
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "access_token", t->token,
                  "expires_in", ttl, "expires_on", on, "resource", res,
                  "token_type", "Bearer", "client_id",
                  fc_params_get(&c->q, "client_id")
                      ? fc_params_get(&c->q, "client_id")
                      : "system-assigned"));
}

static void act_token(struct call *c) {
  struct azure *a = c->a;
  bool v1 = c->path.route == FC_AZ_TOKEN_V1;
  const char *ct = fc_header(c->req, "Content-Type");
  struct fc_params form;
  struct tw_err err;
  struct fc_az_error e;
  tw_err_clear(&err);
  fc_params_init(&form);
  if (!tenant_known(c->path.tenant)) {
    oauth_error(c, 400, "invalid_request",
                "AADSTS90002: Tenant not found. Check to make sure you have "
                "the correct tenant ID and are signing into the correct "
                "cloud.");
  } else if (!ct || strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
    oauth_error(c, 400, "invalid_request",
                "AADSTS900144: The request body must contain the following "
                "parameter: 'grant_type'.");
  } else if (fc_params_parse(&form, c->req->body, c->req->body_len, &err)) {
    oauth_error(c, 400, "invalid_request", "AADSTS90014: Malformed body.");
  } else {
    const struct fc_az_client clients[] = {
        {FC_AZ_CLIENT_ID, FC_AZ_CLIENT_SECRET}};
    bool assertion = !v1 && fc_params_get(&form, "client_assertion");
    if (assertion && !check_assertion(c, &form, &e)) {
      oauth_error(c, e.status, e.code, e.message);
    } else if (!assertion && !(v1 ? fc_az_check_token_req_v1(
                                        &form, c->path.tenant, clients, 1, &e)
                                  : fc_az_check_token_req(&form, c->path.tenant,
                                                          clients, 1, &e))) {
      oauth_error(c, e.status, e.code, e.message);
    } else {
      a->tokens = tw_realloc(a->tokens, (a->n_tokens + 1) * sizeof *a->tokens);
      struct az_token *t = &a->tokens[a->n_tokens++];
      char id[40];
      uuid(a, id);
      /* Opaque to clients, as real tokens are meant to be. */
      snprintf(t->token, sizeof t->token, "fake.%s.%016llx", id,
               (unsigned long long)fc_rng_next(fc_rng(a->s)));
      t->expires_ms = fc_now_ms(a->s) + a->token_ttl_s * 1000;
      if (assertion)
        a->assertion_tokens++;
      if (v1) {
        /* v1 prints every number as a string and names the resource. */
        char ttl[24], on[24], nb[24];
        snprintf(ttl, sizeof ttl, "%lld", (long long)a->token_ttl_s);
        snprintf(on, sizeof on, "%lld", (long long)(t->expires_ms / 1000));
        snprintf(nb, sizeof nb, "%lld", (long long)(fc_now_ms(a->s) / 1000));
        reply(c, 200,
              json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "token_type", "Bearer",
                        "expires_in", ttl, "ext_expires_in", ttl, "expires_on",
                        on, "not_before", nb, "resource",
                        fc_params_get(&form, "resource"), "access_token",
                        t->token));
        goto done;
      }
      reply(c, 200,
            json_pack("{s:s,s:I,s:I,s:s}", "token_type", "Bearer", "expires_in",
                      (json_int_t)a->token_ttl_s, "ext_expires_in",
                      (json_int_t)a->token_ttl_s, "access_token", t->token));
    }
  }
done:
  fc_params_release(&form);
}

/* 401 for a missing, unknown or expired bearer token. */
static bool authenticate(struct call *c) {
  struct azure *a = c->a;
  const char *h = fc_header(c->req, "Authorization");
  const char *code = NULL;
  char msg[256];
  if (!h) {
    code = "AuthenticationFailed";
    snprintf(msg, sizeof msg,
             "Authentication failed. The 'Authorization' header is missing.");
  } else if (strncasecmp(h, "Bearer ", 7) || !h[7]) {
    code = "AuthenticationFailed";
    snprintf(msg, sizeof msg,
             "Authentication failed. The 'Authorization' header is provided "
             "in an invalid format.");
  } else {
    const struct az_token *t = NULL;
    for (size_t i = 0; i < a->n_tokens && !t; i++)
      if (!strcmp(a->tokens[i].token, h + 7))
        t = &a->tokens[i];
    int64_t now = fc_now_ms(a->s);
    if (!t) {
      code = "InvalidAuthenticationToken";
      snprintf(msg, sizeof msg, "The access token is invalid.");
    } else if (now >= t->expires_ms) {
      char exp[40], cur[40];
      iso(t->expires_ms, exp);
      iso(now, cur);
      code = "ExpiredAuthenticationToken";
      snprintf(msg, sizeof msg,
               "The access token expiry UTC time '%s' is earlier than current "
               "UTC time '%s'.",
               exp, cur);
    }
  }
  if (!code)
    return true;
  char www[400];
  snprintf(www, sizeof www,
           "Bearer authorization_uri=\"%s/%s\", error=\"invalid_token\", "
           "error_description=\"The access token is missing or invalid.\"",
           c->base, FC_AZ_TENANT);
  fc_response_header(c->resp, "WWW-Authenticate", www);
  arm_error(c, 401, code, "%s", msg);
  return false;
}

/* ---- dispatch ------------------------------------------------------------ */

static const char *arm_action(enum fc_az_route r, const char *method,
                              const char *vm_action) {
  bool get = !strcmp(method, "GET"), put = !strcmp(method, "PUT"),
       del = !strcmp(method, "DELETE"), post = !strcmp(method, "POST");
  switch (r) {
  case FC_AZ_RG:
    return put                       ? "CreateResourceGroup"
           : get                     ? "GetResourceGroup"
           : !strcmp(method, "HEAD") ? "CheckResourceGroupExistence"
                                     : NULL;
  case FC_AZ_RG_LIST:
    return get ? "ListResourceGroups" : NULL;
  case FC_AZ_SUB_LIST:
    return get ? "ListSubscriptions" : NULL;
  case FC_AZ_SUB_GET:
    return get ? "GetSubscription" : NULL;
  case FC_AZ_LOCATIONS:
    return get ? "ListLocations" : NULL;
  case FC_AZ_VM_SIZES:
    return get ? "ListVirtualMachineSizes" : NULL;
  case FC_AZ_VM_ACTION:
    return !post                              ? NULL
           : !strcmp(vm_action, "deallocate") ? "DeallocateVirtualMachine"
           : !strcmp(vm_action, "start")      ? "StartVirtualMachine"
           : !strcmp(vm_action, "powerOff")   ? "PowerOffVirtualMachine"
                                              : "RestartVirtualMachine";
  case FC_AZ_RESOURCES:
    return get ? "ListResources" : NULL;
  case FC_AZ_VM_LIST:
    return get ? "ListVirtualMachines" : NULL;
  case FC_AZ_VM_LIST_ALL:
    return get ? "ListAllVirtualMachines" : NULL;
  case FC_AZ_VM:
    return put   ? "CreateOrUpdateVirtualMachine"
           : get ? "GetVirtualMachine"
           : del ? "DeleteVirtualMachine"
                 : NULL;
  case FC_AZ_VM_VIEW:
    return get ? "InstanceView" : NULL;
  case FC_AZ_SKUS:
    return get ? "ListSkus" : NULL;
  case FC_AZ_OPERATION:
    return get ? "GetOperation" : NULL;
  default:
    return NULL;
  }
}

/* Throttle, error and slow faults, before the action runs. */
static bool request_faults(struct call *c) {
  struct azure *a = c->a;
  struct fc_fault_query q = {.service = "azure", .action = c->action};
  struct fc_faults *fl = fc_faults(a->s);
  struct fc_fault *f;
  if ((f = fc_faults_fire(fl, FC_FAULT_SLOW, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s))))
    c->resp->delay_ms += f->delay_ms;
  if (fc_faults_fire(fl, FC_FAULT_THROTTLE, &q, fc_elapsed_ms(a->s),
                     fc_rng(a->s))) {
    char ra[24];
    snprintf(ra, sizeof ra, "%lld", (long long)a->retry_after_s);
    fc_response_header(c->resp, "Retry-After", ra);
    arm_error(c, 429, "TooManyRequests",
              "The request is being throttled as the limit has been reached "
              "for operation type - %s. For more information, see - "
              "https://aka.ms/srpthrottlinglimits",
              c->action);
    return false;
  }
  if ((f = fc_faults_fire(fl, FC_FAULT_ERROR, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s)))) {
    const char *code =
        strcmp(f->code, "InternalError") ? f->code : "InternalServerError";
    if (f->status == 503 && !strcmp(f->code, "Unavailable"))
      code = "ServiceUnavailable";
    arm_error(c, f->status, code, "%s",
              f->message[0] ? f->message
                            : "Encountered internal server error. Diagnostic "
                              "information: timestamp '', subscription id '', "
                              "tracking id ''.");
    return false;
  }
  return true;
}

/* A resource provider's refusal of an api-version it does not have, in
 * ARM's words: Compute (a resource provider behind ARM) answers
 * NoRegisteredProviderFound naming the location, the type and every
 * version it supports, newest first; ARM's own types (resource groups,
 * subscriptions) answer InvalidApiVersionParameter. */
static void api_version_error(struct call *c, const char *v,
                              const char *const *versions) {
  struct tw_buf all;
  tw_buf_init(&all);
  size_t n = 0;
  while (versions[n])
    n++;
  for (size_t i = n; i-- > 0;)
    tw_buf_printf(&all, "%s%s", all.len ? ", " : "", versions[i]);
  if (versions != compute_versions) {
    arm_error(c, 400, "InvalidApiVersionParameter",
              "The api-version '%.32s' is invalid. The supported versions "
              "are '%s'. Please see https://aka.ms/api-versions for more "
              "details.",
              v, all.data);
    tw_buf_release(&all);
    return;
  }
  const struct fc_az_path *pa = &c->path;
  const char *type = pa->route == FC_AZ_SKUS        ? "skus"
                     : pa->route == FC_AZ_OPERATION ? "locations/operations"
                     : pa->route == FC_AZ_VM_SIZES  ? "locations/vmSizes"
                                                    : "virtualMachines";
  /* The location ARM routed by: the VM's, the path's, or the body's. */
  char loc[64] = "";
  const struct az_vm *vm =
      pa->name[0] ? find_vm(c->a, pa->resource_group, pa->name) : NULL;
  if (vm)
    snprintf(loc, sizeof loc, "%s", vm->req.location);
  else if (pa->location[0])
    fc_az_norm_location(pa->location, loc, sizeof loc);
  else if (c->req->body_len) {
    json_t *b = json_loadb(c->req->body, c->req->body_len, 0, NULL);
    const char *l = json_string_value(json_object_get(b, "location"));
    if (l)
      fc_az_norm_location(l, loc, sizeof loc);
    json_decref(b);
  }
  if (!loc[0] && c->a->cat->n_regions)
    snprintf(loc, sizeof loc, "%s", c->a->cat->regions[0].name);
  struct tw_buf locs;
  tw_buf_init(&locs);
  for (size_t i = 0; i < c->a->cat->n_regions; i++)
    tw_buf_printf(&locs, "%s%s", locs.len ? ", " : "",
                  c->a->cat->regions[i].name);
  arm_error(c, 400, "NoRegisteredProviderFound",
            "No registered resource provider found for location '%.32s' and "
            "API version '%.32s' for type '%s'. The supported api-versions "
            "are '%s'. The supported locations are '%s'.",
            loc, v, type, all.data, locs.data ? locs.data : "");
  tw_buf_release(&all);
  tw_buf_release(&locs);
}

static void handle_arm(struct call *c) {
  struct azure *a = c->a;
  const struct fc_az_path *pa = &c->path;
  const char *v = fc_params_get(&c->q, "api-version");
  if (!v) {
    arm_error(c, 400, "MissingApiVersionParameter",
              "The api-version query parameter (?api-version=) is required "
              "for all requests.");
    return;
  }
  if (!authenticate(c))
    return;
  if (pa->route != FC_AZ_SUB_LIST &&
      strcmp(pa->subscription, FC_AZ_SUBSCRIPTION)) {
    arm_error(c, 404, "SubscriptionNotFound",
              "The subscription '%.64s' could not be found.", pa->subscription);
    return;
  }
  c->action = arm_action(pa->route, c->req->method, pa->vm_action);
  if (pa->route == FC_AZ_ARM_OTHER) {
    arm_error(c, 404, "InvalidResourceType",
              "The resource type could not be found in the namespace for api "
              "version '%.32s'.",
              v);
    return;
  }
  if (!c->action) {
    arm_error(c, 405, "MethodNotAllowed",
              "The requested method %.16s is not allowed on this resource.",
              c->req->method);
    return;
  }
  count(a->calls, 32, c->action);
  const char *const *versions =
      pa->route == FC_AZ_RG || pa->route == FC_AZ_RESOURCES ||
              pa->route == FC_AZ_RG_LIST
          ? resources_versions
      : pa->route == FC_AZ_SUB_LIST || pa->route == FC_AZ_SUB_GET ||
              pa->route == FC_AZ_LOCATIONS
          ? subscriptions_versions
      : pa->route == FC_AZ_SKUS ? skus_versions
                                : compute_versions;
  if (!in_list(v, versions)) {
    api_version_error(c, v, versions);
    return;
  }
  if (!request_faults(c))
    return;
  if ((pa->route == FC_AZ_RESOURCES || pa->route == FC_AZ_VM_LIST ||
       pa->route == FC_AZ_VM || pa->route == FC_AZ_VM_VIEW) &&
      !find_rg(a, pa->resource_group)) {
    arm_error(c, 404, "ResourceGroupNotFound",
              "Resource group '%.90s' could not be found.", pa->resource_group);
    return;
  }
  if (pa->route == FC_AZ_VM_ACTION && !find_rg(a, pa->resource_group)) {
    arm_error(c, 404, "ResourceGroupNotFound",
              "Resource group '%.90s' could not be found.", pa->resource_group);
    return;
  }
  switch (pa->route) {
  case FC_AZ_RG:
    act_rg(c);
    break;
  case FC_AZ_RG_LIST:
    act_rg_list(c);
    break;
  case FC_AZ_SUB_LIST:
  case FC_AZ_SUB_GET:
    act_subscriptions(c);
    break;
  case FC_AZ_LOCATIONS:
    act_locations(c);
    break;
  case FC_AZ_VM_SIZES:
    act_vm_sizes(c);
    break;
  case FC_AZ_VM_ACTION:
    act_vm_action(c, v);
    break;
  case FC_AZ_RESOURCES:
    act_resources(c);
    break;
  case FC_AZ_VM_LIST:
  case FC_AZ_VM_LIST_ALL:
    act_list_vms(c);
    break;
  case FC_AZ_VM:
    if (!strcmp(c->req->method, "PUT"))
      act_put_vm(c, v);
    else if (!strcmp(c->req->method, "DELETE"))
      act_delete_vm(c, v);
    else
      act_get_vm(c);
    break;
  case FC_AZ_VM_VIEW:
    act_get_vm(c);
    break;
  case FC_AZ_SKUS:
    act_skus(c);
    break;
  case FC_AZ_OPERATION:
    act_operation(c);
    break;
  default:
    break;
  }
}

static bool az_claims(const struct fc_request *req) {
  struct fc_az_path p;
  return fc_az_route_path(req->raw_path, &p);
}

static void az_handle(void *ctx, const struct fc_request *req,
                      struct fc_response *resp) {
  struct azure *a = ctx;
  struct call c = {.a = a, .req = req, .resp = resp};
  struct tw_err err;
  tw_err_clear(&err);
  fc_params_init(&c.q);
  az_tick(a);
  char rid[40];
  fc_request_id(a->s, rid);
  fc_response_header(resp, "x-ms-request-id", rid);
  /* ARM echoes the caller's correlation id (clients tie their retries
   * together with it) and makes one up only when none was sent. */
  const char *corr = fc_header(req, "x-ms-correlation-request-id");
  fc_response_header(resp, "x-ms-correlation-request-id",
                     corr && *corr && strlen(corr) < 128 ? corr : rid);
  resp->content_type = AZ_JSON_CT;
  const char *host = fc_header(req, "Host");
  if (!host || strlen(host) > 100 || strpbrk(host, "/\\\"' \r\n"))
    host = "127.0.0.1";
  snprintf(c.base, sizeof c.base, "%s://%s", fc_tls(a->s) ? "https" : "http",
           host);
  fc_az_route_path(req->raw_path, &c.path);
  if (req->body_too_big) {
    arm_error(&c, 413, "RequestEntityTooLarge",
              "The request content size exceeds the maximum of %zu bytes.",
              fc_opts(a->s)->max_body_bytes);
    goto out;
  }
  if (req->raw_query &&
      fc_params_parse(&c.q, req->raw_query, strlen(req->raw_query), &err)) {
    arm_error(&c, 400, "InvalidQueryParameterValue",
              "The query string is malformed: %s", err.msg);
    goto out;
  }
  switch (c.path.route) {
  case FC_AZ_OPENID:
    c.action = "OpenIdConfiguration";
    break;
  case FC_AZ_TOKEN:
  case FC_AZ_TOKEN_V1:
    c.action = "Token";
    break;
  case FC_AZ_EVENTS:
    c.action = "ScheduledEvents";
    break;
  case FC_AZ_PRICES:
    c.action = "RetailPrices";
    break;
  case FC_AZ_MSI:
    c.action = "ManagedIdentity";
    break;
  default:
    handle_arm(&c);
    goto out;
  }
  count(a->calls, 32, c.action);
  bool get = !strcmp(req->method, "GET");
  if (((c.path.route == FC_AZ_TOKEN || c.path.route == FC_AZ_TOKEN_V1) &&
       strcmp(req->method, "POST")) ||
      (c.path.route == FC_AZ_EVENTS && !get && strcmp(req->method, "POST")) ||
      ((c.path.route == FC_AZ_OPENID || c.path.route == FC_AZ_PRICES ||
        c.path.route == FC_AZ_MSI) &&
       !get)) {
    arm_error(&c, 405, "MethodNotAllowed", "The method %.16s is not allowed.",
              req->method);
    goto out;
  }
  if (c.path.route != FC_AZ_EVENTS && !request_faults(&c))
    goto out;
  switch (c.path.route) {
  case FC_AZ_OPENID:
    act_openid(&c);
    break;
  case FC_AZ_TOKEN:
  case FC_AZ_TOKEN_V1:
    act_token(&c);
    break;
  case FC_AZ_EVENTS:
    act_events(&c);
    break;
  case FC_AZ_PRICES:
    act_prices(&c);
    break;
  case FC_AZ_MSI:
    act_msi(&c);
    break;
  default:
    break;
  }
out:
  fc_params_release(&c.q);
}

/* ---- control API: /_fake/azure/... ----------------------------------------
 */

static const char *state_name(const struct az_vm *vm) {
  switch (vm->state) {
  case VM_CREATING:
    return "creating";
  case VM_RUNNING:
    return "running";
  case VM_FAILED:
    return "failed";
  case VM_DELETING:
    return "deleting";
  case VM_DEALLOCATED:
    return "deallocated";
  case VM_DEALLOCATING:
    return "deallocating";
  case VM_STOPPING:
    return "stopping";
  case VM_STOPPED:
    return "stopped";
  case VM_STARTING:
    return "starting";
  }
  return "unknown";
}

static json_t *vm_state_json(const struct az_vm *vm) {
  char t[40];
  json_t *o = json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:O,s:b}", "name", vm->name,
      "resource_group", vm->rg, "location", vm->req.location, "zone",
      vm->req.zone, "vm_size", vm->req.vm_size, "priority", vm->req.priority,
      "eviction_policy", vm->req.eviction_policy, "state", state_name(vm),
      "tags", vm->req.tags, "evicted", vm->evicted);
  iso(vm->created_ms, t);
  json_object_set_new(o, "created", json_string(t));
  json_object_set_new(o, "provisioning_state", json_string(prov_state(vm)));
  if (vm->req.has_max_price)
    json_object_set_new(o, "max_price_uusd",
                        json_integer(vm->req.max_price_uusd));
  if (vm->fail_code[0])
    json_object_set_new(o, "failure", json_string(vm->fail_code));
  if (vm->notice_ms >= 0) {
    iso(vm->notice_ms, t);
    json_object_set_new(o, "notice_time", json_string(t));
    iso(vm->evict_ms, t);
    json_object_set_new(o, "evict_time", json_string(t));
  }
  return o;
}

static json_t *config_json(const struct azure *a) {
  return json_pack(
      "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "create_ms",
      (json_int_t)a->create_ms, "delete_ms", (json_int_t)a->delete_ms,
      "token_ttl_s", (json_int_t)a->token_ttl_s, "retry_after_s",
      (json_int_t)a->retry_after_s, "page_size", (json_int_t)a->page_size,
      "vcpu_limit", (json_int_t)a->vcpu_limit, "spot_vcpu_limit",
      (json_int_t)a->spot_vcpu_limit, "lro_header", a->lro_header);
}

static void az_dump(void *ctx, json_t *out) {
  struct azure *a = ctx;
  az_tick(a);
  json_t *vms = json_array();
  for (size_t i = 0; i < a->n_vms; i++)
    json_array_append_new(vms, vm_state_json(a->vms[i]));
  json_object_set_new(out, "vms", vms);
  json_object_set_new(out, "operations", json_integer((json_int_t)a->n_ops));
  json_object_set_new(out, "tokens", json_integer((json_int_t)a->n_tokens));
  json_object_set_new(out, "calls", counters_json(a->calls, 32));
  json_object_set_new(out, "errors", counters_json(a->errors, 64));
  json_object_set_new(out, "config", config_json(a));
}

static bool cfg_int(const json_t *body, const char *key, int64_t lo, int64_t hi,
                    int64_t *out, struct fc_response *resp) {
  json_t *v = json_object_get(body, key);
  if (!v)
    return true;
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi) {
    fc_json_error(resp, 400, "%s: expected an integer in %lld..%lld", key,
                  (long long)lo, (long long)hi);
    return false;
  }
  *out = json_integer_value(v);
  return true;
}

static bool az_control(void *ctx, const char *method, const char *rest,
                       const json_t *body, struct fc_response *resp) {
  struct azure *a = ctx;
  az_tick(a);
  if (!strcmp(rest, "/state") && !strcmp(method, "GET")) {
    json_t *o = json_object();
    az_dump(a, o);
    fc_json_reply(resp, 200, o);
    return true;
  }
  if (!strcmp(rest, "/config")) {
    if (!strcmp(method, "POST")) {
      struct azure t = *a;
      json_t *lh = json_object_get(body, "lro_header");
      if (!json_is_object(body) ||
          !cfg_int(body, "create_ms", 0, 86400000, &t.create_ms, resp) ||
          !cfg_int(body, "delete_ms", 0, 86400000, &t.delete_ms, resp) ||
          !cfg_int(body, "token_ttl_s", 1, 86400, &t.token_ttl_s, resp) ||
          !cfg_int(body, "retry_after_s", 0, 3600, &t.retry_after_s, resp) ||
          !cfg_int(body, "page_size", 1, 1000, &t.page_size, resp) ||
          !cfg_int(body, "vcpu_limit", 0, 1000000, &t.vcpu_limit, resp) ||
          !cfg_int(body, "spot_vcpu_limit", 0, 1000000, &t.spot_vcpu_limit,
                   resp))
        return true;
      if (lh && (!json_is_string(lh) ||
                 (strcmp(json_string_value(lh), "Azure-AsyncOperation") &&
                  strcmp(json_string_value(lh), "Operation-Location")))) {
        fc_json_error(resp, 400,
                      "lro_header: Azure-AsyncOperation or "
                      "Operation-Location");
        return true;
      }
      if (lh)
        snprintf(t.lro_header, sizeof t.lro_header, "%s",
                 json_string_value(lh));
      *a = t;
    }
    fc_json_reply(resp, 200, config_json(a));
    return true;
  }
  if (!strcmp(rest, "/identity") && !strcmp(method, "POST")) {
    /* {certificate: PEM}: the client's registered certificate;
     * {federated_token: T}: the token a workload identity presents */
    const char *pem = json_string_value(json_object_get(body, "certificate"));
    const char *fed =
        json_string_value(json_object_get(body, "federated_token"));
    if (pem) {
      BIO *bio = BIO_new_mem_buf(pem, -1);
      X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
      BIO_free(bio);
      if (!x) {
        fc_json_error(resp, 400, "certificate: not a PEM certificate");
        return true;
      }
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int n = 0;
      X509_digest(x, EVP_sha1(), md, &n);
      b64url(md, n, a->client_x5t);
      X509_digest(x, EVP_sha256(), md, &n);
      b64url(md, n, a->client_x5t256);
      EVP_PKEY_free(a->client_key);
      a->client_key = X509_get_pubkey(x);
      X509_free(x);
    }
    if (fed)
      snprintf(a->federated, sizeof a->federated, "%s", fed);
    fc_json_reply(resp, 200,
                  json_pack("{s:b,s:b,s:I,s:I}", "certificate",
                            a->client_key != NULL, "federated",
                            *a->federated != 0, "msi_tokens",
                            (json_int_t)a->msi_tokens, "assertion_tokens",
                            (json_int_t)a->assertion_tokens));
    return true;
  }
  if (!strcmp(rest, "/tokens/expire") && !strcmp(method, "POST")) {
    int64_t now = fc_now_ms(a->s);
    for (size_t i = 0; i < a->n_tokens; i++)
      if (a->tokens[i].expires_ms > now)
        a->tokens[i].expires_ms = now;
    fc_json_reply(resp, 200,
                  json_pack("{s:I}", "expired", (json_int_t)a->n_tokens));
    return true;
  }
  if (!strncmp(rest, "/vms/", 5)) {
    char name[FC_AZ_NAME_MAX];
    const char *n = rest + 5;
    size_t len = strcspn(n, "/");
    if (!len || len >= sizeof name)
      return false;
    memcpy(name, n, len);
    name[len] = '\0';
    const char *sub = n + len;
    struct az_vm *vm = find_vm(a, NULL, name);
    if (!vm) {
      fc_json_error(resp, 404, "no VM %s", name);
      return true;
    }
    if (!*sub && !strcmp(method, "GET")) {
      fc_json_reply(resp, 200, vm_state_json(vm));
      return true;
    }
    if (!strcmp(sub, "/scheduledevents") && !strcmp(method, "GET")) {
      fc_json_reply(resp, 200, events_json(a, vm->name));
      return true;
    }
    if (!strcmp(sub, "/evict") && !strcmp(method, "POST")) {
      int64_t lead = AZ_PREEMPT_MIN_MS, delay = 0;
      if (body && (!cfg_int(body, "lead_ms", 0, 86400000, &lead, resp) ||
                   !cfg_int(body, "delay_ms", 0, 86400000, &delay, resp)))
        return true;
      if (!vm_spot(vm) || !vm_live(vm)) {
        fc_json_error(resp, 409, "%s is not a live Spot VM", vm->name);
        return true;
      }
      if (vm->notice_ms >= 0) {
        fc_json_error(resp, 409, "%s already has a Preempt notice", vm->name);
        return true;
      }
      int64_t at = fc_now_ms(a->s) + delay;
      if (vm->state == VM_CREATING && at < vm->next_ms)
        at = vm->next_ms;
      schedule_preempt(a, vm, at, lead);
      az_tick(a);
      char t1[40], t2[40];
      iso(vm->notice_ms, t1);
      iso(vm->evict_ms, t2);
      fc_json_reply(resp, 200,
                    json_pack("{s:s,s:s,s:s}", "notice_time", t1, "not_before",
                              t2, "event_id", vm->event_id));
      return true;
    }
  }
  return false;
}

/* ---- life cycle ------------------------------------------------------------
 */

static void az_reset(void *ctx) {
  struct azure *a = ctx;
  for (size_t i = 0; i < a->n_vms; i++)
    vm_free(a->vms[i]);
  free(a->vms);
  free(a->ops);
  free(a->tokens);
  free(a->rgs);
  EVP_PKEY_free(a->client_key);
  struct fc_server *s = a->s;
  struct fc_az_catalog *cat = a->cat;
  memset(a, 0, sizeof *a);
  a->s = s;
  a->cat = cat;
  a->create_ms = fc_opts(s)->pending_ms;
  a->delete_ms = 3000;
  a->token_ttl_s = 3599;
  a->retry_after_s = 1;
  a->page_size = 100;
  a->vcpu_limit = 350; /* Total Regional vCPUs of a new subscription */
  a->spot_vcpu_limit = 350;
  snprintf(a->lro_header, sizeof a->lro_header, "Azure-AsyncOperation");
  add_rg(a, FC_AZ_RESOURCE_GROUP, "eastus");
}

static enum tw_rc az_create(struct fc_server *s, void **ctx,
                            struct tw_err *err) {
  struct azure *a = tw_calloc(1, sizeof *a);
  a->s = s;
  enum tw_rc rc = fc_az_catalog_load(fc_opts(s)->catalog_path, &a->cat, err);
  if (rc) {
    free(a);
    return rc;
  }
  az_reset(a);
  *ctx = a;
  return TW_OK;
}

static void az_destroy(void *ctx) {
  struct azure *a = ctx;
  az_reset(a);
  free(a->rgs);
  fc_az_catalog_free(a->cat);
  free(a);
}

/* ---- the VMs' instance metadata (--boot, boot.h) ------------------------
 *
 * Scheduled Events as the Azure docs give them: GET with Metadata: true
 * lists the VM's events; POST {"StartRequests": [{"EventId"}]} approves
 * one, and an approved Preempt evicts at once. */

static void az_text(struct fc_response *resp, int status, const char *t) {
  resp->status = status;
  resp->content_type = "text/plain";
  tw_buf_reset(&resp->body);
  tw_buf_adds(&resp->body, t);
}

static bool az_metadata(void *ctx, const char *id, const char *sub,
                        const struct fc_request *req,
                        struct fc_response *resp) {
  struct azure *a = ctx;
  az_tick(a);
  struct az_vm *vm = find_vm(a, NULL, id);
  if (!vm)
    return false;
  count(a->calls, 32, "InstanceMetadata");
  const char *md = fc_header(req, "Metadata");
  if (!md || strcasecmp(md, "true")) {
    fc_json_reply(resp, 400,
                  json_pack("{s:s}", "error",
                            "Bad request. Required metadata header not "
                            "specified"));
    return true;
  }
  if (!req->raw_query || !strstr(req->raw_query, "api-version=")) {
    fc_json_reply(resp, 400,
                  json_pack("{s:s}", "error",
                            "Bad request. api-version was not specified in "
                            "the request."));
    return true;
  }
  if (!strcmp(sub, "/metadata/scheduledevents")) {
    if (!strcmp(req->method, "GET")) {
      fc_json_reply(resp, 200, events_json(a, vm->name));
      return true;
    }
    if (strcmp(req->method, "POST")) {
      az_text(resp, 405, "Method Not Allowed");
      return true;
    }
    char ids[16][64];
    int n = fc_az_start_requests(req->body, req->body_len, ids, 16);
    if (n < 0) {
      fc_json_reply(
          resp, 400,
          json_pack("{s:s}", "error", "Bad request. StartRequests expected"));
      return true;
    }
    for (int i = 0; i < n; i++)
      if (!strcmp(ids[i], vm->event_id) && vm->phase == 1) {
        vm->evict_ms = fc_now_ms(a->s);
        az_tick(a);
      }
    resp->status = 200;
    resp->content_type = "application/json";
    tw_buf_reset(&resp->body);
    return true;
  }
  if (!strcmp(sub, "/metadata/instance/compute/name"))
    az_text(resp, 200, vm->name);
  else if (!strcmp(sub, "/metadata/instance/compute/vmId"))
    az_text(resp, 200, vm->vm_id);
  else if (!strcmp(sub, "/metadata/instance/compute/vmSize"))
    az_text(resp, 200, vm->req.vm_size);
  else
    az_text(resp, 404, "Not Found");
  return true;
}

static void az_tick_cb(void *ctx) { az_tick(ctx); }

const struct fc_module_ops fc_module_azure = {
    .name = "azure",
    .create = az_create,
    .destroy = az_destroy,
    .claims = az_claims,
    .handle = az_handle,
    .control = az_control,
    .dump = az_dump,
    .reset = az_reset,
    .metadata = az_metadata,
    .tick = az_tick_cb,
};
