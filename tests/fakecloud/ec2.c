/* ec2.c - the EC2 module of tradewind-fakecloud: the Query API (version
 * 2016-11-15) over POST form bodies and GET query strings, SigV4 checked
 * with tw_sigv4_verify, instances kept in memory and moved through their
 * states by the fake clock, and EC2's own error codes and envelopes.
 *
 * The module runs with the server's mutex held (module.h), so it keeps
 * plain arrays.  Time only moves forward between calls: every entry point
 * first calls ec2_tick() to apply the transitions that are due.
 *
 * A benchmark drives tens of thousands of instances through one fake, so
 * no request may cost in proportion to the instances held: ids and client
 * tokens are hashed, vCPUs in use are running totals, and the tick visits
 * only the instances whose next transition is due (a min-heap on that
 * time).  Listings stay linear in the instances they walk. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/sigv4.h"
#include "tests/fakecloud/boot.h"
#include "tests/fakecloud/clock.h"
#include "tests/fakecloud/ec2_req.h"
#include "tests/fakecloud/fakecloud.h"
#include "tests/fakecloud/module.h"
#include "tests/fakecloud/params.h"
#include "tests/fakecloud/xml.h"

#define EC2_NS "http://ec2.amazonaws.com/doc/2016-11-15/"
#define SKEW_MS (5 * 60 * 1000)        /* SigV4: five minutes */
#define TERMINATED_VISIBLE_MS 3600000  /* EC2 lists them about an hour */
#define SPOT_STEP_MS (6 * 3600 * 1000) /* spot price history grid */
#define SPOT_HISTORY_MS (90LL * 24 * 3600 * 1000) /* EC2 keeps 90 days */

enum ec2_state {
  ST_PENDING = 0,
  ST_RUNNING = 16,
  ST_SHUTTING_DOWN = 32,
  ST_TERMINATED = 48,
  ST_STOPPING = 64,
  ST_STOPPED = 80
};

static const char *state_name(int code) {
  switch (code) {
  case ST_PENDING:
    return "pending";
  case ST_RUNNING:
    return "running";
  case ST_SHUTTING_DOWN:
    return "shutting-down";
  case ST_TERMINATED:
    return "terminated";
  case ST_STOPPING:
    return "stopping";
  case ST_STOPPED:
    return "stopped";
  }
  return "unknown";
}

struct inst {
  uint64_t seq; /* creation order: listing order and page cursor */
  char id[20];
  char reservation_id[20];
  char image_id[32];
  char itype[32];
  char region[32];
  char zone[32];
  char key_name[64];
  char subnet_id[32];
  char iam_profile[160]; /* IamInstanceProfile.Arn or .Name */
  char root_device[32];
  long root_size_gb;
  char root_type[16];
  int n_groups;
  char client_token[65];
  char private_ip[16];
  int ami_launch_index;
  int state;
  int64_t launch_ms;
  int64_t next_ms;       /* when the current transient state ends */
  int64_t terminated_ms; /* -1 until terminated */
  char reason[96];       /* stateTransitionReason */
  char sr_code[48];      /* stateReason */
  char sr_msg[96];
  bool spot;
  char sir_id[16];
  int64_t max_price_uusd;
  char spot_type[16];
  char interruption[16];
  int64_t notice_ms; /* spot instance-action notice, -1 none */
  int64_t action_ms; /* when the interruption happens */
  char notice_action[16];
  int64_t rebalance_ms; /* rebalance recommendation, -1 none */
  bool outage;          /* its region went down (region_down): the
                           interruption is the outage's */
  struct tag {
    char *key, *value;
  } tags[EC2_MAX_TAGS];
  size_t n_tags;
  struct tag sir_tags[EC2_MAX_TAGS]; /* the spot request's own tags */
  size_t n_sir_tags;
  char max_price_text[32]; /* the spot request's spotPrice, as EC2 shows it */
  int vcpus;   /* the type's, counted against the limit while it lives */
  size_t slot; /* index in ec2.inst */
  size_t heap; /* index in ec2.due, NO_HEAP when nothing is due */
  int64_t due; /* when the next transition (or the drop) is due */
  /* --boot: the decoded user data, run once the instance is running; its
   * process session; IMDSv2 session tokens (fake clock expiry). */
  char *user_data;
  size_t user_data_len;
  struct fc_boot boot;
  struct imds_token {
    char token[56];
    int64_t expires_ms;
  } imds[8];
};

#define NO_HEAP SIZE_MAX

/* A client token's first RunInstances: answered again to a retry with the
 * same parameters.  ids are the instances it made, in launch order (some
 * may be gone: terminated more than an hour ago). */
struct token {
  char token[65];
  char region[32];
  uint64_t hash;
  char reservation_id[20];
  char (*ids)[20];
  size_t n_ids;
};

/* vCPUs of the instances that count against a region's limit (every state
 * but terminated and stopped), by market. */
struct vcpu_use {
  char region[32];
  int64_t n[2]; /* [0] on-demand, [1] spot */
};

struct counter {
  char name[48];
  int64_t n;
};

struct price_override {
  char itype[32];
  char region[32];
  size_t zone;
  int64_t from_ms;
  int64_t uusd;
};

struct ec2 {
  struct fc_server *s;
  struct inst **inst; /* creation order; NULL where one was dropped */
  size_t n_inst;      /* slots, holes included */
  size_t n_holes;
  struct inst **by_id; /* open addressing, linear probing */
  size_t by_id_cap;    /* a power of two, or 0 */
  size_t by_id_n;
  struct inst **due; /* min-heap on inst.due */
  size_t n_due, cap_due;
  uint64_t next_seq;
  struct token *tokens;
  size_t n_tokens;
  size_t *by_token; /* index + 1 into tokens, 0 free; open addressing */
  size_t by_token_cap;
  struct vcpu_use *use;
  size_t n_use;
  struct counter calls[64], errors[64];
  struct price_override *overrides;
  size_t n_overrides;
  int64_t pending_ms;
  int64_t shutdown_ms;
  int64_t vcpu_limit_on_demand; /* per region, like the Standard bucket */
  int64_t vcpu_limit_spot;
};

/* ---- small helpers ---------------------------------------------------- */

static void count(struct counter *c, const char *name) {
  size_t i;
  for (i = 0; i < 64 && c[i].name[0]; i++)
    if (!strcmp(c[i].name, name)) {
      c[i].n++;
      return;
    }
  if (i == 64) /* a flood of distinct names lands in the last slot */
    i = 63, snprintf(c[i].name, sizeof c[i].name, "(other)");
  else
    snprintf(c[i].name, sizeof c[i].name, "%s", name);
  c[i].n++;
}

static void rand_hex(struct ec2 *e, char *out, size_t n) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++)
    out[i] = hex[fc_rng_below(fc_rng(e->s), 16)];
  out[n] = '\0';
}

static void fmt_time(int64_t ms, char out[32]) {
  tw_time_fmt_rfc3339(ms, out, 32);
}

/* EC2 keeps instance and request times in whole seconds and prints them
 * with a zero fraction: 2024-05-01T12:00:05.000Z. */
static void fmt_time_s(int64_t ms, char out[32]) {
  tw_time_fmt_rfc3339(ms - ((ms % 1000) + 1000) % 1000, out, 32);
}

/* EC2's HTTP status for each error code it returns. */
static int error_status(const char *code) {
  static const struct {
    const char *code;
    int status;
  } map[] = {
      {"MissingAuthenticationToken", 401},
      {"AuthFailure", 401},
      {"SignatureDoesNotMatch", 403},
      {"UnauthorizedOperation", 403},
      {"DryRunOperation", 412},
      {"RequestEntityTooLarge", 413},
      {"InternalError", 500},
      {"InsufficientInstanceCapacity", 500},
      {"RequestLimitExceeded", 503},
      {"Unavailable", 503},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i].code, code))
      return map[i].status;
  return 400;
}

/* The error envelope, byte for byte as EC2 writes it (no namespace,
 * RequestID spelled with a capital D). */
static void ec2_error(struct ec2 *e, struct fc_response *resp, int status,
                      const char *code, const char *msg) {
  count(e->errors, code);
  resp->status = status ? status : error_status(code);
  resp->content_type = "text/xml;charset=UTF-8";
  tw_buf_reset(&resp->body);
  tw_buf_adds(&resp->body, FC_XML_DECL "<Response><Errors><Error>");
  fc_xml_elem(&resp->body, "Code", code);
  fc_xml_elem(&resp->body, "Message", msg);
  tw_buf_adds(&resp->body, "</Error></Errors>");
  fc_xml_elem(&resp->body, "RequestID", resp->request_id);
  tw_buf_adds(&resp->body, "</Response>");
}

static void ec2_error_err(struct ec2 *e, struct fc_response *resp,
                          const struct tw_err *err) {
  ec2_error(e, resp, 0, err->detail[0] ? err->detail : "InternalError",
            err->msg);
}

static void begin(struct fc_response *resp, const char *root) {
  resp->status = 200;
  resp->content_type = "text/xml;charset=UTF-8";
  tw_buf_reset(&resp->body);
  tw_buf_printf(&resp->body, FC_XML_DECL "<%s xmlns=\"" EC2_NS "\">", root);
  fc_xml_elem(&resp->body, "requestId", resp->request_id);
}

static void end(struct fc_response *resp, const char *root) {
  fc_xml_close(&resp->body, root);
}

/* ---- state ------------------------------------------------------------ */

/* Ids are 17 random hex digits, so two instances never share one in
 * practice; should they, the first keeps the slot, as a scan in creation
 * order would have found it. */
static struct inst *find(struct ec2 *e, const char *id) {
  if (!e->by_id_cap)
    return NULL;
  size_t mask = e->by_id_cap - 1;
  for (size_t i = fc_hash_str(id) & mask; e->by_id[i]; i = (i + 1) & mask)
    if (!strcmp(e->by_id[i]->id, id))
      return e->by_id[i];
  return NULL;
}

static void by_id_put(struct inst **tab, size_t cap, struct inst *in) {
  size_t mask = cap - 1, i = fc_hash_str(in->id) & mask;
  while (tab[i]) {
    if (!strcmp(tab[i]->id, in->id))
      return;
    i = (i + 1) & mask;
  }
  tab[i] = in;
}

static void by_id_add(struct ec2 *e, struct inst *in) {
  if ((e->by_id_n + 1) * 2 > e->by_id_cap) {
    size_t cap = e->by_id_cap ? e->by_id_cap * 2 : 64;
    struct inst **tab = tw_calloc(cap, sizeof *tab);
    for (size_t i = 0; i < e->by_id_cap; i++)
      if (e->by_id[i])
        by_id_put(tab, cap, e->by_id[i]);
    free(e->by_id);
    e->by_id = tab;
    e->by_id_cap = cap;
  }
  if (find(e, in->id))
    return;
  by_id_put(e->by_id, e->by_id_cap, in);
  e->by_id_n++;
}

/* Removal with backward shift, so lookups need no tombstones. */
static void by_id_del(struct ec2 *e, const struct inst *in) {
  if (!e->by_id_cap)
    return;
  size_t mask = e->by_id_cap - 1, i = fc_hash_str(in->id) & mask;
  while (e->by_id[i] && e->by_id[i] != in)
    i = (i + 1) & mask;
  if (!e->by_id[i])
    return;
  e->by_id[i] = NULL;
  e->by_id_n--;
  for (size_t j = (i + 1) & mask; e->by_id[j]; j = (j + 1) & mask) {
    size_t home = fc_hash_str(e->by_id[j]->id) & mask;
    /* Move j into the hole at i unless its home lies in (i, j]. */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      e->by_id[i] = e->by_id[j];
      e->by_id[j] = NULL;
      i = j;
    }
  }
}

static uint64_t token_hash(const char *token, const char *region) {
  return fc_hash_str(token) ^ (fc_hash_str(region) * 0x9e3779b97f4a7c15ull);
}

static struct token *find_token(struct ec2 *e, const char *token,
                                const char *region) {
  if (!e->by_token_cap)
    return NULL;
  size_t mask = e->by_token_cap - 1;
  for (size_t i = token_hash(token, region) & mask; e->by_token[i];
       i = (i + 1) & mask) {
    struct token *t = &e->tokens[e->by_token[i] - 1];
    if (!strcmp(t->token, token) && !strcmp(t->region, region))
      return t;
  }
  return NULL;
}

static void by_token_rehash(struct ec2 *e) {
  size_t cap = e->by_token_cap ? e->by_token_cap * 2 : 64, mask = cap - 1;
  free(e->by_token);
  e->by_token = tw_calloc(cap, sizeof *e->by_token);
  e->by_token_cap = cap;
  for (size_t k = 0; k < e->n_tokens; k++) {
    size_t i = token_hash(e->tokens[k].token, e->tokens[k].region) & mask;
    while (e->by_token[i])
      i = (i + 1) & mask;
    e->by_token[i] = k + 1;
  }
}

/* Keeps e->tokens[n_tokens - 1], just appended, findable. */
static void by_token_add(struct ec2 *e) {
  if (e->n_tokens * 2 > e->by_token_cap) {
    by_token_rehash(e); /* places every token, the new one included */
    return;
  }
  struct token *t = &e->tokens[e->n_tokens - 1];
  size_t mask = e->by_token_cap - 1;
  size_t i = token_hash(t->token, t->region) & mask;
  while (e->by_token[i])
    i = (i + 1) & mask;
  e->by_token[i] = e->n_tokens;
}

static bool counts_vcpus(int state) {
  return state != ST_TERMINATED && state != ST_STOPPED;
}

static int64_t *vcpu_total(struct ec2 *e, const char *region, bool spot) {
  for (size_t i = 0; i < e->n_use; i++) /* as many as catalog regions */
    if (!strcmp(e->use[i].region, region))
      return &e->use[i].n[spot];
  e->use = tw_realloc(e->use, (e->n_use + 1) * sizeof *e->use);
  struct vcpu_use *u = &e->use[e->n_use++];
  memset(u, 0, sizeof *u);
  snprintf(u->region, sizeof u->region, "%s", region);
  return &u->n[spot];
}

/* Every change of state goes through here, to keep the vCPU totals. */
static void set_state(struct ec2 *e, struct inst *in, int state) {
  bool was = counts_vcpus(in->state), is = counts_vcpus(state);
  in->state = state;
  if (was != is)
    *vcpu_total(e, in->region, in->spot) += is ? in->vcpus : -in->vcpus;
  /* --boot: the machine comes up when running and goes down with it. */
  if (state == ST_RUNNING && in->user_data && !in->boot.sid)
    fc_boot_start(e->s, in->id, in->user_data, in->user_data_len, &in->boot);
  else if (state != ST_RUNNING && state != ST_PENDING)
    fc_boot_kill(&in->boot);
}

static void inst_free(struct inst *in) {
  fc_boot_kill(&in->boot);
  free(in->user_data);
  for (size_t t = 0; t < in->n_tags; t++) {
    free(in->tags[t].key);
    free(in->tags[t].value);
  }
  for (size_t t = 0; t < in->n_sir_tags; t++) {
    free(in->sir_tags[t].key);
    free(in->sir_tags[t].value);
  }
  free(in);
}

/* Sets key to value in a tag set (CreateTags overwrites a key's value). */
static void tag_set(struct tag *tags, size_t *n, const char *key,
                    const char *value) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(tags[i].key, key)) {
      free(tags[i].value);
      tags[i].value = tw_strdup(value);
      return;
    }
  tags[*n].key = tw_strdup(key);
  tags[*n].value = tw_strdup(value);
  (*n)++;
}

/* How many keys of add are not in tags yet: the limit counts the result. */
static size_t tags_new(const struct tag *tags, size_t n,
                       const struct ec2_tag *add, size_t n_add) {
  size_t k = 0;
  for (size_t a = 0; a < n_add; a++) {
    bool have = false;
    for (size_t i = 0; i < n && !have; i++)
      have = !strcmp(tags[i].key, add[a].key);
    k += !have;
  }
  return k;
}

static bool live(const struct inst *in) {
  return in->state == ST_PENDING || in->state == ST_RUNNING;
}

/* When advance() next has something to do for in, INT64_MAX for never:
 * the end of pending (or an interruption that comes first), the
 * interruption of a live instance, the end of shutting-down or stopping,
 * and an hour after termination, when it drops out of listings. */
static int64_t due_at(const struct inst *in) {
  bool notice = in->notice_ms >= 0;
  switch (in->state) {
  case ST_PENDING:
    return notice && in->action_ms < in->next_ms ? in->action_ms : in->next_ms;
  case ST_RUNNING:
    return notice ? in->action_ms : INT64_MAX;
  case ST_SHUTTING_DOWN:
  case ST_STOPPING:
    return in->next_ms;
  case ST_TERMINATED:
    return in->terminated_ms + TERMINATED_VISIBLE_MS;
  }
  return INT64_MAX;
}

static bool due_before(const struct inst *a, const struct inst *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_place(struct ec2 *e, size_t i, struct inst *in) {
  e->due[i] = in;
  in->heap = i;
}

static void heap_up(struct ec2 *e, size_t i) {
  struct inst *in = e->due[i];
  while (i > 0 && due_before(in, e->due[(i - 1) / 2])) {
    heap_place(e, i, e->due[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_place(e, i, in);
}

static void heap_down(struct ec2 *e, size_t i) {
  struct inst *in = e->due[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= e->n_due)
      break;
    if (c + 1 < e->n_due && due_before(e->due[c + 1], e->due[c]))
      c++;
    if (!due_before(e->due[c], in))
      break;
    heap_place(e, i, e->due[c]);
    i = c;
  }
  heap_place(e, i, in);
}

static void heap_remove(struct ec2 *e, struct inst *in) {
  size_t i = in->heap;
  if (i == NO_HEAP)
    return;
  in->heap = NO_HEAP;
  struct inst *last = e->due[--e->n_due];
  if (last == in)
    return;
  heap_place(e, i, last);
  heap_up(e, i);
  heap_down(e, last->heap);
}

/* Files in under its next due time; call after anything that moves it
 * (a new instance, a change of state, a notice scheduled). */
static void reschedule(struct ec2 *e, struct inst *in) {
  int64_t due = due_at(in);
  if (due == INT64_MAX) {
    heap_remove(e, in);
    return;
  }
  in->due = due;
  if (in->heap == NO_HEAP) {
    if (e->n_due == e->cap_due) {
      e->cap_due = e->cap_due ? e->cap_due * 2 : 64;
      e->due = tw_realloc(e->due, e->cap_due * sizeof *e->due);
    }
    heap_place(e, e->n_due++, in);
    heap_up(e, in->heap);
  } else {
    heap_up(e, in->heap);
    heap_down(e, in->heap);
  }
}

static void inst_add(struct ec2 *e, struct inst *in) {
  e->inst = tw_realloc(e->inst, (e->n_inst + 1) * sizeof *e->inst);
  in->slot = e->n_inst;
  e->inst[e->n_inst++] = in;
  by_id_add(e, in);
  in->heap = NO_HEAP;
  if (counts_vcpus(in->state))
    *vcpu_total(e, in->region, in->spot) += in->vcpus;
  reschedule(e, in);
}

/* Only for an instance terminated more than an hour ago. */
static void inst_drop(struct ec2 *e, struct inst *in) {
  heap_remove(e, in);
  by_id_del(e, in);
  e->inst[in->slot] = NULL;
  e->n_holes++;
  inst_free(in);
}

/* Closes the holes once they are half the slots: amortised O(1) a drop,
 * and creation order is kept. */
static void inst_compact(struct ec2 *e) {
  if (e->n_holes * 2 <= e->n_inst)
    return;
  size_t w = 0;
  for (size_t i = 0; i < e->n_inst; i++)
    if (e->inst[i]) {
      e->inst[i]->slot = w;
      e->inst[w++] = e->inst[i];
    }
  e->n_inst = w;
  e->n_holes = 0;
}

static void schedule_notice(struct inst *in, int64_t at, int64_t lead,
                            const char *action) {
  in->notice_ms = at;
  in->action_ms = at + lead;
  snprintf(in->notice_action, sizeof in->notice_action, "%s",
           action && *action ? action : in->interruption);
}

/* Applies every transition due at `now`, in time order per instance, so a
 * long jump of the clock walks pending -> running -> interrupted ->
 * terminated as the real service would have. */
static void ec2_tick(struct ec2 *e) {
  int64_t now = fc_now_ms(e->s);
  struct fc_faults *faults = fc_faults(e->s);
  /* Rules naming one instance: the notice starts when the rule fires. */
  for (size_t r = 0; r < faults->n; r++) {
    struct fc_fault *f = &faults->v[r];
    if ((f->kind != FC_FAULT_SPOT_INTERRUPTION &&
         f->kind != FC_FAULT_REBALANCE) ||
        !f->instance_id[0])
      continue;
    struct inst *in = find(e, f->instance_id);
    if (!in || !in->spot || !live(in))
      continue;
    if (f->kind == FC_FAULT_SPOT_INTERRUPTION && in->notice_ms >= 0)
      continue;
    if (f->kind == FC_FAULT_REBALANCE && in->rebalance_ms >= 0)
      continue;
    struct fc_fault_query q = {.service = "ec2",
                               .instance_id = in->id,
                               .instance_type = in->itype,
                               .zone = in->zone,
                               .market = "spot"};
    if (!fc_fault_matches(f, &q, fc_elapsed_ms(e->s)) ||
        !fc_rng_chance_ppm(fc_rng(e->s), f->probability_ppm))
      continue;
    if (f->count > 0)
      f->count--;
    f->fired++;
    if (f->kind == FC_FAULT_SPOT_INTERRUPTION)
      schedule_notice(in, now, f->lead_ms, NULL);
    else
      in->rebalance_ms = now;
    reschedule(e, in);
  }
  /* A region down: every live instance there is interrupted lead_ms
   * after the rule applies.  A spot instance gets the one interruption
   * notice EC2 has (instance-action, terminate); an on-demand instance
   * gets none, as on EC2, and is terminated at the same time. */
  for (size_t r = 0; r < faults->n; r++) {
    struct fc_fault *f = &faults->v[r];
    if (f->kind != FC_FAULT_REGION_DOWN)
      continue;
    for (size_t i = 0; i < e->n_inst; i++) {
      struct inst *in = e->inst[i];
      if (!in || in->outage || !live(in) || strcmp(in->region, f->region))
        continue;
      struct fc_fault_query q = {.service = "ec2",
                                 .instance_id = in->id,
                                 .instance_type = in->itype,
                                 .zone = in->zone,
                                 .region = in->region,
                                 .market = in->spot ? "spot" : "on-demand"};
      if (!fc_fault_matches(f, &q, fc_elapsed_ms(e->s)))
        continue;
      f->fired++;
      in->outage = true;
      int64_t at = in->spot ? now : now + f->lead_ms;
      if (in->notice_ms < 0 || in->action_ms > now + f->lead_ms)
        schedule_notice(in, at, now + f->lead_ms - at, "terminate");
      reschedule(e, in);
    }
  }
  while (e->n_due && e->due[0]->due <= now) {
    struct inst *in = e->due[0];
    for (;;) {
      bool early = in->notice_ms >= 0 && in->action_ms <= in->next_ms;
      if (in->state == ST_PENDING && now >= in->next_ms && !early) {
        set_state(e, in, ST_RUNNING);
        in->sr_code[0] = in->sr_msg[0] = '\0';
        continue;
      }
      if (live(in) && in->notice_ms >= 0 && now >= in->action_ms) {
        bool stop = strcmp(in->notice_action, "terminate") != 0;
        char when[32];
        fmt_time(in->action_ms, when);
        set_state(e, in, stop ? ST_STOPPING : ST_SHUTTING_DOWN);
        in->next_ms = in->action_ms + e->shutdown_ms;
        bool host = in->outage && !in->spot; /* no spot reclaim: a host */
        snprintf(in->sr_code, sizeof in->sr_code, "%s",
                 host   ? "Server.InternalError"
                 : stop ? "Server.SpotInstanceShutdown"
                        : "Server.SpotInstanceTermination");
        snprintf(in->sr_msg, sizeof in->sr_msg, "%s: %s", in->sr_code,
                 host   ? "Internal error"
                 : stop ? "Spot instance shutdown"
                        : "Spot instance termination");
        snprintf(in->reason, sizeof in->reason,
                 "Service initiated (%.10s %.8s GMT)", when, when + 11);
        continue;
      }
      if (in->state == ST_SHUTTING_DOWN && now >= in->next_ms) {
        set_state(e, in, ST_TERMINATED);
        in->terminated_ms = in->next_ms;
        continue;
      }
      if (in->state == ST_STOPPING && now >= in->next_ms) {
        set_state(e, in, ST_STOPPED);
        continue;
      }
      break;
    }
    /* Terminated instances drop out of listings after about an hour. */
    if (in->state == ST_TERMINATED &&
        now >= in->terminated_ms + TERMINATED_VISIBLE_MS)
      inst_drop(e, in);
    else
      reschedule(e, in); /* now due later than now: see due_at() */
  }
  inst_compact(e);
}

/* ---- spot prices ------------------------------------------------------ */

/* The price of a grid step: the catalog's figure moved by up to +-10 % by
 * a hash of (seed, offer, zone, step), rounded to 1/10000 USD as EC2's
 * prices are.  Stateless, so every page and every call agrees. */
static int64_t spot_at_step(struct ec2 *e, const struct fc_offer *o,
                            size_t zone, int64_t step) {
  const struct fc_catalog *c = fc_catalog(e->s);
  int64_t base = fc_offer_spot(o, zone);
  if (base < 0)
    return -1;
  uint64_t h = fc_hash3(fc_seed(e->s) ^ fc_hash_str(c->itypes[o->itype].name),
                        (uint64_t)(o->region * 64 + zone), (uint64_t)step);
  int64_t permille = (int64_t)(h % 201) - 100; /* -100..100 = +-10 % */
  int64_t p = base + base * permille / 1000;
  p = p / 100 * 100;
  int64_t od = o->on_demand_uusd;
  if (p > od)
    p = od; /* spot never costs more than on-demand */
  return p < 100 ? 100 : p;
}

/* The override in force at t for (offer, zone), or NULL. */
static const struct price_override *
override_at(struct ec2 *e, const struct fc_offer *o, size_t zone, int64_t t) {
  const struct fc_catalog *c = fc_catalog(e->s);
  const struct price_override *best = NULL;
  for (size_t i = 0; i < e->n_overrides; i++) {
    const struct price_override *po = &e->overrides[i];
    if (po->zone == zone && po->from_ms <= t &&
        !strcmp(po->itype, c->itypes[o->itype].name) &&
        !strcmp(po->region, c->regions[o->region].name) &&
        (!best || po->from_ms >= best->from_ms))
      best = po;
  }
  return best;
}

static int64_t spot_price_now(struct ec2 *e, const struct fc_offer *o,
                              size_t zone, int64_t now) {
  int64_t step = now / SPOT_STEP_MS;
  const struct price_override *po = override_at(e, o, zone, now);
  if (po && po->from_ms >= step * SPOT_STEP_MS)
    return po->uusd;
  return spot_at_step(e, o, zone, step);
}

/* ---- authentication --------------------------------------------------- */

static const char *secret_cb(void *ctx, const char *ak) {
  return fc_secret_for(ctx, ak);
}

/* Checks the signature; on success copies the credential scope's region
 * (the signature was verified over it) into region. */
static enum tw_rc authenticate(struct ec2 *e, const struct fc_request *req,
                               const char *service, char region[32],
                               struct tw_err *err) {
  struct tw_sigv4_header *h =
      tw_calloc(req->n_headers ? req->n_headers : 1, sizeof *h);
  for (size_t i = 0; i < req->n_headers; i++) {
    h[i].name = req->headers[i].name;
    h[i].value = req->headers[i].value;
  }
  struct tw_sigv4_request sr = {
      .method = req->method,
      .path = req->raw_path[0] ? req->raw_path : "/",
      .query = req->raw_query,
      .headers = h,
      .n_headers = req->n_headers,
      .body = req->body,
      .body_len = req->body_len,
  };
  char *ak = NULL;
  enum tw_rc rc = tw_sigv4_verify(&sr, secret_cb, e->s, fc_now_ms(e->s),
                                  SKEW_MS, service, &ak, err);
  free(h);
  /* a temporary key (creds.c) needs its session token, unexpired */
  const char *why =
      rc ? NULL
         : fc_issued_check(e->s, ak, fc_header(req, "X-Amz-Security-Token"));
  free(ak);
  if (rc)
    return rc;
  if (why) {
    tw_err_detail(err, why);
    return tw_err_set(err, TW_E_AUTH,
                      !strcmp(why, "ExpiredToken")
                          ? "The security token included in the request is "
                            "expired"
                          : "The security token included in the request is "
                            "invalid.");
  }
  /* Credential=AKID/20240501/us-east-1/ec2/aws4_request */
  const char *authz = fc_header(req, "Authorization");
  const char *cred = authz ? strstr(authz, "Credential=") : NULL;
  region[0] = '\0';
  if (cred) {
    const char *p = cred + 11;
    for (int slash = 0; slash < 2 && p; slash++) {
      p = strchr(p, '/');
      if (p)
        p++;
    }
    if (p) {
      size_t n = strcspn(p, "/");
      if (n < 32) {
        memcpy(region, p, n);
        region[n] = '\0';
      }
    }
  }
  if (!region[0] || !fc_catalog_region(fc_catalog(e->s), region)) {
    tw_err_detail(err, "AuthFailure");
    return tw_err_set(err, TW_E_AUTH,
                      "Credential should be scoped to a valid region, not "
                      "'%.31s'.",
                      region);
  }
  return TW_OK;
}

/* ---- XML of an instance ---------------------------------------------- */

static void instance_xml(struct ec2 *e, struct tw_buf *b,
                         const struct inst *in) {
  const struct fc_itype *it = fc_catalog_itype(fc_catalog(e->s), in->itype);
  char t[32];
  fc_xml_open(b, "item");
  fc_xml_elem(b, "instanceId", in->id);
  fc_xml_elem(b, "imageId", in->image_id);
  tw_buf_printf(b,
                "<instanceState><code>%d</code><name>%s</name>"
                "</instanceState>",
                in->state, state_name(in->state));
  if (in->state == ST_TERMINATED) {
    fc_xml_elem(b, "privateDnsName", NULL);
  } else {
    char dns[64];
    snprintf(dns, sizeof dns, "ip-%s.ec2.internal", in->private_ip);
    for (char *p = dns; *p; p++)
      if (*p == '.' && p < dns + 3 + strlen(in->private_ip))
        *p = '-';
    fc_xml_elem(b, "privateDnsName", dns);
  }
  fc_xml_elem(b, "dnsName", NULL);
  fc_xml_elem(b, "reason", in->reason);
  if (in->key_name[0])
    fc_xml_elem(b, "keyName", in->key_name);
  fc_xml_elem_i64(b, "amiLaunchIndex", in->ami_launch_index);
  fc_xml_elem(b, "productCodes", NULL);
  fc_xml_elem(b, "instanceType", in->itype);
  fmt_time_s(in->launch_ms, t);
  fc_xml_elem(b, "launchTime", t);
  fc_xml_open(b, "placement");
  fc_xml_elem(b, "availabilityZone", in->zone);
  fc_xml_elem(b, "groupName", NULL);
  fc_xml_elem(b, "tenancy", "default");
  fc_xml_close(b, "placement");
  tw_buf_adds(b, "<monitoring><state>disabled</state></monitoring>");
  if (in->state != ST_TERMINATED)
    fc_xml_elem(b, "privateIpAddress", in->private_ip);
  fc_xml_elem(b, "groupSet", NULL);
  if (in->sr_code[0]) {
    fc_xml_open(b, "stateReason");
    fc_xml_elem(b, "code", in->sr_code);
    fc_xml_elem(b, "message", in->sr_msg);
    fc_xml_close(b, "stateReason");
  }
  fc_xml_elem(b, "architecture",
              it && !strcmp(it->arch[0], "arm64") ? "arm64" : "x86_64");
  fc_xml_elem(b, "rootDeviceType", "ebs");
  fc_xml_elem(b, "rootDeviceName", "/dev/xvda");
  fc_xml_elem(b, "blockDeviceMapping", NULL);
  if (in->spot) {
    fc_xml_elem(b, "instanceLifecycle", "spot");
    fc_xml_elem(b, "spotInstanceRequestId", in->sir_id);
  }
  fc_xml_elem(b, "virtualizationType", "hvm");
  fc_xml_elem(b, "clientToken", in->client_token);
  if (in->n_tags) { /* EC2 leaves tagSet out when there are none */
    fc_xml_open(b, "tagSet");
    for (size_t i = 0; i < in->n_tags; i++) {
      fc_xml_open(b, "item");
      fc_xml_elem(b, "key", in->tags[i].key);
      fc_xml_elem(b, "value", in->tags[i].value);
      fc_xml_close(b, "item");
    }
    fc_xml_close(b, "tagSet");
  }
  fc_xml_elem(b, "hypervisor", "xen");
  fc_xml_elem_bool(b, "ebsOptimized", 0);
  fc_xml_elem_bool(b, "enaSupport", 1);
  if (it)
    tw_buf_printf(b,
                  "<cpuOptions><coreCount>%d</coreCount><threadsPerCore>"
                  "%d</threadsPerCore></cpuOptions>",
                  it->cores, it->threads_per_core);
  fc_xml_close(b, "item");
}

/* Writes reservations for the instances of list (already in order):
 * consecutive instances of one reservation share an item. */
static void reservations_xml(struct ec2 *e, struct tw_buf *b,
                             struct inst **list, size_t n) {
  const char *owner = fc_catalog(e->s)->owner_id;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    fc_xml_open(b, "item");
    fc_xml_elem(b, "reservationId", list[i]->reservation_id);
    fc_xml_elem(b, "ownerId", owner);
    fc_xml_elem(b, "groupSet", NULL);
    fc_xml_open(b, "instancesSet");
    while (j < n && !strcmp(list[j]->reservation_id, list[i]->reservation_id))
      instance_xml(e, b, list[j++]);
    fc_xml_close(b, "instancesSet");
    fc_xml_close(b, "item");
    i = j;
  }
}

/* ---- pagination tokens ------------------------------------------------ */

/* Opaque tokens bound to the request that made them: (cursor, extra) and a
 * check hash over them, the seed and the request's other parameters.  A
 * token from another query, another server or hand-edited is refused. */
static void make_token(struct ec2 *e, uint64_t qhash, int64_t cursor,
                       int64_t extra, char out[80]) {
  uint64_t chk =
      fc_hash3(fc_seed(e->s) ^ qhash, (uint64_t)cursor, (uint64_t)extra);
  snprintf(out, 80, "eyJ2IjoxfQ.%llx.%llx.%016llx", (unsigned long long)cursor,
           (unsigned long long)extra, (unsigned long long)chk);
}

static bool read_token(struct ec2 *e, uint64_t qhash, const char *tok,
                       int64_t *cursor, int64_t *extra) {
  unsigned long long c, x, chk;
  int used = 0;
  if (strlen(tok) > 79 ||
      sscanf(tok, "eyJ2IjoxfQ.%llx.%llx.%16llx%n", &c, &x, &chk, &used) != 3 ||
      tok[used] != '\0')
    return false;
  if (fc_hash3(fc_seed(e->s) ^ qhash, c, x) != chk)
    return false;
  *cursor = (int64_t)c;
  *extra = (int64_t)x;
  return true;
}

static const char *const page_skip[] = {"NextToken", "MaxResults", NULL};

/* ---- actions ----------------------------------------------------------- */

struct call {
  struct ec2 *e;
  const struct fc_params *p;
  const char *region;
  struct fc_response *resp;
  struct tw_err err;
};

static bool dry_run(struct call *c) {
  bool dry = false;
  if (ec2_bool(c->p, "DryRun", &dry, &c->err)) {
    ec2_error_err(c->e, c->resp, &c->err);
    return true;
  }
  if (dry)
    ec2_error(c->e, c->resp, 0, "DryRunOperation",
              "Request would have succeeded, but DryRun flag is set.");
  return dry;
}

static int64_t vcpus_in_use(struct ec2 *e, const char *region, bool spot) {
  return *vcpu_total(e, region, spot);
}

static void zone_list(const struct fc_region *r, const struct fc_offer *o,
                      int except, char *out, size_t outsz) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < o->n_zones && len + 40 < outsz; i++) {
    if ((int)o->zones[i].zone == except)
      continue;
    len += (size_t)snprintf(out + len, outsz - len, "%s%s", len ? ", " : "",
                            r->zones[o->zones[i].zone].name);
  }
}

/* ids: the reservation's instances in launch order; those dropped since
 * (terminated over an hour ago) are left out. */
static void run_reply(struct call *c, const char *reservation_id,
                      char (*ids)[20], size_t n_ids) {
  struct ec2 *e = c->e;
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "RunInstancesResponse");
  fc_xml_elem(b, "reservationId", reservation_id);
  fc_xml_elem(b, "ownerId", fc_catalog(e->s)->owner_id);
  fc_xml_elem(b, "groupSet", NULL);
  fc_xml_open(b, "instancesSet");
  for (size_t i = 0; i < n_ids; i++) {
    struct inst *in = find(e, ids[i]);
    if (in && !strcmp(in->reservation_id, reservation_id))
      instance_xml(e, b, in);
  }
  fc_xml_close(b, "instancesSet");
  end(c->resp, "RunInstancesResponse");
}

static void act_run(struct call *c) {
  struct ec2 *e = c->e;
  const struct fc_catalog *cat = fc_catalog(e->s);
  struct ec2_run r;
  if (ec2_parse_run(c->p, &r, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    return;
  }
  const struct fc_itype *it = fc_catalog_itype(cat, r.instance_type);
  if (!it) {
    ec2_fail(&c->err, "InvalidParameterValue",
             "Invalid value '%.64s' for InstanceType.", r.instance_type);
    ec2_error_err(e, c->resp, &c->err);
    return;
  }
  /* --boot: user data is base64 (as EC2 wants it); without --boot it is
   * kept unread, so plain scripts still launch. */
  if (r.user_data && fc_boot_enabled(e->s)) {
    size_t n = 0;
    char *ud = fc_base64_decode(r.user_data, &n);
    free(ud);
    if (!ud || n > 16384) {
      ec2_fail(&c->err, "InvalidParameterValue",
               ud ? "User data is limited to 16384 bytes"
                  : "Invalid BASE64 encoding of user data.");
      ec2_error_err(e, c->resp, &c->err);
      return;
    }
  }
  const struct fc_region *reg = fc_catalog_region(cat, c->region);
  int zi = -1;
  if (r.zone) {
    zi = fc_region_zone(reg, r.zone);
    if (zi < 0) {
      ec2_fail(&c->err, "InvalidParameterValue",
               "Invalid availability zone: [%.64s]", r.zone);
      ec2_error_err(e, c->resp, &c->err);
      return;
    }
  }
  if (r.dry_run) {
    ec2_error(e, c->resp, 0, "DryRunOperation",
              "Request would have succeeded, but DryRun flag is set.");
    return;
  }
  /* Idempotency: same token and same parameters answer with the same
   * reservation; the same token with other parameters is refused. */
  static const char *const token_skip[] = {"ClientToken", NULL};
  uint64_t phash = ec2_params_hash(c->p, token_skip);
  struct token *seen =
      r.client_token ? find_token(e, r.client_token, c->region) : NULL;
  if (seen) {
    if (seen->hash != phash) {
      ec2_error(e, c->resp, 0, "IdempotentParameterMismatch",
                "Arguments on this idempotent request are inconsistent "
                "with arguments used in previous request(s).");
      return;
    }
    run_reply(c, seen->reservation_id, seen->ids, seen->n_ids);
    return;
  }
  const struct fc_offer *o = fc_catalog_offer(cat, it->name, c->region);
  if (!o) {
    ec2_error(e, c->resp, 0, "Unsupported",
              "The requested configuration is currently not supported. "
              "Please check the documentation for supported "
              "configurations.");
    return;
  }
  if (zi >= 0 && fc_offer_spot(o, (size_t)zi) < 0) {
    char zones[200], msg[800];
    zone_list(reg, o, -1, zones, sizeof zones);
    snprintf(msg, sizeof msg,
             "Your requested instance type (%s) is not supported in your "
             "requested Availability Zone (%s). Please retry your request "
             "by not specifying an Availability Zone or choosing %s.",
             it->name, r.zone, zones);
    ec2_error(e, c->resp, 0, "Unsupported", msg);
    return;
  }
  if (zi < 0) /* EC2 picks a zone that offers the type */
    zi = (int)o->zones[fc_rng_below(fc_rng(e->s), o->n_zones)].zone;
  const char *zone = reg->zones[zi].name;
  const char *market = r.spot ? "spot" : "on-demand";
  int64_t now = fc_now_ms(e->s);
  if (r.spot && r.max_price_uusd >= 0) {
    int64_t sp = spot_price_now(e, o, (size_t)zi, now);
    if (r.max_price_uusd < sp) {
      char want[32], need[32], msg[256];
      fc_price_fmt(r.max_price_uusd, want);
      fc_price_fmt(sp, need);
      snprintf(msg, sizeof msg,
               "Your Spot request price of %s is lower than the minimum "
               "required Spot request fulfillment price of %s.",
               r.max_price, need);
      ec2_error(e, c->resp, 0, "SpotMaxPriceTooLow", msg);
      return;
    }
  }
  struct fc_fault_query q = {.service = "ec2",
                             .action = "RunInstances",
                             .instance_type = it->name,
                             .zone = zone,
                             .region = c->region,
                             .market = market};
  /* a region down refuses every launch there as EC2 refuses one in a zone
   * without capacity */
  if (fc_faults_fire(fc_faults(e->s), FC_FAULT_REGION_DOWN, &q,
                     fc_elapsed_ms(e->s), fc_rng(e->s)) ||
      fc_faults_fire(fc_faults(e->s), FC_FAULT_CAPACITY, &q,
                     fc_elapsed_ms(e->s), fc_rng(e->s))) {
    char zones[200], msg[1024];
    zone_list(reg, o, zi, zones, sizeof zones);
    snprintf(msg, sizeof msg,
             "We currently do not have sufficient %s capacity in the "
             "Availability Zone you requested (%s). Our system will be "
             "working on provisioning additional capacity. You can "
             "currently get %s capacity by not specifying an Availability "
             "Zone in your request or choosing %s.",
             it->name, zone, it->name, zones[0] ? zones : "another region");
    ec2_error(e, c->resp, 0, "InsufficientInstanceCapacity", msg);
    return;
  }
  int64_t limit = r.spot ? e->vcpu_limit_spot : e->vcpu_limit_on_demand;
  int64_t room = (limit - vcpus_in_use(e, c->region, r.spot)) / it->vcpus;
  bool quota_fault = fc_faults_fire(fc_faults(e->s), FC_FAULT_QUOTA, &q,
                                    fc_elapsed_ms(e->s), fc_rng(e->s)) != NULL;
  if (quota_fault || room < r.min_count) {
    char msg[400];
    if (r.spot)
      snprintf(msg, sizeof msg,
               "Max spot instance count exceeded: your vCPU limit for Spot "
               "Instance Requests is %lld.",
               (long long)limit);
    else
      snprintf(msg, sizeof msg,
               "You have requested more vCPU capacity than your current "
               "vCPU limit of %lld allows for the instance bucket that the "
               "specified instance type belongs to. Please visit "
               "http://aws.amazon.com/contact-us/ec2-request to request an "
               "adjustment to this limit.",
               (long long)limit);
    ec2_error(e, c->resp, 0,
              r.spot ? "MaxSpotInstanceCountExceeded" : "VcpuLimitExceeded",
              msg);
    return;
  }
  long n = r.max_count < room ? r.max_count : (long)room;
  char(*ids)[20] = tw_calloc(n > 0 ? (size_t)n : 1, sizeof *ids);
  char rid[20];
  memcpy(rid, "r-", 2);
  rand_hex(e, rid + 2, 17);
  for (long k = 0; k < n; k++) {
    struct inst *in = tw_calloc(1, sizeof *in);
    in->seq = ++e->next_seq;
    memcpy(in->id, "i-", 2);
    rand_hex(e, in->id + 2, 17);
    memcpy(in->reservation_id, rid, sizeof rid);
    snprintf(in->image_id, sizeof in->image_id, "%s", r.image_id);
    snprintf(in->itype, sizeof in->itype, "%s", it->name);
    snprintf(in->region, sizeof in->region, "%s", c->region);
    snprintf(in->zone, sizeof in->zone, "%s", zone);
    snprintf(in->key_name, sizeof in->key_name, "%s",
             r.key_name ? r.key_name : "");
    snprintf(in->subnet_id, sizeof in->subnet_id, "%s",
             r.subnet_id ? r.subnet_id : "");
    snprintf(in->iam_profile, sizeof in->iam_profile, "%s",
             r.profile_arn    ? r.profile_arn
             : r.profile_name ? r.profile_name
                              : "");
    snprintf(in->root_device, sizeof in->root_device, "%s",
             r.root_device ? r.root_device : "");
    in->root_size_gb = r.root_size_gb;
    snprintf(in->root_type, sizeof in->root_type, "%s",
             r.root_type ? r.root_type : "");
    in->n_groups = (int)r.n_groups;
    snprintf(in->client_token, sizeof in->client_token, "%s",
             r.client_token ? r.client_token : "");
    snprintf(in->private_ip, sizeof in->private_ip, "172.31.%u.%u",
             (unsigned)fc_rng_below(fc_rng(e->s), 256),
             (unsigned)(1 + fc_rng_below(fc_rng(e->s), 254)));
    in->ami_launch_index = (int)k;
    in->state = ST_PENDING;
    in->vcpus = it->vcpus;
    in->launch_ms = now;
    in->next_ms = now + e->pending_ms;
    in->terminated_ms = -1;
    snprintf(in->sr_code, sizeof in->sr_code, "pending");
    snprintf(in->sr_msg, sizeof in->sr_msg, "pending");
    in->notice_ms = in->action_ms = in->rebalance_ms = -1;
    in->outage = false;
    in->spot = r.spot;
    in->max_price_uusd =
        r.spot ? (r.max_price_uusd >= 0 ? r.max_price_uusd : o->on_demand_uusd)
               : -1;
    if (r.spot) {
      memcpy(in->sir_id, "sir-", 4);
      rand_hex(e, in->sir_id + 4, 8);
      snprintf(in->spot_type, sizeof in->spot_type, "%s", r.spot_type);
      snprintf(in->interruption, sizeof in->interruption, "%s", r.interruption);
    }
    for (size_t t = 0; t < r.n_tags; t++) {
      in->tags[t].key = tw_strdup(r.tags[t].key);
      in->tags[t].value = tw_strdup(r.tags[t].value);
    }
    in->n_tags = r.n_tags;
    if (r.user_data && fc_boot_enabled(e->s))
      in->user_data = fc_base64_decode(r.user_data, &in->user_data_len);
    if (r.spot) {
      for (size_t t = 0; t < r.n_sir_tags; t++)
        tag_set(in->sir_tags, &in->n_sir_tags, r.sir_tags[t].key,
                r.sir_tags[t].value);
      fc_price_fmt(in->max_price_uusd, in->max_price_text);
    }
    if (r.spot) {
      /* Scheduled interruptions and rebalance recommendations that apply
       * to this offer: after a fixed delay or at a Poisson rate. */
      struct fc_faults *fl = fc_faults(e->s);
      for (size_t f = 0; f < fl->n; f++) {
        struct fc_fault *rule = &fl->v[f];
        if ((rule->kind != FC_FAULT_SPOT_INTERRUPTION &&
             rule->kind != FC_FAULT_REBALANCE) ||
            rule->instance_id[0])
          continue;
        struct fc_fault_query sq = q;
        sq.action = NULL; /* the notice is not an API call */
        if (!fc_fault_matches(rule, &sq, fc_elapsed_ms(e->s)) ||
            !fc_rng_chance_ppm(fc_rng(e->s), rule->probability_ppm))
          continue;
        int64_t after = rule->after_ms;
        if (after < 0) {
          double u = ((double)fc_rng_below(fc_rng(e->s), 1000000) + 0.5) / 1e6;
          after = (int64_t)(-log(u) / rule->rate_per_hour * 3600000.0);
        }
        if (rule->count > 0)
          rule->count--;
        rule->fired++;
        if (rule->kind == FC_FAULT_SPOT_INTERRUPTION && in->notice_ms < 0)
          schedule_notice(in, now + after, rule->lead_ms, NULL);
        else if (rule->kind == FC_FAULT_REBALANCE && in->rebalance_ms < 0)
          in->rebalance_ms = now + after;
      }
    }
    memcpy(ids[k], in->id, sizeof in->id);
    inst_add(e, in);
  }
  run_reply(c, rid, ids, (size_t)(n > 0 ? n : 0));
  if (r.client_token) {
    e->tokens = tw_realloc(e->tokens, (e->n_tokens + 1) * sizeof *e->tokens);
    struct token *t = &e->tokens[e->n_tokens++];
    snprintf(t->token, sizeof t->token, "%s", r.client_token);
    snprintf(t->region, sizeof t->region, "%s", c->region);
    memcpy(t->reservation_id, rid, sizeof rid);
    t->hash = phash;
    t->ids = ids;
    t->n_ids = (size_t)(n > 0 ? n : 0);
    by_token_add(e);
  } else {
    free(ids);
  }
}

/* Collects and checks InstanceId.N: malformed ids and unknown ids fail the
 * whole call, as in EC2. */
static bool instance_ids(struct call *c, struct inst ***out, size_t *n) {
  const char **ids = NULL;
  size_t nids = 0;
  *out = NULL;
  *n = 0;
  if (ec2_list(c->p, "InstanceId", EC2_MAX_LIST, &ids, &nids, &c->err)) {
    ec2_error_err(c->e, c->resp, &c->err);
    return false;
  }
  struct tw_buf missing;
  tw_buf_init(&missing);
  size_t n_missing = 0;
  struct inst **list = tw_calloc(nids ? nids : 1, sizeof *list);
  for (size_t i = 0; i < nids; i++) {
    if (!ec2_instance_id_valid(ids[i])) {
      char msg[128];
      snprintf(msg, sizeof msg, "Invalid id: \"%.64s\"", ids[i]);
      ec2_error(c->e, c->resp, 0, "InvalidInstanceID.Malformed", msg);
      goto fail;
    }
    struct inst *in = find(c->e, ids[i]);
    if (!in || strcmp(in->region, c->region)) {
      if (n_missing++ < 20)
        tw_buf_printf(&missing, "%s%s", missing.len ? ", " : "", ids[i]);
      continue;
    }
    list[i - n_missing] = in;
  }
  if (n_missing) {
    char *msg = tw_asprintf("The instance ID%s '%s' do%s not exist",
                            n_missing > 1 ? "s" : "", missing.data,
                            n_missing > 1 ? "" : "es");
    ec2_error(c->e, c->resp, 0, "InvalidInstanceID.NotFound", msg);
    free(msg);
    goto fail;
  }
  tw_buf_release(&missing);
  free(ids);
  *out = list;
  *n = nids;
  return true;
fail:
  tw_buf_release(&missing);
  free(ids);
  free(list);
  return false;
}

static const char *tag_value(const struct inst *in, const char *key) {
  for (size_t i = 0; i < in->n_tags; i++)
    if (!strcmp(in->tags[i].key, key))
      return in->tags[i].value;
  return NULL;
}

static bool inst_matches(const struct inst *in, const struct ec2_filters *fs) {
  for (size_t i = 0; i < fs->n; i++) {
    const struct ec2_filter *f = &fs->v[i];
    const char *n = f->name;
    bool ok = false;
    char code[8];
    if (!strncmp(n, "tag:", 4)) {
      const char *v = tag_value(in, n + 4);
      ok = v && ec2_filter_any(f, v);
    } else if (!strcmp(n, "tag-key") || !strcmp(n, "tag-value")) {
      bool key = n[4] == 'k';
      for (size_t t = 0; t < in->n_tags && !ok; t++)
        ok = ec2_filter_any(f, key ? in->tags[t].key : in->tags[t].value);
    } else if (!strcmp(n, "instance-state-name")) {
      ok = ec2_filter_any(f, state_name(in->state));
    } else if (!strcmp(n, "instance-state-code")) {
      snprintf(code, sizeof code, "%d", in->state);
      ok = ec2_filter_any(f, code);
    } else if (!strcmp(n, "availability-zone")) {
      ok = ec2_filter_any(f, in->zone);
    } else if (!strcmp(n, "instance-type")) {
      ok = ec2_filter_any(f, in->itype);
    } else if (!strcmp(n, "instance-id")) {
      ok = ec2_filter_any(f, in->id);
    } else if (!strcmp(n, "instance-lifecycle")) {
      ok = in->spot && ec2_filter_any(f, "spot");
    } else if (!strcmp(n, "client-token")) {
      ok = ec2_filter_any(f, in->client_token);
    } else if (!strcmp(n, "image-id")) {
      ok = ec2_filter_any(f, in->image_id);
    } else if (!strcmp(n, "reservation-id")) {
      ok = ec2_filter_any(f, in->reservation_id);
    } else if (!strcmp(n, "spot-instance-request-id")) {
      ok = in->spot && ec2_filter_any(f, in->sir_id);
    }
    if (!ok)
      return false;
  }
  return true;
}

static int by_seq(const void *a, const void *b) {
  const struct inst *x = *(struct inst *const *)a;
  const struct inst *y = *(struct inst *const *)b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool is_glob(const char *v) { return strpbrk(v, "*?\\") != NULL; }

/* With a client-token filter of exact values, the instances that can match
 * are those the tokens launched in region: a superset of the answer, the
 * filters still apply.  False (nothing collected) when no filter allows it. */
static bool narrow_by_token(struct ec2 *e, const char *region,
                            const struct ec2_filters *fs, struct inst ***out,
                            size_t *n) {
  const struct ec2_filter *f = NULL;
  for (size_t i = 0; i < fs->n && !f; i++) {
    if (strcmp(fs->v[i].name, "client-token"))
      continue;
    bool exact = true;
    for (size_t k = 0; k < fs->v[i].n_values && exact; k++)
      exact = fs->v[i].values[k][0] && !is_glob(fs->v[i].values[k]);
    if (exact)
      f = &fs->v[i];
  }
  if (!f)
    return false;
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  for (size_t k = 0; k < f->n_values; k++) {
    struct token *t = find_token(e, f->values[k], region);
    for (size_t j = 0; t && j < t->n_ids; j++) {
      struct inst *in = find(e, t->ids[j]);
      if (!in)
        continue;
      if (*n == cap) {
        cap = cap ? cap * 2 : 8;
        *out = tw_realloc(*out, cap * sizeof **out);
      }
      (*out)[(*n)++] = in;
    }
  }
  return true;
}

static void act_describe_instances(struct call *c) {
  static const char *const filters[] = {"tag:",
                                        "tag-key",
                                        "tag-value",
                                        "instance-state-name",
                                        "instance-state-code",
                                        "availability-zone",
                                        "instance-type",
                                        "instance-id",
                                        "instance-lifecycle",
                                        "client-token",
                                        "image-id",
                                        "reservation-id",
                                        "spot-instance-request-id",
                                        NULL};
  struct ec2 *e = c->e;
  struct ec2_filters fs = {.n = 0};
  struct inst **ids = NULL, **out = NULL, **cand = NULL;
  size_t n_ids = 0, n_cand = 0;
  long max = 0;
  bool has_max = false;
  if (ec2_check_known(c->p, ec2_describe_instances_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_int(c->p, "MaxResults", LONG_MIN / 2, LONG_MAX / 2, &max, &has_max,
              &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (has_max && fc_params_indexes(c->p, "InstanceId", NULL, 0, NULL)) {
    ec2_error(e, c->resp, 0, "InvalidParameterCombination",
              "The parameter instancesSet cannot be used with the parameter "
              "maxResults");
    goto out;
  }
  if (has_max && (max < 5 || max > 1000)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "Value ( %ld ) for parameter maxResults is invalid. Expecting "
             "a value %s.",
             max, max < 5 ? "greater than 5" : "less than 1000");
    ec2_error(e, c->resp, 0, "InvalidParameterValue", msg);
    goto out;
  }
  if (dry_run(c))
    goto out;
  if (!instance_ids(c, &ids, &n_ids))
    goto out;
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t cursor = 0, extra = 0;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok && !read_token(e, qhash, tok, &cursor, &extra)) {
    ec2_error(e, c->resp, 0, "InvalidPaginationToken",
              "The specified pagination token is not valid or is expired.");
    goto out;
  }
  /* The instances to look at: those named, or those of the client tokens
   * a filter names exactly, or else every one; in creation order. */
  struct inst **src = e->inst;
  size_t n_src = e->n_inst;
  if (n_ids || narrow_by_token(e, c->region, &fs, &cand, &n_cand)) {
    if (n_ids) {
      cand = tw_calloc(n_ids, sizeof *cand);
      memcpy(cand, ids, n_ids * sizeof *cand);
      n_cand = n_ids;
    }
    if (n_cand > 1)
      qsort(cand, n_cand, sizeof *cand, by_seq);
    size_t w = 0;
    for (size_t i = 0; i < n_cand; i++)
      if (!w || cand[w - 1] != cand[i])
        cand[w++] = cand[i];
    src = cand;
    n_src = w;
  }
  out = tw_calloc(n_src ? n_src : 1, sizeof *out);
  size_t n = 0;
  bool more = false;
  for (size_t i = 0; i < n_src; i++) {
    struct inst *in = src[i];
    if (!in || strcmp(in->region, c->region) || in->seq <= (uint64_t)cursor)
      continue;
    if (!inst_matches(in, &fs))
      continue;
    if (has_max && (long)n == max) {
      more = true;
      break;
    }
    out[n++] = in;
  }
  begin(c->resp, "DescribeInstancesResponse");
  fc_xml_open(&c->resp->body, "reservationSet");
  reservations_xml(e, &c->resp->body, out, n);
  fc_xml_close(&c->resp->body, "reservationSet");
  if (more) {
    char t[80];
    make_token(e, qhash, (int64_t)out[n - 1]->seq, 0, t);
    fc_xml_elem(&c->resp->body, "nextToken", t);
  }
  end(c->resp, "DescribeInstancesResponse");
out:
  ec2_filters_release(&fs);
  free(ids);
  free(cand);
  free(out);
}

static void act_terminate(struct call *c) {
  struct ec2 *e = c->e;
  struct inst **list = NULL;
  size_t n = 0;
  if (ec2_check_known(c->p, ec2_terminate_params, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    return;
  }
  if (!fc_params_indexes(c->p, "InstanceId", NULL, 0, NULL)) {
    ec2_error(e, c->resp, 0, "MissingParameter",
              "The request must contain the parameter InstanceId");
    return;
  }
  if (!instance_ids(c, &list, &n))
    return;
  if (dry_run(c)) {
    free(list);
    return;
  }
  int64_t now = fc_now_ms(e->s);
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "TerminateInstancesResponse");
  fc_xml_open(b, "instancesSet");
  for (size_t i = 0; i < n; i++) {
    struct inst *in = list[i];
    int prev = in->state;
    bool seen = false;
    for (size_t k = 0; k < i; k++)
      seen = seen || list[k] == in;
    if (!seen && prev != ST_TERMINATED && prev != ST_SHUTTING_DOWN) {
      char when[32];
      fmt_time(now, when);
      set_state(e, in, prev == ST_STOPPED ? ST_TERMINATED : ST_SHUTTING_DOWN);
      in->next_ms = now + e->shutdown_ms;
      if (in->state == ST_TERMINATED)
        in->terminated_ms = now;
      reschedule(e, in);
      snprintf(in->sr_code, sizeof in->sr_code, "Client.UserInitiatedShutdown");
      snprintf(in->sr_msg, sizeof in->sr_msg,
               "Client.UserInitiatedShutdown: User initiated shutdown");
      snprintf(in->reason, sizeof in->reason, "User initiated (%.10s %.8s GMT)",
               when, when + 11);
    }
    fc_xml_open(b, "item");
    fc_xml_elem(b, "instanceId", in->id);
    tw_buf_printf(b,
                  "<currentState><code>%d</code><name>%s</name>"
                  "</currentState>",
                  in->state, state_name(in->state));
    tw_buf_printf(b,
                  "<previousState><code>%d</code><name>%s</name>"
                  "</previousState>",
                  prev, state_name(prev));
    fc_xml_close(b, "item");
  }
  fc_xml_close(b, "instancesSet");
  end(c->resp, "TerminateInstancesResponse");
  free(list);
}

static const char *const products[] = {"Linux/UNIX",
                                       "Linux/UNIX (Amazon VPC)",
                                       "SUSE Linux",
                                       "SUSE Linux (Amazon VPC)",
                                       "Red Hat Enterprise Linux",
                                       "Red Hat Enterprise Linux (Amazon VPC)",
                                       "Windows",
                                       "Windows (Amazon VPC)",
                                       NULL};
/* The fake publishes history for these two; Windows adds the licence,
 * about 0.0184 USD per vCPU-hour on top of the Linux price. */
static const char *const published[] = {"Linux/UNIX", "Windows"};

struct sph_item {
  int64_t t;
  size_t itype, zone;
  int prod;
  int64_t uusd;
};

static int sph_cmp(const void *a, const void *b) {
  const struct sph_item *x = a, *y = b;
  if (x->t != y->t)
    return x->t > y->t ? -1 : 1; /* newest first, as EC2 */
  if (x->itype != y->itype)
    return x->itype < y->itype ? -1 : 1;
  if (x->zone != y->zone)
    return x->zone < y->zone ? -1 : 1;
  return x->prod - y->prod;
}

static void act_spot_history(struct call *c) {
  static const char *const filters[] = {"availability-zone", "instance-type",
                                        "product-description", NULL};
  struct ec2 *e = c->e;
  const struct fc_catalog *cat = fc_catalog(e->s);
  const struct fc_region *reg = fc_catalog_region(cat, c->region);
  struct ec2_filters fs = {.n = 0};
  const char **types = NULL, **prods = NULL;
  size_t n_types = 0, n_prods = 0;
  struct sph_item *items = NULL;
  long max = 1000;
  bool has_max, has_start, has_end;
  int64_t now = fc_now_ms(e->s), start = 0, endt = 0;
  if (ec2_check_known(c->p, ec2_spot_history_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "InstanceType", EC2_MAX_LIST, &types, &n_types, &c->err) ||
      ec2_list(c->p, "ProductDescription", EC2_MAX_LIST, &prods, &n_prods,
               &c->err) ||
      ec2_int(c->p, "MaxResults", 1, 1000, &max, &has_max, &c->err) ||
      ec2_time(c->p, "StartTime", &start, &has_start, &c->err) ||
      ec2_time(c->p, "EndTime", &endt, &has_end, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  for (size_t i = 0; i < n_types; i++)
    if (!fc_catalog_itype(cat, types[i]))
      ec2_fail(&c->err, "InvalidParameterValue",
               "Invalid value '%.64s' for InstanceType.", types[i]);
  for (size_t i = 0; i < n_prods; i++) {
    bool ok = false;
    for (const char *const *p = products; *p && !ok; p++)
      ok = !strcmp(*p, prods[i]);
    if (!ok)
      ec2_fail(&c->err, "InvalidParameterValue",
               "Invalid value '%.64s' for ProductDescription.", prods[i]);
  }
  const char *az = fc_params_get(c->p, "AvailabilityZone");
  if (az && fc_region_zone(reg, az) < 0)
    ec2_fail(&c->err, "InvalidParameterValue",
             "Invalid availability zone: [%.64s]", az);
  if (c->err.rc) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (dry_run(c))
    goto out;
  if (!has_end || endt > now)
    endt = now;
  if (!has_start || start < now - SPOT_HISTORY_MS)
    start = has_start && start >= now - SPOT_HISTORY_MS ? start
                                                        : now - SPOT_HISTORY_MS;
  if (start > endt) {
    ec2_error(e, c->resp, 0, "InvalidParameterValue",
              "The start time must be earlier than the end time.");
    goto out;
  }
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t offset = 0, fixed_end = endt;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok) {
    if (!read_token(e, qhash, tok, &offset, &fixed_end) || offset < 0) {
      ec2_error(e, c->resp, 0, "InvalidPaginationToken",
                "The specified pagination token is not valid or is "
                "expired.");
      goto out;
    }
    endt = fixed_end; /* later pages see the window of the first */
  }
  size_t n = 0, cap = 0;
  for (size_t oi = 0; oi < cat->n_offers; oi++) {
    const struct fc_offer *o = &cat->offers[oi];
    if (strcmp(cat->regions[o->region].name, c->region))
      continue;
    const struct fc_itype *it = &cat->itypes[o->itype];
    bool want = !n_types;
    for (size_t i = 0; i < n_types && !want; i++)
      want = !strcmp(types[i], it->name);
    if (!want)
      continue;
    for (size_t zi = 0; zi < o->n_zones; zi++) {
      size_t z = o->zones[zi].zone;
      const char *zname = reg->zones[z].name;
      if (az && strcmp(az, zname))
        continue;
      for (int pi = 0; pi < 2; pi++) {
        bool pw = !n_prods;
        for (size_t i = 0; i < n_prods && !pw; i++)
          pw = !strcmp(prods[i], published[pi]);
        if (!pw)
          continue;
        bool fok = true;
        for (size_t fi = 0; fi < fs.n && fok; fi++) {
          const struct ec2_filter *f = &fs.v[fi];
          const char *v = !strcmp(f->name, "availability-zone") ? zname
                          : !strcmp(f->name, "instance-type")   ? it->name
                                                                : published[pi];
          fok = ec2_filter_any(f, v);
        }
        if (!fok)
          continue;
        /* Grid points in force during [start, end], the one in force at
         * start included (EC2 returns the effective price too). */
        int64_t first = start / SPOT_STEP_MS, last = endt / SPOT_STEP_MS;
        for (int64_t st = last; st >= first; st--) {
          int64_t p = spot_at_step(e, o, z, st);
          if (p < 0)
            continue;
          if (n == cap) {
            cap = cap ? cap * 2 : 256;
            items = tw_realloc(items, cap * sizeof *items);
          }
          items[n++] = (struct sph_item){st * SPOT_STEP_MS, o->itype, z, pi,
                                         pi ? p + 18400 * it->vcpus : p};
        }
        for (size_t k = 0; k < e->n_overrides; k++) {
          const struct price_override *po = &e->overrides[k];
          if (po->zone != z || strcmp(po->itype, it->name) ||
              strcmp(po->region, c->region) || po->from_ms > endt ||
              po->from_ms < start)
            continue;
          if (n == cap) {
            cap = cap ? cap * 2 : 256;
            items = tw_realloc(items, cap * sizeof *items);
          }
          items[n++] =
              (struct sph_item){po->from_ms, o->itype, z, pi,
                                pi ? po->uusd + 18400 * it->vcpus : po->uusd};
        }
      }
    }
  }
  if (n)
    qsort(items, n, sizeof *items, sph_cmp);
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeSpotPriceHistoryResponse");
  fc_xml_open(b, "spotPriceHistorySet");
  size_t stop =
      (size_t)offset + (size_t)max < n ? (size_t)offset + (size_t)max : n;
  for (size_t i = (size_t)offset; i < stop; i++) {
    char t[32], p[32];
    fmt_time(items[i].t, t);
    fc_price_fmt(items[i].uusd, p);
    fc_xml_open(b, "item");
    fc_xml_elem(b, "instanceType", cat->itypes[items[i].itype].name);
    fc_xml_elem(b, "productDescription", published[items[i].prod]);
    fc_xml_elem(b, "spotPrice", p);
    fc_xml_elem(b, "timestamp", t);
    fc_xml_elem(b, "availabilityZone", reg->zones[items[i].zone].name);
    fc_xml_close(b, "item");
  }
  fc_xml_close(b, "spotPriceHistorySet");
  if (stop < n) {
    char t[80];
    make_token(e, qhash, (int64_t)stop, fixed_end, t);
    fc_xml_elem(b, "nextToken", t);
  } else {
    fc_xml_elem(b, "nextToken", NULL); /* EC2 sends it empty at the end */
  }
  end(c->resp, "DescribeSpotPriceHistoryResponse");
out:
  ec2_filters_release(&fs);
  free(types);
  free(prods);
  free(items);
}

static void itype_xml(struct tw_buf *b, const struct fc_itype *it) {
  fc_xml_open(b, "item");
  fc_xml_elem(b, "instanceType", it->name);
  fc_xml_elem_bool(b, "currentGeneration", 1);
  fc_xml_elem_bool(b, "freeTierEligible", 0);
  tw_buf_adds(b, "<supportedUsageClasses><item>on-demand</item><item>spot"
                 "</item></supportedUsageClasses>"
                 "<supportedRootDeviceTypes><item>ebs</item>"
                 "</supportedRootDeviceTypes>"
                 "<supportedVirtualizationTypes><item>hvm</item>"
                 "</supportedVirtualizationTypes>");
  fc_xml_elem_bool(b, "bareMetal", 0);
  fc_xml_elem(b, "hypervisor", it->hypervisor[0] ? it->hypervisor : "nitro");
  fc_xml_open(b, "processorInfo");
  fc_xml_open(b, "supportedArchitectures");
  for (size_t i = 0; i < it->n_arch; i++)
    fc_xml_elem(b, "item", it->arch[i]);
  fc_xml_close(b, "supportedArchitectures");
  if (it->clock_ghz[0])
    fc_xml_elem(b, "sustainedClockSpeedInGhz", it->clock_ghz);
  fc_xml_close(b, "processorInfo");
  tw_buf_printf(b,
                "<vCpuInfo><defaultVCpus>%d</defaultVCpus><defaultCores>"
                "%d</defaultCores><defaultThreadsPerCore>%d"
                "</defaultThreadsPerCore></vCpuInfo>",
                it->vcpus, it->cores, it->threads_per_core);
  tw_buf_printf(b, "<memoryInfo><sizeInMiB>%lld</sizeInMiB></memoryInfo>",
                (long long)it->memory_mib);
  fc_xml_elem_bool(b, "instanceStorageSupported", 0);
  tw_buf_adds(b, "<ebsInfo><ebsOptimizedSupport>default"
                 "</ebsOptimizedSupport><encryptionSupport>supported"
                 "</encryptionSupport><nvmeSupport>required</nvmeSupport>"
                 "</ebsInfo>");
  fc_xml_open(b, "networkInfo");
  fc_xml_elem(b, "networkPerformance", it->network);
  fc_xml_elem(b, "ipv6Supported", "true");
  fc_xml_elem(b, "enaSupport", "required");
  fc_xml_close(b, "networkInfo");
  if (it->has_gpu) {
    fc_xml_open(b, "gpuInfo");
    fc_xml_open(b, "gpus");
    fc_xml_open(b, "item");
    fc_xml_elem(b, "name", it->gpu.name);
    fc_xml_elem(b, "manufacturer", it->gpu.manufacturer);
    fc_xml_elem_i64(b, "count", it->gpu.count);
    tw_buf_printf(b, "<memoryInfo><sizeInMiB>%lld</sizeInMiB></memoryInfo>",
                  (long long)it->gpu.memory_mib);
    fc_xml_close(b, "item");
    fc_xml_close(b, "gpus");
    fc_xml_elem_i64(b, "totalGpuMemoryInMiB",
                    it->gpu.memory_mib * it->gpu.count);
    fc_xml_close(b, "gpuInfo");
  }
  fc_xml_elem_bool(b, "hibernationSupported", 0);
  fc_xml_elem_bool(b, "burstablePerformanceSupported", 0);
  fc_xml_elem_bool(b, "dedicatedHostsSupported", 1);
  fc_xml_elem_bool(b, "autoRecoverySupported", 1);
  tw_buf_adds(b, "<supportedBootModes><item>legacy-bios</item><item>uefi"
                 "</item></supportedBootModes>");
  fc_xml_close(b, "item");
}

static void act_instance_types(struct call *c) {
  static const char *const filters[] = {
      "instance-type",           "processor-info.supported-architecture",
      "vcpu-info.default-vcpus", "current-generation",
      "memory-info.size-in-mib", NULL};
  struct ec2 *e = c->e;
  const struct fc_catalog *cat = fc_catalog(e->s);
  struct ec2_filters fs = {.n = 0};
  const char **types = NULL;
  size_t n_types = 0;
  long max = 100;
  bool has_max;
  if (ec2_check_known(c->p, ec2_instance_types_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "InstanceType", 100, &types, &n_types, &c->err) ||
      ec2_int(c->p, "MaxResults", 5, 100, &max, &has_max, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  struct tw_buf bad;
  tw_buf_init(&bad);
  for (size_t i = 0; i < n_types; i++)
    if (!fc_catalog_itype(cat, types[i]))
      tw_buf_printf(&bad, "%s%s", bad.len ? ", " : "", types[i]);
  if (bad.len) {
    char *msg = tw_asprintf("The following supplied instance types do not "
                            "exist: [%.200s]",
                            bad.data);
    ec2_error(e, c->resp, 0, "InvalidInstanceType", msg);
    free(msg);
    tw_buf_release(&bad);
    goto out;
  }
  tw_buf_release(&bad);
  if (dry_run(c))
    goto out;
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t offset = 0, extra = 0;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok && !read_token(e, qhash, tok, &offset, &extra)) {
    ec2_error(e, c->resp, 0, "InvalidPaginationToken",
              "The specified pagination token is not valid or is expired.");
    goto out;
  }
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeInstanceTypesResponse");
  fc_xml_open(b, "instanceTypeSet");
  int64_t idx = 0, shown = 0;
  bool more = false;
  for (size_t i = 0; i < cat->n_itypes; i++) {
    const struct fc_itype *it = &cat->itypes[i];
    if (!fc_catalog_offer(cat, it->name, c->region))
      continue; /* not sold in this region */
    bool want = !n_types;
    for (size_t k = 0; k < n_types && !want; k++)
      want = !strcmp(types[k], it->name);
    for (size_t fi = 0; fi < fs.n && want; fi++) {
      const struct ec2_filter *f = &fs.v[fi];
      char num[24];
      if (!strcmp(f->name, "instance-type")) {
        want = ec2_filter_any(f, it->name);
      } else if (!strcmp(f->name, "processor-info.supported-architecture")) {
        bool any = false;
        for (size_t a = 0; a < it->n_arch && !any; a++)
          any = ec2_filter_any(f, it->arch[a]);
        want = any;
      } else if (!strcmp(f->name, "vcpu-info.default-vcpus")) {
        snprintf(num, sizeof num, "%d", it->vcpus);
        want = ec2_filter_any(f, num);
      } else if (!strcmp(f->name, "memory-info.size-in-mib")) {
        snprintf(num, sizeof num, "%lld", (long long)it->memory_mib);
        want = ec2_filter_any(f, num);
      } else {
        want = ec2_filter_any(f, "true");
      }
    }
    if (!want)
      continue;
    if (idx++ < offset)
      continue;
    if (shown == max) {
      more = true;
      break;
    }
    itype_xml(b, it);
    shown++;
  }
  fc_xml_close(b, "instanceTypeSet");
  if (more) {
    char t[80];
    make_token(e, qhash, offset + shown, 0, t);
    fc_xml_elem(b, "nextToken", t);
  }
  end(c->resp, "DescribeInstanceTypesResponse");
out:
  ec2_filters_release(&fs);
  free(types);
}

static void act_zones(struct call *c) {
  static const char *const filters[] = {"zone-name", "zone-id",   "region-name",
                                        "state",     "zone-type", NULL};
  struct ec2 *e = c->e;
  const struct fc_region *reg = fc_catalog_region(fc_catalog(e->s), c->region);
  struct ec2_filters fs = {.n = 0};
  const char **names = NULL, **zids = NULL;
  size_t n_names = 0, n_zids = 0;
  bool all;
  if (ec2_check_known(c->p, ec2_zones_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "ZoneName", 100, &names, &n_names, &c->err) ||
      ec2_list(c->p, "ZoneId", 100, &zids, &n_zids, &c->err) ||
      ec2_bool(c->p, "AllAvailabilityZones", &all, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  for (size_t i = 0; i < n_names; i++)
    if (fc_region_zone(reg, names[i]) < 0) {
      char msg[160];
      snprintf(msg, sizeof msg, "The zone '%.64s' does not exist.", names[i]);
      ec2_error(e, c->resp, 0, "InvalidParameterValue", msg);
      goto out;
    }
  for (size_t i = 0; i < n_zids; i++) {
    bool ok = false;
    for (size_t z = 0; z < reg->n_zones && !ok; z++)
      ok = !strcmp(reg->zones[z].id, zids[i]);
    if (!ok) {
      char msg[160];
      snprintf(msg, sizeof msg, "The zone id '%.64s' does not exist.", zids[i]);
      ec2_error(e, c->resp, 0, "InvalidParameterValue", msg);
      goto out;
    }
  }
  if (dry_run(c))
    goto out;
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeAvailabilityZonesResponse");
  fc_xml_open(b, "availabilityZoneInfo");
  for (size_t z = 0; z < reg->n_zones; z++) {
    const struct fc_zone *zo = &reg->zones[z];
    bool want = !n_names && !n_zids;
    for (size_t i = 0; i < n_names; i++)
      want = want || !strcmp(names[i], zo->name);
    for (size_t i = 0; i < n_zids; i++)
      want = want || !strcmp(zids[i], zo->id);
    for (size_t fi = 0; fi < fs.n && want; fi++) {
      const struct ec2_filter *f = &fs.v[fi];
      const char *v = !strcmp(f->name, "zone-name")     ? zo->name
                      : !strcmp(f->name, "zone-id")     ? zo->id
                      : !strcmp(f->name, "region-name") ? reg->name
                      : !strcmp(f->name, "state")       ? "available"
                                                        : "availability-zone";
      want = ec2_filter_any(f, v);
    }
    if (!want)
      continue;
    fc_xml_open(b, "item");
    fc_xml_elem(b, "zoneName", zo->name);
    fc_xml_elem(b, "zoneState", "available");
    fc_xml_elem(b, "regionName", reg->name);
    fc_xml_elem(b, "messageSet", NULL);
    fc_xml_elem(b, "optInStatus", "opt-in-not-required");
    fc_xml_elem(b, "zoneId", zo->id);
    fc_xml_elem(b, "groupName", reg->name);
    fc_xml_elem(b, "networkBorderGroup", reg->name);
    fc_xml_elem(b, "zoneType", "availability-zone");
    fc_xml_close(b, "item");
  }
  fc_xml_close(b, "availabilityZoneInfo");
  end(c->resp, "DescribeAvailabilityZonesResponse");
out:
  ec2_filters_release(&fs);
  free(names);
  free(zids);
}

/* ---- regions, addresses, tags, status, spot requests ------------------ */

static void act_regions(struct call *c) {
  static const char *const filters[] = {"endpoint", "region-name",
                                        "opt-in-status", NULL};
  struct ec2 *e = c->e;
  const struct fc_catalog *cat = fc_catalog(e->s);
  struct ec2_filters fs = {.n = 0};
  const char **names = NULL;
  size_t n_names = 0;
  bool all;
  if (ec2_check_known(c->p, ec2_regions_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "RegionName", 100, &names, &n_names, &c->err) ||
      ec2_bool(c->p, "AllRegions", &all, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  for (size_t i = 0; i < n_names; i++)
    if (!fc_catalog_region(cat, names[i])) {
      char msg[160];
      snprintf(msg, sizeof msg, "Invalid region: %.64s", names[i]);
      ec2_error(e, c->resp, 0, "InvalidParameterValue", msg);
      goto out;
    }
  if (dry_run(c))
    goto out;
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeRegionsResponse");
  fc_xml_open(b, "regionInfo");
  for (size_t r = 0; r < cat->n_regions; r++) {
    const char *name = cat->regions[r].name;
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "ec2.%s.amazonaws.com", name);
    bool want = !n_names;
    for (size_t i = 0; i < n_names; i++)
      want = want || !strcmp(names[i], name);
    for (size_t fi = 0; fi < fs.n && want; fi++) {
      const struct ec2_filter *f = &fs.v[fi];
      want = ec2_filter_any(f, !strcmp(f->name, "endpoint") ? endpoint
                               : !strcmp(f->name, "region-name")
                                   ? name
                                   : "opt-in-not-required");
    }
    if (!want)
      continue;
    fc_xml_open(b, "item");
    fc_xml_elem(b, "regionName", name);
    fc_xml_elem(b, "regionEndpoint", endpoint);
    fc_xml_elem(b, "optInStatus", "opt-in-not-required");
    fc_xml_close(b, "item");
  }
  fc_xml_close(b, "regionInfo");
  end(c->resp, "DescribeRegionsResponse");
out:
  ec2_filters_release(&fs);
  free(names);
}

/* No Elastic IPs are modelled: the set is empty, and naming an address or
 * an allocation is the not-found error EC2 gives for one you do not own. */
static void act_addresses(struct call *c) {
  static const char *const filters[] = {"allocation-id",
                                        "association-id",
                                        "domain",
                                        "instance-id",
                                        "network-border-group",
                                        "network-interface-id",
                                        "network-interface-owner-id",
                                        "private-ip-address",
                                        "public-ip",
                                        "tag:",
                                        "tag-key",
                                        NULL};
  struct ec2 *e = c->e;
  struct ec2_filters fs = {.n = 0};
  const char **ips = NULL, **allocs = NULL;
  size_t n_ips = 0, n_allocs = 0;
  if (ec2_check_known(c->p, ec2_addresses_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "PublicIp", EC2_MAX_LIST, &ips, &n_ips, &c->err) ||
      ec2_list(c->p, "AllocationId", EC2_MAX_LIST, &allocs, &n_allocs,
               &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (n_ips) {
    char msg[160];
    snprintf(msg, sizeof msg, "Address '%.64s' not found.", ips[0]);
    ec2_error(e, c->resp, 0, "InvalidAddress.NotFound", msg);
    goto out;
  }
  if (n_allocs) {
    char msg[160];
    snprintf(msg, sizeof msg, "The allocation ID '%.64s' does not exist",
             allocs[0]);
    ec2_error(e, c->resp, 0, "InvalidAllocationID.NotFound", msg);
    goto out;
  }
  if (dry_run(c))
    goto out;
  begin(c->resp, "DescribeAddressesResponse");
  fc_xml_elem(&c->resp->body, "addressesSet", NULL);
  end(c->resp, "DescribeAddressesResponse");
out:
  ec2_filters_release(&fs);
  free(ips);
  free(allocs);
}

static struct inst *find_sir(struct ec2 *e, const char *sir,
                             const char *region) {
  for (size_t i = 0; i < e->n_inst; i++)
    if (e->inst[i] && e->inst[i]->spot && !strcmp(e->inst[i]->sir_id, sir) &&
        !strcmp(e->inst[i]->region, region))
      return e->inst[i];
  return NULL;
}

static bool sir_id_valid(const char *s) {
  size_t n = strlen(s);
  if (strncmp(s, "sir-", 4) || n < 12 || n > 21)
    return false;
  for (size_t i = 4; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z')))
      return false;
  return true;
}

/* The tag sets of the resources named (instances and spot instance
 * requests of the caller's region) into sets and counts; false (the
 * error answered) when one is malformed or unknown. */
static bool tag_targets(struct call *c, const char **ids, size_t n_ids,
                        struct tag **sets, size_t **counts) {
  struct ec2 *e = c->e;
  for (size_t i = 0; i < n_ids; i++) {
    char msg[192];
    struct inst *in = NULL;
    if (!strncmp(ids[i], "i-", 2)) {
      if (!ec2_instance_id_valid(ids[i])) {
        snprintf(msg, sizeof msg, "Invalid id: \"%.64s\"", ids[i]);
        ec2_error(e, c->resp, 0, "InvalidInstanceID.Malformed", msg);
        return false;
      }
      in = find(e, ids[i]);
      if (!in || strcmp(in->region, c->region)) {
        snprintf(msg, sizeof msg, "The instance ID '%.64s' does not exist",
                 ids[i]);
        ec2_error(e, c->resp, 0, "InvalidInstanceID.NotFound", msg);
        return false;
      }
      sets[i] = in->tags;
      counts[i] = &in->n_tags;
    } else if (sir_id_valid(ids[i])) {
      in = find_sir(e, ids[i], c->region);
      if (!in) {
        snprintf(msg, sizeof msg,
                 "The spot instance request ID '%.64s' does not exist", ids[i]);
        ec2_error(e, c->resp, 0, "InvalidSpotInstanceRequestID.NotFound", msg);
        return false;
      }
      sets[i] = in->sir_tags;
      counts[i] = &in->n_sir_tags;
    } else {
      snprintf(msg, sizeof msg, "The ID '%.64s' is not valid", ids[i]);
      ec2_error(e, c->resp, 0, "InvalidID", msg);
      return false;
    }
  }
  return true;
}

/* Instances and spot instance requests are the taggable resources of the
 * fake; any other id is refused as EC2 refuses an id of no known form. */
static void act_create_tags(struct call *c) {
  struct ec2 *e = c->e;
  const char **ids = NULL;
  size_t n_ids = 0, n_tags = 0;
  struct ec2_tag tags[EC2_MAX_TAGS];
  struct tag **sets = NULL;
  size_t **counts = NULL;
  if (ec2_check_known(c->p, ec2_create_tags_params, &c->err) ||
      ec2_list(c->p, "ResourceId", EC2_MAX_LIST, &ids, &n_ids, &c->err) ||
      ec2_parse_tag_list(c->p, "Tag", tags, &n_tags, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (!n_ids) {
    ec2_error(e, c->resp, 0, "MissingParameter",
              "The request must contain the parameter resourceIdSet");
    goto out;
  }
  if (!n_tags) {
    ec2_error(e, c->resp, 0, "MissingParameter",
              "The request must contain the parameter tagSet");
    goto out;
  }
  sets = tw_calloc(n_ids, sizeof *sets);
  counts = tw_calloc(n_ids, sizeof *counts);
  if (!tag_targets(c, ids, n_ids, sets, counts))
    goto out;
  for (size_t i = 0; i < n_ids; i++) {
    char msg[192];
    if (*counts[i] + tags_new(sets[i], *counts[i], tags, n_tags) >
        EC2_MAX_TAGS) {
      snprintf(msg, sizeof msg,
               "The maximum number of tags per resource is %d (%.64s)",
               EC2_MAX_TAGS, ids[i]);
      ec2_error(e, c->resp, 0, "TagLimitExceeded", msg);
      goto out;
    }
  }
  if (dry_run(c))
    goto out;
  for (size_t i = 0; i < n_ids; i++)
    for (size_t t = 0; t < n_tags; t++)
      tag_set(sets[i], counts[i], tags[t].key, tags[t].value);
  begin(c->resp, "CreateTagsResponse");
  fc_xml_elem_bool(&c->resp->body, "return", 1);
  end(c->resp, "CreateTagsResponse");
out:
  free(ids);
  free(sets);
  free(counts);
}

/* Tag.N.Key alone deletes the key whatever its value, Key with Value
 * only when the value matches (an empty Value: only an empty value), no
 * Tag at all every tag of the resource (the fake has no aws: tags). */
static void act_delete_tags(struct call *c) {
  struct ec2 *e = c->e;
  const char **ids = NULL;
  size_t n_ids = 0, n_tags = 0;
  enum { MAX_DEL = 1000 };
  struct ec2_tag *tags = tw_calloc(MAX_DEL, sizeof *tags);
  int *idx = tw_calloc(MAX_DEL + 1, sizeof *idx);
  struct tag **sets = NULL;
  size_t **counts = NULL;
  const char *bad = NULL;
  if (ec2_check_known(c->p, ec2_delete_tags_params, &c->err) ||
      ec2_list(c->p, "ResourceId", EC2_MAX_LIST, &ids, &n_ids, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  n_tags = fc_params_indexes(c->p, "Tag", idx, MAX_DEL + 1, &bad);
  if (bad) {
    char msg[160];
    snprintf(msg, sizeof msg, "The parameter %.100s has an invalid list index",
             bad);
    ec2_error(e, c->resp, 0, "InvalidParameterValue", msg);
    goto out;
  }
  if (n_tags > MAX_DEL) {
    ec2_error(e, c->resp, 0, "InvalidParameterValue",
              "The request may delete at most 1000 tags");
    goto out;
  }
  for (size_t t = 0; t < n_tags; t++) {
    char k[64];
    snprintf(k, sizeof k, "Tag.%d.Key", idx[t]);
    tags[t].key = fc_params_get(c->p, k);
    snprintf(k, sizeof k, "Tag.%d.Value", idx[t]);
    tags[t].value = fc_params_get(c->p, k); /* NULL: any value */
    if (!tags[t].key || !*tags[t].key) {
      ec2_error(e, c->resp, 0, "InvalidParameterValue",
                "Tag key must have a value");
      goto out;
    }
    if (!strncmp(tags[t].key, "aws:", 4)) {
      ec2_error(e, c->resp, 0, "InvalidParameterValue",
                "Tag keys starting with 'aws:' are reserved for internal use");
      goto out;
    }
  }
  if (!n_ids) {
    ec2_error(e, c->resp, 0, "MissingParameter",
              "The request must contain the parameter resourceIdSet");
    goto out;
  }
  sets = tw_calloc(n_ids, sizeof *sets);
  counts = tw_calloc(n_ids, sizeof *counts);
  if (!tag_targets(c, ids, n_ids, sets, counts) || dry_run(c))
    goto out;
  for (size_t i = 0; i < n_ids; i++) {
    size_t w = 0;
    for (size_t k = 0; k < *counts[i]; k++) {
      struct tag *tg = &sets[i][k];
      bool del = n_tags == 0;
      for (size_t t = 0; t < n_tags && !del; t++)
        del = !strcmp(tags[t].key, tg->key) &&
              (!tags[t].value || !strcmp(tags[t].value, tg->value));
      if (del) {
        free(tg->key);
        free(tg->value);
      } else {
        sets[i][w++] = *tg;
      }
    }
    *counts[i] = w;
  }
  begin(c->resp, "DeleteTagsResponse");
  fc_xml_elem_bool(&c->resp->body, "return", 1);
  end(c->resp, "DeleteTagsResponse");
out:
  free(ids);
  free(sets);
  free(counts);
  free(tags);
  free(idx);
}

struct tag_row {
  const struct inst *in;
  bool sir;
  size_t t;
};

static void act_describe_tags(struct call *c) {
  static const char *const filters[] = {"key",           "value", "resource-id",
                                        "resource-type", "tag:",  NULL};
  struct ec2 *e = c->e;
  struct ec2_filters fs = {.n = 0};
  long max = 1000;
  bool has_max;
  if (ec2_check_known(c->p, ec2_describe_tags_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_int(c->p, "MaxResults", 5, 1000, &max, &has_max, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (dry_run(c))
    goto out;
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t offset = 0, extra = 0;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok && (!read_token(e, qhash, tok, &offset, &extra) || offset < 0)) {
    ec2_error(e, c->resp, 0, "InvalidPaginationToken",
              "The specified pagination token is not valid or is expired.");
    goto out;
  }
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeTagsResponse");
  fc_xml_open(b, "tagSet");
  int64_t idx = 0, shown = 0;
  bool more = false;
  /* Instances in creation order, each one's tags then its spot request's:
   * a stable order, so offsets page correctly. */
  for (size_t i = 0; i < e->n_inst && !more; i++) {
    const struct inst *in = e->inst[i];
    if (!in || strcmp(in->region, c->region))
      continue;
    for (int sir = 0; sir < 2 && !more; sir++) {
      const struct tag *tags = sir ? in->sir_tags : in->tags;
      size_t n = sir ? in->n_sir_tags : in->n_tags;
      const char *rid = sir ? in->sir_id : in->id;
      const char *rtype = sir ? "spot-instances-request" : "instance";
      for (size_t t = 0; t < n; t++) {
        bool want = true;
        for (size_t fi = 0; fi < fs.n && want; fi++) {
          const struct ec2_filter *f = &fs.v[fi];
          if (!strncmp(f->name, "tag:", 4))
            want = !strcmp(f->name + 4, tags[t].key) &&
                   ec2_filter_any(f, tags[t].value);
          else
            want = ec2_filter_any(f, !strcmp(f->name, "key")     ? tags[t].key
                                     : !strcmp(f->name, "value") ? tags[t].value
                                     : !strcmp(f->name, "resource-id") ? rid
                                                                       : rtype);
        }
        if (!want || idx++ < offset)
          continue;
        if (shown == max) {
          more = true;
          break;
        }
        fc_xml_open(b, "item");
        fc_xml_elem(b, "resourceId", rid);
        fc_xml_elem(b, "resourceType", rtype);
        fc_xml_elem(b, "key", tags[t].key);
        fc_xml_elem(b, "value", tags[t].value);
        fc_xml_close(b, "item");
        shown++;
      }
    }
  }
  fc_xml_close(b, "tagSet");
  if (more) {
    char t[80];
    make_token(e, qhash, offset + shown, 0, t);
    fc_xml_elem(b, "nextToken", t);
  }
  end(c->resp, "DescribeTagsResponse");
out:
  ec2_filters_release(&fs);
}

/* Status checks as EC2 reports them: initializing while pending and for
 * the first minutes of running (the fake: until pending_ms more), then ok;
 * not-applicable for an instance that is not running. */
static const char *check_status(const struct ec2 *e, const struct inst *in,
                                int64_t now) {
  if (in->state == ST_PENDING ||
      (in->state == ST_RUNNING && now < in->launch_ms + 2 * e->pending_ms))
    return "initializing";
  return in->state == ST_RUNNING ? "ok" : "not-applicable";
}

static void status_xml(struct tw_buf *b, const char *root, const char *st) {
  const char *detail = !strcmp(st, "ok")             ? "passed"
                       : !strcmp(st, "initializing") ? "initializing"
                                                     : NULL;
  fc_xml_open(b, root);
  fc_xml_elem(b, "status", st);
  if (detail)
    tw_buf_printf(b,
                  "<details><item><name>reachability</name><status>%s"
                  "</status></item></details>",
                  detail);
  else
    fc_xml_elem(b, "details", NULL);
  fc_xml_close(b, root);
}

static void act_instance_status(struct call *c) {
  static const char *const filters[] = {"availability-zone",
                                        "instance-state-name",
                                        "instance-state-code",
                                        "instance-status.status",
                                        "instance-status.reachability",
                                        "system-status.status",
                                        "system-status.reachability",
                                        "event.code",
                                        NULL};
  struct ec2 *e = c->e;
  struct ec2_filters fs = {.n = 0};
  struct inst **ids = NULL;
  size_t n_ids = 0;
  long max = 1000;
  bool has_max = false, all = false;
  if (ec2_check_known(c->p, ec2_instance_status_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_bool(c->p, "IncludeAllInstances", &all, &c->err) ||
      ec2_int(c->p, "MaxResults", 5, 1000, &max, &has_max, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  if (has_max && fc_params_indexes(c->p, "InstanceId", NULL, 0, NULL)) {
    ec2_error(e, c->resp, 0, "InvalidParameterCombination",
              "The parameter instancesSet cannot be used with the parameter "
              "maxResults");
    goto out;
  }
  if (fc_params_indexes(c->p, "InstanceId", NULL, 0, NULL) > 100) {
    ec2_error(e, c->resp, 0, "InvalidParameterValue",
              "The maximum number of instance IDs is 100");
    goto out;
  }
  if (dry_run(c))
    goto out;
  if (!instance_ids(c, &ids, &n_ids))
    goto out;
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t cursor = 0, extra = 0;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok && !read_token(e, qhash, tok, &cursor, &extra)) {
    ec2_error(e, c->resp, 0, "InvalidPaginationToken",
              "The specified pagination token is not valid or is expired.");
    goto out;
  }
  int64_t now = fc_now_ms(e->s);
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeInstanceStatusResponse");
  fc_xml_open(b, "instanceStatusSet");
  long shown = 0;
  uint64_t last = 0;
  bool more = false;
  for (size_t i = 0; i < e->n_inst; i++) {
    struct inst *in = e->inst[i];
    if (!in || strcmp(in->region, c->region) || in->seq <= (uint64_t)cursor)
      continue;
    if (n_ids) {
      bool named = false;
      for (size_t k = 0; k < n_ids && !named; k++)
        named = ids[k] == in;
      if (!named)
        continue;
    }
    if (!all && in->state != ST_RUNNING)
      continue; /* running instances only, unless IncludeAllInstances */
    const char *st = check_status(e, in, now);
    const char *reach = !strcmp(st, "ok")             ? "passed"
                        : !strcmp(st, "initializing") ? "initializing"
                                                      : "";
    char code[8];
    snprintf(code, sizeof code, "%d", in->state);
    bool want = true;
    for (size_t fi = 0; fi < fs.n && want; fi++) {
      const struct ec2_filter *f = &fs.v[fi];
      const char *n = f->name;
      const char *v = !strcmp(n, "availability-zone") ? in->zone
                      : !strcmp(n, "instance-state-name")
                          ? state_name(in->state)
                      : !strcmp(n, "instance-state-code") ? code
                      : !strcmp(n, "event.code")          ? NULL
                      : strstr(n, ".reachability")        ? reach
                                                          : st;
      want = v && ec2_filter_any(f, v);
    }
    if (!want)
      continue;
    if (shown == max) {
      more = true;
      break;
    }
    fc_xml_open(b, "item");
    fc_xml_elem(b, "instanceId", in->id);
    fc_xml_elem(b, "availabilityZone", in->zone);
    tw_buf_printf(b,
                  "<instanceState><code>%d</code><name>%s</name>"
                  "</instanceState>",
                  in->state, state_name(in->state));
    status_xml(b, "systemStatus", st);
    status_xml(b, "instanceStatus", st);
    fc_xml_elem(b, "attachedEbsStatus", NULL);
    fc_xml_close(b, "item");
    shown++;
    last = in->seq;
  }
  fc_xml_close(b, "instanceStatusSet");
  if (more) {
    char t[80];
    make_token(e, qhash, (int64_t)last, 0, t);
    fc_xml_elem(b, "nextToken", t);
  }
  end(c->resp, "DescribeInstanceStatusResponse");
out:
  ec2_filters_release(&fs);
  free(ids);
}

/* The spot request RunInstances made for a spot launch, derived from its
 * instance: active while it lives, closed (or disabled, for stop and
 * hibernate) once it ends, with the status codes EC2 documents for each
 * way it ended. */
struct sir_status {
  const char *state, *code, *message;
};

static struct sir_status sir_status(const struct inst *in, int64_t now) {
  bool by_user = !strcmp(in->sr_code, "Client.UserInitiatedShutdown");
  bool noticed = in->notice_ms >= 0 && now >= in->notice_ms;
  bool stop = strcmp(in->notice_action, "terminate") != 0;
  if (live(in) && noticed)
    return (struct sir_status){
        "active", stop ? "marked-for-stop" : "marked-for-termination",
        stop ? "Spot Instance is marked for stop due to no available "
               "capacity."
             : "Spot Instance is marked for termination due to no available "
               "capacity."};
  if (live(in))
    return (struct sir_status){"active", "fulfilled",
                               "Your spot request is fulfilled."};
  if (by_user)
    return (struct sir_status){
        "closed", "instance-terminated-by-user",
        "Spot Instance terminated due to user-initiated termination."};
  if (in->state == ST_STOPPING || in->state == ST_STOPPED)
    return (struct sir_status){
        "disabled", "instance-stopped-no-capacity",
        "Spot Instance stopped due to no available capacity."};
  return (struct sir_status){
      "closed", "instance-terminated-no-capacity",
      "Spot Instance terminated due to no available capacity."};
}

static void act_spot_requests(struct call *c) {
  static const char *const filters[] = {"spot-instance-request-id",
                                        "state",
                                        "status-code",
                                        "status-message",
                                        "instance-id",
                                        "type",
                                        "launched-availability-zone",
                                        "launch.instance-type",
                                        "launch.image-id",
                                        "product-description",
                                        "spot-price",
                                        "tag:",
                                        "tag-key",
                                        NULL};
  struct ec2 *e = c->e;
  struct ec2_filters fs = {.n = 0};
  const char **ids = NULL;
  size_t n_ids = 0;
  long max = 1000;
  bool has_max = false;
  if (ec2_check_known(c->p, ec2_spot_requests_params, &c->err) ||
      ec2_filters_parse(c->p, filters, &fs, &c->err) ||
      ec2_list(c->p, "SpotInstanceRequestId", EC2_MAX_LIST, &ids, &n_ids,
               &c->err) ||
      ec2_int(c->p, "MaxResults", 5, 1000, &max, &has_max, &c->err)) {
    ec2_error_err(e, c->resp, &c->err);
    goto out;
  }
  for (size_t i = 0; i < n_ids; i++) {
    char msg[192];
    if (!sir_id_valid(ids[i])) {
      snprintf(msg, sizeof msg, "Invalid id: \"%.64s\"", ids[i]);
      ec2_error(e, c->resp, 0, "InvalidSpotInstanceRequestID.Malformed", msg);
      goto out;
    }
    if (!find_sir(e, ids[i], c->region)) {
      snprintf(msg, sizeof msg,
               "The spot instance request ID '%.64s' does not exist", ids[i]);
      ec2_error(e, c->resp, 0, "InvalidSpotInstanceRequestID.NotFound", msg);
      goto out;
    }
  }
  if (dry_run(c))
    goto out;
  uint64_t qhash = ec2_params_hash(c->p, page_skip);
  int64_t cursor = 0, extra = 0;
  const char *tok = fc_params_get(c->p, "NextToken");
  if (tok && !read_token(e, qhash, tok, &cursor, &extra)) {
    ec2_error(e, c->resp, 0, "InvalidPaginationToken",
              "The specified pagination token is not valid or is expired.");
    goto out;
  }
  int64_t now = fc_now_ms(e->s);
  struct tw_buf *b = &c->resp->body;
  begin(c->resp, "DescribeSpotInstanceRequestsResponse");
  fc_xml_open(b, "spotInstanceRequestSet");
  long shown = 0;
  uint64_t last = 0;
  bool more = false;
  for (size_t i = 0; i < e->n_inst; i++) {
    struct inst *in = e->inst[i];
    if (!in || !in->spot || strcmp(in->region, c->region) ||
        in->seq <= (uint64_t)cursor)
      continue;
    bool want = !n_ids;
    for (size_t k = 0; k < n_ids && !want; k++)
      want = !strcmp(ids[k], in->sir_id);
    struct sir_status ss = sir_status(in, now);
    for (size_t fi = 0; fi < fs.n && want; fi++) {
      const struct ec2_filter *f = &fs.v[fi];
      const char *n = f->name;
      if (!strncmp(n, "tag:", 4) || !strcmp(n, "tag-key")) {
        bool any = false;
        for (size_t t = 0; t < in->n_sir_tags && !any; t++)
          any = n[3] == ':' ? !strcmp(n + 4, in->sir_tags[t].key) &&
                                  ec2_filter_any(f, in->sir_tags[t].value)
                            : ec2_filter_any(f, in->sir_tags[t].key);
        want = any;
        continue;
      }
      const char *v = !strcmp(n, "spot-instance-request-id")     ? in->sir_id
                      : !strcmp(n, "state")                      ? ss.state
                      : !strcmp(n, "status-code")                ? ss.code
                      : !strcmp(n, "status-message")             ? ss.message
                      : !strcmp(n, "instance-id")                ? in->id
                      : !strcmp(n, "type")                       ? in->spot_type
                      : !strcmp(n, "launched-availability-zone") ? in->zone
                      : !strcmp(n, "launch.instance-type")       ? in->itype
                      : !strcmp(n, "launch.image-id")            ? in->image_id
                      : !strcmp(n, "spot-price") ? in->max_price_text
                                                 : "Linux/UNIX";
      want = ec2_filter_any(f, v);
    }
    if (!want)
      continue;
    if (shown == max) {
      more = true;
      break;
    }
    char t[32];
    fc_xml_open(b, "item");
    fc_xml_elem(b, "spotInstanceRequestId", in->sir_id);
    fc_xml_elem(b, "spotPrice", in->max_price_text);
    fc_xml_elem(b, "type", in->spot_type);
    fc_xml_elem(b, "state", ss.state);
    fc_xml_open(b, "status");
    fc_xml_elem(b, "code", ss.code);
    fmt_time_s(
        live(in) ? (in->notice_ms >= 0 && now >= in->notice_ms ? in->notice_ms
                                                               : in->launch_ms)
                 : (in->terminated_ms >= 0 ? in->terminated_ms : in->next_ms),
        t);
    fc_xml_elem(b, "updateTime", t);
    fc_xml_elem(b, "message", ss.message);
    fc_xml_close(b, "status");
    fc_xml_open(b, "launchSpecification");
    fc_xml_elem(b, "imageId", in->image_id);
    if (in->key_name[0])
      fc_xml_elem(b, "keyName", in->key_name);
    fc_xml_elem(b, "groupSet", NULL);
    fc_xml_elem(b, "instanceType", in->itype);
    fc_xml_open(b, "placement");
    fc_xml_elem(b, "availabilityZone", in->zone);
    fc_xml_close(b, "placement");
    fc_xml_elem(b, "blockDeviceMapping", NULL);
    tw_buf_adds(b, "<monitoring><enabled>false</enabled></monitoring>");
    fc_xml_close(b, "launchSpecification");
    fc_xml_elem(b, "instanceId", in->id);
    fmt_time_s(in->launch_ms, t);
    fc_xml_elem(b, "createTime", t);
    fc_xml_elem(b, "productDescription", "Linux/UNIX");
    if (in->n_sir_tags) {
      fc_xml_open(b, "tagSet");
      for (size_t k = 0; k < in->n_sir_tags; k++) {
        fc_xml_open(b, "item");
        fc_xml_elem(b, "key", in->sir_tags[k].key);
        fc_xml_elem(b, "value", in->sir_tags[k].value);
        fc_xml_close(b, "item");
      }
      fc_xml_close(b, "tagSet");
    }
    fc_xml_elem(b, "launchedAvailabilityZone", in->zone);
    fc_xml_elem(b, "instanceInterruptionBehavior", in->interruption);
    fc_xml_close(b, "item");
    shown++;
    last = in->seq;
  }
  fc_xml_close(b, "spotInstanceRequestSet");
  if (more) {
    char t[80];
    make_token(e, qhash, (int64_t)last, 0, t);
    fc_xml_elem(b, "nextToken", t);
  }
  end(c->resp, "DescribeSpotInstanceRequestsResponse");
out:
  ec2_filters_release(&fs);
  free(ids);
}

static const struct {
  const char *name;
  void (*fn)(struct call *c);
} actions[] = {
    {"RunInstances", act_run},
    {"DescribeInstances", act_describe_instances},
    {"TerminateInstances", act_terminate},
    {"DescribeSpotPriceHistory", act_spot_history},
    {"DescribeInstanceTypes", act_instance_types},
    {"DescribeAvailabilityZones", act_zones},
    {"DescribeRegions", act_regions},
    {"DescribeAddresses", act_addresses},
    {"CreateTags", act_create_tags},
    {"DeleteTags", act_delete_tags},
    {"DescribeTags", act_describe_tags},
    {"DescribeInstanceStatus", act_instance_status},
    {"DescribeSpotInstanceRequests", act_spot_requests},
};

/* ---- module entry points ---------------------------------------------- */

static bool is_form(const struct fc_request *req) {
  const char *ct = fc_header(req, "Content-Type");
  return ct && !strncasecmp(ct, "application/x-www-form-urlencoded", 33);
}

/* A query signed with Signature Version 2 (AWSAccessKeyId, Signature,
 * SignatureVersion=2 among the parameters): see docs/fakecloud.md. */
static bool sigv2(const struct fc_request *req) {
  struct fc_params q;
  struct tw_err err;
  bool v2 = false;
  for (int part = 0; part < 2 && !v2; part++) {
    const char *s = part ? req->body : req->raw_query;
    size_t n = part ? req->body_len : (s ? strlen(s) : 0);
    if (!s || !n || (part && !is_form(req)))
      continue;
    fc_params_init(&q);
    tw_err_clear(&err);
    if (!fc_params_parse(&q, s, n, &err)) {
      const char *sv = fc_params_get(&q, "SignatureVersion");
      v2 = fc_params_get(&q, "AWSAccessKeyId") || (sv && !strcmp(sv, "2"));
    }
    fc_params_release(&q);
  }
  return v2;
}

/* ---- the Price List Query API's GetProducts --------------------------- */

static void pricing_error(struct fc_response *resp, int status,
                          const char *type, const char *msg) {
  resp->status = status;
  resp->content_type = "application/x-amz-json-1.1";
  tw_buf_adds(&resp->body, "{\"__type\":");
  tw_buf_json_str(&resp->body, type);
  tw_buf_adds(&resp->body, ",\"Message\":");
  tw_buf_json_str(&resp->body, msg);
  tw_buf_addc(&resp->body, '}');
}

/* The catalog's on-demand prices as Price List products (Linux, shared
 * tenancy, no software, used capacity): the filters on regionCode and
 * instanceType apply, NextToken is the index of the next offer. */
static void pricing_products(struct ec2 *e, const struct fc_request *req,
                             struct fc_response *resp) {
  json_error_t je;
  json_t *q = json_loadb(req->body ? req->body : "", req->body_len, 0, &je);
  json_t *sc = json_object_get(q, "ServiceCode");
  if (!json_is_string(sc) || strcmp(json_string_value(sc), "AmazonEC2")) {
    pricing_error(resp, 400, "InvalidParameterException",
                  "ServiceCode: this fake prices AmazonEC2 only");
    json_decref(q);
    return;
  }
  const char *want_region = NULL, *want_type = NULL;
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(q, "Filters"), i, f) {
    const char *field = json_string_value(json_object_get(f, "Field"));
    const char *value = json_string_value(json_object_get(f, "Value"));
    if (field && value && !strcmp(field, "regionCode"))
      want_region = value;
    else if (field && value && !strcmp(field, "instanceType"))
      want_type = value;
  }
  json_t *mr = json_object_get(q, "MaxResults");
  size_t max = json_is_integer(mr) && json_integer_value(mr) > 0 &&
                       json_integer_value(mr) <= 100
                   ? (size_t)json_integer_value(mr)
                   : 100;
  json_t *nt = json_object_get(q, "NextToken");
  size_t from = json_is_string(nt) ? strtoul(json_string_value(nt), NULL, 10)
                                   : 0;
  const struct fc_catalog *cat = fc_catalog(e->s);
  json_t *out = json_object(), *list = json_array();
  json_object_set_new(out, "FormatVersion", json_string("aws_v1"));
  size_t k;
  for (k = from; k < cat->n_offers && json_array_size(list) < max; k++) {
    const struct fc_offer *o = &cat->offers[k];
    const char *region = cat->regions[o->region].name;
    const char *type = cat->itypes[o->itype].name;
    if ((want_region && strcmp(want_region, region)) ||
        (want_type && strcmp(want_type, type)) || o->on_demand_uusd <= 0)
      continue;
    char price[32], sku[48], usd[48];
    fc_price_fmt(o->on_demand_uusd, price);
    snprintf(usd, sizeof usd, "%s0000", price);
    snprintf(sku, sizeof sku, "FAKE%06zu", k);
    json_t *attrs = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s}", "instanceType", type, "regionCode",
        region, "operatingSystem", "Linux", "tenancy", "Shared",
        "preInstalledSw", "NA", "capacitystatus", "Used");
    char term[64], rate[80];
    snprintf(term, sizeof term, "%s.JRTCKXETXF", sku);
    snprintf(rate, sizeof rate, "%s.JRTCKXETXF.6YS6EN2CT7", sku);
    json_t *dim = json_pack("{s:s,s:s,s:{s:s}}", "unit", "Hrs", "rateCode",
                            rate, "pricePerUnit", "USD", usd);
    json_t *dims = json_object();
    json_object_set_new(dims, rate, dim);
    json_t *t = json_pack("{s:o,s:s}", "priceDimensions", dims, "sku", sku);
    json_t *od = json_object();
    json_object_set_new(od, term, t);
    json_t *prod = json_pack(
        "{s:{s:s,s:s,s:o},s:{s:o},s:s}", "product", "productFamily",
        "Compute Instance", "sku", sku, "attributes", attrs, "terms",
        "OnDemand", od, "serviceCode", "AmazonEC2");
    char *text = json_dumps(prod, JSON_COMPACT);
    json_array_append_new(list, json_string(text));
    free(text);
    json_decref(prod);
  }
  json_object_set_new(out, "PriceList", list);
  if (k < cat->n_offers) {
    char next[24];
    snprintf(next, sizeof next, "%zu", k);
    json_object_set_new(out, "NextToken", json_string(next));
  }
  char *body = json_dumps(out, JSON_COMPACT);
  resp->status = 200;
  resp->content_type = "application/x-amz-json-1.1";
  tw_buf_adds(&resp->body, body);
  free(body);
  json_decref(out);
  json_decref(q);
}

static void ec2_handle(void *ctx, const struct fc_request *req,
                       struct fc_response *resp) {
  struct ec2 *e = ctx;
  struct fc_params p;
  struct call c = {.e = e, .p = &p, .resp = resp};
  char region[32];
  fc_params_init(&p);
  tw_err_clear(&c.err);
  fc_request_id(e->s, resp->request_id);
  ec2_tick(e);
  if (req->body_too_big) {
    char msg[128];
    snprintf(msg, sizeof msg, "Request body is larger than %zu bytes.",
             fc_opts(e->s)->max_body_bytes);
    ec2_error(e, resp, 413, "RequestEntityTooLarge", msg);
    goto out;
  }
  if (strcmp(req->method, "GET") && strcmp(req->method, "POST")) {
    ec2_error(e, resp, 405, "InvalidHttpRequest",
              "The HTTP method is not supported; use GET or POST.");
    goto out;
  }
  if (!fc_header(req, "Authorization") && sigv2(req)) {
    ec2_error(e, resp, 0, "AuthFailure",
              "AWS was not able to validate the provided access credentials: "
              "Signature Version 2 is not supported by this endpoint; sign "
              "the request with Signature Version 4.");
    goto out;
  }
  const char *target = fc_header(req, "X-Amz-Target");
  if (target && !strcmp(target, "AWSPriceListService.GetProducts")) {
    /* the Price List Query API, signed for service "pricing" */
    if (authenticate(e, req, "pricing", region, &c.err))
      pricing_error(resp, 403, "AccessDeniedException", c.err.msg);
    else
      pricing_products(e, req, resp);
    goto out;
  }
  if (authenticate(e, req, "ec2", region, &c.err)) {
    ec2_error_err(e, resp, &c.err);
    goto out;
  }
  c.region = region;
  if ((req->raw_query &&
       fc_params_parse(&p, req->raw_query, strlen(req->raw_query), &c.err)) ||
      (!strcmp(req->method, "POST") && is_form(req) &&
       fc_params_parse(&p, req->body, req->body_len, &c.err))) {
    ec2_error_err(e, resp, &c.err);
    goto out;
  }
  const char *action = fc_params_get(&p, "Action");
  if (!action || !*action) {
    ec2_error(e, resp, 0, "MissingAction",
              "The request must contain the parameter Action");
    goto out;
  }
  count(e->calls, action);
  const char *version = fc_params_get(&p, "Version");
  if (!version) {
    ec2_error(e, resp, 0, "MissingParameter",
              "The request must contain the parameter Version");
    goto out;
  }
  if (strcmp(version, EC2_API_VERSION)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "The requested version (%.32s) of service AmazonEC2 does not "
             "exist",
             version);
    ec2_error(e, resp, 0, "NoSuchVersion", msg);
    goto out;
  }
  size_t a;
  for (a = 0; a < sizeof actions / sizeof actions[0]; a++)
    if (!strcmp(actions[a].name, action))
      break;
  if (a == sizeof actions / sizeof actions[0]) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "The action %.64s is not valid for this web service.", action);
    ec2_error(e, resp, 0, "InvalidAction", msg);
    goto out;
  }
  /* Request-level faults, after authentication as in EC2 (an unsigned
   * request is refused before it is counted against the rate limit). */
  struct fc_fault_query q = {.service = "ec2", .action = action};
  struct fc_faults *fl = fc_faults(e->s);
  struct fc_fault *f;
  if (!req->late && (f = fc_faults_fire(fl, FC_FAULT_LATE, &q,
                                         fc_elapsed_ms(e->s), fc_rng(e->s)))) {
    resp->late_ms = f->delay_ms;
    goto out;
  }
  if ((f = fc_faults_fire(fl, FC_FAULT_SLOW, &q, fc_elapsed_ms(e->s),
                          fc_rng(e->s))))
    resp->delay_ms += f->delay_ms;
  if (fc_faults_fire(fl, FC_FAULT_THROTTLE, &q, fc_elapsed_ms(e->s),
                     fc_rng(e->s))) {
    ec2_error(e, resp, 503, "RequestLimitExceeded", "Request limit exceeded.");
    goto out;
  }
  if ((f = fc_faults_fire(fl, FC_FAULT_ERROR, &q, fc_elapsed_ms(e->s),
                          fc_rng(e->s)))) {
    ec2_error(e, resp, f->status, f->code,
              f->message[0] ? f->message : "An internal error has occurred.");
    goto out;
  }
  actions[a].fn(&c);
out:
  fc_params_release(&p);
}

static bool ec2_claims(const struct fc_request *req) {
  return !strcmp(req->raw_path, "/") || !req->raw_path[0];
}

/* ---- control API: /_fake/ec2/... ------------------------------------- */

static json_t *inst_json(const struct inst *in) {
  char t[32];
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(in->id));
  json_object_set_new(o, "reservation_id", json_string(in->reservation_id));
  json_object_set_new(o, "instance_type", json_string(in->itype));
  json_object_set_new(o, "subnet_id", json_string(in->subnet_id));
  json_object_set_new(o, "iam_instance_profile", json_string(in->iam_profile));
  json_object_set_new(o, "root_device", json_string(in->root_device));
  json_object_set_new(o, "root_size_gb", json_integer(in->root_size_gb));
  json_object_set_new(o, "root_type", json_string(in->root_type));
  json_object_set_new(o, "security_groups", json_integer(in->n_groups));
  json_object_set_new(o, "region", json_string(in->region));
  json_object_set_new(o, "zone", json_string(in->zone));
  json_object_set_new(o, "image_id", json_string(in->image_id));
  json_object_set_new(o, "state", json_string(state_name(in->state)));
  json_object_set_new(o, "state_code", json_integer(in->state));
  json_object_set_new(o, "lifecycle",
                      json_string(in->spot ? "spot" : "on-demand"));
  fmt_time_s(in->launch_ms, t);
  json_object_set_new(o, "launch_time", json_string(t));
  if (in->client_token[0])
    json_object_set_new(o, "client_token", json_string(in->client_token));
  if (in->sr_code[0])
    json_object_set_new(o, "state_reason", json_string(in->sr_code));
  json_t *tags = json_object();
  for (size_t i = 0; i < in->n_tags; i++)
    json_object_set_new(tags, in->tags[i].key, json_string(in->tags[i].value));
  json_object_set_new(o, "tags", tags);
  if (in->spot) {
    char p[32];
    json_t *s = json_object();
    fc_price_fmt(in->max_price_uusd, p);
    json_object_set_new(s, "max_price", json_string(p));
    json_object_set_new(s, "request_id", json_string(in->sir_id));
    json_object_set_new(s, "type", json_string(in->spot_type));
    json_object_set_new(s, "interruption_behavior",
                        json_string(in->interruption));
    if (in->notice_ms >= 0) {
      fmt_time(in->notice_ms, t);
      json_object_set_new(s, "notice_time", json_string(t));
      fmt_time(in->action_ms, t);
      json_object_set_new(s, "action_time", json_string(t));
      json_object_set_new(s, "action", json_string(in->notice_action));
    }
    if (in->rebalance_ms >= 0) {
      fmt_time(in->rebalance_ms, t);
      json_object_set_new(s, "rebalance_time", json_string(t));
    }
    json_object_set_new(o, "spot", s);
  }
  return o;
}

static json_t *config_json(struct ec2 *e) {
  return json_pack("{s:I,s:I,s:I,s:I}", "pending_ms", (json_int_t)e->pending_ms,
                   "shutdown_ms", (json_int_t)e->shutdown_ms,
                   "vcpu_limit_on_demand", (json_int_t)e->vcpu_limit_on_demand,
                   "vcpu_limit_spot", (json_int_t)e->vcpu_limit_spot);
}

static void ec2_dump(void *ctx, json_t *out) {
  struct ec2 *e = ctx;
  ec2_tick(e);
  json_t *arr = json_array(), *calls = json_object(), *errs = json_object();
  for (size_t i = 0; i < e->n_inst; i++)
    if (e->inst[i])
      json_array_append_new(arr, inst_json(e->inst[i]));
  for (size_t i = 0; i < 64 && e->calls[i].name[0]; i++)
    json_object_set_new(calls, e->calls[i].name, json_integer(e->calls[i].n));
  for (size_t i = 0; i < 64 && e->errors[i].name[0]; i++)
    json_object_set_new(errs, e->errors[i].name, json_integer(e->errors[i].n));
  json_object_set_new(out, "instances", arr);
  json_object_set_new(out, "calls", calls);
  json_object_set_new(out, "errors", errs);
  json_object_set_new(out, "config", config_json(e));
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

static bool ctl_instance(struct ec2 *e, const char *method, const char *rest,
                         const json_t *body, struct fc_response *resp) {
  char id[32];
  size_t n = strcspn(rest, "/");
  if (n == 0 || n >= sizeof id)
    return false;
  memcpy(id, rest, n);
  id[n] = '\0';
  const char *sub = rest + n;
  struct inst *in = find(e, id);
  if (!in) {
    fc_json_error(resp, 404, "no instance %s", id);
    return true;
  }
  int64_t now = fc_now_ms(e->s);
  char t[32];
  if (!strcmp(sub, "") && !strcmp(method, "GET")) {
    fc_json_reply(resp, 200, inst_json(in));
  } else if (!strcmp(sub, "/spot/instance-action") && !strcmp(method, "GET")) {
    /* As instance metadata: 404 until a notice is out. */
    if (in->notice_ms < 0 || now < in->notice_ms) {
      fc_json_error(resp, 404, "no interruption notice");
      return true;
    }
    fc_iso_seconds(in->action_ms, t);
    fc_json_reply(
        resp, 200,
        json_pack("{s:s,s:s}", "action", in->notice_action, "time", t));
  } else if (!strcmp(sub, "/events/recommendations/rebalance") &&
             !strcmp(method, "GET")) {
    if (in->rebalance_ms < 0 || now < in->rebalance_ms) {
      fc_json_error(resp, 404, "no rebalance recommendation");
      return true;
    }
    fc_iso_seconds(in->rebalance_ms, t);
    fc_json_reply(resp, 200, json_pack("{s:s}", "noticeTime", t));
  } else if ((!strcmp(sub, "/interrupt") || !strcmp(sub, "/rebalance")) &&
             !strcmp(method, "POST")) {
    int64_t delay = 0, lead = 120000;
    const char *action = NULL;
    if (body && !json_is_object(body)) {
      fc_json_error(resp, 400, "expected a JSON object body");
      return true;
    }
    if (!json_ms(body, "delay_ms", &delay, resp) ||
        !json_ms(body, "lead_ms", &lead, resp))
      return true;
    json_t *a = json_object_get(body, "action");
    if (a) {
      action = json_string_value(a);
      if (!action || (strcmp(action, "terminate") && strcmp(action, "stop") &&
                      strcmp(action, "hibernate"))) {
        fc_json_error(resp, 400,
                      "action: expected terminate, stop or hibernate");
        return true;
      }
    }
    if (!in->spot || !live(in)) {
      fc_json_error(resp, 409, "%s is not a running spot instance", id);
      return true;
    }
    if (sub[1] == 'r') {
      in->rebalance_ms = now + delay;
      fc_iso_seconds(in->rebalance_ms, t);
      fc_json_reply(resp, 200, json_pack("{s:s}", "noticeTime", t));
    } else {
      schedule_notice(in, now + delay, lead, action);
      reschedule(e, in);
      char nt[32];
      fc_iso_seconds(in->notice_ms, nt);
      fc_iso_seconds(in->action_ms, t);
      fc_json_reply(resp, 200,
                    json_pack("{s:s,s:s,s:s}", "notice_time", nt, "time", t,
                              "action", in->notice_action));
    }
  } else {
    return false;
  }
  return true;
}

static bool ec2_control(void *ctx, const char *method, const char *rest,
                        const json_t *body, struct fc_response *resp) {
  struct ec2 *e = ctx;
  ec2_tick(e);
  if (!strcmp(rest, "/state") && !strcmp(method, "GET")) {
    json_t *out = json_object();
    ec2_dump(e, out);
    fc_json_reply(resp, 200, out);
    return true;
  }
  if (!strcmp(rest, "/calls") && !strcmp(method, "GET")) {
    /* the counters alone, without every instance (bench-schedule) */
    json_t *out = json_object(), *calls = json_object(), *errs = json_object();
    for (size_t i = 0; i < 64 && e->calls[i].name[0]; i++)
      json_object_set_new(calls, e->calls[i].name,
                          json_integer(e->calls[i].n));
    for (size_t i = 0; i < 64 && e->errors[i].name[0]; i++)
      json_object_set_new(errs, e->errors[i].name,
                          json_integer(e->errors[i].n));
    json_object_set_new(out, "calls", calls);
    json_object_set_new(out, "errors", errs);
    fc_json_reply(resp, 200, out);
    return true;
  }
  if (!strncmp(rest, "/instances/", 11))
    return ctl_instance(e, method, rest + 11, body, resp);
  if (!strcmp(rest, "/config")) {
    if (!strcmp(method, "POST")) {
      int64_t v[4] = {e->pending_ms, e->shutdown_ms, e->vcpu_limit_on_demand,
                      e->vcpu_limit_spot};
      if (!json_is_object(body)) {
        fc_json_error(resp, 400, "expected a JSON object body");
        return true;
      }
      if (!json_ms(body, "pending_ms", &v[0], resp) ||
          !json_ms(body, "shutdown_ms", &v[1], resp) ||
          !json_ms(body, "vcpu_limit_on_demand", &v[2], resp) ||
          !json_ms(body, "vcpu_limit_spot", &v[3], resp))
        return true;
      e->pending_ms = v[0];
      e->shutdown_ms = v[1];
      e->vcpu_limit_on_demand = v[2];
      e->vcpu_limit_spot = v[3];
    } else if (strcmp(method, "GET")) {
      return false;
    }
    fc_json_reply(resp, 200, config_json(e));
    return true;
  }
  if (!strcmp(rest, "/spot-price") && !strcmp(method, "POST")) {
    const char *type =
        json_string_value(json_object_get(body, "instance_type"));
    const char *zone = json_string_value(json_object_get(body, "zone"));
    const char *price = json_string_value(json_object_get(body, "price"));
    const struct fc_catalog *cat = fc_catalog(e->s);
    struct price_override po = {.from_ms = fc_now_ms(e->s)};
    const struct fc_region *reg = NULL;
    int zi = -1;
    for (size_t r = 0; r < cat->n_regions && zi < 0 && zone; r++) {
      zi = fc_region_zone(&cat->regions[r], zone);
      reg = &cat->regions[r];
    }
    if (!type || !zone || !price || zi < 0 ||
        !fc_price_parse(price, &po.uusd) || po.uusd <= 0 ||
        !fc_catalog_offer(cat, type, reg->name) ||
        fc_offer_spot(fc_catalog_offer(cat, type, reg->name), (size_t)zi) < 0) {
      fc_json_error(resp, 400,
                    "expected {\"instance_type\", \"zone\", \"price\"} for "
                    "a spot offer of the catalog");
      return true;
    }
    snprintf(po.itype, sizeof po.itype, "%s", type);
    snprintf(po.region, sizeof po.region, "%s", reg->name);
    po.zone = (size_t)zi;
    e->overrides =
        tw_realloc(e->overrides, (e->n_overrides + 1) * sizeof *e->overrides);
    e->overrides[e->n_overrides++] = po;
    fc_json_reply(resp, 200,
                  json_pack("{s:s,s:s,s:s}", "instance_type", type, "zone",
                            zone, "price", price));
    return true;
  }
  return false;
}

static void ec2_reset(void *ctx) {
  struct ec2 *e = ctx;
  for (size_t i = 0; i < e->n_inst; i++)
    if (e->inst[i])
      inst_free(e->inst[i]);
  free(e->inst);
  free(e->by_id);
  free(e->due);
  for (size_t i = 0; i < e->n_tokens; i++)
    free(e->tokens[i].ids);
  free(e->tokens);
  free(e->by_token);
  free(e->use);
  free(e->overrides);
  struct fc_server *s = e->s;
  memset(e, 0, sizeof *e);
  e->s = s;
  e->pending_ms = fc_opts(s)->pending_ms;
  e->shutdown_ms = 3000;
  e->vcpu_limit_on_demand = 1152;
  e->vcpu_limit_spot = 1152;
}

static enum tw_rc ec2_create(struct fc_server *s, void **ctx,
                             struct tw_err *err) {
  struct ec2 *e = tw_calloc(1, sizeof *e);
  e->s = s;
  ec2_reset(e);
  *ctx = e;
  return TW_OK;
}

static void ec2_destroy(void *ctx) {
  struct ec2 *e = ctx;
  ec2_reset(e);
  free(e);
}

/* ---- the instances' metadata (--boot, boot.h) --------------------------
 *
 * IMDSv2 as the EC2 user guide describes it: PUT /latest/api/token with
 * X-aws-ec2-metadata-token-ttl-seconds (1..21600) answers a session token;
 * every GET needs it in X-aws-ec2-metadata-token, else 401. */

static void text_reply(struct fc_response *resp, int status, const char *t) {
  resp->status = status;
  resp->content_type = "text/plain";
  tw_buf_reset(&resp->body);
  tw_buf_adds(&resp->body, t);
}

static bool imds_token_ok(struct ec2 *e, struct inst *in, const char *tok) {
  int64_t now = fc_now_ms(e->s);
  for (size_t i = 0; tok && i < sizeof in->imds / sizeof in->imds[0]; i++)
    if (in->imds[i].token[0] && now < in->imds[i].expires_ms &&
        !strcmp(in->imds[i].token, tok))
      return true;
  return false;
}

static bool ec2_metadata(void *ctx, const char *id, const char *sub,
                         const struct fc_request *req,
                         struct fc_response *resp) {
  struct ec2 *e = ctx;
  struct inst *in = find(e, id);
  if (!in)
    return false;
  ec2_tick(e);
  count(e->calls, "IMDS");
  int64_t now = fc_now_ms(e->s);
  if (!strcmp(sub, "/latest/api/token")) {
    if (strcmp(req->method, "PUT")) {
      text_reply(resp, 405, "Method Not Allowed");
      return true;
    }
    long n = 0;
    if (!fc_imds_ttl(fc_header(req, "X-aws-ec2-metadata-token-ttl-seconds"),
                     &n)) {
      text_reply(resp, 400, "Bad Request");
      return true;
    }
    /* the oldest slot gives way */
    size_t slot = 0;
    for (size_t i = 1; i < sizeof in->imds / sizeof in->imds[0]; i++)
      if (in->imds[i].expires_ms < in->imds[slot].expires_ms)
        slot = i;
    char uuid[40];
    fc_request_id(e->s, uuid);
    snprintf(in->imds[slot].token, sizeof in->imds[slot].token, "AQAEA%s",
             uuid);
    in->imds[slot].expires_ms = now + n * 1000;
    text_reply(resp, 200, in->imds[slot].token);
    char t[24];
    snprintf(t, sizeof t, "%ld", n);
    fc_response_header(resp, "X-aws-ec2-metadata-token-ttl-seconds", t);
    return true;
  }
  if (strcmp(req->method, "GET")) {
    text_reply(resp, 405, "Method Not Allowed");
    return true;
  }
  if (!imds_token_ok(e, in, fc_header(req, "X-aws-ec2-metadata-token"))) {
    text_reply(resp, 401, "Unauthorized");
    return true;
  }
  char t[32];
  if (!strcmp(sub, "/latest/meta-data/instance-id")) {
    text_reply(resp, 200, in->id);
  } else if (!strcmp(sub, "/latest/meta-data/instance-type")) {
    text_reply(resp, 200, in->itype);
  } else if (!strcmp(sub, "/latest/meta-data/placement/availability-zone")) {
    text_reply(resp, 200, in->zone);
  } else if (!strcmp(sub, "/latest/meta-data/instance-life-cycle")) {
    text_reply(resp, 200, in->spot ? "spot" : "on-demand");
  } else if (!strcmp(sub, "/latest/meta-data/spot/instance-action") &&
             in->notice_ms >= 0 && now >= in->notice_ms) {
    fc_iso_seconds(in->action_ms, t);
    fc_json_reply(
        resp, 200,
        json_pack("{s:s,s:s}", "action", in->notice_action, "time", t));
  } else if (!strcmp(sub, "/latest/meta-data/events/recommendations/"
                          "rebalance") &&
             in->rebalance_ms >= 0 && now >= in->rebalance_ms) {
    fc_iso_seconds(in->rebalance_ms, t);
    fc_json_reply(resp, 200, json_pack("{s:s}", "noticeTime", t));
  } else if (!strcmp(sub, "/latest/user-data") && in->user_data) {
    resp->status = 200;
    resp->content_type = "application/octet-stream";
    tw_buf_reset(&resp->body);
    tw_buf_add(&resp->body, in->user_data, in->user_data_len);
  } else {
    text_reply(resp, 404, "Not Found");
  }
  return true;
}

static void ec2_tick_cb(void *ctx) { ec2_tick(ctx); }

const struct fc_module_ops fc_module_ec2 = {
    .name = "ec2",
    .create = ec2_create,
    .destroy = ec2_destroy,
    .claims = ec2_claims,
    .handle = ec2_handle,
    .control = ec2_control,
    .dump = ec2_dump,
    .reset = ec2_reset,
    .metadata = ec2_metadata,
    .tick = ec2_tick_cb,
};
