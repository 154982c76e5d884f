/* provider.c - the generic layer over struct tw_provider_ops.
 *
 * The only code that calls through p->ops.  Every wrapper has the same
 * shape: check the arguments, enter (count the call in flight, start the
 * timer), call the slot or its default, leave (record the time and the
 * outcome, log a failure once), then check and complete the results. */
#include "providers/provider.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/units.h"
#include "broker/base/node.h"
#include "providers/http.h"

static const char *const op_names[TW_POP_COUNT] = {
    "list_offers", "launch",        "describe",
    "terminate",   "list_managed",  "poll_events",
    "read_output", "find_by_token", "describe_many"};

const char *tw_provider_op_str(enum tw_provider_op op) {
  return (unsigned)op < TW_POP_COUNT ? op_names[op] : "unknown";
}

/* ---- registries --------------------------------------------------------- */

const struct tw_provider_ops *
tw_provider_find(const struct tw_provider_ops *const *reg, const char *name) {
  for (size_t i = 0; reg && name && reg[i]; i++)
    if (!strcmp(reg[i]->name, name))
      return reg[i];
  return NULL;
}

size_t tw_provider_names(const struct tw_provider_ops *const *reg,
                         const char **names, size_t max) {
  size_t n = 0;
  if (!max)
    return 0;
  for (size_t i = 0; reg && reg[i] && n + 1 < max; i++)
    names[n++] = reg[i]->name;
  names[n] = NULL;
  return n;
}

/* The default of the info slot (an adapter before version 3, or one
 * leaving it NULL): nothing known, so callers take their neutral path. */
static const struct tw_provider_info info_none = {
    .billing = {.kind = TW_BILLING_UNSET},
    .notice_url = "",
    .notice_signal = "",
    .focus_provider = "",
    .focus_compute_service = "",
    .focus_network_service = ""};

const struct tw_provider_info *
tw_provider_ops_info(const struct tw_provider_ops *ops) {
  return ops && ops->version >= 3 && ops->info ? ops->info : &info_none;
}

const struct tw_provider_info *
tw_provider_info_find(const struct tw_provider_ops *const *reg,
                      const char *name) {
  const struct tw_provider_ops *ops = tw_provider_find(reg, name);
  return ops ? tw_provider_ops_info(ops) : NULL;
}

/* ---- life cycle --------------------------------------------------------- */

/* The generic keys of every section: `concurrency` and `call_deadline_ms`
 * (provider.h).  The default deadline covers every try the http layer
 * makes with the section's own timeout and retry settings. */
static enum tw_rc call_limits(const struct tw_node *cfg, int64_t *conc,
                              int64_t *deadline, struct tw_err *err) {
  *conc = 8;
  *deadline = 0;
  if (!cfg || cfg->kind != TW_NODE_MAP)
    return TW_OK;
  int64_t timeout, tries, cap;
  enum tw_rc rc;
  if ((rc = tw_provider_cfg_int(cfg, "concurrency", 1, 256, 8, conc, err)))
    return rc;
  /* read leniently here: the adapter checks its own bounds at init */
  if (tw_provider_cfg_int(cfg, "timeout_ms", 1, INT64_MAX, 30000, &timeout,
                          NULL))
    timeout = 30000;
  if (tw_provider_cfg_int(cfg, "max_attempts", 1, INT64_MAX, 3, &tries, NULL))
    tries = 3;
  if (tw_provider_cfg_int(cfg, "backoff_cap_ms", 0, INT64_MAX, 20000, &cap,
                          NULL))
    cap = 20000;
  if (timeout > 600000)
    timeout = 600000;
  if (tries > 100)
    tries = 100;
  if (cap > 600000)
    cap = 600000;
  int64_t def = timeout * tries + cap * (tries - 1);
  return tw_provider_cfg_int(cfg, "call_deadline_ms", 100, 86400000, def,
                             deadline, err);
}

static enum tw_rc new_ops(const struct tw_provider_ops *ops,
                          const char *account, const struct tw_provider_opts *o,
                          struct tw_provider **out, struct tw_err *err) {
  const struct tw_node *cfg = o->cfg;
  *out = NULL;
  if (!ops || !ops->name || !*ops->name)
    return tw_err_set(err, TW_E_INVALID, "provider: adapter without a name");
  if (ops->version < 1 || ops->version > TW_PROVIDER_OPS_VERSION)
    return tw_err_set(err, TW_E_INVALID,
                      "provider %s: built against interface version %u, "
                      "this build knows 1..%u",
                      ops->name, ops->version, TW_PROVIDER_OPS_VERSION);
  if (!account || !*account)
    account = ops->name;
  if (strlen(account) >= TW_MODEL_NAME_MAX)
    return tw_err_field(err, TW_E_INVALID, "name",
                        "name: at most %d characters, got %zu",
                        TW_MODEL_NAME_MAX - 1, strlen(account));

  int64_t conc, deadline;
  enum tw_rc crc = call_limits(cfg, &conc, &deadline, err);
  if (crc)
    return crc;
  bool agent = false;
  const struct tw_node *an =
      cfg && cfg->kind == TW_NODE_MAP ? tw_node_get(cfg, "agent") : NULL;
  if (an && !tw_node_as_bool(an, &agent))
    return tw_err_field(err, TW_E_INVALID, "agent",
                        "agent: expected true or false, got %s",
                        an->kind == TW_NODE_SCALAR ? an->str
                                                   : tw_node_type_name(an));
  int64_t notice_poll = 0;
  if (cfg && cfg->kind == TW_NODE_MAP && tw_node_get(cfg, "notice_poll_ms") &&
      (crc = tw_provider_cfg_int(cfg, "notice_poll_ms", 100, 600000, 0,
                                 &notice_poll, err)))
    return crc;
  struct tw_provider *p = tw_calloc(1, sizeof *p);
  p->ops = ops;
  p->concurrency = (int)conc;
  p->notice_poll_ms = notice_poll;
  p->call_deadline_ms = deadline;
  p->agent = agent;
  p->account = tw_strdup(account);
  p->clock = o->clock ? o->clock : tw_clock_real();
  p->resolve_secret = o->resolve_secret;
  p->resolve_ctx = o->resolve_ctx;
  atomic_init(&p->in_flight, 0);
  pthread_mutex_init(&p->stats_lock, NULL);

  if (ops->init) {
    struct tw_err e = {0};
    enum tw_rc rc = ops->init(p, cfg, &e);
    if (rc) {
      if (e.rc == TW_OK)
        tw_err_set(&e, rc, "provider %s: init failed", account);
      tw_log_warn("provider", "provider=%s account=%s op=init rc=%s %s",
                  ops->name, account, tw_rc_str(rc), e.msg);
      if (err && err->rc == TW_OK)
        *err = e;
      tw_provider_free(p);
      return rc;
    }
  }
  /* The resolver's context (the sealed secrets) is lent for init only. */
  p->resolve_secret = NULL;
  p->resolve_ctx = NULL;
  *out = p;
  return TW_OK;
}

enum tw_rc tw_provider_new_ops(const struct tw_provider_ops *ops,
                               const char *account, const struct tw_node *cfg,
                               struct tw_clock *clock, struct tw_provider **out,
                               struct tw_err *err) {
  struct tw_provider_opts o = {.cfg = cfg, .clock = clock};
  return new_ops(ops, account, &o, out, err);
}

enum tw_rc tw_provider_new(const struct tw_provider_ops *const *reg,
                           const struct tw_node *cfg, struct tw_clock *clock,
                           struct tw_provider **out, struct tw_err *err) {
  struct tw_provider_opts o = {.adapters = reg, .cfg = cfg, .clock = clock};
  return tw_provider_new_with(&o, out, err);
}

enum tw_rc tw_provider_new_with(const struct tw_provider_opts *o,
                                struct tw_provider **out, struct tw_err *err) {
  const struct tw_provider_ops *const *reg = o->adapters;
  const struct tw_node *cfg = o->cfg;
  *out = NULL;
  if (!cfg || cfg->kind != TW_NODE_MAP)
    return tw_err_set(err, TW_E_INVALID, "provider: expected a mapping, got %s",
                      tw_node_type_name(cfg));
  const char *type = NULL, *name = NULL;
  enum tw_rc rc = tw_provider_cfg_str(cfg, "type", NULL, &type, err);
  if (rc)
    return rc;
  if (!type)
    return tw_err_field(err, TW_E_INVALID, "type",
                        "type: required (one of the built adapters)");
  rc = tw_provider_cfg_str(cfg, "name", NULL, &name, err);
  if (rc)
    return rc;
  const struct tw_provider_ops *ops = tw_provider_find(reg, type);
  if (!ops) {
    const char *names[16];
    tw_provider_names(reg, names, 16);
    const char *near = tw_closest(type, names);
    if (near)
      return tw_err_field(err, TW_E_INVALID, "type",
                          "type: unknown provider \"%s\"; did you mean "
                          "\"%s\"?",
                          type, near);
    return tw_err_field(err, TW_E_INVALID, "type",
                        "type: unknown provider \"%s\"", type);
  }
  return new_ops(ops, name, o, out, err);
}

void tw_provider_free(struct tw_provider *p) {
  if (!p)
    return;
  /* Parents outlive children: a call still running would use p->ctx after
   * the adapter freed it. */
  assert(atomic_load(&p->in_flight) == 0);
  if (p->ops->free)
    p->ops->free(p);
  pthread_mutex_destroy(&p->stats_lock);
  free(p->account);
  free(p);
}

/* ---- call bracket ------------------------------------------------------- */

struct call {
  struct tw_provider *p;
  enum tw_provider_op op;
  const char *what; /* an id, for the log line; may be "" */
  int64_t start_us;
  struct tw_err e; /* the adapter's error, copied to the caller's */
};

static void enter(struct call *c, struct tw_provider *p, enum tw_provider_op op,
                  const char *what) {
  c->p = p;
  c->op = op;
  c->what = what ? what : "";
  memset(&c->e, 0, sizeof c->e);
  atomic_fetch_add(&p->in_flight, 1);
  c->start_us = tw_mono_us();
}

/* Records the outcome; returns rc with the caller's err filled. */
static enum tw_rc leave(struct call *c, enum tw_rc rc, struct tw_err *err) {
  int64_t us = tw_mono_us() - c->start_us;
  struct tw_provider *p = c->p;
  atomic_fetch_sub(&p->in_flight, 1);

  pthread_mutex_lock(&p->stats_lock);
  struct tw_provider_stats *s = &p->stats[c->op];
  s->calls++;
  s->total_us += us;
  s->last_us = us;
  if (us > s->max_us)
    s->max_us = us;
  s->last_rc = rc;
  if (rc)
    s->failures++;
  pthread_mutex_unlock(&p->stats_lock);

  if (rc) {
    /* An adapter that fails without a message still yields one, so the
     * log line and the API's problem document say what failed. */
    if (c->e.rc == TW_OK)
      tw_err_set(&c->e, rc, "%s %s failed", p->ops->name,
                 tw_provider_op_str(c->op));
    c->e.rc = rc;
    tw_log_warn("provider",
                "provider=%s account=%s op=%s%s%s rc=%s detail=%s ms=%lld "
                "%s",
                p->ops->name, p->account, tw_provider_op_str(c->op),
                *c->what ? " id=" : "", c->what, tw_rc_str(rc),
                *c->e.detail ? c->e.detail : "-", (long long)(us / 1000),
                c->e.msg);
    if (err && err->rc == TW_OK)
      *err = c->e;
  } else {
    tw_log_debug("provider", "provider=%s account=%s op=%s%s%s us=%lld",
                 p->ops->name, p->account, tw_provider_op_str(c->op),
                 *c->what ? " id=" : "", c->what, (long long)us);
  }
  return rc;
}

/* Argument errors are the caller's bug or bad input, not the provider's:
 * they are not counted as provider calls. */
static enum tw_rc bad_arg(struct tw_provider *p, enum tw_provider_op op,
                          struct tw_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum tw_rc bad_arg(struct tw_provider *p, enum tw_provider_op op,
                          struct tw_err *err, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tw_err_set(err, TW_E_INVALID, "%s %s: %s", p->ops->name,
                    tw_provider_op_str(op), msg);
}

static bool valid_id(const char *id) {
  return id && *id && strlen(id) < TW_MODEL_ID_MAX;
}

/* Client tokens go to the provider verbatim (EC2: at most 64 ASCII
 * characters); refuse anything else here rather than get a provider's
 * less helpful error. */
static bool valid_token(const char *t) {
  if (!t || !*t || strlen(t) >= TW_MODEL_TOKEN_MAX)
    return false;
  for (; *t; t++)
    if (*t < 0x21 || *t > 0x7e)
      return false;
  return true;
}

static bool valid_tag(const char *t) {
  return t && *t && strlen(t) < TW_MODEL_TAG_MAX;
}

static void complete_instance(struct tw_provider *p, struct tw_instance *i) {
  if (!*i->provider)
    TW_SET(i->provider, p->ops->name);
  if (!*i->account)
    TW_SET(i->account, p->account);
  if (!*i->provider_state)
    TW_SET(i->provider_state, tw_instance_state_str(i->state));
}

/* ---- operations --------------------------------------------------------- */

static const char *offer_problem(const struct tw_offer *o) {
  if (!*o->instance_type)
    return "no instance type";
  if (!*o->region)
    return "no region";
  if (o->vcpus < 1)
    return "vcpus < 1";
  if (o->memory_mib < 0)
    return "negative memory";
  if (o->price_uusd_per_hour < 0 ||
      o->price_uusd_per_hour > TW_MODEL_PRICE_MAX_UUSD)
    return "price out of range";
  /* another currency: the adapter's own price, converted by the catalog */
  if (*o->price_currency &&
      (strlen(o->price_currency) != 3 || o->price_micro_per_hour < 0 ||
       o->price_micro_per_hour > TW_MODEL_PRICE_MAX_UUSD * 1000))
    return "price in another currency out of range";
  if (o->market != TW_MARKET_SPOT && o->market != TW_MARKET_ON_DEMAND &&
      o->market != TW_MARKET_PRIVATE)
    return "no market";
  if (o->accel_count < 0 || (o->accel_count > 0 && !*o->accel_name))
    return "accelerator count without a name";
  return NULL;
}

enum tw_rc tw_provider_list_offers(struct tw_provider *p,
                                   struct tw_offer_list *out,
                                   struct tw_err *err) {
  struct call c;
  size_t first = out->n;
  enter(&c, p, TW_POP_LIST_OFFERS, NULL);
  enum tw_rc rc =
      p->ops->list_offers ? p->ops->list_offers(p, out, &c.e) : TW_OK;
  if (rc) {
    /* A half-built catalog would look like "these are all the offers". */
    out->n = first;
    return leave(&c, rc, err);
  }
  leave(&c, rc, err);

  size_t kept = first, dropped = 0;
  const char *why = NULL;
  for (size_t i = first; i < out->n; i++) {
    struct tw_offer *o = &out->items[i];
    if (!*o->provider)
      TW_SET(o->provider, p->ops->name);
    if (!*o->account)
      TW_SET(o->account, p->account);
    const char *problem = offer_problem(o);
    if (!problem && !*o->id && !tw_offer_make_id(o))
      problem = "id too long";
    if (problem) {
      dropped++;
      if (!why)
        why = problem;
      continue;
    }
    if (kept != i)
      out->items[kept] = *o;
    kept++;
  }
  out->n = kept;
  if (dropped)
    tw_log_warn("provider",
                "provider=%s account=%s op=list_offers dropped=%zu first "
                "reason: %s",
                p->ops->name, p->account, dropped, why);
  return TW_OK;
}

enum tw_rc tw_provider_launch(struct tw_provider *p,
                              const struct tw_launch *req,
                              struct tw_instance *out, struct tw_err *err) {
  const enum tw_provider_op op = TW_POP_LAUNCH;
  tw_instance_init(out);
  if (!req || !req->offer)
    return bad_arg(p, op, err, "no offer");
  const struct tw_offer *o = req->offer;
  if (!valid_token(req->client_token))
    return bad_arg(p, op, err,
                   "client token: 1..64 printable ASCII characters "
                   "required");
  if (!valid_tag(req->job_id) || !valid_tag(req->attempt_id) ||
      !valid_tag(req->tenant))
    return bad_arg(p, op, err,
                   "job, attempt and tenant (1..%d chars) "
                   "required",
                   TW_MODEL_TAG_MAX - 1);
  if (!*o->instance_type || !*o->region)
    return bad_arg(p, op, err, "offer without instance type or region");
  if (o->market != TW_MARKET_SPOT && o->market != TW_MARKET_ON_DEMAND &&
      o->market != TW_MARKET_PRIVATE)
    return bad_arg(p, op, err, "offer without a market");
  if (o->market == TW_MARKET_SPOT && !tw_provider_supports(p, TW_PROV_SPOT))
    return bad_arg(p, op, err, "spot offers are not supported");
  if (*o->account && strcmp(o->account, p->account))
    return bad_arg(p, op, err, "offer %s belongs to account %s", o->id,
                   o->account);
  if (req->max_price_uusd_per_hour < 0)
    return bad_arg(p, op, err, "negative max price");
  if (!p->ops->launch)
    return bad_arg(p, op, err, "not supported by this provider");

  struct call c;
  enter(&c, p, op, req->client_token);
  enum tw_rc rc = p->ops->launch(p, req, out, &c.e);
  if (rc == TW_OK && !*out->id)
    rc =
        tw_err_set(&c.e, TW_E_INTERNAL,
                   "%s launch: succeeded without an instance id", p->ops->name);
  /* The same token names the same purchase: an instance tagged for another
   * job means the token was reused, and handing it over would let two
   * attempts share (and later terminate) one machine. */
  if (rc == TW_OK && *out->job_id &&
      (strcmp(out->job_id, req->job_id) ||
       (*out->attempt_id && strcmp(out->attempt_id, req->attempt_id)))) {
    tw_err_detail(&c.e, "ClientTokenReused");
    rc = tw_err_set(&c.e, TW_E_CONFLICT,
                    "%s launch: token %s returned instance %s of job %s "
                    "attempt %s",
                    p->ops->name, req->client_token, out->id, out->job_id,
                    out->attempt_id);
  }
  rc = leave(&c, rc, err);
  if (rc) {
    if (rc != TW_E_CONFLICT)
      tw_instance_init(out);
    return rc;
  }
  complete_instance(p, out);
  if (!*out->region)
    TW_SET(out->region, o->region);
  if (!*out->zone)
    TW_SET(out->zone, o->zone);
  if (!*out->instance_type)
    TW_SET(out->instance_type, o->instance_type);
  if (out->market == TW_MARKET_ANY)
    out->market = o->market;
  if (!*out->client_token)
    TW_SET(out->client_token, req->client_token);
  if (!*out->job_id)
    TW_SET(out->job_id, req->job_id);
  if (!*out->attempt_id)
    TW_SET(out->attempt_id, req->attempt_id);
  if (!*out->tenant)
    TW_SET(out->tenant, req->tenant);
  return TW_OK;
}

/* The default describe: find the instance among the managed ones.  Good
 * enough for a provider whose list is cheap (a Slurm cluster). */
static enum tw_rc describe_by_list(struct tw_provider *p, const char *id,
                                   struct tw_instance *out,
                                   struct tw_err *err) {
  if (!p->ops->list_managed)
    return tw_err_set(err, TW_E_NOTFOUND, "%s: no instance %s", p->ops->name,
                      id);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = p->ops->list_managed(p, &l, err);
  if (rc)
    goto out;
  size_t i;
  for (i = 0; i < l.n && strcmp(l.items[i].id, id); i++)
    ;
  if (i < l.n)
    *out = l.items[i];
  else
    rc = tw_err_set(err, TW_E_NOTFOUND, "%s: no instance %s", p->ops->name, id);
out:
  tw_instance_list_release(&l);
  return rc;
}

enum tw_rc tw_provider_describe(struct tw_provider *p, const char *id,
                                struct tw_instance *out, struct tw_err *err) {
  tw_instance_init(out);
  if (!valid_id(id))
    return bad_arg(p, TW_POP_DESCRIBE, err, "instance id required");
  struct call c;
  enter(&c, p, TW_POP_DESCRIBE, id);
  enum tw_rc rc = p->ops->describe ? p->ops->describe(p, id, out, &c.e)
                                   : describe_by_list(p, id, out, &c.e);
  if (rc == TW_OK && strcmp(out->id, id))
    rc = tw_err_set(&c.e, TW_E_INTERNAL, "%s describe %s: answered for \"%s\"",
                    p->ops->name, id, out->id);
  rc = leave(&c, rc, err);
  if (rc) {
    tw_instance_init(out);
    return rc;
  }
  complete_instance(p, out);
  return TW_OK;
}

enum tw_rc tw_provider_describe_many(struct tw_provider *p,
                                     const char *const *ids, size_t n,
                                     struct tw_instance *out, enum tw_rc *rc,
                                     struct tw_err *err) {
  if (!n || n > TW_PROVIDER_DESCRIBE_MAX)
    return bad_arg(p, TW_POP_DESCRIBE_MANY, err, "1 to %d instance ids",
                   TW_PROVIDER_DESCRIBE_MAX);
  for (size_t i = 0; i < n; i++)
    if (!valid_id(ids[i]))
      return bad_arg(p, TW_POP_DESCRIBE_MANY, err, "instance id %zu required",
                     i + 1);
  enum tw_rc first = TW_OK;
  if (p->ops->version < 5 || !p->ops->describe_many) {
    for (size_t i = 0; i < n; i++) {
      rc[i] = tw_provider_describe(p, ids[i], &out[i], err);
      if (rc[i] && rc[i] != TW_E_NOTFOUND && !first)
        first = rc[i];
    }
    return first;
  }
  for (size_t i = 0; i < n; i++) {
    tw_instance_init(&out[i]);
    rc[i] = TW_E_INTERNAL;
  }
  struct call c;
  enter(&c, p, TW_POP_DESCRIBE_MANY, ids[0]);
  enum tw_rc all = p->ops->describe_many(p, ids, n, out, rc, &c.e);
  for (size_t i = 0; i < n; i++) {
    if (all)
      rc[i] = all;
    else if (rc[i] == TW_OK && strcmp(out[i].id, ids[i]))
      rc[i] = tw_err_set(&c.e, TW_E_INTERNAL,
                         "%s describe_many %s: answered for \"%s\"",
                         p->ops->name, ids[i], out[i].id);
    if (rc[i] && rc[i] != TW_E_NOTFOUND && !first)
      first = rc[i];
    if (rc[i])
      tw_instance_init(&out[i]);
    else
      complete_instance(p, &out[i]);
  }
  if (first && c.e.rc == TW_OK)
    tw_err_set(&c.e, first, "%s describe_many failed", p->ops->name);
  /* an id the provider does not know is an answer, not a failure */
  return leave(&c, first, err);
}

enum tw_rc tw_provider_terminate(struct tw_provider *p, const char *id,
                                 struct tw_err *err) {
  if (!valid_id(id))
    return bad_arg(p, TW_POP_TERMINATE, err, "instance id required");
  if (!p->ops->terminate)
    return bad_arg(p, TW_POP_TERMINATE, err, "not supported by this provider");
  struct call c;
  enter(&c, p, TW_POP_TERMINATE, id);
  enum tw_rc rc = p->ops->terminate(p, id, &c.e);
  return leave(&c, rc, err);
}

enum tw_rc tw_provider_list_managed(struct tw_provider *p,
                                    struct tw_instance_list *out,
                                    struct tw_err *err) {
  struct call c;
  size_t first = out->n;
  enter(&c, p, TW_POP_LIST_MANAGED, NULL);
  enum tw_rc rc =
      p->ops->list_managed ? p->ops->list_managed(p, out, &c.e) : TW_OK;
  if (rc) {
    /* A partial list would make the reconciler see orphans' absence. */
    out->n = first;
    return leave(&c, rc, err);
  }
  leave(&c, rc, err);
  size_t kept = first;
  for (size_t i = first; i < out->n; i++) {
    /* Terminated instances are history: an adapter whose API cannot leave
     * them out (Slurm's job list, until MinJobAge purges them) still
     * hands back only what lives. */
    if (!*out->items[i].id || out->items[i].state == TW_INST_TERMINATED)
      continue;
    if (kept != i)
      out->items[kept] = out->items[i];
    complete_instance(p, &out->items[kept]);
    kept++;
  }
  out->n = kept;
  return TW_OK;
}

enum tw_rc tw_provider_poll_events(struct tw_provider *p,
                                   struct tw_event_list *out,
                                   struct tw_err *err) {
  if (!p->ops->poll_events)
    return TW_OK;
  struct call c;
  size_t first = out->n;
  enter(&c, p, TW_POP_POLL_EVENTS, NULL);
  enum tw_rc rc = p->ops->poll_events(p, out, &c.e);
  if (rc) {
    out->n = first;
    return leave(&c, rc, err);
  }
  leave(&c, rc, err);
  size_t kept = first;
  for (size_t i = first; i < out->n; i++) {
    const struct tw_event *e = &out->items[i];
    if (!*e->instance_id ||
        (e->kind != TW_EVENT_INTERRUPTION && e->kind != TW_EVENT_REBALANCE))
      continue;
    if (kept != i)
      out->items[kept] = *e;
    kept++;
  }
  out->n = kept;
  return TW_OK;
}

enum tw_rc tw_provider_read_output(struct tw_provider *p, const char *id,
                                   int64_t offset, size_t max,
                                   struct tw_buf *out, bool *eof,
                                   struct tw_err *err) {
  *eof = false;
  if (p->ops->version < 2 || !p->ops->read_output)
    return tw_err_set(err, TW_E_NOTFOUND, "provider %s keeps no output",
                      p->account);
  if (!id || !*id || offset < 0)
    return tw_err_set(
        err, TW_E_INVALID,
        "read_output: an instance id and offset >= 0 are required");
  if (max > (1u << 20))
    max = 1u << 20;
  struct call c;
  size_t first = out->len;
  enter(&c, p, TW_POP_READ_OUTPUT, id);
  enum tw_rc rc = p->ops->read_output(p, id, offset, max, out, eof, &c.e);
  if (rc) {
    out->len = first;
    if (out->data)
      out->data[first] = '\0';
    return leave(&c, rc, err);
  }
  return leave(&c, rc, err);
}

/* The default find_by_token: the managed instance carrying the token.
 * A provider that reports no client token is matched on its attempt tag,
 * which the scheduler sets to the attempt's token (one instance per
 * attempt; a gang node's own token is then not found, and its launch is
 * sent again with that token, which the provider's idempotency makes
 * safe). */
static enum tw_rc find_by_list(struct tw_provider *p, const char *token,
                               struct tw_instance *out, struct tw_err *err) {
  if (!p->ops->list_managed)
    return tw_err_set(err, TW_E_NOTFOUND, "%s: no instance for token %s",
                      p->ops->name, token);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = p->ops->list_managed(p, &l, err);
  if (rc)
    goto out;
  const struct tw_instance *hit = NULL;
  for (size_t i = 0; i < l.n && !hit; i++)
    if (*l.items[i].id &&
        (!strcmp(l.items[i].client_token, token) ||
         (!*l.items[i].client_token && !strcmp(l.items[i].attempt_id, token))))
      hit = &l.items[i];
  if (hit)
    *out = *hit;
  else
    rc = tw_err_set(err, TW_E_NOTFOUND, "%s: no instance for token %s",
                    p->ops->name, token);
out:
  tw_instance_list_release(&l);
  return rc;
}

enum tw_rc tw_provider_find_by_token(struct tw_provider *p, const char *token,
                                     const char *region,
                                     struct tw_instance *out,
                                     struct tw_err *err) {
  tw_instance_init(out);
  if (!valid_token(token))
    return bad_arg(p, TW_POP_FIND_BY_TOKEN, err,
                   "client token (1..%d printable ASCII) required",
                   TW_MODEL_TOKEN_MAX - 1);
  struct call c;
  enter(&c, p, TW_POP_FIND_BY_TOKEN, token);
  enum tw_rc rc =
      p->ops->version >= 4 && p->ops->find_by_token
          ? p->ops->find_by_token(p, token, region ? region : "", out, &c.e)
          : find_by_list(p, token, out, &c.e);
  if (rc == TW_OK && !*out->id)
    rc = tw_err_set(&c.e, TW_E_INTERNAL,
                    "%s find_by_token %s: found without an instance id",
                    p->ops->name, token);
  /* A definite "none" is an answer, not a failure of the provider: it is
   * not logged as one. */
  if (rc == TW_E_NOTFOUND) {
    leave(&c, TW_OK, NULL);
    tw_instance_init(out);
    return tw_err_set(err, TW_E_NOTFOUND, "%s", c.e.msg);
  }
  rc = leave(&c, rc, err);
  if (rc) {
    tw_instance_init(out);
    return rc;
  }
  complete_instance(p, out);
  if (!*out->client_token)
    TW_SET(out->client_token, token);
  return TW_OK;
}

void tw_provider_stats(struct tw_provider *p, enum tw_provider_op op,
                       struct tw_provider_stats *out) {
  memset(out, 0, sizeof *out);
  if ((unsigned)op >= TW_POP_COUNT)
    return;
  pthread_mutex_lock(&p->stats_lock);
  *out = p->stats[op];
  pthread_mutex_unlock(&p->stats_lock);
}

/* ---- helpers for adapters ----------------------------------------------- */

static const char *const common_keys[] = {TW_PROVIDER_COMMON_KEYS, NULL};

static bool in_list(const char *key, const char *const *list) {
  for (; list && *list; list++)
    if (!strcmp(key, *list))
      return true;
  return false;
}

enum tw_rc tw_provider_cfg_check_keys(const struct tw_node *cfg,
                                      const char *const *keys,
                                      struct tw_err *err) {
  if (!cfg || cfg->kind == TW_NODE_NULL)
    return TW_OK;
  if (cfg->kind != TW_NODE_MAP)
    return tw_err_set(err, TW_E_INVALID, "provider: expected a mapping, got %s",
                      tw_node_type_name(cfg));
  for (size_t i = 0; i < cfg->n; i++) {
    const char *k = cfg->keys[i];
    if (in_list(k, keys) || in_list(k, common_keys))
      continue;
    /* every secret an adapter reads from `<base>_env` may also be a sealed
     * one, `<base>_secret` (tw_provider_cfg_secret) */
    size_t kl = strlen(k);
    if (kl > 7 && kl < 90 && !strcmp(k + kl - 7, "_secret")) {
      char env_key[96];
      snprintf(env_key, sizeof env_key, "%.*s_env", (int)(kl - 7), k);
      if (in_list(env_key, keys))
        continue;
    }
    const char *all[128];
    size_t n = 0;
    for (size_t j = 0; keys && keys[j] && n < 100; j++)
      all[n++] = keys[j];
    for (size_t j = 0; common_keys[j]; j++)
      all[n++] = common_keys[j];
    all[n] = NULL;
    const char *near = tw_closest(k, all);
    if (near)
      return tw_err_field(err, TW_E_INVALID, k,
                          "%s: unknown key; did you mean \"%s\"?", k, near);
    return tw_err_field(err, TW_E_INVALID, k, "%s: unknown key", k);
  }
  return TW_OK;
}

enum tw_rc tw_provider_cfg_str(const struct tw_node *cfg, const char *key,
                               const char *def, const char **out,
                               struct tw_err *err) {
  const struct tw_node *n = tw_node_get(cfg, key);
  *out = def;
  if (!n)
    return TW_OK;
  if (n->kind != TW_NODE_SCALAR)
    return tw_err_field(err, TW_E_INVALID, key, "%s: expected a string, got %s",
                        key, tw_node_type_name(n));
  *out = n->str;
  return TW_OK;
}

enum tw_rc tw_provider_cfg_int(const struct tw_node *cfg, const char *key,
                               int64_t min, int64_t max, int64_t def,
                               int64_t *out, struct tw_err *err) {
  const struct tw_node *n = tw_node_get(cfg, key);
  *out = def;
  if (!n)
    return TW_OK;
  int64_t v;
  if (!tw_node_as_int(n, &v) || v < min || v > max)
    return tw_err_field(
        err, TW_E_INVALID, key, "%s: expected an integer in %lld..%lld, got %s",
        key, (long long)min, (long long)max,
        n->kind == TW_NODE_SCALAR ? n->str : tw_node_type_name(n));
  *out = v;
  return TW_OK;
}

enum tw_rc tw_provider_cfg_strdup(const struct tw_node *cfg, const char *key,
                                  const char *def, char **out,
                                  struct tw_err *err) {
  const char *v;
  enum tw_rc rc = tw_provider_cfg_str(cfg, key, def, &v, err);
  if (rc)
    return rc;
  *out = tw_strdup(v);
  return TW_OK;
}

void tw_provider_strv_free(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

enum tw_rc tw_provider_cfg_list(const struct tw_node *cfg, const char *key,
                                char ***out, size_t *n, struct tw_err *err) {
  const struct tw_node *v = tw_node_get(cfg, key);
  *out = NULL;
  *n = 0;
  if (!v)
    return TW_OK;
  if (v->kind == TW_NODE_SCALAR) {
    *out = tw_calloc(1, sizeof **out);
    (*out)[0] = tw_strdup(v->str);
    *n = 1;
    return TW_OK;
  }
  if (v->kind != TW_NODE_SEQ)
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: expected a list of strings, got %s", key,
                        tw_node_type_name(v));
  *out = tw_calloc(v->n ? v->n : 1, sizeof **out);
  for (size_t i = 0; i < v->n; i++) {
    if (v->items[i]->kind != TW_NODE_SCALAR || !*v->items[i]->str) {
      tw_provider_strv_free(*out, *n);
      *out = NULL;
      *n = 0;
      return tw_err_field(err, TW_E_INVALID, key,
                          "%s[%zu]: expected a non-empty string, got %s", key,
                          i, tw_node_type_name(v->items[i]));
    }
    (*out)[(*n)++] = tw_strdup(v->items[i]->str);
  }
  return TW_OK;
}

enum tw_rc tw_provider_cfg_regions(const struct tw_node *cfg, char ***out,
                                   size_t *n, struct tw_err *err) {
  enum tw_rc rc;
  if ((rc = tw_provider_cfg_list(cfg, "regions", out, n, err)))
    return rc;
  if (!*n) {
    tw_provider_strv_free(*out, *n);
    if ((rc = tw_provider_cfg_list(cfg, "region", out, n, err)))
      return rc;
  }
  if (!*n)
    return tw_err_field(err, TW_E_INVALID, "regions",
                        "regions: at least one region is required");
  return TW_OK;
}

bool tw_provider_strv_has(char *const *v, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i], s))
      return true;
  return false;
}

enum tw_rc tw_provider_cfg_http(const struct tw_node *cfg,
                                const struct tw_provider_http_limits *lim,
                                long *timeout_ms, long *connect_timeout_ms,
                                struct tw_http_opts *opts, struct tw_err *err) {
  int64_t v, attempts, base, cap;
  enum tw_rc rc;
  if ((rc = tw_provider_cfg_int(cfg, "timeout_ms", 100, 600000,
                                lim->timeout_def, &v, err)))
    return rc;
  *timeout_ms = (long)v;
  if ((rc = tw_provider_cfg_int(cfg, "connect_timeout_ms", lim->connect_min,
                                60000, 5000, &v, err)))
    return rc;
  *connect_timeout_ms = (long)v;
  if ((rc = tw_provider_cfg_int(cfg, "max_attempts", 1, lim->attempts_max,
                                lim->attempts_def, &attempts, err)) ||
      (rc = tw_provider_cfg_int(cfg, "backoff_base_ms", lim->backoff_min, 60000,
                                200, &base, err)) ||
      (rc = tw_provider_cfg_int(cfg, "backoff_cap_ms", lim->backoff_min, 600000,
                                lim->backoff_cap_def, &cap, err)))
    return rc;
  opts->max_attempts = (unsigned)attempts;
  opts->backoff_base_ms = base;
  opts->backoff_cap_ms = cap;
  return TW_OK;
}

static char *read_first_line(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char buf[4096];
  char *line = fgets(buf, sizeof buf, f);
  fclose(f);
  if (!line)
    return NULL;
  buf[strcspn(buf, "\r\n")] = '\0';
  return tw_strdup(buf);
}

enum tw_rc tw_provider_cfg_secret(const struct tw_provider *p,
                                  const struct tw_node *cfg, const char *base,
                                  const char *def_env, bool required,
                                  char **out, struct tw_err *err) {
  tw_secret_resolver_fn resolve = p ? p->resolve_secret : NULL;
  char key_env[96], key_file[96], key_sealed[96];
  const char *env = NULL, *file = NULL, *sealed = NULL;
  enum tw_rc rc;
  *out = NULL;
  snprintf(key_env, sizeof key_env, "%s_env", base);
  snprintf(key_file, sizeof key_file, "%s_file", base);
  snprintf(key_sealed, sizeof key_sealed, "%s_secret", base);
  if (tw_node_get(cfg, base))
    return tw_err_field(err, TW_E_INVALID, base,
                        "%s: secrets are not written inline; use %s, %s or %s",
                        base, key_sealed, key_env, key_file);
  if ((rc = tw_provider_cfg_str(cfg, key_env, NULL, &env, err)) ||
      (rc = tw_provider_cfg_str(cfg, key_file, NULL, &file, err)) ||
      (rc = tw_provider_cfg_str(cfg, key_sealed, NULL, &sealed, err)))
    return rc;
  if ((env != NULL) + (file != NULL) + (sealed != NULL) > 1)
    return tw_err_field(err, TW_E_INVALID, key_env,
                        "%s: give one of %s, %s and %s", base, key_sealed,
                        key_env, key_file);
  if (sealed) {
    if (!resolve)
      return tw_err_field(
          err, TW_E_AUTH, key_sealed,
          "%s: no sealed secrets here (the daemon needs secrets.key_file "
          "or secrets.key_env)",
          key_sealed);
    struct tw_err serr = {0};
    if (resolve(p->resolve_ctx, sealed, out, &serr) || !*out || !**out) {
      free(*out);
      *out = NULL;
      /* the resolver's text names the secret, never its value */
      return tw_err_field(err, TW_E_AUTH, key_sealed,
                          "%s: cannot open sealed secret %s: %s", key_sealed,
                          sealed, serr.msg);
    }
    return TW_OK;
  }
  if (file) {
    *out = read_first_line(file);
    if (!*out || !**out) {
      free(*out);
      *out = NULL;
      return tw_err_field(err, TW_E_AUTH, key_file,
                          "%s: cannot read a value from %s", key_file, file);
    }
    return TW_OK;
  }
  if (!env)
    env = def_env;
  const char *v = env ? getenv(env) : NULL;
  if (v && *v) {
    *out = tw_strdup(v);
    return TW_OK;
  }
  if (!required)
    return TW_OK;
  if (env)
    return tw_err_field(err, TW_E_AUTH, key_env,
                        "%s: environment variable %s is not set", base, env);
  return tw_err_field(err, TW_E_AUTH, key_env, "%s: required (%s or %s)", base,
                      key_env, key_file);
}

enum tw_rc tw_provider_usd_to_uusd(const char *s, int64_t *out,
                                   struct tw_err *err) {
  /* broker/base/units.h parses and rounds; a price must also be one an
   * offer can carry */
  int64_t v;
  enum tw_rc rc = tw_money_parse(s, &v, NULL, NULL);
  if (rc == TW_E_TOOBIG || (rc == TW_OK && v > TW_MODEL_PRICE_MAX_UUSD))
    return tw_err_set(err, TW_E_INVALID, "price \"%.32s\": too large", s);
  if (rc)
    return tw_err_set(err, TW_E_INVALID,
                      "price \"%.32s\": expected a decimal USD amount",
                      s ? s : "");
  if (v < 0)
    return tw_err_set(err, TW_E_INVALID, "price \"%.32s\": negative", s);
  *out = v;
  return TW_OK;
}
