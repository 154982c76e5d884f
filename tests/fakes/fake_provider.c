/* fake_provider.c - the scripted in-process provider (fake_provider.h). */
#include "tests/fakes/fake_provider.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"

struct fault {
  enum tw_rc rc;
  char detail[64];
  int times; /* < 0: until cleared */
};

struct offer_fault {
  char offer_id[TW_MODEL_ID_MAX];
  enum tw_rc rc;
  char detail[64];
};

struct inst {
  struct tw_instance i;
  int64_t interrupt_notice_ms; /* 0: none */
  int64_t interrupt_deadline_ms;
  int64_t rebalance_ms; /* 0: none */
  char output[2048];    /* what the workload printed so far */
  bool output_done;
  char user_data[8192]; /* the first launch's, truncated */
  bool user_data_differed; /* a launch resent with its token changed it */
};

struct tw_fake {
  pthread_mutex_t lock;
  struct tw_provider *p;
  struct tw_offer_list offers;
  struct inst *inst;
  size_t n_inst, cap_inst;
  struct fault faults[TW_POP_COUNT];
  struct fault lost[TW_POP_COUNT]; /* done, then answered with an error */
  struct offer_fault *offer_faults;
  size_t n_offer_faults;
  size_t calls[TW_POP_COUNT];
  void (*on_launch)(void *ctx);
  void *on_launch_ctx;
  /* tw_fake_hold: calls of a held op wait on `released` */
  pthread_mutex_t hold_mu;
  pthread_cond_t released;
  bool hold[TW_POP_COUNT];
  size_t held[TW_POP_COUNT];
};

/* A call of op waits here while op is held (tw_fake_hold). */
static void hold_wait(struct tw_fake *f, enum tw_provider_op op) {
  pthread_mutex_lock(&f->hold_mu);
  if (f->hold[op]) {
    f->held[op]++;
    while (f->hold[op])
      pthread_cond_wait(&f->released, &f->hold_mu);
    f->held[op]--;
  }
  pthread_mutex_unlock(&f->hold_mu);
}

void tw_fake_hold(struct tw_fake *f, enum tw_provider_op op, bool on) {
  pthread_mutex_lock(&f->hold_mu);
  f->hold[op] = on;
  if (!on)
    pthread_cond_broadcast(&f->released);
  pthread_mutex_unlock(&f->hold_mu);
}

size_t tw_fake_held(struct tw_fake *f, enum tw_provider_op op) {
  pthread_mutex_lock(&f->hold_mu);
  size_t n = f->held[op];
  pthread_mutex_unlock(&f->hold_mu);
  return n;
}

struct tw_fake *tw_fake_of(struct tw_provider *p) {
  return p->ctx;
}

static enum tw_rc fake_init(struct tw_provider *p, const struct tw_node *cfg,
                            struct tw_err *err) {
  enum tw_rc rc =
      tw_provider_cfg_check_keys(cfg, (const char *const[]){NULL}, err);
  if (rc)
    return rc;
  struct tw_fake *f = tw_calloc(1, sizeof *f);
  pthread_mutex_init(&f->lock, NULL);
  pthread_mutex_init(&f->hold_mu, NULL);
  pthread_cond_init(&f->released, NULL);
  tw_offer_list_init(&f->offers);
  f->p = p;
  p->ctx = f;
  return TW_OK;
}

static void fake_free(struct tw_provider *p) {
  struct tw_fake *f = p->ctx;
  if (!f)
    return;
  tw_offer_list_release(&f->offers);
  free(f->inst);
  free(f->offer_faults);
  pthread_mutex_destroy(&f->lock);
  pthread_mutex_destroy(&f->hold_mu);
  pthread_cond_destroy(&f->released);
  free(f);
}

/* Charges one firing of op's fault; true (with err set) when it fires.
 * Called with the lock held. */
static bool fire(struct tw_fake *f, enum tw_provider_op op,
                 struct tw_err *err) {
  f->calls[op]++;
  struct fault *ft = &f->faults[op];
  if (ft->times == 0)
    return false;
  if (ft->times > 0)
    ft->times--;
  tw_err_detail(err, ft->detail);
  tw_err_set(err, ft->rc, "fake %s: injected %s", tw_provider_op_str(op),
             tw_rc_str(ft->rc));
  return true;
}

/* Charges one firing of op's lost answer; true (with err set) when the
 * call's result is to be replaced by the error.  Lock held. */
static bool lose(struct tw_fake *f, enum tw_provider_op op,
                 struct tw_err *err) {
  struct fault *ft = &f->lost[op];
  if (ft->times == 0)
    return false;
  if (ft->times > 0)
    ft->times--;
  tw_err_detail(err, ft->detail);
  tw_err_set(err, ft->rc, "fake %s: answer lost (%s)", tw_provider_op_str(op),
             tw_rc_str(ft->rc));
  return true;
}

/* Brings an instance up to date with the clock: pending turns running,
 * an interruption past its deadline terminates it. */
static void advance(struct tw_fake *f, struct inst *in) {
  int64_t now = tw_clock_now_ms(f->p->clock);
  if (in->interrupt_deadline_ms && now >= in->interrupt_deadline_ms &&
      !tw_instance_state_gone(in->i.state)) {
    in->i.state = TW_INST_TERMINATED;
    TW_SET(in->i.state_reason, "Server.SpotInstanceTermination");
  } else if (in->i.state == TW_INST_PENDING) {
    in->i.state = TW_INST_RUNNING;
  }
  TW_SET(in->i.provider_state, tw_instance_state_str(in->i.state));
}

static struct inst *find(struct tw_fake *f, const char *id) {
  for (size_t i = 0; i < f->n_inst; i++)
    if (!strcmp(f->inst[i].i.id, id))
      return &f->inst[i];
  return NULL;
}

static enum tw_rc fake_list_offers(struct tw_provider *p,
                                   struct tw_offer_list *out,
                                   struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  pthread_mutex_lock(&f->lock);
  enum tw_rc rc = TW_OK;
  if (fire(f, TW_POP_LIST_OFFERS, err))
    rc = err ? err->rc : TW_E_INTERNAL;
  else
    for (size_t i = 0; i < f->offers.n; i++)
      tw_offer_list_push(out, &f->offers.items[i]);
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_launch(struct tw_provider *p,
                              const struct tw_launch *req,
                              struct tw_instance *out, struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  hold_wait(f, TW_POP_LAUNCH);
  pthread_mutex_lock(&f->lock);
  void (*hook)(void *) = f->on_launch;
  void *hook_ctx = f->on_launch_ctx;
  pthread_mutex_unlock(&f->lock);
  if (hook)
    hook(hook_ctx);
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_LAUNCH, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
    goto out;
  }
  /* As EC2: a known token returns its instance, whatever else changed. */
  for (size_t i = 0; i < f->n_inst; i++)
    if (!strcmp(f->inst[i].i.client_token, req->client_token)) {
      *out = f->inst[i].i;
      if (strncmp(f->inst[i].user_data, req->user_data ? req->user_data : "",
                  sizeof f->inst[i].user_data - 1))
        f->inst[i].user_data_differed = true;
      if (lose(f, TW_POP_LAUNCH, err))
        rc = err ? err->rc : TW_E_INTERNAL;
      goto out;
    }
  for (size_t i = 0; i < f->n_offer_faults; i++)
    if (!strcmp(f->offer_faults[i].offer_id, req->offer->id)) {
      tw_err_detail(err, f->offer_faults[i].detail);
      rc = tw_err_set(err, f->offer_faults[i].rc,
                      "fake launch: offer %s: injected %s", req->offer->id,
                      tw_rc_str(f->offer_faults[i].rc));
      goto out;
    }
  if (f->n_inst == f->cap_inst) {
    f->cap_inst = f->cap_inst ? f->cap_inst * 2 : 16;
    f->inst = tw_realloc(f->inst, f->cap_inst * sizeof *f->inst);
  }
  struct inst *in = &f->inst[f->n_inst++];
  memset(in, 0, sizeof *in);
  struct tw_instance *i = &in->i;
  snprintf(i->id, sizeof i->id, "%s-%zu", p->account, f->n_inst);
  TW_SET(i->region, req->offer->region);
  TW_SET(i->zone, req->offer->zone);
  TW_SET(i->instance_type, req->offer->instance_type);
  i->arch = req->offer->arch;
  i->market = req->offer->market;
  i->state = TW_INST_PENDING;
  TW_SET(i->provider_state, "pending");
  TW_SET(i->client_token, req->client_token);
  TW_SET(i->job_id, req->job_id);
  TW_SET(i->attempt_id, req->attempt_id);
  TW_SET(i->tenant, req->tenant);
  snprintf(in->user_data, sizeof in->user_data, "%s",
           req->user_data ? req->user_data : "");
  i->launched_ms = tw_clock_now_ms(p->clock);
  *out = *i;
  if (lose(f, TW_POP_LAUNCH, err))
    rc = err ? err->rc : TW_E_INTERNAL;
out:
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_describe(struct tw_provider *p, const char *id,
                                struct tw_instance *out, struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  hold_wait(f, TW_POP_DESCRIBE);
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_DESCRIBE, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
  } else {
    struct inst *in = find(f, id);
    if (!in) {
      tw_err_detail(err, "NotFound");
      rc = tw_err_set(err, TW_E_NOTFOUND, "fake: no instance %s", id);
    } else {
      advance(f, in);
      *out = in->i;
    }
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_terminate(struct tw_provider *p, const char *id,
                                 struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  hold_wait(f, TW_POP_TERMINATE);
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_TERMINATE, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
  } else {
    struct inst *in = find(f, id);
    if (!in) {
      tw_err_detail(err, "NotFound");
      rc = tw_err_set(err, TW_E_NOTFOUND, "fake: no instance %s", id);
    } else {
      in->i.state = TW_INST_TERMINATED;
      TW_SET(in->i.provider_state, "terminated");
      TW_SET(in->i.state_reason, "Client.UserInitiatedShutdown");
      if (lose(f, TW_POP_TERMINATE, err))
        rc = err ? err->rc : TW_E_INTERNAL;
    }
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_find_by_token(struct tw_provider *p, const char *token,
                                     const char *region,
                                     struct tw_instance *out,
                                     struct tw_err *err) {
  (void)region;
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  hold_wait(f, TW_POP_FIND_BY_TOKEN);
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_FIND_BY_TOKEN, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
  } else {
    struct inst *in = NULL;
    for (size_t i = 0; i < f->n_inst && !in; i++)
      if (!strcmp(f->inst[i].i.client_token, token))
        in = &f->inst[i];
    if (!in) {
      rc = tw_err_set(err, TW_E_NOTFOUND, "fake: no instance for token %s",
                      token);
    } else {
      advance(f, in);
      *out = in->i;
    }
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_list_managed(struct tw_provider *p,
                                    struct tw_instance_list *out,
                                    struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_LIST_MANAGED, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
  } else {
    for (size_t i = 0; i < f->n_inst; i++) {
      advance(f, &f->inst[i]);
      tw_instance_list_push(out, &f->inst[i].i);
    }
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_poll_events(struct tw_provider *p,
                                   struct tw_event_list *out,
                                   struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  enum tw_rc rc = TW_OK;
  pthread_mutex_lock(&f->lock);
  if (fire(f, TW_POP_POLL_EVENTS, err)) {
    rc = err ? err->rc : TW_E_INTERNAL;
  } else {
    for (size_t i = 0; i < f->n_inst; i++) {
      struct inst *in = &f->inst[i];
      advance(f, in);
      if (tw_instance_state_gone(in->i.state))
        continue;
      if (in->interrupt_notice_ms) {
        struct tw_event *e = tw_event_list_add(out);
        e->kind = TW_EVENT_INTERRUPTION;
        TW_SET(e->instance_id, in->i.id);
        TW_SET(e->action, "terminate");
        e->noticed_ms = in->interrupt_notice_ms;
        e->deadline_ms = in->interrupt_deadline_ms;
      }
      if (in->rebalance_ms) {
        struct tw_event *e = tw_event_list_add(out);
        e->kind = TW_EVENT_REBALANCE;
        TW_SET(e->instance_id, in->i.id);
        e->noticed_ms = in->rebalance_ms;
      }
    }
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

static enum tw_rc fake_read_output(struct tw_provider *p, const char *id,
                                   int64_t offset, size_t max,
                                   struct tw_buf *out, bool *eof,
                                   struct tw_err *err) {
  struct tw_fake *f = p->ctx;
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (!in) {
    pthread_mutex_unlock(&f->lock);
    return tw_err_set(err, TW_E_NOTFOUND, "fake: no instance %s", id);
  }
  size_t len = strlen(in->output), got = 0;
  if ((size_t)offset < len) {
    got = len - (size_t)offset;
    if (got > max)
      got = max;
    tw_buf_add(out, in->output + offset, got);
  }
  *eof = in->output_done && (size_t)offset + got >= len;
  pthread_mutex_unlock(&f->lock);
  return TW_OK;
}

/* The fake publishes no price list and no notice endpoint: tests set
 * prices on their offers and notices through tw_fake_notice(). */
static const struct tw_provider_info fake_info = {
    .billing = {.kind = TW_BILLING_FROM_CONFIG},
    .notice_url = "",
    .notice_signal = "",
    .focus_provider = "Fake",
    .focus_compute_service = "Fake Compute",
    .focus_network_service = "Data Transfer",
    .catalog_zone_ids = false,
    .catalog_risk_feed = false,
    .arch_of_type = NULL,
    .type_accels = NULL};

const struct tw_provider_ops tw_provider_fake = {
    .name = "fake",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports =
        TW_PROV_SPOT | TW_PROV_EVENTS | TW_PROV_ZONES | TW_PROV_CLIENT_TOKEN,
    .init = fake_init,
    .list_offers = fake_list_offers,
    .launch = fake_launch,
    .describe = fake_describe,
    .terminate = fake_terminate,
    .list_managed = fake_list_managed,
    .poll_events = fake_poll_events,
    .free = fake_free,
    .read_output = fake_read_output,
    .info = &fake_info,
    .find_by_token = fake_find_by_token,
};

/* ---- script ------------------------------------------------------------- */

void tw_fake_add_offer(struct tw_fake *f, const struct tw_offer *o) {
  pthread_mutex_lock(&f->lock);
  tw_offer_list_push(&f->offers, o);
  pthread_mutex_unlock(&f->lock);
}

void tw_fake_fail(struct tw_fake *f, enum tw_provider_op op, enum tw_rc rc,
                  const char *detail, int times) {
  if ((unsigned)op >= TW_POP_COUNT)
    return;
  pthread_mutex_lock(&f->lock);
  f->faults[op].rc = rc;
  f->faults[op].times = times;
  TW_SET(f->faults[op].detail, detail ? detail : "");
  pthread_mutex_unlock(&f->lock);
}

void tw_fake_lose(struct tw_fake *f, enum tw_provider_op op, enum tw_rc rc,
                  const char *detail, int times) {
  if ((unsigned)op >= TW_POP_COUNT)
    return;
  pthread_mutex_lock(&f->lock);
  f->lost[op].rc = rc;
  f->lost[op].times = times;
  TW_SET(f->lost[op].detail, detail ? detail : "");
  pthread_mutex_unlock(&f->lock);
}

void tw_fake_on_launch(struct tw_fake *f, void (*fn)(void *ctx), void *ctx) {
  pthread_mutex_lock(&f->lock);
  f->on_launch = fn;
  f->on_launch_ctx = ctx;
  pthread_mutex_unlock(&f->lock);
}

void tw_fake_fail_offer(struct tw_fake *f, const char *offer_id, enum tw_rc rc,
                        const char *detail) {
  pthread_mutex_lock(&f->lock);
  f->offer_faults = tw_realloc(f->offer_faults, (f->n_offer_faults + 1) *
                                                    sizeof *f->offer_faults);
  struct offer_fault *of = &f->offer_faults[f->n_offer_faults++];
  memset(of, 0, sizeof *of);
  TW_SET(of->offer_id, offer_id);
  of->rc = rc;
  TW_SET(of->detail, detail ? detail : "");
  pthread_mutex_unlock(&f->lock);
}

void tw_fake_clear_faults(struct tw_fake *f) {
  pthread_mutex_lock(&f->lock);
  memset(f->faults, 0, sizeof f->faults);
  memset(f->lost, 0, sizeof f->lost);
  f->n_offer_faults = 0;
  pthread_mutex_unlock(&f->lock);
}

enum tw_rc tw_fake_set_state(struct tw_fake *f, const char *id,
                             enum tw_instance_state state) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in) {
    in->i.state = state;
    TW_SET(in->i.provider_state, tw_instance_state_str(state));
  }
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

enum tw_rc tw_fake_output(struct tw_fake *f, const char *id, const char *text,
                          bool done) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in) {
    size_t have = strlen(in->output);
    snprintf(in->output + have, sizeof in->output - have, "%s", text);
    in->output_done = done;
  }
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

enum tw_rc tw_fake_finish(struct tw_fake *f, const char *id, int exit_code) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in) {
    in->i.state = TW_INST_TERMINATED;
    TW_SET(in->i.provider_state, "COMPLETED");
    in->i.finished = true;
    in->i.exit_code = exit_code;
  }
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

enum tw_rc tw_fake_interrupt(struct tw_fake *f, const char *id,
                             int64_t lead_ms) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in) {
    int64_t now = tw_clock_now_ms(f->p->clock);
    in->interrupt_notice_ms = now;
    in->interrupt_deadline_ms = now + lead_ms;
  }
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

enum tw_rc tw_fake_rebalance(struct tw_fake *f, const char *id) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in)
    in->rebalance_ms = tw_clock_now_ms(f->p->clock);
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

size_t tw_fake_instances_created(struct tw_fake *f) {
  pthread_mutex_lock(&f->lock);
  size_t n = f->n_inst;
  pthread_mutex_unlock(&f->lock);
  return n;
}

size_t tw_fake_calls(struct tw_fake *f, enum tw_provider_op op) {
  if ((unsigned)op >= TW_POP_COUNT)
    return 0;
  pthread_mutex_lock(&f->lock);
  size_t n = f->calls[op];
  pthread_mutex_unlock(&f->lock);
  return n;
}

size_t tw_fake_live_for_job(struct tw_fake *f, const char *job_id) {
  pthread_mutex_lock(&f->lock);
  size_t n = 0;
  for (size_t i = 0; i < f->n_inst; i++)
    n += !strcmp(f->inst[i].i.job_id, job_id) &&
         !tw_instance_state_gone(f->inst[i].i.state);
  pthread_mutex_unlock(&f->lock);
  return n;
}

enum tw_rc tw_fake_user_data(struct tw_fake *f, const char *id, char *out,
                             size_t cap, bool *differed) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in) {
    snprintf(out, cap, "%s", in->user_data);
    if (differed)
      *differed = in->user_data_differed;
  }
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}

enum tw_rc tw_fake_get(struct tw_fake *f, const char *id,
                       struct tw_instance *out) {
  pthread_mutex_lock(&f->lock);
  struct inst *in = find(f, id);
  if (in)
    *out = in->i;
  pthread_mutex_unlock(&f->lock);
  return in ? TW_OK : TW_E_NOTFOUND;
}
