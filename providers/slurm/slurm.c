/* slurm.c - the Slurm adapter: slurmrestd v0.0.38 with a JWT.
 *
 * Translation only, as every adapter: wire shapes are read and written by
 * slurm_json.c, retries of transport failures are the http helper's, and
 * decisions (where to place, when to place again) are the core's.  What
 * this file adds is what Slurm lacks:
 *
 *  - an idempotent launch: Slurm has no client token, so the token is the
 *    job's name ("tw-<token>") and a launch first looks for a job of that
 *    name; a launch retried after a timeout finds the first one;
 *  - capacity held between inventories: offers count the slices that fit
 *    in what the nodes have free, and each launch takes its slice from an
 *    in-memory copy of that inventory (best fit), so two placements in
 *    one scheduler pass cannot both count on the same free CPUs;
 *  - an auth error that slurmrestd does not give: a refused or expired JWT
 *    comes back as HTTP 500 with a generic error, so the token's own exp
 *    is checked and an ambiguous answer is probed (see call()).
 *
 * Config keys, offer shapes, the state and error tables: docs/slurm.md. */
#include "providers/slurm/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/http.h"
#include "providers/slurm/slurm_json.h"
#include "broker/core/spec.h"

#define SLURM_API "v0.0.38"
#define SLURM_NAME_PREFIX "tw-"
/* Offers per inventory at most: partitions x racks x shapes x slices. */
#define SLURM_OFFERS_MAX 4096
/* A launch that finds no room in an inventory older than this reads the
 * inventory again before refusing: jobs end all the time. */
#define SLURM_REFRESH_MS 1000
#define SLURM_NOTICES_MAX 1024

struct slurm_gpu_rate {
  char type[32]; /* compared without case; "default" for any type */
  int64_t uusd;
};

/* A node as held in memory: what Slurm said, minus what launches since
 * took from it. */
struct inv_node {
  struct slurm_node n;
  int free_cpus;
  int64_t free_mem;
  int free_gpus;
};

struct inventory {
  struct inv_node *nodes;
  size_t n_nodes;
  struct slurm_partition *parts;
  size_t n_parts;
  int64_t fetched_ms; /* 0: never */
};

/* One slice of a node: what one offer of this adapter buys. */
struct slice {
  int cpus;
  int64_t mem_mb;
  int gpus;
};

struct notice {
  int64_t job_id;
  int64_t noticed_ms;
  bool seen; /* in the last poll */
};

struct slurm_ctx {
  char *endpoint; /* "http://127.0.0.1:6820", no trailing slash */
  char *user;
  char *cluster;
  char *output_dir;
  char *token_file, *token_env; /* where the token is re-read from */
  char **partitions;            /* offered partitions; NULL all */
  size_t n_partitions;
  int64_t cpu_uusd, mem_gib_uusd; /* per hour */
  struct slurm_gpu_rate *gpu_rates;
  size_t n_gpu_rates;
  int64_t time_limit_min; /* when the job gives no duration; 0: default */
  long timeout_ms, connect_timeout_ms;
  struct tw_label labels[TW_OFFER_LABELS_MAX];
  size_t n_labels;
  struct tw_http *http;
  struct tw_clock *clock;

  pthread_mutex_t lock; /* guards everything below */
  char *token;          /* never logged */
  struct inventory inv;
  struct notice *notices;
  size_t n_notices;
};

/* ---- config ------------------------------------------------------------- */

static const char *const slurm_keys[] = {"endpoint",
                                         "api_version",
                                         "user",
                                         "token",
                                         "token_file",
                                         "token_env",
                                         "output_dir",
                                         "rates",
                                         "cluster",
                                         "partitions",
                                         "time_limit_min",
                                         "timeout_ms",
                                         "connect_timeout_ms",
                                         "max_attempts",
                                         "backoff_base_ms",
                                         "backoff_cap_ms",
                                         NULL};

static enum tw_rc read_rates(struct slurm_ctx *c, const struct tw_node *r,
                             struct tw_err *err) {
  static const char *const rate_keys[] = {"cpu_hour", "gpu_hour",
                                          "mem_gib_hour", NULL};
  if (!r)
    return TW_OK;
  if (r->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "rates",
                        "rates: expected a mapping such as {cpu_hour: "
                        "\"0.02\", gpu_hour: {A100: \"1.10\"}}");
  for (size_t i = 0; i < r->n; i++) {
    size_t k;
    for (k = 0; rate_keys[k] && strcmp(rate_keys[k], r->keys[i]); k++)
      ;
    if (!rate_keys[k])
      return tw_err_field(err, TW_E_INVALID, "rates",
                          "rates.%s: unknown key; expected cpu_hour, gpu_hour "
                          "or mem_gib_hour",
                          r->keys[i]);
  }
  const struct tw_node *v;
  struct tw_err e = {0};
  if ((v = tw_node_get(r, "cpu_hour")) &&
      (v->kind != TW_NODE_SCALAR ||
       tw_provider_usd_to_uusd(v->str, &c->cpu_uusd, &e)))
    return tw_err_field(err, TW_E_INVALID, "rates.cpu_hour",
                        "rates.cpu_hour: expected a USD amount such as "
                        "\"0.02\"");
  if ((v = tw_node_get(r, "mem_gib_hour")) &&
      (v->kind != TW_NODE_SCALAR ||
       tw_provider_usd_to_uusd(v->str, &c->mem_gib_uusd, &e)))
    return tw_err_field(err, TW_E_INVALID, "rates.mem_gib_hour",
                        "rates.mem_gib_hour: expected a USD amount such as "
                        "\"0.002\"");
  if (!(v = tw_node_get(r, "gpu_hour")))
    return TW_OK;
  if (v->kind == TW_NODE_SCALAR) {
    c->gpu_rates = tw_calloc(1, sizeof *c->gpu_rates);
    strcpy(c->gpu_rates[0].type, "default");
    c->n_gpu_rates = 1;
    if (tw_provider_usd_to_uusd(v->str, &c->gpu_rates[0].uusd, &e))
      return tw_err_field(err, TW_E_INVALID, "rates.gpu_hour",
                          "rates.gpu_hour: expected a USD amount such as "
                          "\"1.10\"");
    return TW_OK;
  }
  if (v->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "rates.gpu_hour",
                        "rates.gpu_hour: expected an amount or a mapping of "
                        "GPU types to amounts");
  c->gpu_rates = tw_calloc(v->n ? v->n : 1, sizeof *c->gpu_rates);
  for (size_t i = 0; i < v->n; i++) {
    struct slurm_gpu_rate *g = &c->gpu_rates[c->n_gpu_rates];
    if (!TW_SET(g->type, v->keys[i]) || v->items[i]->kind != TW_NODE_SCALAR ||
        tw_provider_usd_to_uusd(v->items[i]->str, &g->uusd, &e))
      return tw_err_field(err, TW_E_INVALID, "rates.gpu_hour",
                          "rates.gpu_hour.%s: expected a USD amount such as "
                          "\"1.10\"",
                          v->keys[i]);
    c->n_gpu_rates++;
  }
  return TW_OK;
}

/* The hourly rate of one GPU of Slurm type `type`; false when unpriced. */
static bool gpu_rate(const struct slurm_ctx *c, const char *type,
                     int64_t *out) {
  const struct slurm_gpu_rate *def = NULL;
  for (size_t i = 0; i < c->n_gpu_rates; i++) {
    if (*type && !strcasecmp(c->gpu_rates[i].type, type)) {
      *out = c->gpu_rates[i].uusd;
      return true;
    }
    if (!strcmp(c->gpu_rates[i].type, "default"))
      def = &c->gpu_rates[i];
  }
  if (def)
    *out = def->uusd;
  return def != NULL;
}

static void slurm_free(struct tw_provider *p) {
  struct slurm_ctx *c = p->ctx;
  if (!c)
    return;
  tw_http_free(c->http);
  free(c->endpoint);
  free(c->user);
  free(c->cluster);
  free(c->output_dir);
  free(c->token_file);
  free(c->token_env);
  for (size_t i = 0; i < c->n_partitions; i++)
    free(c->partitions[i]);
  free(c->partitions);
  free(c->gpu_rates);
  if (c->token) {
    memset(c->token, 0, strlen(c->token));
    free(c->token);
  }
  free(c->inv.nodes);
  free(c->inv.parts);
  free(c->notices);
  pthread_mutex_destroy(&c->lock);
  free(c);
  p->ctx = NULL;
}

static enum tw_rc slurm_init(struct tw_provider *p, const struct tw_node *cfg,
                             struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_check_keys(cfg, slurm_keys, err);
  if (rc)
    return rc;
  struct slurm_ctx *c = tw_calloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  p->ctx = c;
  c->clock = p->clock;
  const char *s;

  if ((rc = tw_provider_cfg_str(cfg, "endpoint", NULL, &s, err)))
    return rc;
  if (!s || (strncmp(s, "http://", 7) && strncmp(s, "https://", 8)))
    return tw_err_field(err, TW_E_INVALID, "endpoint",
                        "endpoint: required, the slurmrestd URL such as "
                        "http://127.0.0.1:6820");
  c->endpoint = tw_strdup(s);
  size_t el = strlen(c->endpoint);
  while (el > 8 && c->endpoint[el - 1] == '/')
    c->endpoint[--el] = '\0';

  if ((rc = tw_provider_cfg_str(cfg, "api_version", SLURM_API, &s, err)))
    return rc;
  if (strcmp(s, SLURM_API))
    return tw_err_field(err, TW_E_INVALID, "api_version",
                        "api_version: only %s is supported, got \"%s\"",
                        SLURM_API, s);
  if ((rc = tw_provider_cfg_str(cfg, "user", "root", &s, err)))
    return rc;
  c->user = tw_strdup(s);
  if ((rc = tw_provider_cfg_str(cfg, "cluster", p->account, &s, err)))
    return rc;
  if (!*s || strlen(s) >= TW_MODEL_NAME_MAX)
    return tw_err_field(err, TW_E_INVALID, "cluster",
                        "cluster: 1..%d characters", TW_MODEL_NAME_MAX - 1);
  c->cluster = tw_strdup(s);
  if ((rc = tw_provider_cfg_str(cfg, "output_dir", NULL, &s, err)))
    return rc;
  if (!s || s[0] != '/')
    return tw_err_field(err, TW_E_INVALID, "output_dir",
                        "output_dir: required, an absolute directory that "
                        "the cluster's nodes and the broker both see");
  c->output_dir = tw_strdup(s);

  const char *tf = NULL, *te = NULL;
  if ((rc = tw_provider_cfg_str(cfg, "token_file", NULL, &tf, err)) ||
      (rc = tw_provider_cfg_str(cfg, "token_env", NULL, &te, err)))
    return rc;
  c->token_file = tw_strdup(tf);
  c->token_env = tw_strdup(te);
  if ((rc =
           tw_provider_cfg_secret(p, cfg, "token", NULL, true, &c->token, err)))
    return rc;

  if ((rc = read_rates(c, tw_node_get(cfg, "rates"), err)))
    return rc;

  const struct tw_node *parts = tw_node_get(cfg, "partitions");
  if (parts) {
    if (parts->kind != TW_NODE_SEQ || parts->n == 0)
      return tw_err_field(err, TW_E_INVALID, "partitions",
                          "partitions: expected a list of partition names");
    c->partitions = tw_calloc(parts->n, sizeof *c->partitions);
    for (size_t i = 0; i < parts->n; i++) {
      if (parts->items[i]->kind != TW_NODE_SCALAR || !*parts->items[i]->str)
        return tw_err_field(err, TW_E_INVALID, "partitions",
                            "partitions[%zu]: expected a name", i);
      c->partitions[c->n_partitions++] = tw_strdup(parts->items[i]->str);
    }
  }

  const struct tw_node *labels = tw_node_get(cfg, "labels");
  if (labels && labels->kind == TW_NODE_MAP) {
    for (size_t i = 0; i < labels->n && c->n_labels < TW_OFFER_LABELS_MAX - 3;
         i++) {
      struct tw_label *l = &c->labels[c->n_labels];
      if (labels->items[i]->kind != TW_NODE_SCALAR ||
          !TW_SET(l->key, labels->keys[i]) ||
          !TW_SET(l->value, labels->items[i]->str))
        return tw_err_field(err, TW_E_INVALID, "labels",
                            "labels.%s: expected a short string",
                            labels->keys[i]);
      c->n_labels++;
    }
  }

  if ((rc = tw_provider_cfg_int(cfg, "time_limit_min", 0, 525600, 0,
                                &c->time_limit_min, err)))
    return rc;
  /* One slurmrestd nearby: fewer, shorter retries than a cloud's. */
  static const struct tw_provider_http_limits http_limits = {
      .timeout_def = 30000,
      .connect_min = 10,
      .attempts_max = 10,
      .attempts_def = 3,
      .backoff_min = 0,
      .backoff_cap_def = 5000};
  struct tw_http_opts ho = {.clock = p->clock, .user_agent = "tradewind-slurm"};
  if ((rc = tw_provider_cfg_http(cfg, &http_limits, &c->timeout_ms,
                                 &c->connect_timeout_ms, &ho, err)))
    return rc;
  return tw_http_new(&ho, &c->http, err);
}

/* ---- token -------------------------------------------------------------- */

static char *read_token_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char line[8192];
  char *r = fgets(line, sizeof line, f);
  fclose(f);
  if (!r)
    return NULL;
  size_t n = strlen(line);
  while (n && isspace((unsigned char)line[n - 1]))
    line[--n] = '\0';
  char *s = line;
  while (isspace((unsigned char)*s))
    s++;
  return *s ? tw_strdup(s) : NULL;
}

/* Reads the token again from its file or variable (rotated tokens are
 * written there).  True when it changed. */
static bool reload_token(struct slurm_ctx *c) {
  char *fresh = NULL;
  if (c->token_file)
    fresh = read_token_file(c->token_file);
  else if (c->token_env && getenv(c->token_env) && *getenv(c->token_env))
    fresh = tw_strdup(getenv(c->token_env));
  if (!fresh)
    return false;
  bool changed = false;
  pthread_mutex_lock(&c->lock);
  if (strcmp(fresh, c->token)) {
    memset(c->token, 0, strlen(c->token));
    free(c->token);
    c->token = fresh;
    fresh = NULL;
    changed = true;
  }
  pthread_mutex_unlock(&c->lock);
  if (fresh) {
    memset(fresh, 0, strlen(fresh));
    free(fresh);
  }
  if (changed)
    tw_log_info("slurm", "cluster=%s token re-read from %s", c->cluster,
                c->token_file ? "its file" : "its variable");
  return changed;
}

static char *token_copy(struct slurm_ctx *c) {
  pthread_mutex_lock(&c->lock);
  char *t = tw_strdup(c->token);
  pthread_mutex_unlock(&c->lock);
  return t;
}

static void token_free(char *t) {
  if (t) {
    memset(t, 0, strlen(t));
    free(t);
  }
}

/* ---- one REST call ------------------------------------------------------ */

/* slurmrestd answers deliberate failures with a JSON errors array, also as
 * HTTP 500 (an unknown job, a refused token, slurmctld down after its own
 * retries): retrying those cannot help.  Anything else (a proxy's 502, a
 * 429) goes through the helper's backoff. */
static bool slurm_should_retry(void *ctx, long status,
                               const struct tw_buf *body) {
  (void)ctx;
  if (status == 429)
    return true;
  return !(body->data && body->len && body->data[0] == '{');
}

static enum tw_rc send_once(struct slurm_ctx *c, const char *method,
                            const char *path, const char *body,
                            const char *token, struct tw_http_response *resp,
                            unsigned max_attempts, struct tw_err *err) {
  char url[1024];
  int n =
      snprintf(url, sizeof url, "%s/slurm/" SLURM_API "%s", c->endpoint, path);
  if (n < 0 || (size_t)n >= sizeof url)
    return tw_err_set(err, TW_E_INVALID, "slurm: URL too long");
  struct tw_http_header h[3] = {{"X-SLURM-USER-NAME", c->user},
                                {"X-SLURM-USER-TOKEN", token},
                                {"Content-Type", "application/json"}};
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = body ? 3 : 2,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = c->timeout_ms,
                                .connect_timeout_ms = c->connect_timeout_ms,
                                .max_attempts = max_attempts,
                                .should_retry = slurm_should_retry};
  return tw_http_do(c->http, &req, resp, err);
}

static void set_failure(struct tw_err *err, enum tw_rc rc, const char *method,
                        const char *path, long status,
                        const struct slurm_error *se) {
  char d[64];
  if (se->code)
    snprintf(d, sizeof d, "%d", se->code);
  else
    snprintf(d, sizeof d, "HTTP%ld", status);
  tw_err_set(err, rc, "slurm %s %s: HTTP %ld: %s", method, path, status,
             se->text[0] ? se->text : "no error text");
  tw_err_detail(err, d);
}

/* Sends method path (below /slurm/v0.0.38) with body; TW_OK for any 2xx
 * answer (the caller reads errors next to results), else the class of the
 * failure with Slurm's code in err->detail.
 *
 * Auth: an expired token is refused before anything is sent (after one
 * re-read of its file).  A 401, a 5005 or a -1 "Unspecified error" may
 * mean a rotated token: the token is re-read and, when it changed, the
 * call is made once more.  -1 is also what slurmctld being down looks like
 * on the read endpoints, so a -1 that survives is probed with
 * DELETE /job/0, whose answer tells them apart (2017: the token works,
 * 5005: refused, 1800: controller down). */
static enum tw_rc call(struct slurm_ctx *c, const char *method,
                       const char *path, const char *body,
                       struct tw_http_response *resp, struct tw_err *err) {
  enum tw_rc rc = TW_OK;
  int64_t now_s = tw_clock_now_ms(c->clock) / 1000;
  bool retried = false;
  struct slurm_error se = {0};

  char *tok = token_copy(c);
  int64_t exp = slurm_jwt_exp(tok);
  if (exp >= 0 && exp <= now_s) {
    reload_token(c);
    token_free(tok);
    tok = token_copy(c);
    exp = slurm_jwt_exp(tok);
    if (exp >= 0 && exp <= now_s) {
      token_free(tok);
      tw_err_set(err, TW_E_AUTH,
                 "slurm %s %s: the JWT expired %lld s ago; write a fresh one "
                 "(scontrol token) to the token file",
                 method, path, (long long)(now_s - exp));
      tw_err_detail(err, "TokenExpired");
      return TW_E_AUTH;
    }
  }
  for (;;) {
    tw_http_response_release(resp);
    rc = send_once(c, method, path, body, tok, resp, 0, err);
    if (rc)
      goto out; /* transport: retried by the helper already */
    if (resp->status >= 200 && resp->status < 300)
      goto out;
    slurm_parse_errors(resp->body.data, resp->body.len, &se);
    bool suspect = resp->status == 401 || se.code == 5005 || se.code == 1007 ||
                   se.code == -1;
    if (suspect && !retried && reload_token(c)) {
      retried = true;
      token_free(tok);
      tok = token_copy(c);
      continue;
    }
    break;
  }
  if (resp->status == 401 && !se.text[0])
    snprintf(se.text, sizeof se.text, "authentication failure (no token?)");
  rc = slurm_classify(resp->status, se.code);
  if (se.code == -1) {
    /* ambiguous: probe with a request whose answer is specific */
    struct tw_http_response pr;
    struct tw_err perr = {0};
    struct slurm_error pe = {0};
    tw_http_response_init(&pr);
    if (send_once(c, "DELETE", "/job/0", NULL, tok, &pr, 1, &perr) == TW_OK) {
      slurm_parse_errors(pr.body.data, pr.body.len, &pe);
      if (pr.status == 401 || pe.code == 5005 || pe.code == 1007) {
        rc = TW_E_AUTH;
        snprintf(se.text, sizeof se.text,
                 "the JWT was refused (signed with another key, or for "
                 "another cluster)");
      } else if (pe.code == 1800) {
        snprintf(se.text, sizeof se.text, "%s", pe.text);
        se.code = 1800;
      }
    }
    tw_http_response_release(&pr);
  }
  set_failure(err, rc, method, path, resp->status, &se);
out:
  token_free(tok);
  return rc;
}

static enum tw_rc get_nodes(struct slurm_ctx *c, struct slurm_node **nodes,
                            size_t *n, struct tw_err *err) {
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = call(c, "GET", "/nodes", NULL, &r, err);
  if (rc == TW_OK)
    rc = slurm_parse_nodes(r.body.data, r.body.len, nodes, n, err);
  tw_http_response_release(&r);
  return rc;
}

static enum tw_rc get_partitions(struct slurm_ctx *c,
                                 struct slurm_partition **parts, size_t *n,
                                 struct tw_err *err) {
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = call(c, "GET", "/partitions", NULL, &r, err);
  if (rc == TW_OK)
    rc = slurm_parse_partitions(r.body.data, r.body.len, parts, n, err);
  tw_http_response_release(&r);
  return rc;
}

static enum tw_rc get_jobs(struct slurm_ctx *c, struct slurm_job **jobs,
                           size_t *n, struct tw_err *err) {
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = call(c, "GET", "/jobs", NULL, &r, err);
  if (rc == TW_OK)
    rc = slurm_parse_jobs(r.body.data, r.body.len, jobs, n, err);
  tw_http_response_release(&r);
  return rc;
}

static enum tw_rc get_job(struct slurm_ctx *c, int64_t id,
                          struct slurm_job *out, struct tw_err *err) {
  char path[64];
  snprintf(path, sizeof path, "/job/%lld", (long long)id);
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct slurm_job *jobs = NULL;
  size_t n = 0;
  enum tw_rc rc = call(c, "GET", path, NULL, &r, err);
  if (rc == TW_OK)
    rc = slurm_parse_jobs(r.body.data, r.body.len, &jobs, &n, err);
  tw_http_response_release(&r);
  if (rc == TW_OK) {
    size_t i;
    for (i = 0; i < n && jobs[i].id != id; i++)
      ;
    if (i < n)
      *out = jobs[i];
    else
      rc = tw_err_set(err, TW_E_NOTFOUND, "slurm: no job %lld", (long long)id);
  }
  free(jobs);
  return rc;
}

/* Instance ids are Slurm job ids, in decimal. */
static bool parse_id(const char *id, int64_t *out) {
  if (!id || !*id || strlen(id) > 12)
    return false;
  int64_t v = 0;
  for (const char *p = id; *p; p++) {
    if (!isdigit((unsigned char)*p))
      return false;
    v = v * 10 + (*p - '0');
  }
  *out = v;
  return v > 0;
}

/* ---- inventory and capacity --------------------------------------------- */

static bool partition_offered(const struct slurm_ctx *c, const char *name) {
  if (!c->partitions)
    return true;
  for (size_t i = 0; i < c->n_partitions; i++)
    if (!strcmp(c->partitions[i], name))
      return true;
  return false;
}

static const struct slurm_partition *part_of(const struct inventory *inv,
                                             const char *name) {
  for (size_t i = 0; i < inv->n_parts; i++)
    if (!strcmp(inv->parts[i].name, name))
      return &inv->parts[i];
  return NULL;
}

static bool node_in(const struct slurm_node *n, const char *partition) {
  for (size_t i = 0; i < n->n_partitions; i++)
    if (!strcmp(n->partitions[i], partition))
      return true;
  return false;
}

/* How many slices s fit in what node x has free. */
static int64_t fits(const struct inv_node *x, const struct slice *s) {
  if (!x->n.usable || s->cpus < 1)
    return 0;
  int64_t k = x->free_cpus / s->cpus;
  if (s->mem_mb > 0 && x->free_mem / s->mem_mb < k)
    k = x->free_mem / s->mem_mb;
  if (s->gpus > 0 && x->free_gpus / s->gpus < k)
    k = x->free_gpus / s->gpus;
  return k > 0 ? k : 0;
}

/* Does node x belong to the group of an offer: its partition, its rack,
 * and for a GPU slice its GPU type? */
static bool in_group(const struct inv_node *x, const char *partition,
                     const char *rack, const char *gpu_type, int gpus) {
  if (!node_in(&x->n, partition) || strcmp(x->n.rack, rack))
    return false;
  return gpus == 0 || !strcasecmp(x->n.gpu_type, gpu_type);
}

/* Takes slice s from the best-fitting node of the group: the one left with
 * the fewest free CPUs (bin packing keeps whole nodes free for big
 * slices), ties broken by name.  Returns the node's index or -1. */
static long take(struct inventory *inv, const char *partition, const char *rack,
                 const char *gpu_type, const struct slice *s) {
  long best = -1;
  for (size_t i = 0; i < inv->n_nodes; i++) {
    struct inv_node *x = &inv->nodes[i];
    if (!in_group(x, partition, rack, gpu_type, s->gpus) || fits(x, s) < 1)
      continue;
    if (best < 0 || x->free_cpus < inv->nodes[best].free_cpus ||
        (x->free_cpus == inv->nodes[best].free_cpus &&
         strcmp(x->n.name, inv->nodes[best].n.name) < 0))
      best = (long)i;
  }
  if (best >= 0) {
    struct inv_node *x = &inv->nodes[best];
    x->free_cpus -= s->cpus;
    x->free_mem -= s->mem_mb;
    x->free_gpus -= s->gpus;
  }
  return best;
}

static void give_back(struct inventory *inv, long i, const struct slice *s) {
  if (i < 0 || (size_t)i >= inv->n_nodes)
    return;
  inv->nodes[i].free_cpus += s->cpus;
  inv->nodes[i].free_mem += s->mem_mb;
  inv->nodes[i].free_gpus += s->gpus;
}

static void rack_from_features(const char *features, char *out, size_t size) {
  out[0] = '\0';
  const char *p = strstr(features ? features : "", "rack=");
  if (!p)
    return;
  p += 5;
  size_t n = strcspn(p, ",&|]) ");
  if (n >= size)
    n = size - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}

static bool ours(const struct slurm_job *j) {
  return !strncmp(j->name, SLURM_NAME_PREFIX, strlen(SLURM_NAME_PREFIX)) ||
         !strncmp(j->comment, "tradewind", 9);
}

static void inventory_release(struct inventory *inv) {
  free(inv->nodes);
  free(inv->parts);
  memset(inv, 0, sizeof *inv);
}

/* Reads nodes, partitions and jobs.  Free resources are what the nodes
 * report free, minus what Tradewind's pending jobs will take: a job
 * accepted but not yet started holds its slice (best fit, as at launch). */
static enum tw_rc fetch_inventory(struct slurm_ctx *c, struct inventory *inv,
                                  struct tw_err *err) {
  struct slurm_node *nodes = NULL;
  struct slurm_job *jobs = NULL;
  size_t n_nodes = 0, n_jobs = 0;
  memset(inv, 0, sizeof *inv);
  enum tw_rc rc = get_nodes(c, &nodes, &n_nodes, err);
  if (rc)
    goto out;
  if ((rc = get_partitions(c, &inv->parts, &inv->n_parts, err)))
    goto out;
  if ((rc = get_jobs(c, &jobs, &n_jobs, err)))
    goto out;
  inv->nodes = tw_calloc(n_nodes ? n_nodes : 1, sizeof *inv->nodes);
  for (size_t i = 0; i < n_nodes; i++) {
    struct inv_node *x = &inv->nodes[inv->n_nodes++];
    x->n = nodes[i];
    x->free_cpus = x->n.cpus - x->n.alloc_cpus;
    x->free_mem = x->n.memory_mb - x->n.alloc_memory_mb;
    x->free_gpus = x->n.gpus - x->n.gpus_used;
    if (x->free_cpus < 0)
      x->free_cpus = 0;
    if (x->free_mem < 0)
      x->free_mem = 0;
    if (x->free_gpus < 0)
      x->free_gpus = 0;
  }
  for (size_t i = 0; i < n_jobs; i++) {
    const struct slurm_job *j = &jobs[i];
    if (strcmp(j->state, "PENDING") || !ours(j) || j->restart_cnt > 0)
      continue;
    char rack[SLURM_NAME_MAX];
    rack_from_features(j->features, rack, sizeof rack);
    struct slice s = {j->cpus > 0 ? j->cpus : 1, j->memory_per_node_mb,
                      j->gpus};
    for (int k = 0; k < j->node_count && k < 64; k++)
      take(inv, j->partition, rack, j->gpu_type, &s);
  }
  inv->fetched_ms = tw_clock_now_ms(c->clock);
out:
  free(nodes);
  free(jobs);
  if (rc)
    inventory_release(inv);
  return rc;
}

/* Reads the inventory and makes it the one launches take from. */
static enum tw_rc refresh_inventory(struct slurm_ctx *c, struct tw_err *err) {
  struct inventory inv;
  enum tw_rc rc = fetch_inventory(c, &inv, err);
  if (rc)
    return rc;
  pthread_mutex_lock(&c->lock);
  inventory_release(&c->inv);
  c->inv = inv;
  pthread_mutex_unlock(&c->lock);
  return TW_OK;
}

/* ---- offers ------------------------------------------------------------- */

/* The slices a node is sold in: GPU nodes by GPU (1, 2, 4, ... and all of
 * them, each with its share of CPUs and memory), CPU nodes by CPU (1, 2,
 * 4, ... and all).  Returns the count written to out[max]. */
static size_t node_slices(const struct slurm_node *n, struct slice *out,
                          size_t max) {
  size_t k = 0;
  int whole = n->gpus > 0 ? n->gpus : n->cpus;
  if (whole < 1 || n->cpus < 1)
    return 0;
  for (int u = 1; k<max; u = u * 2> whole && u < whole ? whole : u * 2) {
    struct slice *s = &out[k++];
    if (n->gpus > 0) {
      s->gpus = u;
      s->cpus = (int)((int64_t)n->cpus * u / n->gpus);
      if (s->cpus < 1)
        s->cpus = 1;
    } else {
      s->gpus = 0;
      s->cpus = u;
    }
    s->mem_mb = n->memory_mb * s->cpus / n->cpus;
    if (u >= whole)
      break;
  }
  return k;
}

static void type_name(char *out, size_t size, const struct slice *s,
                      const char *gpu_type) {
  if (s->gpus > 0)
    snprintf(out, size, "c%d-m%lld-%sx%d", s->cpus, (long long)s->mem_mb,
             *gpu_type ? gpu_type : "gpu", s->gpus);
  else
    snprintf(out, size, "c%d-m%lld", s->cpus, (long long)s->mem_mb);
}

static void accel_name(char *out, size_t size, const char *gpu_type) {
  snprintf(out, size, "%s", *gpu_type ? gpu_type : "GPU");
  for (char *p = out; *p; p++)
    *p = (char)toupper((unsigned char)*p);
}

/* The hourly price of a slice: CPUs, GPUs and memory at their rates, the
 * memory share rounded up to the micro-dollar. */
static int64_t slice_price(const struct slurm_ctx *c, const struct slice *s,
                           int64_t gpu_uusd) {
  __int128 p = (__int128)c->cpu_uusd * s->cpus + (__int128)gpu_uusd * s->gpus +
               ((__int128)c->mem_gib_uusd * s->mem_mb + 1023) / 1024;
  return p > TW_MODEL_PRICE_MAX_UUSD ? TW_MODEL_PRICE_MAX_UUSD : (int64_t)p;
}

static void set_ids(const struct tw_provider *p, const struct slurm_ctx *c,
                    struct tw_offer *o) {
  char id[TW_MODEL_ID_MAX];
  int n =
      snprintf(id, sizeof id, "%s:%s:%s%s%s:%s:private", p->account, c->cluster,
               o->zone, o->rack[0] ? "/" : "", o->rack, o->instance_type);
  if (n > 0 && (size_t)n < sizeof id)
    TW_SET(o->id, id);
}

static enum tw_rc slurm_list_offers(struct tw_provider *p,
                                    struct tw_offer_list *out,
                                    struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  enum tw_rc rc = refresh_inventory(c, err);
  if (rc)
    return rc;
  int64_t now = tw_clock_now_ms(c->clock);
  size_t first = out->n, unpriced = 0;
  pthread_mutex_lock(&c->lock);
  const struct inventory *inv = &c->inv;
  for (size_t i = 0; i < inv->n_nodes; i++) {
    const struct slurm_node *n = &inv->nodes[i].n;
    struct slice sl[32];
    size_t ns = node_slices(n, sl, 32);
    int64_t gpu_uusd = 0;
    if (n->gpus > 0 && !gpu_rate(c, n->gpu_type, &gpu_uusd)) {
      unpriced++;
      continue;
    }
    for (size_t pi = 0; pi < n->n_partitions; pi++) {
      const char *pname = n->partitions[pi];
      const struct slurm_partition *part = part_of(inv, pname);
      if (!partition_offered(c, pname) || (part && !part->up))
        continue;
      for (size_t k = 0; k < ns; k++) {
        char ty[TW_MODEL_NAME_MAX];
        type_name(ty, sizeof ty, &sl[k], n->gpu_type);
        /* one offer per partition, rack and slice: nodes of one shape
         * add up */
        bool dup = false;
        for (size_t e = first; e < out->n && !dup; e++)
          dup = !strcmp(out->items[e].zone, pname) &&
                !strcmp(out->items[e].rack, n->rack) &&
                !strcmp(out->items[e].instance_type, ty);
        if (dup || out->n - first >= SLURM_OFFERS_MAX)
          continue;
        struct tw_offer *o = tw_offer_list_add(out);
        TW_SET(o->provider, p->ops->name);
        TW_SET(o->account, p->account);
        TW_SET(o->region, c->cluster);
        TW_SET(o->zone, pname);
        TW_SET(o->rack, n->rack);
        TW_SET(o->instance_type, ty);
        o->arch = n->arch;
        o->vcpus = sl[k].cpus;
        o->memory_mib = sl[k].mem_mb;
        if (sl[k].gpus > 0) {
          accel_name(o->accel_name, sizeof o->accel_name, n->gpu_type);
          o->accel_count = sl[k].gpus;
        }
        o->market = TW_MARKET_PRIVATE;
        o->price_uusd_per_hour = slice_price(c, &sl[k], gpu_uusd);
        o->billing_granularity_s = 1;
        o->min_charge_s = 0;
        o->interruption_pct = 0;
        o->price_observed_ms = now;
        int64_t cap = 0;
        for (size_t m = 0; m < inv->n_nodes; m++)
          if (in_group(&inv->nodes[m], pname, n->rack, n->gpu_type, sl[k].gpus))
            cap += fits(&inv->nodes[m], &sl[k]);
        o->capacity = cap;
        for (size_t l = 0; l < c->n_labels; l++)
          tw_offer_set_label(o, c->labels[l].key, c->labels[l].value);
        tw_offer_set_label(o, "cluster", c->cluster);
        tw_offer_set_label(o, "partition", pname);
        if (n->rack[0])
          tw_offer_set_label(o, "rack", n->rack);
        set_ids(p, c, o);
      }
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (unpriced)
    tw_log_warn("slurm",
                "cluster=%s nodes=%zu not offered: no rates.gpu_hour for "
                "their GPU type",
                c->cluster, unpriced);
  return TW_OK;
}

/* ---- instances ---------------------------------------------------------- */

static void job_to_instance(const struct tw_provider *p,
                            const struct slurm_ctx *c,
                            const struct slurm_job *j, struct tw_instance *o) {
  tw_instance_init(o);
  snprintf(o->id, sizeof o->id, "%lld", (long long)j->id);
  TW_SET(o->provider, p->ops->name);
  TW_SET(o->account, p->account);
  TW_SET(o->region, c->cluster);
  TW_SET(o->zone, j->partition);
  o->market = TW_MARKET_PRIVATE;
  struct slurm_state_map m;
  slurm_map_state(j, &m);
  o->state = m.state;
  o->finished = m.finished;
  o->exit_code = m.exit_code;
  TW_SET(o->provider_state, j->state);
  if (m.requeued)
    o->state = TW_INST_TERMINATED;
  char why[TW_MODEL_TEXT_MAX];
  if (m.requeued)
    snprintf(why, sizeof why, "requeued by Slurm (%s, restart %d)", j->reason,
             j->restart_cnt);
  else if (m.finished)
    snprintf(why, sizeof why, "exit code %d%s%s", m.exit_code,
             strcmp(j->reason, "None") && j->reason[0] ? ", " : "",
             strcmp(j->reason, "None") ? j->reason : "");
  else
    snprintf(why, sizeof why, "%s", strcmp(j->reason, "None") ? j->reason : "");
  TW_SET(o->state_reason, why);
  size_t pl = strlen(SLURM_NAME_PREFIX);
  if (!strncmp(j->name, SLURM_NAME_PREFIX, pl))
    TW_SET(o->client_token, j->name + pl);
  struct slurm_tags t;
  if (slurm_tags_parse(j->comment, &t)) {
    TW_SET(o->job_id, t.job);
    TW_SET(o->attempt_id, t.attempt);
    TW_SET(o->tenant, t.tenant);
    TW_SET(o->instance_type, t.type);
  }
  o->launched_ms = j->submit_time > 0 ? j->submit_time * 1000 : 0;
  /* billing: the allocation's StartTime to its EndTime */
  struct slurm_state_map bm = m;
  bm.state = o->state;
  slurm_run_times(j, &bm, &o->running_ms, &o->ended_ms);
}

/* Cancels job id; a job Slurm no longer knows, or one already ended, is
 * fine. */
static enum tw_rc cancel(struct slurm_ctx *c, int64_t id, struct tw_err *err) {
  char path[64];
  snprintf(path, sizeof path, "/job/%lld", (long long)id);
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err e = {0};
  enum tw_rc rc = call(c, "DELETE", path, NULL, &r, &e);
  if (rc == TW_OK) {
    struct slurm_error se;
    if (slurm_parse_errors(r.body.data, r.body.len, &se) && se.code &&
        se.code != 2017 && se.code != 2021 /* already done */) {
      rc = slurm_classify(500, se.code);
      set_failure(&e, rc, "DELETE", path, r.status, &se);
    }
  } else if (rc == TW_E_NOTFOUND) {
    rc = TW_OK;
  }
  tw_http_response_release(&r);
  if (rc && err && err->rc == TW_OK)
    *err = e;
  return rc;
}

static enum tw_rc slurm_describe(struct tw_provider *p, const char *id,
                                 struct tw_instance *out, struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  int64_t jid;
  if (!parse_id(id, &jid))
    return tw_err_set(err, TW_E_NOTFOUND, "slurm: %s is not a job id", id);
  struct slurm_job j;
  enum tw_rc rc = get_job(c, jid, &j, err);
  if (rc)
    return rc;
  job_to_instance(p, c, &j, out);
  struct slurm_state_map m;
  slurm_map_state(&j, &m);
  if (m.requeued) {
    /* Slurm would run it again later on its own while the broker places
     * it again: cancel Slurm's copy so it runs once.  A failed cancel is
     * retried at the next describe. */
    struct tw_err e = {0};
    if (cancel(c, jid, &e))
      tw_log_warn("slurm", "job=%lld requeued by Slurm, cancel failed: %s",
                  (long long)jid, e.msg);
  }
  return TW_OK;
}

static enum tw_rc slurm_terminate(struct tw_provider *p, const char *id,
                                  struct tw_err *err) {
  int64_t jid;
  if (!parse_id(id, &jid))
    return TW_OK; /* not a job of ours: nothing to stop */
  return cancel(p->ctx, jid, err);
}

static enum tw_rc slurm_list_managed(struct tw_provider *p,
                                     struct tw_instance_list *out,
                                     struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  struct slurm_job *jobs = NULL;
  size_t n = 0;
  enum tw_rc rc = get_jobs(c, &jobs, &n, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++)
    if (ours(&jobs[i]))
      job_to_instance(p, c, &jobs[i], tw_instance_list_add(out));
  free(jobs);
  return TW_OK;
}

/* The job a launch with client token `token` submitted: Slurm has no
 * client token, so the job's name is one (SLURM_NAME_PREFIX + token, as
 * slurm_launch names it).  No job of that name is a definite "none". */
static enum tw_rc slurm_find_by_token(struct tw_provider *p, const char *token,
                                      const char *region,
                                      struct tw_instance *out,
                                      struct tw_err *err) {
  (void)region;
  struct slurm_ctx *c = p->ctx;
  char name[TW_MODEL_TOKEN_MAX + 8];
  snprintf(name, sizeof name, SLURM_NAME_PREFIX "%s", token);
  struct slurm_job *jobs = NULL;
  size_t n = 0;
  enum tw_rc rc = get_jobs(c, &jobs, &n, err);
  if (rc)
    return rc;
  size_t i;
  for (i = 0; i < n && strcmp(jobs[i].name, name); i++)
    ;
  if (i < n)
    job_to_instance(p, c, &jobs[i], out);
  else
    rc = tw_err_set(err, TW_E_NOTFOUND, "slurm: no job named %s", name);
  free(jobs);
  return rc;
}

/* ---- launch ------------------------------------------------------------- */

static void add_env(struct tw_kv **env, size_t *n, size_t *cap, const char *k,
                    const char *v) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*env)[i].key, k)) {
      (*env)[i].value = (char *)v;
      return;
    }
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *env = tw_realloc(*env, *cap * sizeof **env);
  }
  (*env)[*n].key = (char *)k;
  (*env)[(*n)++].value = (char *)v;
}

/* The Slurm GRES type of offer o's GPUs: that of a node in its group
 * ("a100" for accel_name "A100"). */
static void gpu_type_of(struct slurm_ctx *c, const struct tw_offer *o,
                        char *out, size_t size) {
  snprintf(out, size, "%s", o->accel_name);
  for (char *q = out; *q; q++)
    *q = (char)tolower((unsigned char)*q);
  if (!strcmp(out, "gpu"))
    out[0] = '\0';
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->inv.n_nodes; i++)
    if (!strcasecmp(c->inv.nodes[i].n.gpu_type, o->accel_name)) {
      snprintf(out, size, "%s", c->inv.nodes[i].n.gpu_type);
      break;
    }
  pthread_mutex_unlock(&c->lock);
}

/* Takes the offer's slice from the held inventory, reading the inventory
 * again once when it is missing or finds no room.  Returns the node index
 * taken, or TW_E_CAPACITY. */
static enum tw_rc reserve(struct slurm_ctx *c, const struct tw_offer *o,
                          const char *gpu_type, const struct slice *s,
                          int nodes, long *taken, struct tw_err *err) {
  for (int pass = 0; pass < 2; pass++) {
    int64_t now = tw_clock_now_ms(c->clock);
    pthread_mutex_lock(&c->lock);
    bool stale =
        !c->inv.fetched_ms || now - c->inv.fetched_ms >= SLURM_REFRESH_MS;
    if (c->inv.fetched_ms) {
      int k;
      for (k = 0; k < nodes; k++)
        if ((taken[k] = take(&c->inv, o->zone, o->rack, gpu_type, s)) < 0)
          break;
      if (k == nodes) {
        pthread_mutex_unlock(&c->lock);
        return TW_OK;
      }
      while (k-- > 0)
        give_back(&c->inv, taken[k], s);
    }
    pthread_mutex_unlock(&c->lock);
    if (pass == 1 || !stale)
      break;
    enum tw_rc rc = refresh_inventory(c, err);
    if (rc)
      return rc;
  }
  tw_err_set(err, TW_E_CAPACITY,
             "slurm: no room for %d x %s in partition %s%s%s of cluster %s",
             nodes, o->instance_type, o->zone, o->rack[0] ? " rack " : "",
             o->rack, c->cluster);
  tw_err_detail(err, "NoFreeSlice");
  return TW_E_CAPACITY;
}

static enum tw_rc slurm_launch(struct tw_provider *p,
                               const struct tw_launch *req,
                               struct tw_instance *out, struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  const struct tw_offer *o = req->offer;
  char name[TW_MODEL_TOKEN_MAX + 8];
  snprintf(name, sizeof name, SLURM_NAME_PREFIX "%s", req->client_token);

  /* Slurm has no client token: the name is one.  A job of this name means
   * an earlier call with this token got through (its answer was lost). */
  struct slurm_job *jobs = NULL;
  size_t n_jobs = 0;
  enum tw_rc rc = get_jobs(c, &jobs, &n_jobs, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n_jobs; i++)
    if (!strcmp(jobs[i].name, name)) {
      job_to_instance(p, c, &jobs[i], out);
      tw_log_info("slurm", "token=%s job=%lld already submitted; reused",
                  req->client_token, (long long)jobs[i].id);
      free(jobs);
      return TW_OK;
    }
  free(jobs);

  int nodes = req->nodes > 0 ? req->nodes : 1;
  if (nodes > 64)
    return tw_err_set(err, TW_E_INVALID, "slurm: at most 64 nodes, got %d",
                      nodes);
  struct slice s = {o->vcpus, o->memory_mib, o->accel_count};
  char gpu_type[32] = "";
  if (s.gpus > 0)
    gpu_type_of(c, o, gpu_type, sizeof gpu_type);
  long taken[64];
  if ((rc = reserve(c, o, gpu_type, &s, nodes, taken, err)))
    return rc;

  int64_t limit = c->time_limit_min;
  if (req->duration_s > 0)
    /* room beyond the expected run time: a job a bit slower than it said
     * should not be killed at its estimate */
    limit = (req->duration_s * 5 / 4 + 59) / 60;
  pthread_mutex_lock(&c->lock);
  const struct slurm_partition *part = part_of(&c->inv, o->zone);
  if (part && part->max_time_min > 0 && limit > part->max_time_min)
    limit = part->max_time_min;
  pthread_mutex_unlock(&c->lock);

  struct slurm_tags tags;
  memset(&tags, 0, sizeof tags);
  TW_SET(tags.job, req->job_id);
  TW_SET(tags.attempt, req->attempt_id);
  TW_SET(tags.tenant, req->tenant);
  TW_SET(tags.type, o->instance_type);
  struct tw_buf comment, body;
  tw_buf_init(&comment);
  tw_buf_init(&body);
  slurm_tags_format(&tags, &comment);
  char constraint[SLURM_NAME_MAX + 8] = "", output[1100];
  if (o->rack[0])
    snprintf(constraint, sizeof constraint, "rack=%s", o->rack);
  snprintf(output, sizeof output, "%s/tw-%%j.out", c->output_dir);

  struct tw_kv *env = NULL;
  size_t n_env = 0, cap_env = 0;
  add_env(&env, &n_env, &cap_env, "PATH", "/usr/local/bin:/usr/bin:/bin");
  add_env(&env, &n_env, &cap_env, "TRADEWIND_JOB_ID", req->job_id);
  add_env(&env, &n_env, &cap_env, "TRADEWIND_ATTEMPT_ID", req->attempt_id);
  add_env(&env, &n_env, &cap_env, "TRADEWIND_TENANT", req->tenant);
  for (size_t i = 0; req->env && i < req->n_env; i++)
    if (req->env[i].key && *req->env[i].key)
      add_env(&env, &n_env, &cap_env, req->env[i].key,
              req->env[i].value ? req->env[i].value : "");

  struct slurm_submit sub = {.script = req->user_data,
                             .name = name,
                             .comment = comment.data,
                             .partition = o->zone,
                             .constraints = constraint,
                             .nodes = nodes,
                             .cpus = s.cpus,
                             .memory_mb = s.mem_mb,
                             .gpu_type = gpu_type,
                             .gpus = s.gpus,
                             .time_limit_min = limit,
                             .cwd = c->output_dir,
                             .output = output,
                             .env = env,
                             .n_env = n_env};
  slurm_submit_json(&sub, &body);
  free(env);

  struct tw_http_response r;
  tw_http_response_init(&r);
  rc = call(c, "POST", "/job/submit", body.data, &r, err);
  int64_t jid = -1;
  struct slurm_error se = {0};
  if (rc == TW_OK &&
      (rc = slurm_parse_submit(r.body.data, r.body.len, &jid, &se, err)) ==
          TW_OK &&
      jid < 0) {
    rc = slurm_classify(r.status, se.code ? se.code : 2000);
    set_failure(err, rc, "POST", "/job/submit", r.status, &se);
  }
  tw_http_response_release(&r);
  tw_buf_release(&comment);
  tw_buf_release(&body);
  if (rc) {
    pthread_mutex_lock(&c->lock);
    for (int k = 0; k < nodes; k++)
      give_back(&c->inv, taken[k], &s);
    pthread_mutex_unlock(&c->lock);
    return rc;
  }
  if (se.code)
    tw_log_info("slurm", "job=%lld submitted with a note: %d %s",
                (long long)jid, se.code, se.text);

  tw_instance_init(out);
  snprintf(out->id, sizeof out->id, "%lld", (long long)jid);
  TW_SET(out->region, c->cluster);
  TW_SET(out->zone, o->zone);
  TW_SET(out->instance_type, o->instance_type);
  out->market = TW_MARKET_PRIVATE;
  out->state = TW_INST_PENDING;
  TW_SET(out->provider_state, "PENDING");
  TW_SET(out->client_token, req->client_token);
  TW_SET(out->job_id, req->job_id);
  TW_SET(out->attempt_id, req->attempt_id);
  TW_SET(out->tenant, req->tenant);
  out->launched_ms = tw_clock_now_ms(c->clock);
  return TW_OK;
}

/* ---- events ------------------------------------------------------------- */

/* A running job of ours on a node that is down or not responding, or a job
 * Slurm requeued: the job is lost where it ran.  Each notice keeps the
 * time it was first seen, so repeated polls report the same notice. */
static enum tw_rc slurm_poll_events(struct tw_provider *p,
                                    struct tw_event_list *out,
                                    struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  struct slurm_node *nodes = NULL;
  struct slurm_job *jobs = NULL;
  size_t n_nodes = 0, n_jobs = 0;
  enum tw_rc rc = get_nodes(c, &nodes, &n_nodes, err);
  if (rc == TW_OK)
    rc = get_jobs(c, &jobs, &n_jobs, err);
  if (rc) {
    free(nodes);
    return rc;
  }
  int64_t now = tw_clock_now_ms(c->clock);
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->n_notices; i++)
    c->notices[i].seen = false;
  for (size_t i = 0; i < n_jobs; i++) {
    const struct slurm_job *j = &jobs[i];
    if (!ours(j))
      continue;
    struct slurm_state_map m;
    slurm_map_state(j, &m);
    bool lost = m.requeued;
    if (!lost && m.state == TW_INST_RUNNING && j->nodes[0])
      for (size_t k = 0; k < n_nodes && !lost; k++)
        lost = nodes[k].down && slurm_hostlist_has(j->nodes, nodes[k].name);
    if (!lost)
      continue;
    size_t e;
    for (e = 0; e < c->n_notices && c->notices[e].job_id != j->id; e++)
      ;
    if (e == c->n_notices) {
      if (c->n_notices == SLURM_NOTICES_MAX)
        continue;
      c->notices =
          tw_realloc(c->notices, (c->n_notices + 1) * sizeof *c->notices);
      c->notices[e].job_id = j->id;
      c->notices[e].noticed_ms = now;
      c->n_notices++;
    }
    c->notices[e].seen = true;
    struct tw_event *ev = tw_event_list_add(out);
    ev->kind = TW_EVENT_INTERRUPTION;
    snprintf(ev->instance_id, sizeof ev->instance_id, "%lld", (long long)j->id);
    TW_SET(ev->action, "terminate");
    ev->noticed_ms = c->notices[e].noticed_ms;
    ev->deadline_ms = c->notices[e].noticed_ms; /* already lost */
  }
  /* forget notices whose job is over */
  size_t kept = 0;
  for (size_t i = 0; i < c->n_notices; i++)
    if (c->notices[i].seen)
      c->notices[kept++] = c->notices[i];
  c->n_notices = kept;
  pthread_mutex_unlock(&c->lock);
  free(nodes);
  free(jobs);
  return TW_OK;
}

/* ---- output ------------------------------------------------------------- */

/* Reads the job's output file (stdout and stderr merged, as submitted).
 * The job's state is read before the file: a job already ended before the
 * read has written everything, so reading up to the end is the end. */
static enum tw_rc slurm_read_output(struct tw_provider *p, const char *id,
                                    int64_t offset, size_t max,
                                    struct tw_buf *out, bool *eof,
                                    struct tw_err *err) {
  struct slurm_ctx *c = p->ctx;
  int64_t jid;
  *eof = false;
  if (!parse_id(id, &jid)) /* also keeps the path inside output_dir */
    return tw_err_set(err, TW_E_NOTFOUND, "slurm: %s is not a job id", id);
  struct slurm_job j;
  struct tw_err jerr = {0};
  bool ended, known = true;
  enum tw_rc rc = get_job(c, jid, &j, &jerr);
  if (rc == TW_E_NOTFOUND) {
    known = false; /* purged after MinJobAge: long over */
    ended = true;
  } else if (rc) {
    if (err && err->rc == TW_OK)
      *err = jerr;
    return rc;
  } else {
    struct slurm_state_map m;
    slurm_map_state(&j, &m);
    ended = m.state == TW_INST_TERMINATED;
  }
  char path[1200];
  snprintf(path, sizeof path, "%s/tw-%lld.out", c->output_dir, (long long)jid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT)
      return tw_err_set(err, TW_E_IO, "slurm: cannot read %s: %s", path,
                        strerror(errno));
    if (!known)
      return tw_err_set(err, TW_E_NOTFOUND, "slurm: no job %lld and no output",
                        (long long)jid);
    *eof = ended; /* ended before it could write anything */
    return TW_OK;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return tw_err_set(err, TW_E_IO, "slurm: cannot stat %s", path);
  }
  size_t want = max;
  if (offset >= st.st_size)
    want = 0;
  else if ((uint64_t)(st.st_size - offset) < want)
    want = (size_t)(st.st_size - offset);
  size_t got = 0;
  if (want) {
    char *buf = tw_malloc(want);
    while (got < want) {
      ssize_t k =
          pread(fd, buf + got, want - got, (off_t)(offset + (int64_t)got));
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        break;
      got += (size_t)k;
    }
    tw_buf_add(out, buf, got);
    free(buf);
  }
  close(fd);
  *eof = ended && offset + (int64_t)got >= st.st_size;
  return TW_OK;
}

/* A private cluster publishes no price list (the catalog's accounts[]
 * give one); Slurm sends SIGTERM ahead of the kill (scancel --signal,
 * GraceTime) and has no metadata endpoint. */
static const struct tw_provider_info slurm_info = {
    .billing = {.kind = TW_BILLING_FROM_CONFIG,
                .source = "a private cluster: the chargeback rates of "
                          "billing.providers.<name>.chargeback"},
    .notice_url = "",
    .notice_signal = "TERM",
    .focus_provider = "Slurm",
    .focus_compute_service = "Slurm Cluster",
    .focus_network_service = "Data Transfer",
    .focus_resource_type = "Batch Job",
    .catalog_zone_ids = false,
    .catalog_risk_feed = false,
    .arch_of_type = NULL, /* a cluster's nodes say theirs */
    .type_accels = NULL};

const struct tw_provider_ops tw_provider_slurm = {
    .name = "slurm",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports =
        TW_PROV_EVENTS | TW_PROV_ZONES | TW_PROV_CLIENT_TOKEN | TW_PROV_BATCH,
    .init = slurm_init,
    .list_offers = slurm_list_offers,
    .launch = slurm_launch,
    .describe = slurm_describe,
    .terminate = slurm_terminate,
    .list_managed = slurm_list_managed,
    .poll_events = slurm_poll_events,
    .free = slurm_free,
    .read_output = slurm_read_output,
    .info = &slurm_info,
    .find_by_token = slurm_find_by_token,
};
