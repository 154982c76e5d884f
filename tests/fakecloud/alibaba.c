/* alibaba.c - the Alibaba Cloud module of tradewind-fakecloud: ECS's RPC
 * API (2014-05-26) in both signature shapes (alibaba_req.c), instances
 * kept in memory and moved through Pending, Running, Stopping and release
 * by the fake clock, spot reclaim with ECS's five-minute notice and the
 * protection period of SpotDuration, and CloudMonitor's
 * DescribeSystemEventAttribute (2019-01-01) for the reclaim event.
 *
 * Answers are built as JSON trees and written as JSON, or as XML for a
 * legacy request that asks Format=XML (its default), as ECS does.  The
 * catalog is built in (below): regions, zones, instance types with the
 * specs of ECS's documentation and illustrative CNY prices.  The module
 * runs with the server's mutex held (module.h). */
#include "tests/fakecloud/alibaba.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/alibaba/ecs_json.h"
#include "tests/fakecloud/alibaba_req.h"
#include "tests/fakecloud/boot.h"
#include "tests/fakecloud/clock.h"
#include "tests/fakecloud/fakecloud.h"
#include "tests/fakecloud/params.h"

#define ECS_VERSION "2014-05-26"
#define CMS_VERSION "2019-01-01"
#define NOTICE_LEAD_MS (5 * 60 * 1000) /* reclaim notice to release */
#define SPOT_STEP_MS 3600000LL         /* spot price history: hourly */
#define SPOT_HISTORY_MS (30LL * 86400 * 1000)
#define SPOT_PAGE 1000
#define NONCES_MAX 8192
#define EVENTS_MAX 4096

/* ---- built-in catalog ---------------------------------------------------- *
 * Specs: ECS documentation, "Instance families" (shared/data/catalogs/
 * aliyun/ecs_instance_families.csv; test_alibaba_fake checks them against
 * it when present).  Prices: illustrative pay-as-you-go CNY per hour in the
 * range of the public list prices, not authoritative. */

struct ali_itype {
  const char *name, *family;
  int vcpus;
  const char *memory_gib; /* as ECS writes MemorySize */
  int gpus;
  const char *gpu_spec;
  int gpu_gib;
};

static const struct ali_itype itypes[] = {
    {"ecs.g7.large", "ecs.g7", 2, "8", 0, "", 0},
    {"ecs.g7.xlarge", "ecs.g7", 4, "16", 0, "", 0},
    {"ecs.c7.xlarge", "ecs.c7", 4, "8", 0, "", 0},
    {"ecs.r7.large", "ecs.r7", 2, "16", 0, "", 0},
    {"ecs.g6.large", "ecs.g6", 2, "8", 0, "", 0},
    {"ecs.gn6i-c4g1.xlarge", "ecs.gn6i", 4, "15", 1, "NVIDIA T4", 16},
    {"ecs.gn6v-c8g1.2xlarge", "ecs.gn6v", 8, "32", 1, "NVIDIA V100", 16},
    {"ecs.gn7-c12g1.3xlarge", "ecs.gn7", 12, "95", 1, "NVIDIA A100", 40},
    {"ecs.gn7-c13g1.26xlarge", "ecs.gn7", 104, "760", 8, "NVIDIA A100", 40},
};
#define N_ITYPES (sizeof itypes / sizeof itypes[0])

struct ali_region {
  const char *name, *id_prefix;
  const char *zones[4];
  int price_permille; /* price level against cn-hangzhou */
};

static const struct ali_region regions[] = {
    {"cn-hangzhou",
     "bp",
     {"cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j", "cn-hangzhou-k"},
     1000},
    {"cn-shanghai",
     "uf",
     {"cn-shanghai-l", "cn-shanghai-m", "cn-shanghai-n", NULL},
     1000},
    {"ap-southeast-1",
     "t4",
     {"ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c", NULL},
     1180},
};
#define N_REGIONS (sizeof regions / sizeof regions[0])

/* Pay-as-you-go CNY per hour in cn-hangzhou, in thousandths. */
static const int64_t od_milli[N_ITYPES] = {693,  1386,  1117,  878,   624,
                                           8537, 26460, 34650, 277200};

/* Whether itype t is sold in zone z of region r: GPUs are not everywhere. */
static bool sold(size_t t, size_t r, size_t z) {
  const char *n = itypes[t].name;
  if (!strncmp(n, "ecs.gn7-", 8))
    return r == 0 && (z == 1 || z == 2);
  if (!strncmp(n, "ecs.gn6v", 8))
    return r < 2 && z != 0;
  return true;
}

static int itype_index(const char *name) {
  for (size_t i = 0; name && i < N_ITYPES; i++)
    if (!strcmp(itypes[i].name, name))
      return (int)i;
  return -1;
}

static int region_index(const char *name) {
  for (size_t i = 0; name && i < N_REGIONS; i++)
    if (!strcmp(regions[i].name, name))
      return (int)i;
  return -1;
}

static int zone_index(size_t r, const char *name) {
  for (size_t z = 0; name && z < 4 && regions[r].zones[z]; z++)
    if (!strcmp(regions[r].zones[z], name))
      return (int)z;
  return -1;
}

static int64_t od_price(size_t t, size_t r) {
  return od_milli[t] * regions[r].price_permille / 1000;
}

/* ---- state --------------------------------------------------------------- */

enum ist {
  IS_PENDING,
  IS_RUNNING,
  IS_STOPPING,
  IS_STOPPED,
  IS_RELEASED,
  IS_STARTING /* StartInstance: Stopped -> Starting -> Running */
};

static const char *ist_name(enum ist s) {
  static const char *const n[] = {"Pending", "Running",  "Stopping",
                                  "Stopped", "Released", "Starting"};
  return n[s];
}

struct inst {
  uint64_t seq;
  char id[32];
  size_t region, zone, itype;
  char image[128], name[129], token[65];
  char disk_category[24], ram_role[65];
  int disk_gb;
  enum ist state;
  int64_t create_ms;
  int64_t next_ms;    /* end of Pending or Stopping; -1 none */
  bool release_after; /* Stopping ends in release (a delete) */
  bool spot;
  char strategy[24], behavior[12];
  int64_t limit_milli; /* SpotPriceLimit, -1 none */
  int duration_h;
  int64_t notice_ms, reclaim_ms; /* -1 none */
  bool noticed;                  /* the notice is out: Recycling lock */
  char private_ip[16];
  struct {
    char *key, *value;
  } tags[FC_ALI_MAX_TAGS];
  size_t n_tags;
  /* --boot (boot.h): the decoded user data and the booted session. */
  char *user_data;
  size_t user_data_len;
  struct fc_boot boot;
};

struct token {
  char token[65];
  size_t region;
  uint64_t hash;
  char **ids;
  size_t n_ids;
};

struct event {
  char instance_id[32];
  size_t region;
  int64_t time_ms;
};

struct counter {
  char name[48];
  int64_t n;
};

enum stock { ST_WITH = 0, ST_CLOSED, ST_WITHOUT };
static const char *const stock_names[] = {"WithStock", "ClosedWithStock",
                                          "WithoutStock"};

struct price_override {
  size_t itype, region, zone;
  int64_t from_ms, milli;
};

struct ali {
  struct fc_server *s;
  struct inst **inst;
  size_t n_inst;
  uint64_t next_seq;
  struct token *tokens;
  size_t n_tokens;
  struct event events[EVENTS_MAX];
  size_t n_events;
  struct {
    char nonce[128];
    int64_t ms;
  } nonces[NONCES_MAX];
  size_t n_nonces, next_nonce;
  struct counter calls[64], errors[64];
  /* stock[market][itype][region][zone] */
  unsigned char stock[2][N_ITYPES][N_REGIONS][4];
  struct price_override *overrides;
  size_t n_overrides;
  int64_t pending_ms, shutdown_ms;
  int64_t vcpu_limit_on_demand, vcpu_limit_spot;
};

static void count(struct counter *c, const char *name) {
  size_t i;
  for (i = 0; i < 64 && c[i].name[0]; i++)
    if (!strcmp(c[i].name, name)) {
      c[i].n++;
      return;
    }
  if (i == 64)
    i = 63, snprintf(c[i].name, sizeof c[i].name, "(other)");
  else
    snprintf(c[i].name, sizeof c[i].name, "%s", name);
  c[i].n++;
}

static struct inst *find(struct ali *a, const char *id) {
  for (size_t i = 0; i < a->n_inst; i++)
    if (!strcmp(a->inst[i]->id, id))
      return a->inst[i];
  return NULL;
}

static void inst_free(struct inst *in) {
  fc_boot_kill(&in->boot);
  free(in->user_data);
  for (size_t t = 0; t < in->n_tags; t++) {
    free(in->tags[t].key);
    free(in->tags[t].value);
  }
  free(in);
}

static void add_event(struct ali *a, const struct inst *in) {
  struct event *e =
      &a->events[a->n_events < EVENTS_MAX ? a->n_events++
                                          : (size_t)(in->seq % EVENTS_MAX)];
  snprintf(e->instance_id, sizeof e->instance_id, "%s", in->id);
  e->region = in->region;
  e->time_ms = in->notice_ms;
}

/* Schedules the reclaim of a spot instance asked for at `at`: never inside
 * the protection period (SpotDuration hours from creation), and the
 * notice always five minutes before the release. */
static void schedule_reclaim(struct inst *in, int64_t at) {
  int64_t protect_end = in->create_ms + (int64_t)in->duration_h * 3600000;
  int64_t release = at + NOTICE_LEAD_MS;
  if (release < protect_end)
    release = protect_end;
  in->reclaim_ms = release;
  in->notice_ms = release - NOTICE_LEAD_MS;
}

/* Applies every transition due now, in time order per instance. */
static void ali_tick(struct ali *a) {
  int64_t now = fc_now_ms(a->s);
  struct fc_faults *faults = fc_faults(a->s);
  for (size_t r = 0; r < faults->n; r++) {
    struct fc_fault *f = &faults->v[r];
    if (f->kind != FC_FAULT_SPOT_INTERRUPTION || !f->instance_id[0])
      continue;
    struct inst *in = find(a, f->instance_id);
    if (!in || !in->spot || in->notice_ms >= 0 || in->state == IS_RELEASED)
      continue;
    struct fc_fault_query q = {.service = "ecs",
                               .instance_id = in->id,
                               .instance_type = itypes[in->itype].name,
                               .zone = regions[in->region].zones[in->zone],
                               .market = "spot"};
    if (!fc_fault_matches(f, &q, fc_elapsed_ms(a->s)) ||
        !fc_rng_chance_ppm(fc_rng(a->s), f->probability_ppm))
      continue;
    if (f->count > 0)
      f->count--;
    f->fired++;
    schedule_reclaim(in, now);
  }
  for (size_t i = 0; i < a->n_inst; i++) {
    struct inst *in = a->inst[i];
    for (;;) {
      if (in->state == IS_PENDING && now >= in->next_ms &&
          (in->reclaim_ms < 0 || in->next_ms < in->reclaim_ms)) {
        in->state = IS_RUNNING;
        in->next_ms = -1;
        continue;
      }
      if (in->notice_ms >= 0 && now >= in->notice_ms &&
          (in->state == IS_PENDING || in->state == IS_RUNNING) &&
          in->notice_ms > -1 && !in->release_after) {
        /* The notice: CloudMonitor's event, and the Recycling lock. */
        if (!in->noticed)
          add_event(a, in);
        in->noticed = true;
      }
      if (in->reclaim_ms >= 0 && now >= in->reclaim_ms &&
          (in->state == IS_PENDING || in->state == IS_RUNNING)) {
        if (!strcmp(in->behavior, "Stop")) {
          in->state = IS_STOPPED; /* economical mode: kept, not billed */
        } else {
          in->state = IS_RELEASED;
        }
        continue;
      }
      if (in->state == IS_STARTING && now >= in->next_ms) {
        in->state = IS_RUNNING;
        in->next_ms = -1;
        continue;
      }
      if (in->state == IS_STOPPING && in->next_ms >= 0 && now >= in->next_ms) {
        in->state = in->release_after ? IS_RELEASED : IS_STOPPED;
        in->next_ms = -1;
        continue;
      }
      break;
    }
    /* --boot: up while Running, down once it leaves. */
    if (in->user_data && in->state == IS_RUNNING && !in->boot.sid)
      fc_boot_start(a->s, in->id, in->user_data, in->user_data_len, &in->boot);
    else if (in->state != IS_RUNNING && in->state != IS_PENDING)
      fc_boot_kill(&in->boot);
  }
  /* ECS forgets released instances at once. */
  size_t w = 0;
  for (size_t i = 0; i < a->n_inst; i++) {
    if (a->inst[i]->state == IS_RELEASED)
      inst_free(a->inst[i]);
    else
      a->inst[w++] = a->inst[i];
  }
  a->n_inst = w;
}

/* ---- spot prices --------------------------------------------------------- */

/* A grid point: the catalog's spot level (a fifth to a third of
 * pay-as-you-go, fixed per zone by the seed) moved by up to +-10 % per
 * hour, in thousandths of CNY.  Stateless, so every page agrees. */
static int64_t spot_at_step(struct ali *a, size_t t, size_t r, size_t z,
                            int64_t step) {
  int64_t od = od_price(t, r);
  uint64_t hz =
      fc_hash3(fc_seed(a->s) ^ fc_hash_str(itypes[t].name), r * 8 + z, 0);
  int64_t base = od * (200 + (int64_t)(hz % 134)) / 1000;
  uint64_t h = fc_hash3(fc_seed(a->s) ^ fc_hash_str(itypes[t].name), r * 8 + z,
                        (uint64_t)step + 1);
  int64_t p = base + base * ((int64_t)(h % 201) - 100) / 1000;
  if (p > od)
    p = od;
  return p < 1 ? 1 : p;
}

static int64_t spot_now(struct ali *a, size_t t, size_t r, size_t z,
                        int64_t now) {
  const struct price_override *best = NULL;
  for (size_t i = 0; i < a->n_overrides; i++) {
    const struct price_override *po = &a->overrides[i];
    if (po->itype == t && po->region == r && po->zone == z &&
        po->from_ms <= now && (!best || po->from_ms >= best->from_ms))
      best = po;
  }
  if (best)
    return best->milli;
  return spot_at_step(a, t, r, z, now / SPOT_STEP_MS);
}

/* A price in thousandths of CNY as a JSON number with three decimals. */
static json_t *money(int64_t milli) {
  char t[32];
  snprintf(t, sizeof t, "%lld.%03lld", (long long)(milli / 1000),
           (long long)(milli % 1000));
  return json_real(strtod(t, NULL));
}

/* ---- answers ------------------------------------------------------------- */

struct call {
  struct ali *a;
  struct fc_ali_call c;
  const struct fc_request *req;
  struct fc_response *resp;
  char request_id[40];
  size_t region;
  struct tw_err err;
};

static int error_status(const char *code) {
  static const struct {
    const char *code;
    int status;
  } map[] = {
      {"InvalidAccessKeyId.NotFound", 404},
      {"InvalidAction.NotFound", 404},
      {"InvalidRegionId.NotFound", 404},
      {"InvalidInstanceId.NotFound", 404},
      {"InvalidInstanceChargeType.NotFound", 404},
      {"OperationDenied.NoStock", 403},
      {"IncorrectInstanceStatus", 403},
      {"IncorrectInstanceStatus.Initializing", 403},
      {"InvalidInstanceType.ZoneNotSupported", 403},
      {"RequestEntityTooLarge", 413},
      {"InternalError", 500},
      {"ServiceUnavailable", 503},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i].code, code))
      return map[i].status;
  return 400;
}

static void reply(struct call *k, int status, const char *root, json_t *body) {
  struct fc_response *resp = k->resp;
  resp->status = status;
  tw_buf_reset(&resp->body);
  if (k->c.xml) {
    resp->content_type = "text/xml;charset=utf-8";
    fc_ali_json_to_xml(&resp->body, root, body);
  } else {
    char *t = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15));
    resp->content_type = "application/json;charset=utf-8";
    tw_buf_adds(&resp->body, t ? t : "{}");
    free(t);
  }
  json_decref(body);
}

static void ali_error(struct call *k, int status, const char *code,
                      const char *msg) {
  count(k->a->errors, code);
  char rec[160];
  snprintf(rec, sizeof rec, "https://api.aliyun.com/troubleshoot?q=%s", code);
  json_t *b = json_pack("{s:s,s:s,s:s,s:s,s:s}", "RequestId", k->request_id,
                        "HostId", "ecs.aliyuncs.com", "Code", code, "Message",
                        msg, "Recommend", rec);
  reply(k, status ? status : error_status(code), "Error", b);
}

static void ali_error_err(struct call *k) {
  ali_error(k, 0, k->err.detail[0] ? k->err.detail : "InternalError",
            k->err.msg);
}

static json_t *ok_body(struct call *k) {
  return json_pack("{s:s}", "RequestId", k->request_id);
}

static void ok(struct call *k, json_t *body) {
  char root[96];
  snprintf(root, sizeof root, "%sResponse", k->c.action);
  reply(k, 200, root, body);
}

static bool need_region(struct call *k) {
  const char *r = fc_params_get(&k->c.p, "RegionId");
  if (!r || !*r) {
    ali_error(k, 0, "MissingParameter",
              "The input parameter \"RegionId\" that is mandatory for "
              "processing this request is not supplied.");
    return false;
  }
  int ri = region_index(r);
  if (ri < 0) {
    ali_error(k, 0, "InvalidRegionId.NotFound",
              "The specified RegionId does not exist.");
    return false;
  }
  k->region = (size_t)ri;
  return true;
}

static void fmt_minutes(int64_t ms, char out[32]) {
  char t[32];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  /* "2017-12-10T04:04Z": DescribeInstances writes minutes. */
  snprintf(out, 32, "%.16sZ", t);
}

static void fmt_seconds(int64_t ms, char out[32]) { fc_iso_seconds(ms, out); }

static json_t *inst_json(const struct inst *in) {
  const struct ali_itype *it = &itypes[in->itype];
  char created[32];
  fmt_minutes(in->create_ms, created);
  json_t *tags = json_array();
  for (size_t t = 0; t < in->n_tags; t++)
    json_array_append_new(tags,
                          json_pack("{s:s,s:s}", "TagKey", in->tags[t].key,
                                    "TagValue", in->tags[t].value));
  json_t *locks = json_array();
  if (in->noticed && in->state != IS_STOPPED)
    json_array_append_new(locks, json_pack("{s:s}", "LockReason", "Recycling"));
  json_t *o = json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,"
      "s:s,s:s,s:s}",
      "InstanceId", in->id, "InstanceName", in->name, "HostName", in->name,
      "RegionId", regions[in->region].name, "ZoneId",
      regions[in->region].zones[in->zone], "InstanceType", it->name, "Cpu",
      it->vcpus, "Memory", (json_int_t)(atoi(it->memory_gib) * 1024),
      "GPUAmount", it->gpus, "GPUSpec", it->gpu_spec, "InstanceTypeFamily",
      it->family, "Status", ist_name(in->state), "CreationTime", created,
      "StartTime", created, "ImageId", in->image, "InstanceChargeType",
      "PostPaid", "InstanceNetworkType", "vpc", "OSType", "linux",
      "SpotStrategy", in->strategy);
  json_object_set_new(o, "SpotDuration", json_integer(in->duration_h));
  json_object_set_new(o, "SpotInterruptionBehavior", json_string(in->behavior));
  json_object_set_new(o, "SpotPriceLimit",
                      in->limit_milli >= 0 ? money(in->limit_milli)
                                           : json_real(0));
  json_object_set_new(o, "InternetChargeType", json_string("PayByTraffic"));
  json_object_set_new(o, "ExpiredTime", json_string("2099-12-31T15:59Z"));
  json_object_set_new(
      o, "StoppedMode",
      json_string(in->state == IS_STOPPED ? "StopCharging" : "Not-applicable"));
  json_object_set_new(
      o, "VpcAttributes",
      json_pack("{s:s,s:s,s:{s:[s]},s:s}", "VpcId", "vpc-tradewindfake",
                "VSwitchId", "vsw-tradewindfake", "PrivateIpAddress",
                "IpAddress", in->private_ip, "NatIpAddress", ""));
  json_object_set_new(o, "PublicIpAddress", json_pack("{s:[]}", "IpAddress"));
  json_object_set_new(o, "InnerIpAddress", json_pack("{s:[]}", "IpAddress"));
  json_object_set_new(o, "Tags", json_pack("{s:o}", "Tag", tags));
  json_object_set_new(o, "OperationLocks",
                      json_pack("{s:o}", "LockReason", locks));
  return o;
}

/* ---- RunInstances -------------------------------------------------------- */

static uint64_t params_hash(const struct fc_params *p) {
  static const char *const skip[] = {"ClientToken",
                                     "Signature",
                                     "SignatureNonce",
                                     "SignatureMethod",
                                     "SignatureVersion",
                                     "Timestamp",
                                     "AccessKeyId",
                                     "Format",
                                     "Action",
                                     "Version",
                                     NULL};
  uint64_t h = 0;
  for (size_t i = 0; i < p->n; i++) {
    bool sk = false;
    for (const char *const *s = skip; *s && !sk; s++)
      sk = !strcmp(p->v[i].key, *s);
    if (!sk) /* a sum: the order of the parameters does not matter */
      h += fc_hash3(fc_hash_str(p->v[i].key), fc_hash_str(p->v[i].value), 7);
  }
  return h;
}

static int64_t vcpus_in_use(struct ali *a, size_t region, bool spot) {
  int64_t n = 0;
  for (size_t i = 0; i < a->n_inst; i++)
    if (a->inst[i]->region == region && a->inst[i]->spot == spot &&
        a->inst[i]->state != IS_STOPPED)
      n += itypes[a->inst[i]->itype].vcpus;
  return n;
}

static void run_reply(struct call *k, char **ids, size_t n, int64_t price) {
  if (!strcmp(k->c.action, "CreateInstance")) {
    /* The older one-instance API: InstanceId, no set. */
    char order[24];
    snprintf(order, sizeof order, "%llu",
             (unsigned long long)(200000000000ULL +
                                  fc_hash_str(ids[0]) % 100000000000ULL));
    json_t *b = ok_body(k);
    json_object_set_new(b, "InstanceId", json_string(ids[0]));
    json_object_set_new(b, "OrderId", json_string(order));
    json_object_set_new(b, "TradePrice", money(price));
    ok(k, b);
    return;
  }
  json_t *set = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(set, json_string(ids[i]));
  json_t *b = ok_body(k);
  char order[24];
  snprintf(order, sizeof order, "%llu",
           (unsigned long long)(200000000000ULL +
                                fc_hash_str(ids[0]) % 100000000000ULL));
  json_object_set_new(b, "InstanceIdSets",
                      json_pack("{s:o}", "InstanceIdSet", set));
  json_object_set_new(b, "OrderId", json_string(order));
  json_object_set_new(b, "TradePrice", money(price));
  ok(k, b);
}

static void act_run(struct call *k) {
  struct ali *a = k->a;
  struct fc_ali_run r;
  if (fc_ali_parse_run(&k->c.p, &r, &k->err)) {
    ali_error_err(k);
    return;
  }
  if (!need_region(k))
    return;
  size_t reg = k->region;
  int t = itype_index(r.itype);
  if (t < 0) {
    ali_error(k, 0, "InvalidInstanceType.ValueNotSupported",
              "The specified InstanceType does not exist or beyond the "
              "permitted range.");
    return;
  }
  int z = -1;
  if (r.zone) {
    z = zone_index(reg, r.zone);
    if (z < 0) {
      ali_error(k, 0, "InvalidZoneId.NotFound",
                "The specified zone does not exist.");
      return;
    }
    if (!sold((size_t)t, reg, (size_t)z)) {
      ali_error(k, 0, "InvalidInstanceType.ZoneNotSupported",
                "The specified zone does not support this instancetype.");
      return;
    }
  }
  /* Idempotency: the same token with the same parameters answers with the
   * instances of the first call; with others it is refused. */
  uint64_t h = params_hash(&k->c.p);
  if (r.token) {
    for (size_t i = 0; i < a->n_tokens; i++) {
      struct token *tk = &a->tokens[i];
      if (strcmp(tk->token, r.token) || tk->region != reg)
        continue;
      if (tk->hash != h) {
        ali_error(k, 0, "IdempotentParameterMismatch",
                  "The specified parameter has changed while using an "
                  "already used clientToken.");
        return;
      }
      int64_t price = od_price((size_t)t, reg);
      run_reply(k, tk->ids, tk->n_ids, price);
      return;
    }
  }
  if (z < 0) { /* ECS picks a zone that sells the type and has stock */
    for (size_t zz = 0; zz < 4 && regions[reg].zones[zz] && z < 0; zz++)
      if (sold((size_t)t, reg, zz) &&
          a->stock[r.spot][t][reg][zz] != ST_WITHOUT)
        z = (int)zz;
    if (z < 0) {
      ali_error(k, 0, "OperationDenied.NoStock",
                "The requested resource is sold out in the specified zone; "
                "try other types of resources or other regions and zones.");
      return;
    }
  }
  const char *zone = regions[reg].zones[z];
  int64_t now = fc_now_ms(a->s);
  int64_t price = r.spot ? spot_now(a, (size_t)t, reg, (size_t)z, now)
                         : od_price((size_t)t, reg);
  if (r.spot && !strcmp(r.strategy, "SpotWithPriceLimit") &&
      r.price_limit_milli < price) {
    ali_error(k, 0, "InvalidSpotPriceLimit.LowerThanPublicPrice",
              "The specified parameter \"spotPriceLimit\" can't be lower "
              "than current public price.");
    return;
  }
  if (r.dry_run) {
    ali_error(k, 0, "DryRunOperation",
              "Request validation has been passed with DryRun flag set.");
    return;
  }
  const char *market = r.spot ? "spot" : "on-demand";
  struct fc_fault *f = NULL;
  struct fc_fault_query q = {.service = "ecs",
                             .action = "RunInstances",
                             .instance_type = itypes[t].name,
                             .zone = zone,
                             .market = market};
  if (a->stock[r.spot][t][reg][z] == ST_WITHOUT ||
      (f = fc_faults_fire(fc_faults(a->s), FC_FAULT_CAPACITY, &q,
                          fc_elapsed_ms(a->s), fc_rng(a->s)))) {
    bool nos = a->stock[r.spot][t][reg][z] == ST_WITHOUT || !f->code[0] ||
               strcmp(f->code, "Zone.NotOnSale");
    if (nos)
      ali_error(k, 0, "OperationDenied.NoStock",
                "The requested resource is sold out in the specified zone; "
                "try other types of resources or other regions and zones.");
    else
      ali_error(k, 0, "Zone.NotOnSale",
                "The specified zone is not available for purchase.");
    return;
  }
  int64_t limit = r.spot ? a->vcpu_limit_spot : a->vcpu_limit_on_demand;
  int64_t room = (limit - vcpus_in_use(a, reg, r.spot)) / itypes[t].vcpus;
  if (fc_faults_fire(fc_faults(a->s), FC_FAULT_QUOTA, &q, fc_elapsed_ms(a->s),
                     fc_rng(a->s)) ||
      room < r.min_amount) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "The maximum number of Pay-As-You-Go instances is exceeded: "
             "%s vCPU quota of %lld in %s.",
             market, (long long)limit, regions[reg].name);
    ali_error(k, 0, "QuotaExceed.AfterpayInstance", msg);
    return;
  }
  /* CreateInstance makes one instance and leaves it Stopped until
   * StartInstance, as ECS does. */
  bool create = !strcmp(k->c.action, "CreateInstance");
  long n = create ? 1 : r.amount < room ? r.amount : (long)room;
  char **ids = tw_calloc((size_t)n, sizeof *ids);
  for (long i = 0; i < n; i++) {
    struct inst *in = tw_calloc(1, sizeof *in);
    static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    in->seq = ++a->next_seq;
    int len = snprintf(in->id, sizeof in->id, "i-%s", regions[reg].id_prefix);
    for (int c = 0; c < 18; c++)
      in->id[len + c] = alnum[fc_rng_below(fc_rng(a->s), 36)];
    in->id[len + 18] = '\0';
    in->region = reg;
    in->zone = (size_t)z;
    in->itype = (size_t)t;
    snprintf(in->image, sizeof in->image, "%s", r.image);
    snprintf(in->name, sizeof in->name, "%s", r.name ? r.name : in->id);
    snprintf(in->token, sizeof in->token, "%s", r.token ? r.token : "");
    snprintf(in->disk_category, sizeof in->disk_category, "%s",
             r.system_disk_category ? r.system_disk_category : "");
    snprintf(in->ram_role, sizeof in->ram_role, "%s",
             r.ram_role ? r.ram_role : "");
    in->disk_gb = r.system_disk_gb;
    in->state = create ? IS_STOPPED : IS_PENDING;
    if (r.user_data && fc_boot_enabled(a->s))
      in->user_data = fc_base64_decode(r.user_data, &in->user_data_len);
    in->create_ms = now;
    in->next_ms = create ? -1 : now + a->pending_ms;
    in->spot = r.spot;
    snprintf(in->strategy, sizeof in->strategy, "%s", r.strategy);
    snprintf(in->behavior, sizeof in->behavior, "%s", r.behavior);
    in->limit_milli = r.spot ? r.price_limit_milli : -1;
    in->duration_h = r.spot ? r.spot_duration_h : 0;
    in->notice_ms = in->reclaim_ms = -1;
    snprintf(in->private_ip, sizeof in->private_ip, "172.16.%u.%u",
             (unsigned)fc_rng_below(fc_rng(a->s), 256),
             (unsigned)(1 + fc_rng_below(fc_rng(a->s), 254)));
    for (size_t tg = 0; tg < r.n_tags; tg++) {
      in->tags[tg].key = tw_strdup(r.tags[tg].key);
      in->tags[tg].value = tw_strdup(r.tags[tg].value);
    }
    in->n_tags = r.n_tags;
    if (r.spot) {
      /* Scheduled reclaims that apply to this offer: after a fixed delay
       * or at a Poisson rate, never inside the protection period. */
      struct fc_faults *fl = fc_faults(a->s);
      for (size_t fi = 0; fi < fl->n; fi++) {
        struct fc_fault *rule = &fl->v[fi];
        if (rule->kind != FC_FAULT_SPOT_INTERRUPTION || rule->instance_id[0])
          continue;
        struct fc_fault_query sq = q;
        sq.action = NULL;
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
        if (in->notice_ms < 0)
          schedule_reclaim(in, now + after);
      }
    }
    a->inst = tw_realloc(a->inst, (a->n_inst + 1) * sizeof *a->inst);
    a->inst[a->n_inst++] = in;
    ids[i] = tw_strdup(in->id);
  }
  if (r.token) {
    a->tokens = tw_realloc(a->tokens, (a->n_tokens + 1) * sizeof *a->tokens);
    struct token *tk = &a->tokens[a->n_tokens++];
    snprintf(tk->token, sizeof tk->token, "%s", r.token);
    tk->region = reg;
    tk->hash = h;
    tk->n_ids = (size_t)n;
    tk->ids = tw_calloc((size_t)n, sizeof *tk->ids);
    for (long i = 0; i < n; i++)
      tk->ids[i] = tw_strdup(ids[i]);
  }
  run_reply(k, ids, (size_t)n, price * n);
  fc_ali_strv_free(ids, (size_t)n);
}

/* ---- DescribeInstances --------------------------------------------------- */

static const char *tag_value(const struct inst *in, const char *key) {
  for (size_t t = 0; t < in->n_tags; t++)
    if (!strcmp(in->tags[t].key, key))
      return in->tags[t].value;
  return NULL;
}

static uint64_t query_hash(const struct fc_params *p) {
  static const char *const skip[] = {"NextToken",       "MaxResults",
                                     "PageNumber",      "PageSize",
                                     "Signature",       "SignatureNonce",
                                     "SignatureMethod", "SignatureVersion",
                                     "Timestamp",       "AccessKeyId",
                                     "Format",          "Action",
                                     "Version",         NULL};
  uint64_t h = 0;
  for (size_t i = 0; i < p->n; i++) {
    bool sk = false;
    for (const char *const *s = skip; *s && !sk; s++)
      sk = !strcmp(p->v[i].key, *s);
    if (!sk)
      h += fc_hash3(fc_hash_str(p->v[i].key), fc_hash_str(p->v[i].value), 11);
  }
  return h;
}

static void act_describe_instances(struct call *k) {
  struct ali *a = k->a;
  if (!need_region(k))
    return;
  const struct fc_params *p = &k->c.p;
  char **ids = NULL;
  size_t n_ids = 0;
  const char *idj = fc_params_get(p, "InstanceIds");
  if (idj && fc_ali_id_array(idj, 100, &ids, &n_ids, &k->err)) {
    ali_error_err(k);
    return;
  }
  const char *zone = fc_params_get(p, "ZoneId");
  const char *status = fc_params_get(p, "Status");
  const char *itype = fc_params_get(p, "InstanceType");
  int idx[FC_ALI_MAX_TAGS + 1];
  const char *bad = NULL;
  size_t n_tags = fc_params_indexes(p, "Tag", idx, FC_ALI_MAX_TAGS + 1, &bad);
  long page_no = 1, size = 10, max_results = 10;
  const char *pn = fc_params_get(p, "PageNumber");
  const char *ps = fc_params_get(p, "PageSize");
  const char *mr = fc_params_get(p, "MaxResults");
  const char *nt = fc_params_get(p, "NextToken");
  char *end;
  if (bad || n_tags > FC_ALI_MAX_TAGS) {
    ali_error(k, 0, "InvalidParameter.TagCount", "Tag.N: N must be 1 to 20.");
    goto out;
  }
  if (pn && ((page_no = strtol(pn, &end, 10)) < 1 || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified PageNumber is not "
              "valid.");
    goto out;
  }
  if (ps && ((size = strtol(ps, &end, 10)) < 1 || size > 100 || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified PageSize is not "
              "valid: 1 to 100.");
    goto out;
  }
  if (mr &&
      ((max_results = strtol(mr, &end, 10)) < 1 || max_results > 100 || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified MaxResults is not "
              "valid: 1 to 100.");
    goto out;
  }
  /* NextToken: creation order cursor, bound to the query. */
  uint64_t qh = query_hash(p) ^ fc_seed(a->s);
  uint64_t cursor = 0;
  bool token_mode = nt || mr;
  if (nt && *nt) {
    unsigned long long c = 0, hh = 0;
    int used = 0;
    if (sscanf(nt, "%16llx%16llx%n", &c, &hh, &used) != 2 || used != 32 ||
        nt[used] || hh != (unsigned long long)(qh ^ c)) {
      ali_error(k, 0, "InvalidParameter",
                "The specified parameter NextToken is not valid.");
      goto out;
    }
    cursor = c;
  }
  json_t *arr = json_array();
  long total = 0, skipped = 0, taken = 0;
  long want = token_mode ? max_results : size;
  long skip = token_mode ? 0 : (page_no - 1) * size;
  uint64_t last = 0;
  bool more = false;
  for (size_t i = 0; i < a->n_inst; i++) {
    const struct inst *in = a->inst[i];
    if (in->region != k->region || in->seq <= cursor)
      continue;
    bool m = true;
    if (idj) {
      m = false;
      for (size_t j = 0; j < n_ids && !m; j++)
        m = !strcmp(ids[j], in->id);
    }
    if (m && zone)
      m = !strcmp(zone, regions[in->region].zones[in->zone]);
    if (m && status)
      m = !strcmp(status, ist_name(in->state));
    if (m && itype)
      m = !strcmp(itype, itypes[in->itype].name);
    for (size_t tg = 0; m && tg < n_tags; tg++) {
      char kn[32], vn[32];
      snprintf(kn, sizeof kn, "Tag.%d.Key", idx[tg]);
      snprintf(vn, sizeof vn, "Tag.%d.Value", idx[tg]);
      const char *key = fc_params_get(p, kn), *val = fc_params_get(p, vn);
      const char *have = key ? tag_value(in, key) : NULL;
      m = have && (!val || !strcmp(val, have));
    }
    if (!m)
      continue;
    total++;
    if (skipped < skip) {
      skipped++;
      continue;
    }
    if (taken < want) {
      json_array_append_new(arr, inst_json(in));
      taken++;
      last = in->seq;
    } else {
      more = true;
    }
  }
  json_t *b = ok_body(k);
  char tok[40] = "";
  if (token_mode && more)
    snprintf(tok, sizeof tok, "%016llx%016llx", (unsigned long long)last,
             (unsigned long long)(qh ^ last));
  json_object_set_new(b, "Instances", json_pack("{s:o}", "Instance", arr));
  json_object_set_new(b, "TotalCount", json_integer(total));
  json_object_set_new(b, "PageNumber", json_integer(token_mode ? 1 : page_no));
  json_object_set_new(b, "PageSize", json_integer(want));
  json_object_set_new(b, "NextToken", json_string(tok));
  ok(k, b);
out:
  fc_ali_strv_free(ids, n_ids);
}

/* ---- DeleteInstances ----------------------------------------------------- */

static void act_delete(struct call *k) {
  struct ali *a = k->a;
  if (!need_region(k))
    return;
  int idx[101];
  const char *bad = NULL;
  size_t n = fc_params_indexes(&k->c.p, "InstanceId", idx, 101, &bad);
  if (bad || n > 100) {
    ali_error(k, 0, "InvalidParameter", "InstanceId.N: N must be 1 to 100.");
    return;
  }
  if (n == 0) {
    ali_error(k, 0, "MissingParameter",
              "The input parameter \"InstanceId\" that is mandatory for "
              "processing this request is not supplied.");
    return;
  }
  const char *force = fc_params_get(&k->c.p, "Force");
  bool forced = force && !strcasecmp(force, "true");
  const char *dry = fc_params_get(&k->c.p, "DryRun");
  struct inst *todo[100];
  for (size_t i = 0; i < n; i++) {
    char key[32];
    snprintf(key, sizeof key, "InstanceId.%d", idx[i]);
    struct inst *in = find(a, fc_params_get(&k->c.p, key));
    if (!in || in->region != k->region) {
      ali_error(k, 0, "InvalidInstanceId.NotFound",
                "The specified InstanceId does not exist.");
      return;
    }
    if (in->state == IS_PENDING) {
      ali_error(k, 0, "IncorrectInstanceStatus.Initializing",
                "The specified instance status does not support this "
                "operation.");
      return;
    }
    if (in->state == IS_RUNNING && !forced) {
      ali_error(k, 0, "IncorrectInstanceStatus",
                "The current status of the resource does not support this "
                "operation.");
      return;
    }
    todo[i] = in;
  }
  if (dry && !strcasecmp(dry, "true")) {
    ali_error(k, 0, "DryRunOperation",
              "Request validation has been passed with DryRun flag set.");
    return;
  }
  int64_t now = fc_now_ms(a->s);
  for (size_t i = 0; i < n; i++) {
    /* Released after a short stop; a stopped one at once. */
    struct inst *in = todo[i];
    in->release_after = true;
    if (in->state == IS_STOPPED) {
      in->state = IS_RELEASED;
    } else if (in->state != IS_STOPPING || in->next_ms < 0) {
      in->state = IS_STOPPING;
      in->next_ms = now + a->shutdown_ms;
    }
  }
  ali_tick(a);
  ok(k, ok_body(k));
}

/* ---- regions, zones, images, security groups ----------------------------- */

static bool english(struct call *k) {
  const char *l = fc_params_get(&k->c.p, "AcceptLanguage");
  return l && !strncmp(l, "en", 2);
}

static void act_regions(struct call *k) {
  static const char *const local_zh[N_REGIONS] = {"华东1（杭州）",
                                                  "华东2（上海）", "新加坡"};
  static const char *const local_en[N_REGIONS] = {
      "China (Hangzhou)", "China (Shanghai)", "Singapore"};
  json_t *arr = json_array();
  for (size_t r = 0; r < N_REGIONS; r++) {
    char ep[96];
    snprintf(ep, sizeof ep, "ecs.%s.aliyuncs.com", regions[r].name);
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:s}", "RegionId", regions[r].name,
                       "RegionEndpoint", ep, "LocalName",
                       english(k) ? local_en[r] : local_zh[r]));
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "Regions", json_pack("{s:o}", "Region", arr));
  ok(k, b);
}

static void act_zones(struct call *k) {
  if (!need_region(k))
    return;
  const char *v = fc_params_get(&k->c.p, "Verbose");
  bool verbose = !v || strcasecmp(v, "false");
  json_t *arr = json_array();
  const struct ali_region *reg = &regions[k->region];
  for (size_t z = 0; z < 4 && reg->zones[z]; z++) {
    const char *zn = reg->zones[z];
    char local[64];
    /* "华东 1 可用区 H" / "Hangzhou Zone H": the zone letter is the id's. */
    const char *letter = zn + strlen(zn) - 1;
    snprintf(local, sizeof local, english(k) ? "%s Zone %c" : "%s 可用区 %c",
             reg->name, toupper((unsigned char)*letter));
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:{s:[s,s,s]},s:{s:[s,s]}}", "ZoneId", zn,
                  "LocalName", local, "ZoneType", "AvailabilityZone",
                  "AvailableResourceCreation", "ResourceTypes", "Instance",
                  "Disk", "VSwitch", "AvailableDiskCategories",
                  "DiskCategories", "cloud_essd", "cloud_auto");
    if (verbose) {
      json_t *types = json_array();
      for (size_t t = 0; t < N_ITYPES; t++)
        if (sold(t, k->region, z))
          json_array_append_new(types, json_string(itypes[t].name));
      json_object_set_new(o, "AvailableInstanceTypes",
                          json_pack("{s:o}", "InstanceTypes", types));
    }
    json_array_append_new(arr, o);
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "Zones", json_pack("{s:o}", "Zone", arr));
  ok(k, b);
}

/* ECS's public images, as a few of them are named in every region. */
static const struct {
  const char *id, *name, *os, *os_en, *platform, *arch;
} images[] = {
    {"ubuntu_24_04_x64_20G_alibase_20250722.vhd",
     "ubuntu_24_04_x64_20G_alibase_20250722.vhd", "Ubuntu  24.04 64位",
     "Ubuntu  24.04 64 bit", "Ubuntu", "x86_64"},
    {"ubuntu_22_04_x64_20G_alibase_20250722.vhd",
     "ubuntu_22_04_x64_20G_alibase_20250722.vhd", "Ubuntu  22.04 64位",
     "Ubuntu  22.04 64 bit", "Ubuntu", "x86_64"},
    {"ubuntu_24_04_arm64_20G_alibase_20250722.vhd",
     "ubuntu_24_04_arm64_20G_alibase_20250722.vhd", "Ubuntu  24.04 64位 ARM版",
     "Ubuntu  24.04 64 bit ARM Edition", "Ubuntu", "arm64"},
    {"aliyun_3_x64_20G_alibase_20250629.vhd",
     "aliyun_3_x64_20G_alibase_20250629.vhd",
     "Alibaba Cloud Linux  3.2104 LTS 64位",
     "Alibaba Cloud Linux  3.2104 LTS 64 bit", "Aliyun", "x86_64"},
};
#define N_IMAGES (sizeof images / sizeof images[0])

/* PageNumber (from 1) and PageSize (1..max, default def), as ECS checks
 * them; false after answering the error. */
static bool page_params(struct call *k, long max, long def, long *number,
                        long *size) {
  const char *pn = fc_params_get(&k->c.p, "PageNumber");
  const char *ps = fc_params_get(&k->c.p, "PageSize");
  char *end;
  *number = 1;
  *size = def;
  if (pn && ((*number = strtol(pn, &end, 10)) < 1 || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified parameter \"PageNumber\" is not valid.");
    return false;
  }
  if (ps && ((*size = strtol(ps, &end, 10)) < 1 || *size > max || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified parameter \"PageSize\" is not valid.");
    return false;
  }
  return true;
}

static void act_images(struct call *k) {
  if (!need_region(k))
    return;
  long pn, ps;
  if (!page_params(k, 100, 10, &pn, &ps))
    return;
  const char *id = fc_params_get(&k->c.p, "ImageId");
  const char *name = fc_params_get(&k->c.p, "ImageName");
  const char *owner = fc_params_get(&k->c.p, "ImageOwnerAlias");
  const char *arch = fc_params_get(&k->c.p, "Architecture");
  const char *os = fc_params_get(&k->c.p, "OSType");
  const char *status = fc_params_get(&k->c.p, "Status");
  json_t *arr = json_array();
  long total = 0;
  for (size_t i = 0; i < N_IMAGES; i++) {
    bool want = true;
    if (id) { /* a comma-separated list of ids */
      want = false;
      for (const char *p = id; *p && !want;) {
        size_t n = strcspn(p, ",");
        want = n == strlen(images[i].id) && !strncmp(p, images[i].id, n);
        p += n + (p[n] == ',');
      }
    }
    if (name && !strstr(images[i].name, name)) /* a name prefix or part */
      want = false;
    if (owner && strcmp(owner, "system"))
      want = false; /* no custom, shared or marketplace images */
    if (arch && strcmp(arch, images[i].arch))
      want = false;
    if (os && strcasecmp(os, "linux"))
      want = false;
    if (status && !strstr(status, "Available"))
      want = false;
    if (!want)
      continue;
    total++;
    if (total <= (pn - 1) * ps || total > pn * ps)
      continue;
    json_array_append_new(
        arr,
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:b,s:s,s:s}",
                  "ImageId", images[i].id, "ImageName", images[i].name,
                  "ImageOwnerAlias", "system", "OSType", "linux", "OSName",
                  images[i].os, "OSNameEn", images[i].os_en, "Platform",
                  images[i].platform, "Architecture", images[i].arch, "Status",
                  "Available", "Size", 20, "CreationTime",
                  "2025-07-22T09:00:00Z", "IsSupportIoOptimized", 1, "Usage",
                  "instance", "BootMode", "BIOS"));
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "RegionId", json_string(regions[k->region].name));
  json_object_set_new(b, "TotalCount", json_integer(total));
  json_object_set_new(b, "PageNumber", json_integer(pn));
  json_object_set_new(b, "PageSize", json_integer(ps));
  json_object_set_new(b, "Images", json_pack("{s:o}", "Image", arr));
  ok(k, b);
}

/* One security group per region, its id fixed by the seed: what
 * RunInstances' SecurityGroupId names (accepted, not checked). */
static void group_id(struct ali *a, size_t r, char out[40]) {
  static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint64_t h = fc_hash3(fc_seed(a->s), fc_hash_str(regions[r].name), 0x5e);
  int len = snprintf(out, 40, "sg-%s", regions[r].id_prefix);
  for (int c = 0; c < 18; c++, h = h / 36 ? h / 36 : fc_hash3(h, c, 1))
    out[len + c] = alnum[h % 36];
  out[len + 18] = '\0';
}

static void act_security_groups(struct call *k) {
  if (!need_region(k))
    return;
  long pn, ps;
  if (!page_params(k, 50, 10, &pn, &ps))
    return;
  char id[40];
  group_id(k->a, k->region, id);
  const char *one = fc_params_get(&k->c.p, "SecurityGroupId");
  const char *ids = fc_params_get(&k->c.p, "SecurityGroupIds");
  const char *name = fc_params_get(&k->c.p, "SecurityGroupName");
  const char *vpc = fc_params_get(&k->c.p, "VpcId");
  bool want = (!one || !strcmp(one, id)) && (!ids || strstr(ids, id)) &&
              (!name || !strcmp(name, "tradewind-default")) &&
              (!vpc || !strcmp(vpc, "vpc-tradewindfake"));
  json_t *arr = json_array();
  if (want && pn == 1)
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:{s:[]}}",
                       "SecurityGroupId", id, "SecurityGroupName",
                       "tradewind-default", "Description",
                       "the fake's default group", "VpcId", "vpc-tradewindfake",
                       "CreationTime", "2025-01-01T00:00:00Z",
                       "SecurityGroupType", "normal", "ServiceManaged", 0,
                       "ResourceGroupId", "", "Tags", "Tag"));
  json_t *b = ok_body(k);
  json_object_set_new(b, "RegionId", json_string(regions[k->region].name));
  json_object_set_new(b, "TotalCount", json_integer(want ? 1 : 0));
  json_object_set_new(b, "PageNumber", json_integer(pn));
  json_object_set_new(b, "PageSize", json_integer(ps));
  json_object_set_new(b, "SecurityGroups",
                      json_pack("{s:o}", "SecurityGroup", arr));
  ok(k, b);
}

/* ---- one instance: StartInstance, StopInstance, DeleteInstance ----------- */

/* The InstanceId of a one-instance action, in k's region; NULL after
 * answering the error. */
static struct inst *one_instance(struct call *k) {
  const char *id = fc_params_get(&k->c.p, "InstanceId");
  if (!id || !*id) {
    ali_error(k, 0, "MissingParameter",
              "The input parameter \"InstanceId\" that is mandatory for "
              "processing this request is not supplied.");
    return NULL;
  }
  struct inst *in = find(k->a, id);
  if (!in) {
    ali_error(k, 0, "InvalidInstanceId.NotFound",
              "The specified InstanceId does not exist.");
    return NULL;
  }
  k->region = in->region;
  return in;
}

static bool is_true(struct call *k, const char *name) {
  const char *v = fc_params_get(&k->c.p, name);
  return v && !strcasecmp(v, "true");
}

static bool dry_run_ok(struct call *k) {
  if (!is_true(k, "DryRun"))
    return false;
  ali_error(k, 0, "DryRunOperation",
            "Request validation has been passed with DryRun flag set.");
  return true;
}

static void incorrect_status(struct call *k, bool initializing) {
  if (initializing)
    ali_error(k, 0, "IncorrectInstanceStatus.Initializing",
              "The specified instance status does not support this "
              "operation.");
  else
    ali_error(k, 0, "IncorrectInstanceStatus",
              "The current status of the resource does not support this "
              "operation.");
}

static void act_start(struct call *k) {
  struct inst *in = one_instance(k);
  if (!in)
    return;
  if (in->state != IS_STOPPED) {
    incorrect_status(k, in->state == IS_PENDING);
    return;
  }
  if (dry_run_ok(k))
    return;
  in->state = IS_STARTING;
  in->next_ms = fc_now_ms(k->a->s) + k->a->pending_ms;
  ok(k, ok_body(k));
}

static void act_stop(struct call *k) {
  struct inst *in = one_instance(k);
  if (!in)
    return;
  if (in->state != IS_RUNNING) {
    incorrect_status(k, in->state == IS_PENDING);
    return;
  }
  const char *mode = fc_params_get(&k->c.p, "StoppedMode");
  if (mode && strcmp(mode, "KeepCharging") && strcmp(mode, "StopCharging")) {
    ali_error(k, 0, "InvalidParameter",
              "The specified parameter \"StoppedMode\" is not valid.");
    return;
  }
  if (dry_run_ok(k))
    return;
  in->state = IS_STOPPING;
  in->release_after = false;
  in->next_ms = fc_now_ms(k->a->s) + k->a->shutdown_ms;
  ok(k, ok_body(k));
}

static void act_delete_one(struct call *k) {
  struct inst *in = one_instance(k);
  if (!in)
    return;
  if (in->state == IS_PENDING || in->state == IS_STARTING) {
    incorrect_status(k, true);
    return;
  }
  if ((in->state == IS_RUNNING || in->state == IS_STOPPING) &&
      !is_true(k, "Force")) {
    incorrect_status(k, false); /* stop it first, or Force=true */
    return;
  }
  if (dry_run_ok(k))
    return;
  in->release_after = true;
  if (in->state == IS_STOPPED) {
    in->state = IS_RELEASED;
  } else if (in->state != IS_STOPPING || in->next_ms < 0) {
    in->state = IS_STOPPING;
    in->next_ms = fc_now_ms(k->a->s) + k->a->shutdown_ms;
  }
  ali_tick(k->a);
  ok(k, ok_body(k));
}

/* ---- prices and stock ---------------------------------------------------- */

static bool parse_time_param(struct call *k, const char *name, int64_t def,
                             int64_t *out) {
  const char *s = fc_params_get(&k->c.p, name);
  *out = def;
  if (!s)
    return true;
  *out = tw_ecs_parse_time(s);
  if (*out < 0) {
    char msg[96];
    snprintf(msg, sizeof msg, "The specified %s is not valid.", name);
    ali_error(k, 0, "InvalidParameter", msg);
    return false;
  }
  return true;
}

static void act_spot_history(struct call *k) {
  struct ali *a = k->a;
  if (!need_region(k))
    return;
  const struct fc_params *p = &k->c.p;
  const char *itype = fc_params_get(p, "InstanceType");
  const char *net = fc_params_get(p, "NetworkType");
  const char *zone = fc_params_get(p, "ZoneId");
  const char *os = fc_params_get(p, "OSType");
  const char *off = fc_params_get(p, "Offset");
  if (!itype || !net) {
    ali_error(k, 0, "MissingParameter",
              itype ? "The input parameter \"NetworkType\" that is mandatory "
                      "for processing this request is not supplied."
                    : "The input parameter \"InstanceType\" that is "
                      "mandatory for processing this request is not "
                      "supplied.");
    return;
  }
  if (strcmp(net, "vpc") && strcmp(net, "classic")) {
    ali_error(k, 0, "InvalidParameter",
              "The specified NetworkType is not "
              "valid.");
    return;
  }
  int t = itype_index(itype);
  if (t < 0) {
    ali_error(k, 0, "InvalidInstanceType.ValueNotSupported",
              "The specified InstanceType does not exist or beyond the "
              "permitted range.");
    return;
  }
  int zi = -1;
  if (zone && (zi = zone_index(k->region, zone)) < 0) {
    ali_error(k, 0, "InvalidZoneId.NotFound",
              "The specified zone does not exist.");
    return;
  }
  if (os && strcmp(os, "linux") && strcmp(os, "windows")) {
    ali_error(k, 0, "InvalidParameter", "The specified OSType is not valid.");
    return;
  }
  int64_t now = fc_now_ms(a->s), from, to, offset = 0;
  if (!parse_time_param(k, "EndTime", now, &to) ||
      !parse_time_param(k, "StartTime", to - 3 * 3600000, &from))
    return;
  if (off) {
    char *end;
    offset = strtoll(off, &end, 10);
    if (*end || offset < 0) {
      ali_error(k, 0, "InvalidParameter",
                "The specified Offset is not "
                "valid.");
      return;
    }
  }
  if (to > now)
    to = now;
  if (from < now - SPOT_HISTORY_MS)
    from = now - SPOT_HISTORY_MS;
  if (from > to) {
    ali_error(k, 0, "InvalidParameter",
              "The specified StartTime is later than EndTime.");
    return;
  }
  int64_t windows_extra =
      os && !strcmp(os, "windows") ? (int64_t)itypes[t].vcpus * 80 : 0;
  json_t *arr = json_array();
  int64_t row = 0, emitted = 0;
  bool more = false;
  /* Per zone, oldest first, the point in force at StartTime included. */
  for (size_t z = 0; z < 4 && regions[k->region].zones[z] && !more; z++) {
    if ((zi >= 0 && (int)z != zi) || !sold((size_t)t, k->region, z))
      continue;
    for (int64_t s = from / SPOT_STEP_MS; s <= to / SPOT_STEP_MS; s++) {
      if (row++ < offset)
        continue;
      if (emitted == SPOT_PAGE) {
        more = true;
        break;
      }
      int64_t at = s * SPOT_STEP_MS;
      int64_t price = spot_at_step(a, (size_t)t, k->region, z, s);
      for (size_t i = 0; i < a->n_overrides; i++) {
        const struct price_override *po = &a->overrides[i];
        if (po->itype == (size_t)t && po->region == k->region &&
            po->zone == z && po->from_ms <= at + SPOT_STEP_MS - 1 &&
            po->from_ms >= at)
          price = po->milli, at = po->from_ms;
      }
      char ts[32];
      fmt_seconds(at, ts);
      json_t *it = json_pack("{s:s,s:s,s:s,s:s,s:s}", "ZoneId",
                             regions[k->region].zones[z], "InstanceType",
                             itypes[t].name, "IoOptimized", "optimized",
                             "NetworkType", net, "Timestamp", ts);
      json_object_set_new(it, "SpotPrice", money(price + windows_extra));
      json_object_set_new(
          it, "OriginPrice",
          money(od_price((size_t)t, k->region) + windows_extra));
      json_array_append_new(arr, it);
      emitted++;
    }
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "SpotPrices",
                      json_pack("{s:o}", "SpotPriceType", arr));
  json_object_set_new(b, "NextOffset",
                      json_integer(more ? offset + emitted : 0));
  json_object_set_new(b, "Currency", json_string("CNY"));
  ok(k, b);
}

static void act_price(struct call *k) {
  struct ali *a = k->a;
  if (!need_region(k))
    return;
  const struct fc_params *p = &k->c.p;
  const char *rtype = fc_params_get(p, "ResourceType");
  const char *itype = fc_params_get(p, "InstanceType");
  const char *unit = fc_params_get(p, "PriceUnit");
  const char *zone = fc_params_get(p, "ZoneId");
  const char *strategy = fc_params_get(p, "SpotStrategy");
  long period = 1, amount = 1;
  char *end;
  if (rtype && strcmp(rtype, "instance")) {
    ali_error(k, 0, "InvalidResourceType.NotFound",
              "The ResourceType provided does not exist in our records.");
    return;
  }
  if (!itype) {
    ali_error(k, 0, "InvalidInstanceType.Missing",
              "The InstanceType parameter that is mandatory for processing "
              "the request is not provided.");
    return;
  }
  int t = itype_index(itype);
  if (t < 0) {
    ali_error(k, 0, "InvalidInstanceType.ValueNotSupported",
              "The specified InstanceType does not exist or beyond the "
              "permitted range.");
    return;
  }
  if (!unit)
    unit = "Month";
  if (strcmp(unit, "Hour") && strcmp(unit, "Week") && strcmp(unit, "Month") &&
      strcmp(unit, "Year")) {
    ali_error(k, 0, "InvalidPriceUnit",
              "The specified PriceUnit is not "
              "valid.");
    return;
  }
  const char *ps = fc_params_get(p, "Period"), *as = fc_params_get(p, "Amount");
  if ((ps && ((period = strtol(ps, &end, 10)) < 1 || period > 9 || *end)) ||
      (as && ((amount = strtol(as, &end, 10)) < 1 || amount > 1000 || *end))) {
    ali_error(k, 0, "InvalidParameter", "Period or Amount is not valid.");
    return;
  }
  int zi = zone ? zone_index(k->region, zone) : -1;
  if (zone && zi < 0) {
    ali_error(k, 0, "InvalidZoneId.NotFound",
              "The specified zone does not exist.");
    return;
  }
  int64_t od = od_price((size_t)t, k->region);
  int64_t orig, trade;
  if (!strcmp(unit, "Hour")) {
    orig = od * period * amount;
    trade = orig;
    if (strategy && strcmp(strategy, "NoSpot")) {
      /* The current spot price: of the zone asked, else the lowest. */
      int64_t best = -1, now = fc_now_ms(a->s);
      for (size_t z = 0; z < 4 && regions[k->region].zones[z]; z++) {
        if ((zi >= 0 && (int)z != zi) || !sold((size_t)t, k->region, z))
          continue;
        int64_t sp = spot_now(a, (size_t)t, k->region, z, now);
        if (best < 0 || sp < best)
          best = sp;
      }
      if (best < 0) {
        ali_error(k, 0, "PriceNotFound",
                  "The price of your queried resource is not available "
                  "now, please try other resources.");
        return;
      }
      trade = best * period * amount;
    }
  } else {
    int64_t hours = !strcmp(unit, "Week")    ? 168
                    : !strcmp(unit, "Month") ? 720
                                             : 8760;
    orig = od * hours * period * amount;
    trade = orig * 85 / 100; /* subscriptions: 15 % off */
  }
  json_t *b = ok_body(k);
  json_t *price = json_object();
  json_object_set_new(price, "Currency", json_string("CNY"));
  json_object_set_new(price, "OriginalPrice", money(orig));
  json_object_set_new(price, "DiscountPrice", money(orig - trade));
  json_object_set_new(price, "TradePrice", money(trade));
  json_object_set_new(
      b, "PriceInfo",
      json_pack("{s:o,s:{s:[]}}", "Price", price, "Rules", "Rule"));
  ok(k, b);
}

static void act_available(struct call *k) {
  struct ali *a = k->a;
  if (!need_region(k))
    return;
  const struct fc_params *p = &k->c.p;
  const char *dest = fc_params_get(p, "DestinationResource");
  const char *charge = fc_params_get(p, "InstanceChargeType");
  const char *strategy = fc_params_get(p, "SpotStrategy");
  const char *zone = fc_params_get(p, "ZoneId");
  const char *itype = fc_params_get(p, "InstanceType");
  if (!dest) {
    ali_error(k, 0, "MissingParameter",
              "The input parameter \"DestinationResource\" that is "
              "mandatory for processing this request is not supplied.");
    return;
  }
  if (strcmp(dest, "Zone") && strcmp(dest, "InstanceType")) {
    ali_error(k, 0, "InvalidParameter",
              "The fake serves DestinationResource Zone and InstanceType.");
    return;
  }
  if (charge && strcmp(charge, "PostPaid") && strcmp(charge, "PrePaid")) {
    ali_error(k, 0, "InvalidInstanceChargeType.NotFound",
              "The InstanceChargeType does not exist in our records");
    return;
  }
  bool spot = strategy && strcmp(strategy, "NoSpot");
  int zi = zone ? zone_index(k->region, zone) : -1;
  int ti = itype ? itype_index(itype) : -1;
  if ((zone && zi < 0) || (itype && ti < 0)) {
    ali_error(k, 0,
              zone && zi < 0 ? "InvalidZoneId.NotFound"
                             : "InvalidInstanceType.ValueNotSupported",
              "The specified zone or instance type does not exist.");
    return;
  }
  json_t *zones = json_array();
  for (size_t z = 0; z < 4 && regions[k->region].zones[z]; z++) {
    if (zi >= 0 && (int)z != zi)
      continue;
    json_t *sup = json_array();
    bool any = false;
    for (size_t t = 0; t < N_ITYPES; t++) {
      if ((ti >= 0 && (int)t != ti) || !sold(t, k->region, z))
        continue;
      unsigned char st = a->stock[spot][t][k->region][z];
      any |= st != ST_WITHOUT;
      json_array_append_new(
          sup, json_pack("{s:s,s:s,s:s}", "Value", itypes[t].name, "Status",
                         st == ST_WITHOUT ? "SoldOut" : "Available",
                         "StatusCategory", stock_names[st]));
    }
    if (!json_array_size(sup)) {
      json_decref(sup);
      continue;
    }
    json_t *res = json_array();
    if (!strcmp(dest, "InstanceType"))
      json_array_append_new(res, json_pack("{s:s,s:{s:o}}", "Type",
                                           "InstanceType", "SupportedResources",
                                           "SupportedResource", sup));
    else
      json_decref(sup);
    json_array_append_new(
        zones, json_pack("{s:s,s:s,s:s,s:s,s:{s:o}}", "ZoneId",
                         regions[k->region].zones[z], "RegionId",
                         regions[k->region].name, "Status",
                         any ? "Available" : "SoldOut", "StatusCategory",
                         any ? "WithStock" : "WithoutStock",
                         "AvailableResources", "AvailableResource", res));
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "AvailableZones",
                      json_pack("{s:o}", "AvailableZone", zones));
  ok(k, b);
}

static void act_instance_types(struct call *k) {
  const struct fc_params *p = &k->c.p;
  int idx[11];
  const char *bad = NULL;
  size_t n = fc_params_indexes(p, "InstanceTypes", idx, 11, &bad);
  if (bad || n > 10) {
    ali_error(k, 0, "InvalidParameter",
              "InstanceTypes.N: N must be 1 to "
              "10.");
    return;
  }
  const char *family = fc_params_get(p, "InstanceTypeFamily");
  const char *nt = fc_params_get(p, "NextToken");
  const char *mr = fc_params_get(p, "MaxResults");
  long max = 250, from = 0;
  char *end;
  if (mr && ((max = strtol(mr, &end, 10)) < 1 || max > 1600 || *end)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified MaxResults is not "
              "valid.");
    return;
  }
  if (nt && *nt &&
      (sscanf(nt, "it-%ld", &from) != 1 || from < 1 ||
       from >= (long)N_ITYPES)) {
    ali_error(k, 0, "InvalidParameter",
              "The specified NextToken is not "
              "valid.");
    return;
  }
  json_t *arr = json_array();
  long taken = 0;
  size_t t;
  for (t = (size_t)from; t < N_ITYPES; t++) {
    const struct ali_itype *it = &itypes[t];
    bool m = !n;
    for (size_t i = 0; i < n && !m; i++) {
      char key[32];
      snprintf(key, sizeof key, "InstanceTypes.%d", idx[i]);
      const char *want = fc_params_get(p, key);
      m = want && !strcmp(want, it->name);
    }
    if (!m || (family && strcmp(family, it->family)))
      continue;
    if (taken == max)
      break;
    json_t *o =
        json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:s,s:i,s:i}", "InstanceTypeId",
                  it->name, "InstanceTypeFamily", it->family, "CpuCoreCount",
                  it->vcpus, "GPUAmount", it->gpus, "GPUSpec", it->gpu_spec,
                  "CpuArchitecture", "X86", "InstanceFamilyLevel",
                  "EnterpriseLevel", "EniQuantity", 3, "CpuCoreFactor", 2);
    json_object_set_new(o, "MemorySize", json_real(atof(it->memory_gib)));
    json_object_set_new(o, "GPUMemorySize", json_real((double)it->gpu_gib));
    json_array_append_new(arr, o);
    taken++;
  }
  char tok[32] = "";
  if (t < N_ITYPES)
    snprintf(tok, sizeof tok, "it-%zu", t);
  json_t *b = ok_body(k);
  json_object_set_new(b, "InstanceTypes",
                      json_pack("{s:o}", "InstanceType", arr));
  json_object_set_new(b, "NextToken", json_string(tok));
  ok(k, b);
}

/* CloudMonitor's DescribeSystemEventAttribute: the reclaim events. */
static void act_system_events(struct call *k) {
  struct ali *a = k->a;
  const struct fc_params *p = &k->c.p;
  const char *product = fc_params_get(p, "Product");
  const char *name = fc_params_get(p, "Name");
  const char *st = fc_params_get(p, "StartTime");
  const char *et = fc_params_get(p, "EndTime");
  int64_t from = 0, to = INT64_MAX;
  char *end;
  if ((st && ((from = strtoll(st, &end, 10)) < 0 || *end)) ||
      (et && ((to = strtoll(et, &end, 10)) < 0 || *end))) {
    ali_error(k, 400, "InvalidParameter",
              "StartTime and EndTime are times in milliseconds.");
    return;
  }
  json_t *arr = json_array();
  for (size_t i = 0; i < a->n_events; i++) {
    const struct event *e = &a->events[i];
    if ((product && strcasecmp(product, "ECS")) ||
        (name && strcmp(name, TW_ECS_RECLAIM_EVENT)) || e->time_ms < from ||
        e->time_ms > to)
      continue;
    char content[160], res[160];
    snprintf(content, sizeof content,
             "{\"action\":\"delete\",\"instanceId\":\"%s\"}", e->instance_id);
    snprintf(res, sizeof res, "acs:ecs:%s:1234567890123456:instance/%s",
             regions[e->region].name, e->instance_id);
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "Content",
                       content, "GroupId", "", "Time", (json_int_t)e->time_ms,
                       "Product", "ECS", "ResourceId", res, "RegionId",
                       regions[e->region].name, "Name", TW_ECS_RECLAIM_EVENT,
                       "Level", "WARN", "Status", "Normal", "InstanceName",
                       e->instance_id));
  }
  json_t *b = ok_body(k);
  json_object_set_new(b, "Code", json_string("200"));
  json_object_set_new(b, "Success", json_true());
  json_object_set_new(b, "SystemEvents",
                      json_pack("{s:o}", "SystemEvent", arr));
  ok(k, b);
}

/* STS AssumeRole (2015-04-01): a temporary key for RoleArn. */
static void act_assume_role(struct call *k) {
  const char *arn = fc_params_get(&k->c.p, "RoleArn");
  const char *sess = fc_params_get(&k->c.p, "RoleSessionName");
  const char *dur = fc_params_get(&k->c.p, "DurationSeconds");
  if (!arn || !sess) {
    ali_error(k, 400, "MissingParameter",
              !arn ? "The input parameter \"RoleArn\" that is mandatory for "
                     "processing this request is not supplied."
                   : "The input parameter \"RoleSessionName\" that is "
                     "mandatory for processing this request is not "
                     "supplied.");
    return;
  }
  const char *role = strstr(arn, ":role/");
  if (strncmp(arn, "acs:ram::", 9) || !role || role == arn + 9 || !role[6] ||
      strspn(arn + 9, "0123456789") != (size_t)(role - arn - 9)) {
    ali_error(k, 400, "InvalidParameter.RoleArn",
              "The parameter RoleArn is wrongly formed.");
    return;
  }
  size_t sl = strlen(sess);
  if (sl < 2 || sl > 64 ||
      strspn(sess, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789.@-_") != sl) {
    ali_error(k, 400, "InvalidParameter.RoleSessionName",
              "The parameter RoleSessionName is wrongly formed.");
    return;
  }
  long d = dur ? strtol(dur, NULL, 10) : 3600;
  if (d < 900 || d > 43200) {
    ali_error(k, 400, "InvalidParameter.DurationSeconds",
              "The Min/Max value of DurationSeconds is 15min/12hr.");
    return;
  }
  struct fc_issued key;
  fc_issued_mint(k->a->s, "STS.", d, &key);
  char exp[32];
  fmt_seconds(key.expires_ms, exp);
  char rid[160];
  snprintf(rid, sizeof rid, "3000000000000000:%s", sess);
  ok(k, json_pack("{s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s}}", "RequestId",
                  k->request_id, "AssumedRoleUser", "AssumedRoleId", rid, "Arn",
                  arn, "Credentials", "AccessKeyId", key.access_key,
                  "AccessKeySecret", key.secret_key, "SecurityToken", key.token,
                  "Expiration", exp));
}

static const struct {
  const char *version, *name;
  void (*fn)(struct call *k);
} actions[] = {
    {"2015-04-01", "AssumeRole", act_assume_role},
    {ECS_VERSION, "RunInstances", act_run},
    {ECS_VERSION, "DescribeInstances", act_describe_instances},
    {ECS_VERSION, "DeleteInstances", act_delete},
    {ECS_VERSION, "CreateInstance", act_run},
    {ECS_VERSION, "StartInstance", act_start},
    {ECS_VERSION, "StopInstance", act_stop},
    {ECS_VERSION, "DeleteInstance", act_delete_one},
    {ECS_VERSION, "DescribeRegions", act_regions},
    {ECS_VERSION, "DescribeZones", act_zones},
    {ECS_VERSION, "DescribeImages", act_images},
    {ECS_VERSION, "DescribeSecurityGroups", act_security_groups},
    {ECS_VERSION, "DescribeSpotPriceHistory", act_spot_history},
    {ECS_VERSION, "DescribePrice", act_price},
    {ECS_VERSION, "DescribeAvailableResource", act_available},
    {ECS_VERSION, "DescribeInstanceTypes", act_instance_types},
    {CMS_VERSION, "DescribeSystemEventAttribute", act_system_events},
};

/* ---- module entry points ------------------------------------------------- */

static bool nonce_used(struct ali *a, const char *nonce, int64_t now) {
  for (size_t i = 0; i < a->n_nonces; i++)
    if (a->nonces[i].ms > now - FC_ALI_SKEW_MS &&
        !strcmp(a->nonces[i].nonce, nonce))
      return true;
  size_t at = a->n_nonces < NONCES_MAX ? a->n_nonces++ : a->next_nonce;
  if (a->n_nonces == NONCES_MAX)
    a->next_nonce = (a->next_nonce + 1) % NONCES_MAX;
  snprintf(a->nonces[at].nonce, sizeof a->nonces[at].nonce, "%s", nonce);
  a->nonces[at].ms = now;
  return false;
}

static void upper_id(struct fc_server *s, char out[40]) {
  fc_request_id(s, out);
  for (char *c = out; *c; c++)
    if (*c >= 'a' && *c <= 'f')
      *c = (char)(*c - 'a' + 'A');
}

static void ali_handle(void *ctx, const struct fc_request *req,
                       struct fc_response *resp) {
  struct ali *a = ctx;
  struct call k = {.a = a, .req = req, .resp = resp};
  fc_ali_call_init(&k.c);
  tw_err_clear(&k.err);
  upper_id(a->s, k.request_id);
  ali_tick(a);
  k.c.xml = false;
  if (req->body_too_big) {
    ali_error(&k, 413, "RequestEntityTooLarge",
              "The request body is too large.");
    goto out;
  }
  if (strcmp(req->method, "GET") && strcmp(req->method, "POST")) {
    ali_error(&k, 400, "UnsupportedHTTPMethod",
              "The HTTP method is not supported; use GET or POST.");
    goto out;
  }
  if (fc_ali_decode(req, &k.c, &k.err)) {
    ali_error_err(&k);
    goto out;
  }
  const char *secret = fc_secret_for(a->s, k.c.access_key);
  if (!secret) {
    ali_error(&k, 0, "InvalidAccessKeyId.NotFound",
              "Specified access key is not found.");
    goto out;
  }
  int64_t now = fc_now_ms(a->s);
  if (fc_ali_verify(req, &k.c, secret, now, &k.err)) {
    ali_error_err(&k);
    goto out;
  }
  /* a temporary key (an STS token, a RAM role's) needs its token */
  const char *tok = fc_params_get(&k.c.p, "SecurityToken");
  if (!tok)
    tok = fc_header(req, "x-acs-security-token");
  const char *why = fc_issued_check(a->s, k.c.access_key, tok);
  if (why) {
    ali_error(&k, 0,
              !strcmp(why, "ExpiredToken")
                  ? "InvalidSecurityToken.Expired"
                  : "InvalidSecurityToken.MismatchWithAccessKey",
              !strcmp(why, "ExpiredToken")
                  ? "Specified SecurityToken is expired."
                  : "Specified SecurityToken mismatch with the AccessKey.");
    goto out;
  }
  if (nonce_used(a, k.c.nonce, now)) {
    ali_error(&k, 0, "SignatureNonceUsed",
              "Specified signature nonce was used already.");
    goto out;
  }
  count(a->calls, k.c.action);
  size_t i;
  bool version_known = false;
  for (i = 0; i < sizeof actions / sizeof actions[0]; i++) {
    version_known |= !strcmp(actions[i].version, k.c.version);
    if (!strcmp(actions[i].version, k.c.version) &&
        !strcmp(actions[i].name, k.c.action))
      break;
  }
  if (!version_known) {
    ali_error(&k, 0, "InvalidVersion",
              "Specified parameter Version is not valid.");
    goto out;
  }
  if (i == sizeof actions / sizeof actions[0]) {
    ali_error(&k, 0, "InvalidAction.NotFound",
              "Specified api is not found, please check your url and "
              "method.");
    goto out;
  }
  /* Request-level faults, after authentication. */
  const char *service = strcmp(k.c.version, CMS_VERSION) ? "ecs" : "cms";
  struct fc_fault_query q = {.service = service, .action = k.c.action};
  struct fc_faults *fl = fc_faults(a->s);
  struct fc_fault *f;
  if ((f = fc_faults_fire(fl, FC_FAULT_SLOW, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s))))
    resp->delay_ms += f->delay_ms;
  if ((f = fc_faults_fire(fl, FC_FAULT_THROTTLE, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s)))) {
    /* ECS documents Throttling with status 400. */
    ali_error(&k, f->status ? f->status : 400, "Throttling",
              "Request was denied due to request throttling.");
    goto out;
  }
  if ((f = fc_faults_fire(fl, FC_FAULT_ERROR, &q, fc_elapsed_ms(a->s),
                          fc_rng(a->s)))) {
    const char *code = f->code[0]         ? f->code
                       : f->status == 503 ? "ServiceUnavailable"
                                          : "InternalError";
    ali_error(&k, f->status ? f->status : error_status(code), code,
              f->message[0] ? f->message
                            : "The request processing has failed due to "
                              "some unknown error.");
    goto out;
  }
  actions[i].fn(&k);
out:
  fc_ali_call_release(&k.c);
}

static bool ali_claims(const struct fc_request *req) {
  return fc_ali_claims(req);
}

/* ---- control API: /_fake/alibaba/... ------------------------------------- */

static json_t *inst_state_json(const struct inst *in) {
  json_t *o = inst_json(in);
  char t[32];
  if (in->token[0])
    json_object_set_new(o, "ClientToken", json_string(in->token));
  json_object_set_new(o, "SystemDisk",
                      json_pack("{s:i,s:s}", "Size", in->disk_gb, "Category",
                                in->disk_category));
  json_object_set_new(o, "RamRoleName", json_string(in->ram_role));
  json_object_set_new(o, "ImageIdAsLaunched", json_string(in->image));
  if (in->notice_ms >= 0) {
    fmt_seconds(in->notice_ms, t);
    json_object_set_new(o, "NoticeTime", json_string(t));
    fmt_seconds(in->reclaim_ms, t);
    json_object_set_new(o, "ReclaimTime", json_string(t));
  }
  return o;
}

static json_t *config_json(struct ali *a) {
  return json_pack("{s:I,s:I,s:I,s:I}", "pending_ms", (json_int_t)a->pending_ms,
                   "shutdown_ms", (json_int_t)a->shutdown_ms,
                   "vcpu_limit_on_demand", (json_int_t)a->vcpu_limit_on_demand,
                   "vcpu_limit_spot", (json_int_t)a->vcpu_limit_spot);
}

static void ali_dump(void *ctx, json_t *out) {
  struct ali *a = ctx;
  ali_tick(a);
  json_t *arr = json_array(), *calls = json_object(), *errs = json_object();
  json_t *events = json_array();
  for (size_t i = 0; i < a->n_inst; i++)
    json_array_append_new(arr, inst_state_json(a->inst[i]));
  for (size_t i = 0; i < 64 && a->calls[i].name[0]; i++)
    json_object_set_new(calls, a->calls[i].name, json_integer(a->calls[i].n));
  for (size_t i = 0; i < 64 && a->errors[i].name[0]; i++)
    json_object_set_new(errs, a->errors[i].name, json_integer(a->errors[i].n));
  for (size_t i = 0; i < a->n_events; i++)
    json_array_append_new(events, json_pack("{s:s,s:I}", "instance_id",
                                            a->events[i].instance_id, "time_ms",
                                            (json_int_t)a->events[i].time_ms));
  json_object_set_new(out, "instances", arr);
  json_object_set_new(out, "calls", calls);
  json_object_set_new(out, "errors", errs);
  json_object_set_new(out, "events", events);
  json_object_set_new(out, "config", config_json(a));
}

static bool json_ms(const json_t *body, const char *key, int64_t *out,
                    struct fc_response *resp) {
  json_t *v = json_object_get(body, key);
  if (!v)
    return true;
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    fc_json_error(resp, 400, "%s: expected an integer >= 0", key);
    return false;
  }
  *out = json_integer_value(v);
  return true;
}

/* {"instance_type", "zone"} naming a catalog offer, into t, r, z. */
static bool offer_of(const json_t *body, size_t *t, size_t *r, size_t *z,
                     struct fc_response *resp) {
  int ti =
      itype_index(json_string_value(json_object_get(body, "instance_type")));
  const char *zone = json_string_value(json_object_get(body, "zone"));
  for (size_t ri = 0; ri < N_REGIONS && zone; ri++) {
    int zi = zone_index(ri, zone);
    if (zi >= 0 && ti >= 0 && sold((size_t)ti, ri, (size_t)zi)) {
      *t = (size_t)ti, *r = ri, *z = (size_t)zi;
      return true;
    }
  }
  fc_json_error(resp, 400,
                "expected instance_type and zone of an offer of "
                "the catalog");
  return false;
}

static bool ctl_instance(struct ali *a, const char *method, const char *rest,
                         const json_t *body, struct fc_response *resp) {
  char id[32];
  size_t n = strcspn(rest, "/");
  if (n == 0 || n >= sizeof id)
    return false;
  memcpy(id, rest, n);
  id[n] = '\0';
  const char *sub = rest + n;
  struct inst *in = find(a, id);
  if (!in) {
    fc_json_error(resp, 404, "no instance %s", id);
    return true;
  }
  int64_t now = fc_now_ms(a->s);
  char t[32];
  if (!strcmp(sub, "") && !strcmp(method, "GET")) {
    fc_json_reply(resp, 200, inst_state_json(in));
  } else if (!strcmp(sub, "/spot/termination-time") && !strcmp(method, "GET")) {
    /* As instance metadata (meta-data/instance/spot/termination-time):
     * 404 until the notice is out. */
    if (!in->noticed || now < in->notice_ms) {
      fc_json_error(resp, 404, "no reclaim notice");
      return true;
    }
    fmt_seconds(in->reclaim_ms, t);
    resp->status = 200;
    resp->content_type = "text/plain";
    tw_buf_reset(&resp->body);
    tw_buf_adds(&resp->body, t);
  } else if (!strcmp(sub, "/interrupt") && !strcmp(method, "POST")) {
    int64_t delay = 0;
    if (body && !json_is_object(body)) {
      fc_json_error(resp, 400, "expected a JSON object body");
      return true;
    }
    if (!json_ms(body, "delay_ms", &delay, resp))
      return true;
    if (!in->spot || (in->state != IS_PENDING && in->state != IS_RUNNING)) {
      fc_json_error(resp, 409, "%s is not a running spot instance", id);
      return true;
    }
    schedule_reclaim(in, now + delay);
    char nt[32];
    fmt_seconds(in->notice_ms, nt);
    fmt_seconds(in->reclaim_ms, t);
    fc_json_reply(resp, 200,
                  json_pack("{s:s,s:s}", "notice_time", nt, "reclaim_time", t));
  } else {
    return false;
  }
  return true;
}

static bool ali_control(void *ctx, const char *method, const char *rest,
                        const json_t *body, struct fc_response *resp) {
  struct ali *a = ctx;
  ali_tick(a);
  if (!strcmp(rest, "/state") && !strcmp(method, "GET")) {
    json_t *out = json_object();
    ali_dump(a, out);
    fc_json_reply(resp, 200, out);
    return true;
  }
  if (!strncmp(rest, "/instances/", 11))
    return ctl_instance(a, method, rest + 11, body, resp);
  if (!strcmp(rest, "/config")) {
    if (!strcmp(method, "POST")) {
      int64_t v[4] = {a->pending_ms, a->shutdown_ms, a->vcpu_limit_on_demand,
                      a->vcpu_limit_spot};
      if (!json_is_object(body)) {
        fc_json_error(resp, 400, "expected a JSON object body");
        return true;
      }
      if (!json_ms(body, "pending_ms", &v[0], resp) ||
          !json_ms(body, "shutdown_ms", &v[1], resp) ||
          !json_ms(body, "vcpu_limit_on_demand", &v[2], resp) ||
          !json_ms(body, "vcpu_limit_spot", &v[3], resp))
        return true;
      a->pending_ms = v[0];
      a->shutdown_ms = v[1];
      a->vcpu_limit_on_demand = v[2];
      a->vcpu_limit_spot = v[3];
    } else if (strcmp(method, "GET")) {
      return false;
    }
    fc_json_reply(resp, 200, config_json(a));
    return true;
  }
  if (!strcmp(rest, "/stock") && !strcmp(method, "POST")) {
    size_t t, r, z;
    if (!offer_of(body, &t, &r, &z, resp))
      return true;
    const char *st = json_string_value(json_object_get(body, "status"));
    const char *market = json_string_value(json_object_get(body, "market"));
    int s = -1;
    for (int i = 0; st && i < 3; i++)
      if (!strcmp(st, stock_names[i]))
        s = i;
    if (s < 0 ||
        (market && strcmp(market, "spot") && strcmp(market, "on-demand"))) {
      fc_json_error(resp, 400,
                    "status: WithStock, ClosedWithStock or "
                    "WithoutStock; market: spot or on-demand");
      return true;
    }
    for (int m = 0; m < 2; m++)
      if (!market || (m == 1) == !strcmp(market, "spot"))
        a->stock[m][t][r][z] = (unsigned char)s;
    fc_json_reply(resp, 200, json_pack("{s:s}", "status", st));
    return true;
  }
  if (!strcmp(rest, "/spot-price") && !strcmp(method, "POST")) {
    size_t t, r, z;
    if (!offer_of(body, &t, &r, &z, resp))
      return true;
    const char *price = json_string_value(json_object_get(body, "price"));
    struct price_override po = {
        .itype = t, .region = r, .zone = z, .from_ms = fc_now_ms(a->s)};
    if (!fc_ali_milli_parse(price, &po.milli) || po.milli <= 0) {
      fc_json_error(resp, 400,
                    "price: CNY per hour with at most three "
                    "decimals, such as \"0.512\"");
      return true;
    }
    a->overrides =
        tw_realloc(a->overrides, (a->n_overrides + 1) * sizeof *a->overrides);
    a->overrides[a->n_overrides++] = po;
    fc_json_reply(resp, 200, json_pack("{s:s}", "price", price));
    return true;
  }
  return false;
}

static void ali_reset(void *ctx) {
  struct ali *a = ctx;
  for (size_t i = 0; i < a->n_inst; i++)
    inst_free(a->inst[i]);
  free(a->inst);
  for (size_t i = 0; i < a->n_tokens; i++)
    fc_ali_strv_free(a->tokens[i].ids, a->tokens[i].n_ids);
  free(a->tokens);
  free(a->overrides);
  struct fc_server *s = a->s;
  memset(a, 0, sizeof *a);
  a->s = s;
  a->pending_ms = fc_opts(s)->pending_ms;
  a->shutdown_ms = 3000;
  a->vcpu_limit_on_demand = 1000;
  a->vcpu_limit_spot = 800;
}

static enum tw_rc ali_create(struct fc_server *s, void **ctx,
                             struct tw_err *err) {
  struct ali *a = tw_calloc(1, sizeof *a);
  a->s = s;
  ali_reset(a);
  *ctx = a;
  return TW_OK;
}

static void ali_destroy(void *ctx) {
  struct ali *a = ctx;
  ali_reset(a);
  free(a);
}

/* ---- the instances' meta-server (--boot, boot.h) ------------------------ */

static void ali_text(struct fc_response *resp, int status, const char *t,
                     size_t len) {
  resp->status = status;
  resp->content_type = "text/plain";
  tw_buf_reset(&resp->body);
  tw_buf_add(&resp->body, t, len);
}

static bool ali_metadata(void *ctx, const char *id, const char *sub,
                         const struct fc_request *req,
                         struct fc_response *resp) {
  struct ali *a = ctx;
  ali_tick(a);
  struct inst *in = find(a, id);
  if (!in)
    return false;
  count(a->calls, "MetaServer");
  if (strcmp(req->method, "GET")) {
    ali_text(resp, 405, "Method Not Allowed", 18);
    return true;
  }
  char t[32];
  const char *v = NULL;
  if (!strcmp(sub, "/latest/meta-data/instance-id"))
    v = in->id;
  else if (!strcmp(sub, "/latest/meta-data/instance/instance-type"))
    v = itypes[in->itype].name;
  else if (!strcmp(sub, "/latest/meta-data/zone-id"))
    v = regions[in->region].zones[in->zone];
  else if (!strcmp(sub, "/latest/meta-data/region-id"))
    v = regions[in->region].name;
  else if (!strcmp(sub, "/latest/meta-data/instance/spot/termination-time") &&
           in->noticed && fc_now_ms(a->s) >= in->notice_ms) {
    fmt_seconds(in->reclaim_ms, t);
    v = t;
  }
  if (v)
    ali_text(resp, 200, v, strlen(v));
  else if (!strcmp(sub, "/latest/user-data") && in->user_data)
    ali_text(resp, 200, in->user_data, in->user_data_len);
  else
    ali_text(resp, 404, "Not Found", 9);
  return true;
}

static void ali_tick_cb(void *ctx) { ali_tick(ctx); }

const struct fc_module_ops fc_module_alibaba = {
    .name = "alibaba",
    .create = ali_create,
    .destroy = ali_destroy,
    .claims = ali_claims,
    .handle = ali_handle,
    .control = ali_control,
    .dump = ali_dump,
    .reset = ali_reset,
    .metadata = ali_metadata,
    .tick = ali_tick_cb,
};
