/* agent.c - the agent key, tokens, bootstraps and reports (agent.h). */
#include "broker/sched/agent.h"

#include <errno.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/hex.h"
#include "broker/base/log.h"
#include "broker/base/trace.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_obs.h"
#include "broker/sched/checkpoint.h"
#include "broker/tenancy/secrets.h"

/* The nodes of one gang attempt that registered, and their addresses:
 * what each node is told once all are known.  Kept in memory: a node
 * still waiting registers again after a broker restart. */
struct gang {
  int64_t attempt_id;
  int nodes, known;
  char (*ips)[48];
  struct gang *next;
};

/* What the broker last heard from an attempt's agent: heartbeats that
 * change nothing but the time are kept here and stored in batches
 * (beats_flush), at most BEATS_FLUSH_MS (a quarter of the heartbeat
 * timeout, when less) behind. */
struct beat {
  int64_t attempt_id;
  int64_t seen_ms;   /* the last report heard */
  int64_t stored_ms; /* what the store has */
  char phase[16];    /* the phase the store has */
  struct beat *next;
};
#define BEATS_FLUSH_MS 30000

struct tw_agent {
  struct tw_store *store;
  struct tw_clock *clock;
  unsigned char key[32];
  bool preinstalled;
  char *agent_path;
  char *binary_path; /* NULL: none served */
  char binary_sha[65];
  char *url;
  char *ca_pem;
  int64_t heartbeat_s, timeout_s, max_log, grace_s;
  void (*wake)(void *ctx);
  void *wake_ctx;
  pthread_mutex_t gang_mu;
  struct gang *gangs;
  atomic_uint_fast64_t news; /* reports that wake the scheduler, so far */
  pthread_mutex_t beat_mu; /* guards the beats */
  struct beat **beats;     /* by attempt id, n_buckets chains */
  size_t n_buckets, n_beats;
  int64_t beats_flushed_ms, flush_ms;
  int64_t since_ms; /* when this broker began hearing agents */
  struct tw_tracer *tracer;
  struct tw_secrets *secrets; /* borrowed: the jobs' sealed variables */
};

static void beats_flush(struct tw_agent *a, int64_t now, bool force);

/* ---- pure ---------------------------------------------------------------- */

static void hex(const unsigned char *b, size_t n, char *out) {
  static const char H[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = H[b[i] >> 4];
    out[2 * i + 1] = H[b[i] & 15];
  }
  out[2 * n] = '\0';
}

void tw_agent_token_derive(const unsigned char key[32],
                           const char *client_token,
                           char out[TW_AGENT_TOKEN_LEN + 1]) {
  unsigned char mac[32];
  unsigned int len = sizeof mac;
  HMAC(EVP_sha256(), key, 32, (const unsigned char *)client_token,
       strlen(client_token), mac, &len);
  memcpy(out, "twa_", 4);
  hex(mac, 32, out + 4);
  OPENSSL_cleanse(mac, sizeof mac);
}

void tw_agent_token_hash(const char *token, char out[65]) {
  unsigned char md[32];
  unsigned int len = sizeof md;
  EVP_Digest(token, strlen(token), md, &len, EVP_sha256(), NULL);
  hex(md, 32, out);
}

bool tw_agent_token_shape(const char *t) {
  if (!t || strlen(t) != TW_AGENT_TOKEN_LEN || strncmp(t, "twa_", 4))
    return false;
  for (const char *p = t + 4; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

static const char *cloud_word(const char *c) {
  if (c && (!strcmp(c, "aws") || !strcmp(c, "azure") || !strcmp(c, "alibaba")))
    return c;
  return "local";
}

void tw_agent_bootstrap(const struct tw_agent_boot *b, struct tw_buf *out) {
  const char *ca = b->ca_pem && *b->ca_pem ? " --ca ca.pem" : "";
  tw_buf_printf(out,
                "#!/bin/sh\n"
                "# tradewind bootstrap: job %s attempt %d\n"
                "set -eu\n"
                "dir=\"${TRADEWIND_AGENT_DIR:-/var/lib/tradewind/%s}\"\n"
                "mkdir -p \"$dir\" && chmod 700 \"$dir\" && cd \"$dir\"\n"
                "umask 077\n"
                "printf '%%s' '%s' > token\n",
                b->job_id, b->attempt_n, b->client_token, b->token);
  if (*ca) {
    tw_buf_adds(out, "cat > ca.pem <<'TW_CA'\n");
    tw_buf_adds(out, b->ca_pem);
    if (b->ca_pem[strlen(b->ca_pem) - 1] != '\n')
      tw_buf_addc(out, '\n');
    tw_buf_adds(out, "TW_CA\n");
  }
  const char *agent = "./tradewind-agent";
  if (!b->preinstalled) {
    tw_buf_printf(out,
                  "curl -fsS --retry 10 --retry-all-errors%s \\\n"
                  "  -H \"Authorization: Bearer $(cat token)\" \\\n"
                  "  -o tradewind-agent \"%s/v1/agent/binary\"\n"
                  "echo \"%s  tradewind-agent\" | sha256sum -c - >/dev/null\n"
                  "chmod 700 tradewind-agent\n",
                  *ca ? " --cacert ca.pem" : "", b->broker_url,
                  b->binary_sha256 ? b->binary_sha256 : "");
  } else {
    agent = b->agent_path && *b->agent_path ? b->agent_path : "tradewind-agent";
  }
  tw_buf_printf(out,
                "exec %s%s%s --broker \"%s\" --attempt \"%s\" \\\n"
                "  --token-file token%s --cloud %s \\\n",
                b->preinstalled ? "'" : "", agent, b->preinstalled ? "'" : "",
                b->broker_url, b->client_token, ca, cloud_word(b->cloud));
  if (b->has_rank)
    tw_buf_printf(out, "  --node-rank %d \\\n", b->node_rank);
  tw_buf_adds(out, "  --dir \"$dir\" >agent.log 2>&1\n");
}

/* A short span of the job's trace for what its agent reported; nothing
 * when the job is untraced or tracing is off. */
static void agent_span(struct tw_agent *a, const char *job_id,
                       const char *name, const char *k1, const char *v1,
                       const char *k2, const char *v2) {
  if (!a->tracer)
    return;
  char tp[64];
  struct tw_err err = {0};
  struct tw_trace_ctx ctx;
  if (tw_store_job_trace(a->store, job_id, tp, sizeof tp, &err) ||
      !tw_traceparent_parse(tp, &ctx))
    return;
  struct tw_span *sp = tw_malloc(sizeof *sp);
  tw_span_start(a->tracer, sp, name, TW_SPAN_SERVER, &ctx);
  tw_span_attr_str(sp, "tradewind.job_id", job_id);
  tw_span_attr_str(sp, k1, v1 ? v1 : "");
  tw_span_attr_str(sp, k2, v2 ? v2 : "");
  tw_span_end(sp);
  free(sp);
}

void tw_agent_register_answer(const struct tw_agent_job *j,
                              struct tw_buf *out) {
  const struct tw_job_spec *sp = j->spec;
  bool ckpt = sp->checkpoint_uri || sp->checkpoint_interval_s;
  tw_buf_adds(out, "{\"job_id\":");
  tw_buf_json_str(out, j->job_id);
  tw_buf_printf(out, ",\"attempt\":%d,\"setup\":", j->attempt_n);
  tw_buf_json_str(out, sp->setup ? sp->setup : "");
  tw_buf_adds(out, ",\"run\":");
  tw_buf_json_str(out, sp->run ? sp->run : "");
  /* the working directory to fetch (GET .../workdir) and unpack before
   * setup; 64 hex digits, checked by the agent */
  if (sp->workdir)
    tw_buf_printf(out, ",\"workdir\":{\"sha256\":\"%s\"}", sp->workdir + 7);
  tw_buf_adds(out, ",\"env\":{");
  /* the spec's own first; the broker's variables win over a spec that
   * names them too (they are what the contract promises) */
  static const char *const OURS[] = {"TRADEWIND_JOB_ID",
                                     "TRADEWIND_ATTEMPT",
                                     "TRADEWIND_CHECKPOINT_URI",
                                     "TRADEWIND_CHECKPOINT_INTERVAL_S",
                                     "TRADEWIND_RESUME_S",
                                     "TW_NODE_RANK",
                                     "TW_NUM_NODES",
                                     "TW_NODE_IPS",
                                     "TW_HEAD_IP",
                                     "SKYPILOT_NODE_RANK",
                                     "SKYPILOT_NUM_NODES",
                                     "SKYPILOT_NODE_IPS",
                                     "SKYPILOT_NUM_GPUS_PER_NODE",
                                     NULL};
  bool first = true;
  for (size_t i = 0; i < sp->n_env; i++) {
    bool ours = j->traceparent && !strcmp(sp->env[i].key, "TRACEPARENT");
    for (size_t k = 0; OURS[k] && !ours; k++)
      ours = !strcmp(sp->env[i].key, OURS[k]);
    if (ours)
      continue;
    if (!first)
      tw_buf_addc(out, ',');
    first = false;
    tw_buf_json_str(out, sp->env[i].key);
    tw_buf_addc(out, ':');
    tw_buf_json_str(out, sp->env[i].value ? sp->env[i].value : "");
  }
  /* the sealed ones, opened for this answer only */
  for (size_t i = 0; i < j->n_secrets; i++) {
    bool ours = j->traceparent && !strcmp(j->secrets[i].key, "TRACEPARENT");
    for (size_t k = 0; OURS[k] && !ours; k++)
      ours = !strcmp(j->secrets[i].key, OURS[k]);
    if (ours)
      continue;
    if (!first)
      tw_buf_addc(out, ',');
    first = false;
    tw_buf_json_str(out, j->secrets[i].key);
    tw_buf_addc(out, ':');
    tw_buf_json_str(out, j->secrets[i].value ? j->secrets[i].value : "");
  }
  tw_buf_printf(out, "%s\"TRADEWIND_JOB_ID\":", first ? "" : ",");
  tw_buf_json_str(out, j->job_id);
  tw_buf_printf(out, ",\"TRADEWIND_ATTEMPT\":\"%d\"", j->attempt_n);
  if (j->traceparent) { /* W3C: the job's own spans join its trace */
    tw_buf_adds(out, ",\"TRACEPARENT\":");
    tw_buf_json_str(out, j->traceparent);
  }
  if (ckpt) {
    tw_buf_adds(out, ",\"TRADEWIND_CHECKPOINT_URI\":");
    tw_buf_json_str(out, sp->checkpoint_uri ? sp->checkpoint_uri : "");
    tw_buf_printf(out,
                  ",\"TRADEWIND_CHECKPOINT_INTERVAL_S\":\"%lld\","
                  "\"TRADEWIND_RESUME_S\":\"%lld\"",
                  (long long)sp->checkpoint_interval_s, (long long)j->resume_s);
  }
  /* the node's place in its gang (one node: rank 0 of 1), as Tradewind
   * and SkyPilot name it; the addresses once every node registered */
  int nodes = j->nodes > 0 ? j->nodes : 1;
  int gpus = sp->n_accels ? sp->accels[0].count : 0;
  tw_buf_printf(out,
                ",\"TW_NODE_RANK\":\"%d\",\"TW_NUM_NODES\":\"%d\","
                "\"SKYPILOT_NODE_RANK\":\"%d\",\"SKYPILOT_NUM_NODES\":\"%d\","
                "\"SKYPILOT_NUM_GPUS_PER_NODE\":\"%d\"",
                j->node_rank, nodes, j->node_rank, nodes, gpus);
  if (j->ips) {
    struct tw_buf l;
    tw_buf_init(&l);
    for (int i = 0; i < nodes; i++)
      tw_buf_printf(&l, "%s%s", i ? "\n" : "", j->ips[i]);
    tw_buf_adds(out, ",\"TW_NODE_IPS\":");
    tw_buf_json_str(out, l.data);
    tw_buf_adds(out, ",\"SKYPILOT_NODE_IPS\":");
    tw_buf_json_str(out, l.data);
    tw_buf_adds(out, ",\"TW_HEAD_IP\":");
    tw_buf_json_str(out, j->ips[0]);
    tw_buf_release(&l);
  }
  tw_buf_printf(out,
                "},\"gang\":{\"rank\":%d,\"nodes\":%d,\"ready\":%s}",
                j->node_rank, nodes, j->ips ? "true" : "false");
  tw_buf_printf(out,
                ",\"time_limit_s\":0,\"grace_s\":%lld,\"heartbeat_s\":%lld",
                (long long)j->grace_s, (long long)j->heartbeat_s);
  if (ckpt) {
    tw_buf_adds(out, ",\"checkpoint\":{\"uri\":");
    tw_buf_json_str(out, sp->checkpoint_uri ? sp->checkpoint_uri : "");
    tw_buf_printf(out, ",\"interval_s\":%lld,\"resume_s\":%lld}",
                  (long long)sp->checkpoint_interval_s, (long long)j->resume_s);
  } else {
    tw_buf_adds(out, ",\"checkpoint\":null");
  }
  tw_buf_adds(out, ",\"user\":\"tradewind\"}");
}

/* ---- the module ---------------------------------------------------------- */

static enum tw_rc read_file(const char *path, size_t max, struct tw_buf *out,
                            struct tw_err *err, const char *what) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_field(err, TW_E_IO, what, "%s: cannot read %s: %s", what,
                        path, strerror(errno));
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    tw_buf_add(out, chunk, n);
    if (out->len > max) {
      fclose(f);
      return tw_err_field(err, TW_E_TOOBIG, what, "%s: %s is larger than %zu",
                          what, path, max);
    }
  }
  fclose(f);
  return TW_OK;
}

static bool unhex32(const char *s, size_t len, unsigned char out[32]) {
  return len == 64 && tw_unhex(s, 32, out, true);
}

static enum tw_rc load_key(struct tw_store *st, struct tw_secrets *sec,
                           unsigned char key[32], struct tw_err *err) {
  bool plain = false;
  enum tw_rc rc = tw_store_agent_key_get(st, &plain, key, err);
  if (rc)
    return rc;
  if (!sec) {
    if (plain)
      return TW_OK;
    if (RAND_bytes(key, 32) != 1)
      return tw_err_set(err, TW_E_INTERNAL, "agent: no random bytes");
    return tw_store_agent_key_init(st, key, err);
  }
  char *v = NULL;
  size_t len = 0;
  struct tw_err gerr = {0};
  rc = tw_secrets_get(sec, TW_AGENT_KEY_SECRET, &v, &len, &gerr);
  if (rc == TW_OK) {
    bool ok = unhex32(v, len, key);
    tw_secrets_value_free(v, len);
    if (!ok)
      return tw_err_set(err, TW_E_INVALID,
                        "agent: sealed secret %s is not a key",
                        TW_AGENT_KEY_SECRET);
    if (plain) /* sealed already; the plain copy was left by a crash */
      return tw_store_agent_key_drop(st, err);
    return TW_OK;
  }
  if (rc != TW_E_NOTFOUND) {
    if (err && err->rc == TW_OK)
      *err = gerr;
    return rc;
  }
  /* first start with secrets: the plain key, if any, is sealed (tokens
   * of live attempts stay valid), else a new one */
  if (!plain && RAND_bytes(key, 32) != 1)
    return tw_err_set(err, TW_E_INTERNAL, "agent: no random bytes");
  char h[65];
  hex(key, 32, h);
  rc = tw_secrets_put(sec, TW_AGENT_KEY_SECRET, h, 64, err);
  OPENSSL_cleanse(h, sizeof h);
  if (rc == TW_OK && plain)
    rc = tw_store_agent_key_drop(st, err);
  return rc;
}

enum tw_rc tw_agent_new(const struct tw_agent_opts *o, struct tw_agent **out,
                        struct tw_err *err) {
  *out = NULL;
  struct tw_agent *a = tw_calloc(1, sizeof *a);
  a->store = o->store;
  a->secrets = o->secrets;
  a->clock = o->clock ? o->clock : tw_clock_real();
  a->preinstalled = o->preinstalled;
  a->agent_path = tw_strdup(o->agent_path ? o->agent_path : "tradewind-agent");
  a->url = tw_strdup(o->broker_url ? o->broker_url : "");
  a->heartbeat_s = o->heartbeat_s > 0 ? o->heartbeat_s : 10;
  a->timeout_s = o->heartbeat_timeout_s > 0 ? o->heartbeat_timeout_s : 120;
  a->max_log = o->max_log_bytes > 0 ? o->max_log_bytes : (int64_t)64 << 20;
  a->grace_s = o->grace_s > 0 ? o->grace_s : 30;
  pthread_mutex_init(&a->gang_mu, NULL);
  pthread_mutex_init(&a->beat_mu, NULL);
  a->flush_ms = a->timeout_s * 1000 / 4 < BEATS_FLUSH_MS
                    ? a->timeout_s * 1000 / 4
                    : BEATS_FLUSH_MS;
  a->since_ms = a->beats_flushed_ms = tw_clock_now_ms(a->clock);
  a->tracer = o->tracer;
  enum tw_rc rc = load_key(o->store, o->secrets, a->key, err);
  if (rc)
    goto fail;
  if (o->ca_pem_file && *o->ca_pem_file) {
    struct tw_buf b;
    tw_buf_init(&b);
    if ((rc = read_file(o->ca_pem_file, 1 << 20, &b, err, "tls.cert_file"))) {
      tw_buf_release(&b);
      goto fail;
    }
    a->ca_pem = tw_buf_detach(&b);
  }
  if (o->binary_path && *o->binary_path) {
    struct tw_buf b;
    tw_buf_init(&b);
    rc = read_file(o->binary_path, (size_t)1 << 30, &b, err, "agent.binary");
    if (rc == TW_OK) {
      unsigned char md[32];
      unsigned int len = sizeof md;
      EVP_Digest(b.data ? b.data : "", b.len, md, &len, EVP_sha256(), NULL);
      hex(md, 32, a->binary_sha);
      a->binary_path = tw_strdup(o->binary_path);
    }
    tw_buf_release(&b);
    if (rc && o->need_binary)
      goto fail;
    if (rc)
      tw_log_info("agent", "no agent binary served: %s", err ? err->msg : "");
    if (err && !o->need_binary)
      tw_err_clear(err);
    rc = TW_OK;
  } else if (o->need_binary) {
    rc = tw_err_field(err, TW_E_INVALID, "agent.binary",
                      "agent.binary: required with agent.install: fetch");
    goto fail;
  }
  *out = a;
  return TW_OK;
fail:
  tw_agent_free(a);
  return rc;
}

void tw_agent_free(struct tw_agent *a) {
  if (!a)
    return;
  OPENSSL_cleanse(a->key, sizeof a->key);
  if (a->store)
    beats_flush(a, tw_clock_now_ms(a->clock), true); /* what is in memory */
  for (struct gang *g = a->gangs, *next; g; g = next) {
    next = g->next;
    free(g->ips);
    free(g);
  }
  pthread_mutex_destroy(&a->gang_mu);
  for (size_t i = 0; i < a->n_buckets; i++)
    for (struct beat *b = a->beats[i], *next; b; b = next) {
      next = b->next;
      free(b);
    }
  free(a->beats);
  pthread_mutex_destroy(&a->beat_mu);
  free(a->agent_path);
  free(a->binary_path);
  free(a->url);
  free(a->ca_pem);
  free(a);
}

void tw_agent_set_wake(struct tw_agent *a, void (*fn)(void *ctx), void *ctx) {
  a->wake = fn;
  a->wake_ctx = ctx;
}

void tw_agent_forget_secrets(struct tw_agent *a, const char *job_id) {
  if (!a || !a->secrets)
    return;
  struct tw_err err = {0};
  if (tw_secrets_job_delete(a->secrets, job_id, &err))
    tw_log_warn("agent", "job=%s secrets not deleted: %s", job_id, err.msg);
}

uint64_t tw_agent_news(struct tw_agent *a) {
  return atomic_load_explicit(&a->news, memory_order_acquire);
}

static void wake(struct tw_agent *a) {
  /* counted after the report is stored: a pass that reads the count
   * before this finds the report at its next look */
  atomic_fetch_add_explicit(&a->news, 1, memory_order_release);
  if (a->wake)
    a->wake(a->wake_ctx);
}

void tw_agent_set_url(struct tw_agent *a, const char *url) {
  if (!a || (a->url && *a->url))
    return;
  free(a->url);
  a->url = tw_strdup(url);
  size_t n = strlen(a->url);
  while (n && a->url[n - 1] == '/')
    a->url[--n] = '\0';
}

const char *tw_agent_url(const struct tw_agent *a) { return a->url; }
int64_t tw_agent_heartbeat_s(const struct tw_agent *a) {
  return a->heartbeat_s;
}
int64_t tw_agent_heartbeat_timeout_s(const struct tw_agent *a) {
  return a->timeout_s;
}
int64_t tw_agent_grace_s(const struct tw_agent *a) { return a->grace_s; }

bool tw_agent_binary(const struct tw_agent *a, const char **path,
                     const char **sha256_hex) {
  if (!a || !a->binary_path)
    return false;
  *path = a->binary_path;
  *sha256_hex = a->binary_sha;
  return true;
}

enum tw_rc tw_agent_user_data(struct tw_agent *a, const char *job_id,
                              int64_t attempt_id, int attempt_n,
                              const char *client_token, const char *cloud,
                              struct tw_buf *out, struct tw_err *err) {
  return tw_agent_user_data_node(a, job_id, attempt_id, attempt_n,
                                 client_token, cloud, -1, out, err);
}

enum tw_rc tw_agent_user_data_node(struct tw_agent *a, const char *job_id,
                                   int64_t attempt_id, int attempt_n,
                                   const char *client_token, const char *cloud,
                                   int node_rank, struct tw_buf *out,
                                   struct tw_err *err) {
  if (!a->preinstalled && !a->binary_path)
    return tw_err_field(err, TW_E_INVALID, "agent.binary",
                        "agent.binary: no agent binary to serve "
                        "(agent.install: fetch)");
  char token[TW_AGENT_TOKEN_LEN + 1], hash[65];
  tw_agent_token_derive(a->key, client_token, token);
  tw_agent_token_hash(token, hash);
  enum tw_rc rc = tw_store_agent_add(a->store, attempt_id, job_id, client_token,
                                     hash, tw_clock_now_ms(a->clock), err);
  if (rc == TW_OK) {
    struct tw_agent_boot b = {.job_id = job_id,
                              .attempt_n = attempt_n,
                              .client_token = client_token,
                              .token = token,
                              .broker_url = a->url,
                              .ca_pem = a->ca_pem,
                              .preinstalled = a->preinstalled,
                              .agent_path = a->agent_path,
                              .binary_sha256 = a->binary_sha,
                              .cloud = cloud,
                              .has_rank = node_rank >= 0,
                              .node_rank = node_rank};
    tw_agent_bootstrap(&b, out);
  }
  OPENSSL_cleanse(token, sizeof token);
  return rc;
}

/* ---- reports ------------------------------------------------------------- */

enum tw_rc tw_agent_authenticate(struct tw_agent *a, const char *token,
                                 struct tw_agent_caller *out,
                                 struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!tw_agent_token_shape(token))
    return tw_err_set(err, TW_E_AUTH, "malformed agent token");
  char hash[65];
  tw_agent_token_hash(token, hash);
  struct tw_store_agent row;
  bool found = false;
  enum tw_rc rc = tw_store_agent_by_hash(a->store, hash, &found, &row, err);
  if (rc)
    return rc;
  if (!found)
    return tw_err_set(err, TW_E_AUTH, "unknown agent token");
  out->attempt_id = row.attempt_id;
  snprintf(out->job_id, sizeof out->job_id, "%s", row.job_id);
  snprintf(out->client_token, sizeof out->client_token, "%s", row.client_token);
  out->live = !row.attempt_ended;
  out->exited = row.exit_ms != 0;
  memcpy(out->tag, hash, 16);
  out->tag[16] = '\0';
  return TW_OK;
}

static int64_t now_of(struct tw_agent *a) { return tw_clock_now_ms(a->clock); }

/* Records node m of attempt attempt_id and returns every node's address
 * in rank order once all are known (owned array of borrowed strings: free
 * it), else NULL.  One node (no rank, or a one-node job) knows itself. */
static const char **gang_register(struct tw_agent *a, int64_t attempt_id,
                                  const struct tw_job_spec *spec,
                                  const struct tw_agent_register_msg *m) {
  const char *self = m->ip[0] ? m->ip : "127.0.0.1";
  int nodes = spec->nodes > 0 ? spec->nodes : 1;
  if (m->node_rank < 0 || nodes == 1) {
    const char **one = tw_calloc((size_t)nodes, sizeof *one);
    for (int i = 0; i < nodes; i++) /* an agent without a rank: it alone */
      one[i] = self;
    return one;
  }
  pthread_mutex_lock(&a->gang_mu);
  struct gang *g = a->gangs;
  while (g && g->attempt_id != attempt_id)
    g = g->next;
  if (!g) {
    g = tw_calloc(1, sizeof *g);
    g->attempt_id = attempt_id;
    g->nodes = nodes;
    g->ips = tw_calloc((size_t)nodes, sizeof *g->ips);
    g->next = a->gangs;
    a->gangs = g;
  }
  int r = m->node_rank < g->nodes ? m->node_rank : g->nodes - 1;
  if (!g->ips[r][0])
    g->known++;
  snprintf(g->ips[r], sizeof g->ips[r], "%s", self);
  const char **ips = NULL;
  if (g->known == g->nodes) {
    /* copied out: the entry may go once the attempt ends */
    size_t cap = (size_t)g->nodes * (sizeof(char *) + sizeof g->ips[0]);
    ips = tw_calloc(1, cap);
    char (*text)[48] = (char (*)[48])(ips + g->nodes);
    for (int i = 0; i < g->nodes; i++) {
      memcpy(text[i], g->ips[i], sizeof text[i]);
      ips[i] = text[i];
    }
  }
  pthread_mutex_unlock(&a->gang_mu);
  return ips;
}

/* Forgets the gang of attempt attempt_id (its attempt ended). */
static void gang_forget(struct tw_agent *a, int64_t attempt_id) {
  pthread_mutex_lock(&a->gang_mu);
  for (struct gang **pp = &a->gangs; *pp; pp = &(*pp)->next)
    if ((*pp)->attempt_id == attempt_id) {
      struct gang *g = *pp;
      *pp = g->next;
      free(g->ips);
      free(g);
      break;
    }
  pthread_mutex_unlock(&a->gang_mu);
}

enum tw_rc tw_agent_on_register(struct tw_agent *a,
                                const struct tw_agent_caller *c,
                                const struct tw_agent_register_msg *m,
                                struct tw_buf *out, struct tw_err *err) {
  struct tw_job_rec job;
  enum tw_rc rc = tw_store_job_get(a->store, c->job_id, &job, err);
  if (rc)
    return rc;
  struct tw_job_spec spec;
  rc = tw_spec_parse(job.spec_json ? job.spec_json : "{}",
                     job.spec_json ? strlen(job.spec_json) : 2, true, &spec,
                     err);
  tw_job_rec_release(&job);
  if (rc)
    return rc;
  if (m->node_rank >= (spec.nodes > 0 ? spec.nodes : 1)) {
    rc = tw_err_field(err, TW_E_INVALID, "node_rank",
                      "node_rank: %d is beyond the job's %d node%s",
                      m->node_rank, spec.nodes, spec.nodes == 1 ? "" : "s");
    tw_spec_release(&spec);
    return rc;
  }
  /* the job's sealed variables: none stored yet is the short moment
   * between the job's row and its secrets (retried); no key is a broker
   * whose secrets went away (refused) */
  struct tw_kv *secrets = NULL;
  size_t n_secrets = 0;
  if (spec.n_secrets) {
    if (!a->secrets)
      rc = tw_err_field(err, TW_E_INVALID, "secrets",
                        "secrets: job %s has secrets and this broker has no "
                        "key to open them",
                        c->job_id);
    else if ((rc = tw_secrets_job_get(a->secrets, c->job_id, &secrets,
                                      &n_secrets, err)) == TW_E_NOTFOUND)
      rc = tw_err_set(err, TW_E_RETRYABLE,
                      "secrets: job %s's are not stored yet", c->job_id);
    if (rc) {
      tw_spec_release(&spec);
      return rc;
    }
  }
  struct tw_store_agent_reg r = {.attempt_id = c->attempt_id,
                                 .instance_id = m->instance_id,
                                 .cloud = m->cloud,
                                 .metadata_json = m->metadata_json,
                                 .agent_version = m->agent_version,
                                 .at_ms = now_of(a)};
  bool first = false;
  rc = tw_store_agent_register(a->store, &r, &first, err);
  if (rc == TW_OK) {
    int64_t resume = 0;
    struct tw_err perr = {0};
    if (tw_checkpoint_progress(a->store, c->job_id, &resume, &perr))
      resume = 0;
    /* attempt n is the client token's tail */
    const char *dash = strrchr(c->client_token, '-');
    char tp[64] = "";
    struct tw_err terr = {0};
    if (tw_store_job_trace(a->store, c->job_id, tp, sizeof tp, &terr))
      tp[0] = '\0';
    struct tw_agent_job j = {.job_id = c->job_id,
                             .attempt_n = dash ? atoi(dash + 1) : 1,
                             .spec = &spec,
                             .resume_s = resume,
                             .grace_s = a->grace_s,
                             .heartbeat_s = a->heartbeat_s,
                             .node_rank = m->node_rank > 0 ? m->node_rank : 0,
                             .nodes = spec.nodes,
                             .traceparent = tp[0] ? tp : NULL,
                             .secrets = secrets,
                             .n_secrets = n_secrets};
    const char **ips = gang_register(a, c->attempt_id, &spec, m);
    j.ips = ips;
    tw_agent_register_answer(&j, out);
    free(ips);
    if (first)
      agent_span(a, c->job_id, "agent.register", "cloud.resource_id",
                 m->instance_id, "tradewind.agent.version", m->agent_version);
    if (first)
      tw_log_info("agent", "job=%s attempt=%s instance=%s cloud=%s registered",
                  c->job_id, c->client_token, m->instance_id, m->cloud);
  }
  tw_secrets_job_free(secrets, n_secrets);
  tw_spec_release(&spec);
  return rc;
}

/* ---- heartbeats in memory ------------------------------------------------ */

static size_t beat_slot(const struct tw_agent *a, int64_t id) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & (a->n_buckets - 1);
}

/* attempt id's beat, made when missing (and make); beat_mu held. */
static struct beat *beat_of(struct tw_agent *a, int64_t id, bool make) {
  if (a->n_buckets) {
    for (struct beat *b = a->beats[beat_slot(a, id)]; b; b = b->next)
      if (b->attempt_id == id)
        return b;
  }
  if (!make)
    return NULL;
  if (a->n_beats >= a->n_buckets) { /* grown: chains stay short */
    size_t nb = a->n_buckets ? a->n_buckets * 2 : 256;
    struct beat **nt = tw_calloc(nb, sizeof *nt);
    size_t old = a->n_buckets;
    struct beat **ot = a->beats;
    a->beats = nt;
    a->n_buckets = nb;
    for (size_t i = 0; i < old; i++)
      for (struct beat *b = ot[i], *next; b; b = next) {
        next = b->next;
        size_t k = beat_slot(a, b->attempt_id);
        b->next = nt[k];
        nt[k] = b;
      }
    free(ot);
  }
  struct beat *b = tw_calloc(1, sizeof *b);
  b->attempt_id = id;
  size_t k = beat_slot(a, id);
  b->next = a->beats[k];
  a->beats[k] = b;
  a->n_beats++;
  return b;
}

static void beat_drop(struct tw_agent *a, int64_t id) {
  pthread_mutex_lock(&a->beat_mu);
  if (a->n_buckets)
    for (struct beat **p = &a->beats[beat_slot(a, id)]; *p; p = &(*p)->next)
      if ((*p)->attempt_id == id) {
        struct beat *b = *p;
        *p = b->next;
        free(b);
        a->n_beats--;
        break;
      }
  pthread_mutex_unlock(&a->beat_mu);
}

/* Stores, in one write, the beats the store is behind on, once flush_ms
 * passed since the last time (or always: force); forgets the attempts
 * not heard from for twice the heartbeat timeout (ended ones). */
static void beats_flush(struct tw_agent *a, int64_t now, bool force) {
  pthread_mutex_lock(&a->beat_mu);
  if (!force && now - a->beats_flushed_ms < a->flush_ms) {
    pthread_mutex_unlock(&a->beat_mu);
    return;
  }
  a->beats_flushed_ms = now;
  size_t n = 0;
  int64_t *ids = a->n_beats ? tw_calloc(a->n_beats, sizeof *ids) : NULL;
  int64_t *at = a->n_beats ? tw_calloc(a->n_beats, sizeof *at) : NULL;
  for (size_t i = 0; i < a->n_buckets; i++)
    for (struct beat **p = &a->beats[i]; *p;) {
      struct beat *b = *p;
      if (b->seen_ms > b->stored_ms) {
        ids[n] = b->attempt_id;
        at[n++] = b->seen_ms;
        b->stored_ms = b->seen_ms;
      }
      if (now - b->seen_ms > 2 * a->timeout_s * 1000) {
        *p = b->next;
        free(b);
        a->n_beats--;
      } else {
        p = &b->next;
      }
    }
  pthread_mutex_unlock(&a->beat_mu);
  struct tw_err err = {0};
  if (tw_store_agent_heartbeats(a->store, ids, at, n, &err))
    tw_log_warn("agent", "%zu heartbeats not stored: %s", n, err.msg);
  free(ids);
  free(at);
}

void tw_agent_flush_heartbeats(struct tw_agent *a) {
  if (a)
    beats_flush(a, now_of(a), true);
}

int64_t tw_agent_last_seen_ms(struct tw_agent *a, int64_t attempt_id,
                              int64_t stored_ms) {
  int64_t last = stored_ms;
  pthread_mutex_lock(&a->beat_mu);
  struct beat *b = beat_of(a, attempt_id, false);
  if (b && b->seen_ms > last)
    last = b->seen_ms;
  pthread_mutex_unlock(&a->beat_mu);
  /* what a broker before this one heard is stored up to flush_ms late,
   * and the agents need a moment to find this one: the silence of an
   * attempt that had reported counts from this broker's start at the
   * earliest */
  if (last && last < a->since_ms)
    last = a->since_ms;
  return last;
}

/* A heartbeat (or phase report) at now: stored when it says something
 * new (the attempt's first since this broker started, or another phase),
 * else kept in memory for beats_flush. */
static enum tw_rc beat(struct tw_agent *a, int64_t attempt_id,
                       const char *phase, int64_t now, struct tw_err *err) {
  const char *ph = phase ? phase : "";
  pthread_mutex_lock(&a->beat_mu);
  struct beat *b = beat_of(a, attempt_id, true);
  bool news = !b->stored_ms || (ph[0] && strcmp(ph, b->phase) &&
                                strcmp(b->phase, "exited"));
  if (!news && now > b->seen_ms)
    b->seen_ms = now;
  pthread_mutex_unlock(&a->beat_mu);
  if (!news) {
    beats_flush(a, now, false);
    return TW_OK;
  }
  enum tw_rc rc = tw_store_agent_heartbeat(a->store, attempt_id, ph, now, err);
  if (rc)
    return rc;
  pthread_mutex_lock(&a->beat_mu);
  b = beat_of(a, attempt_id, true);
  if (now > b->seen_ms)
    b->seen_ms = now;
  if (now > b->stored_ms)
    b->stored_ms = now;
  if (ph[0] && strcmp(b->phase, "exited"))
    snprintf(b->phase, sizeof b->phase, "%s", ph);
  pthread_mutex_unlock(&a->beat_mu);
  return TW_OK;
}

enum tw_rc tw_agent_on_heartbeat(struct tw_agent *a,
                                 const struct tw_agent_caller *c,
                                 const struct tw_agent_phase_msg *m,
                                 const char **action, struct tw_err *err) {
  *action = "none";
  enum tw_rc rc = beat(a, c->attempt_id, m->phase, now_of(a), err);
  if (rc)
    return rc;
  struct tw_job_rec job;
  if (tw_store_job_get(a->store, c->job_id, &job, err))
    return TW_OK; /* the beat is stored; the action waits for a read */
  bool cancelled = tw_job_state_terminal(job.state);
  tw_job_rec_release(&job);
  if (cancelled) {
    *action = "cancel";
    return TW_OK;
  }
  /* a checkpoint the broker asked for (a provider's notice, a move) is
   * handed over once; the agent's own notices it knows already */
  struct tw_ckpt_request req;
  char cause[16];
  bool asked = false;
  struct tw_err cerr = {0};
  if (tw_checkpoint_request_get(a->store, c->attempt_id, &asked, &req, cause,
                                &cerr) == TW_OK &&
      asked) {
    bool first = false;
    if (tw_store_agent_ckpt_sent(a->store, c->attempt_id, req.requested_ms,
                                 &first, &cerr) == TW_OK &&
        first)
      *action = "checkpoint";
  }
  return TW_OK;
}

enum tw_rc tw_agent_on_phase(struct tw_agent *a,
                             const struct tw_agent_caller *c,
                             const struct tw_agent_phase_msg *m,
                             struct tw_err *err) {
  enum tw_rc rc = beat(a, c->attempt_id, m->phase, now_of(a), err);
  if (rc == TW_OK)
    agent_span(a, c->job_id, "agent.phase", "tradewind.agent.phase", m->phase,
               "tradewind.attempt", c->client_token);
  return rc;
}

enum tw_rc tw_agent_on_checkpoint(struct tw_agent *a,
                                  const struct tw_agent_caller *c,
                                  const struct tw_agent_checkpoint_msg *m,
                                  struct tw_err *err) {
  return tw_store_agent_checkpoint(a->store, c->attempt_id, now_of(a),
                                   m->progress_s, err);
}

enum tw_rc tw_agent_on_notice(struct tw_agent *a,
                              const struct tw_agent_caller *c,
                              const struct tw_agent_notice_msg *m,
                              struct tw_err *err) {
  struct tw_store_agent_notice n = {.attempt_id = c->attempt_id,
                                    .deadline_ms = m->deadline_ms,
                                    .at_ms = now_of(a)};
  snprintf(n.event_id, sizeof n.event_id, "%s", m->event_id);
  snprintf(n.kind, sizeof n.kind, "%s", m->kind);
  snprintf(n.action, sizeof n.action, "%s", m->action);
  snprintf(n.source, sizeof n.source, "%s", m->source);
  bool added = false;
  enum tw_rc rc = tw_store_agent_notice_add(a->store, &n, &added, err);
  if (rc == TW_OK && added) {
    tw_log_info("agent", "job=%s attempt=%s %s notice from %s (%s)", c->job_id,
                c->client_token, m->kind, m->source, m->event_id);
    wake(a);
  }
  return rc;
}

enum tw_rc tw_agent_on_exit(struct tw_agent *a, const struct tw_agent_caller *c,
                            const struct tw_agent_exit_msg *m, bool *first,
                            struct tw_err *err) {
  struct tw_store_agent_exit e = {.attempt_id = c->attempt_id,
                                  .has_code = m->has_code,
                                  .exit_code = m->exit_code,
                                  .signal = m->signal,
                                  .started_ms = m->started_ms,
                                  .ended_ms = m->ended_ms,
                                  .at_ms = now_of(a),
                                  .after_notice = m->after_notice};
  *first = false;
  if (!c->live) /* ended already: a replay, or too late to change it */
    return TW_OK;
  enum tw_rc rc = tw_store_agent_exit(a->store, &e, first, err);
  if (rc == TW_OK && *first) {
    gang_forget(a, c->attempt_id);
    beat_drop(a, c->attempt_id); /* the exit is its last report */
    tw_log_info("agent", "job=%s attempt=%s exit %s %d%s", c->job_id,
                c->client_token, m->has_code ? "code" : "signal",
                m->has_code ? m->exit_code : m->signal,
                m->after_notice ? " after a notice" : "");
    char code[32];
    snprintf(code, sizeof code, "%s %d", m->has_code ? "code" : "signal",
             m->has_code ? m->exit_code : m->signal);
    agent_span(a, c->job_id, "agent.exit", "tradewind.exit", code,
               "tradewind.attempt", c->client_token);
    wake(a);
  }
  return rc;
}

enum tw_rc tw_agent_on_logs(struct tw_agent *a, const struct tw_agent_caller *c,
                            bool is_stderr, int64_t offset, const void *data,
                            size_t len, enum tw_store_log_result *res,
                            int64_t *next, struct tw_err *err) {
  return tw_store_agent_log_append(
      a->store, c->attempt_id, is_stderr ? TW_AGENT_STDERR : TW_AGENT_STDOUT,
      offset, data, len, a->max_log, res, next, err);
}
