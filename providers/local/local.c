/* local.c - the local provider: jobs run on the broker's own host
 * (docs/providers.md "local").
 *
 * A launch runs the attempt's user data (the agent's bootstrap, or a
 * plain script) with `sh` in a sandbox directory <dir>/<instance id>, as
 * the fake clouds boot an instance: a session of its own (so a process
 * group of its own), that directory as working directory,
 * TRADEWIND_AGENT_DIR and TRADEWIND_INSTANCE_ID set.  The process is
 * double-forked, so it outlives the daemon and leaves no zombie.  The
 * process table is the directory itself: each sandbox has `instance.json`
 * (id, client token, tags, type, session, launch and end times), written
 * whole before the launch answers, so describe, terminate and
 * list_managed work the same after a broker restart.  An instance is
 * running while a process of its session lives; terminate SIGKILLs every
 * process of the session (found through /proc).
 *
 * Offers: slices of the configured capacity (`cpus`, `memory_gib`), one
 * instance type per power of two of CPUs (`local-1c`, `local-2c`, ...,
 * and the whole host), market private, priced at the chargeback rates
 * (`rates.cpu_hour`, `rates.mem_gib_hour`; default 0), capacity = how many
 * of that slice fit in what running instances leave free. */
#include "providers/local/local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"

extern char **environ;

#define LOCAL_REGION "local"

struct local_ctx {
  char *dir;
  int64_t cpus;
  int64_t memory_mib;
  int64_t cpu_uusd, mem_gib_uusd; /* per hour */
  pthread_mutex_t lock;           /* launches and terminates */
};

static const char *const local_keys[] = {"dir", "cpus", "memory_gib", "rates",
                                         NULL};

/* ---- config -------------------------------------------------------------- */

static enum tw_rc read_rates(struct local_ctx *c, const struct tw_node *r,
                             struct tw_err *err) {
  if (!r)
    return TW_OK;
  if (r->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "rates",
                        "rates: expected a mapping with cpu_hour and "
                        "mem_gib_hour");
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->keys[i], "cpu_hour") && strcmp(r->keys[i], "mem_gib_hour"))
      return tw_err_field(err, TW_E_INVALID, "rates",
                          "rates.%s: unknown key; expected cpu_hour or "
                          "mem_gib_hour",
                          r->keys[i]);
  const struct tw_node *v;
  struct tw_err e = {0};
  if ((v = tw_node_get(r, "cpu_hour")) &&
      (v->kind != TW_NODE_SCALAR ||
       tw_provider_usd_to_uusd(v->str, &c->cpu_uusd, &e) || c->cpu_uusd < 0))
    return tw_err_field(err, TW_E_INVALID, "rates.cpu_hour",
                        "rates.cpu_hour: expected a USD amount such as "
                        "\"0.01\"");
  if ((v = tw_node_get(r, "mem_gib_hour")) &&
      (v->kind != TW_NODE_SCALAR ||
       tw_provider_usd_to_uusd(v->str, &c->mem_gib_uusd, &e) ||
       c->mem_gib_uusd < 0))
    return tw_err_field(err, TW_E_INVALID, "rates.mem_gib_hour",
                        "rates.mem_gib_hour: expected a USD amount such as "
                        "\"0.001\"");
  return TW_OK;
}

static enum tw_rc local_init(struct tw_provider *p, const struct tw_node *cfg,
                             struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_check_keys(cfg, local_keys, err);
  if (rc)
    return rc;
  struct local_ctx *c = tw_calloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  p->ctx = c;
  const char *dir;
  if ((rc = tw_provider_cfg_str(cfg, "dir", NULL, &dir, err)))
    return rc;
  if (!dir || !*dir)
    return tw_err_field(err, TW_E_INVALID, "dir",
                        "dir: expected a directory for the instances' "
                        "sandboxes");
  if (strlen(dir) > 3000)
    return tw_err_field(err, TW_E_INVALID, "dir", "dir: too long");
  if (dir[0] == '/') {
    c->dir = tw_strdup(dir);
  } else {
    /* Relative, like `db`: against the directory tradewindd starts in,
     * fixed now so that the sandboxes do not move with a later chdir. */
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd))
      return tw_err_field(err, TW_E_INVALID, "dir",
                          "dir: relative, and the working directory "
                          "cannot be read: %s",
                          strerror(errno));
    c->dir = tw_asprintf("%s/%s", cwd, dir);
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  int64_t mem_gib =
      pages > 0 && psz > 0 ? (int64_t)pages * psz / (INT64_C(1) << 30) : 1;
  if ((rc = tw_provider_cfg_int(cfg, "cpus", 1, 4096, ncpu > 0 ? ncpu : 1,
                                &c->cpus, err)) ||
      (rc = tw_provider_cfg_int(cfg, "memory_gib", 1, 1 << 20,
                                mem_gib > 0 ? mem_gib : 1, &mem_gib, err)))
    return rc;
  c->memory_mib = mem_gib * 1024;
  return read_rates(c, tw_node_get(cfg, "rates"), err);
}

static void local_free(struct tw_provider *p) {
  struct local_ctx *c = p->ctx;
  if (!c)
    return;
  free(c->dir);
  pthread_mutex_destroy(&c->lock);
  free(c);
  p->ctx = NULL;
}

/* ---- the process table ---------------------------------------------------
 */

struct rec {
  char id[40];
  char client_token[TW_MODEL_TOKEN_MAX];
  char job_id[TW_MODEL_TAG_MAX], attempt_id[TW_MODEL_TAG_MAX],
      tenant[TW_MODEL_TAG_MAX];
  char type[32];
  int cpus;
  int64_t sid;
  int64_t launched_ms, ended_ms; /* ended: 0 while not terminated */
  bool terminated;
};

/* The instance id of a client token: a launch sent again finds its
 * sandbox. */
static void id_of(const char *token, char out[40]) {
  unsigned char h[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)token, strlen(token), h);
  strcpy(out, "lc-");
  for (int i = 0; i < 10; i++)
    snprintf(out + 3 + 2 * i, 3, "%02x", h[i]);
}

static bool id_ok(const char *id) {
  if (strncmp(id, "lc-", 3) || strlen(id) != 23)
    return false;
  for (const char *s = id + 3; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return false;
  return true;
}

static void path_of(const struct local_ctx *c, const char *id, const char *leaf,
                    char *out, size_t cap) {
  int n = snprintf(out, cap, "%s/%s%s%s", c->dir, id, leaf ? "/" : "",
                   leaf ? leaf : "");
  if (n < 0 || (size_t)n >= cap)
    out[0] = '\0';
}

static enum tw_rc rec_save(const struct local_ctx *c, const struct rec *r,
                           struct tw_err *err) {
  json_t *o = json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:b}", "id", r->id,
      "client_token", r->client_token, "job_id", r->job_id, "attempt_id",
      r->attempt_id, "tenant", r->tenant, "type", r->type, "cpus", r->cpus,
      "sid", (json_int_t)r->sid, "launched_ms", (json_int_t)r->launched_ms,
      "ended_ms", (json_int_t)r->ended_ms, "terminated", r->terminated);
  char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  char path[4096], tmp[4200];
  path_of(c, r->id, "instance.json", path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = txt && path[0] ? fopen(tmp, "w") : NULL;
  bool ok = f && fputs(txt, f) >= 0;
  if (f && fclose(f))
    ok = false;
  free(txt);
  if (!ok || rename(tmp, path)) {
    unlink(tmp);
    return tw_err_set(err, TW_E_IO, "local: cannot write %s: %s", path,
                      strerror(errno));
  }
  return TW_OK;
}

static void jcopy(json_t *o, const char *k, char *out, size_t cap) {
  const char *s = json_string_value(json_object_get(o, k));
  snprintf(out, cap, "%s", s ? s : "");
}

/* TW_E_NOTFOUND when there is no such sandbox. */
static enum tw_rc rec_load(const struct local_ctx *c, const char *id,
                           struct rec *r, struct tw_err *err) {
  memset(r, 0, sizeof *r);
  if (!id_ok(id))
    return tw_err_set(err, TW_E_NOTFOUND, "local: no instance %s", id);
  char path[4096];
  path_of(c, id, "instance.json", path, sizeof path);
  json_error_t je;
  json_t *o = json_load_file(path, 0, &je);
  if (!o)
    return tw_err_set(err, errno == ENOENT ? TW_E_NOTFOUND : TW_E_IO,
                      "local: no instance %s", id);
  jcopy(o, "id", r->id, sizeof r->id);
  jcopy(o, "client_token", r->client_token, sizeof r->client_token);
  jcopy(o, "job_id", r->job_id, sizeof r->job_id);
  jcopy(o, "attempt_id", r->attempt_id, sizeof r->attempt_id);
  jcopy(o, "tenant", r->tenant, sizeof r->tenant);
  jcopy(o, "type", r->type, sizeof r->type);
  r->cpus = (int)json_integer_value(json_object_get(o, "cpus"));
  r->sid = json_integer_value(json_object_get(o, "sid"));
  r->launched_ms = json_integer_value(json_object_get(o, "launched_ms"));
  r->ended_ms = json_integer_value(json_object_get(o, "ended_ms"));
  r->terminated = json_is_true(json_object_get(o, "terminated"));
  json_decref(o);
  if (strcmp(r->id, id))
    return tw_err_set(err, TW_E_IO, "local: %s holds another instance", path);
  return TW_OK;
}

/* The session of process pid (/proc/<pid>/stat, field 6); -1 for a
 * zombie or an unreadable one. */
static pid_t session_of(const char *pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  int ppid, pgrp, sess;
  char st;
  if (!p || sscanf(p + 1, " %c %d %d %d", &st, &ppid, &pgrp, &sess) != 4)
    return -1;
  return st == 'Z' ? -1 : (pid_t)sess;
}

/* Sends sig (0: none) to every live process of session sid; returns how
 * many there are. */
static int session_signal(pid_t sid, int sig) {
  if (sid <= 1)
    return 0;
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    if (session_of(de->d_name) == sid) {
      n++;
      if (sig)
        kill((pid_t)atoi(de->d_name), sig);
    }
  }
  closedir(d);
  return n;
}

static int slice_cpus(const char *type) {
  int n = 0;
  if (sscanf(type, "local-%dc", &n) != 1)
    return 0;
  return n;
}

static void to_instance(const struct tw_provider *p, const struct rec *r,
                        struct tw_instance *o) {
  tw_instance_init(o);
  TW_SET(o->id, r->id);
  TW_SET(o->provider, p->ops->name);
  TW_SET(o->account, p->account);
  TW_SET(o->region, LOCAL_REGION);
  TW_SET(o->instance_type, r->type);
  o->market = TW_MARKET_PRIVATE;
  TW_SET(o->client_token, r->client_token);
  TW_SET(o->job_id, r->job_id);
  TW_SET(o->attempt_id, r->attempt_id);
  TW_SET(o->tenant, r->tenant);
  o->launched_ms = r->launched_ms;
  TW_SET(o->private_ip, "127.0.0.1");
  bool alive = !r->terminated && session_signal((pid_t)r->sid, 0) > 0;
  if (alive) {
    o->state = TW_INST_RUNNING;
    TW_SET(o->provider_state, "running");
  } else {
    o->state = TW_INST_TERMINATED;
    TW_SET(o->provider_state, r->terminated ? "terminated" : "exited");
    TW_SET(o->state_reason,
           r->terminated ? "terminated by the broker" : "its processes ended");
  }
}

/* ---- operations ----------------------------------------------------------
 */

static void set_offer(struct tw_provider *p, const struct local_ctx *c, int n,
                      int64_t free_cpus, int64_t free_mib,
                      struct tw_offer_list *out) {
  struct tw_offer *o = tw_offer_list_add(out);
  char type[32];
  snprintf(type, sizeof type, "local-%dc", n);
  TW_SET(o->provider, p->ops->name);
  TW_SET(o->account, p->account);
  TW_SET(o->region, LOCAL_REGION);
  /* one host is one zone: a gang of several nodes fits on it */
  TW_SET(o->zone, LOCAL_REGION);
  TW_SET(o->instance_type, type);
  o->vcpus = n;
  o->memory_mib = c->memory_mib * n / c->cpus;
  o->market = TW_MARKET_PRIVATE;
  o->price_uusd_per_hour =
      c->cpu_uusd * n + c->mem_gib_uusd * (o->memory_mib / 1024);
  o->billing_granularity_s = 1;
  o->min_charge_s = 0;
  o->interruption_pct = 0;
  int64_t by_cpu = free_cpus / n;
  int64_t by_mem = o->memory_mib ? free_mib / o->memory_mib : by_cpu;
  o->capacity = by_cpu < by_mem ? by_cpu : by_mem;
  o->price_observed_ms = tw_clock_now_ms(p->clock);
  tw_offer_set_label(o, "host", "local");
  char id[TW_MODEL_ID_MAX];
  int len = snprintf(id, sizeof id, "%s:%s::%s:private", p->account,
                     LOCAL_REGION, type);
  if (len > 0 && (size_t)len < sizeof id)
    TW_SET(o->id, id);
}

static enum tw_rc local_list_managed(struct tw_provider *p,
                                     struct tw_instance_list *out,
                                     struct tw_err *err);

static enum tw_rc local_list_offers(struct tw_provider *p,
                                    struct tw_offer_list *out,
                                    struct tw_err *err) {
  struct local_ctx *c = p->ctx;
  struct tw_instance_list live;
  tw_instance_list_init(&live);
  enum tw_rc rc = local_list_managed(p, &live, err);
  if (rc) {
    tw_instance_list_release(&live);
    return rc;
  }
  int64_t used = 0;
  for (size_t i = 0; i < live.n; i++)
    if (live.items[i].state == TW_INST_RUNNING)
      used += slice_cpus(live.items[i].instance_type);
  tw_instance_list_release(&live);
  int64_t free_cpus = c->cpus - used < 0 ? 0 : c->cpus - used;
  int64_t free_mib = c->memory_mib * free_cpus / c->cpus;
  int n;
  for (n = 1; n < c->cpus; n *= 2)
    set_offer(p, c, n, free_cpus, free_mib, out);
  set_offer(p, c, (int)c->cpus, free_cpus, free_mib, out);
  return TW_OK;
}

/* Starts sh on the sandbox's user-data, double-forked into a session of
 * its own; returns the session id, or -1. */
static pid_t spawn(const char *sandbox, const char *id) {
  char script[4200], log[4200], envdir[4200], envid[96];
  snprintf(script, sizeof script, "%s/user-data", sandbox);
  snprintf(log, sizeof log, "%s/console.log", sandbox);
  snprintf(envdir, sizeof envdir, "TRADEWIND_AGENT_DIR=%s", sandbox);
  snprintf(envid, sizeof envid, "TRADEWIND_INSTANCE_ID=%s", id);
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = tw_calloc(n + 3, sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TRADEWIND_AGENT_DIR=", 20) &&
        strncmp(environ[i], "TRADEWIND_INSTANCE_ID=", 22) &&
        strncmp(environ[i], "TRADEWIND_METADATA_URL=", 23))
      env[k++] = environ[i];
  env[k++] = envdir;
  env[k++] = envid;
  env[k] = NULL;
  int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pfd[2];
  if (out < 0 || nul < 0 || pipe(pfd)) {
    if (out >= 0)
      close(out);
    if (nul >= 0)
      close(nul);
    free(env);
    return -1;
  }
  char *argv[] = {"sh", script, NULL};
  pid_t child = fork();
  if (child == 0) {
    close(pfd[0]);
    pid_t sid = setsid();
    pid_t g = sid < 0 ? -1 : fork();
    if (g == 0) {
      close(pfd[1]);
      if (chdir(sandbox))
        _exit(126);
      dup2(nul, 0);
      dup2(out, 1);
      dup2(out, 2);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, NULL);
      signal(SIGPIPE, SIG_DFL);
      execve("/bin/sh", argv, env);
      _exit(127);
    }
    int32_t v = g < 0 ? -1 : (int32_t)sid;
    if (write(pfd[1], &v, sizeof v) != (ssize_t)sizeof v)
      _exit(1);
    _exit(0);
  }
  close(pfd[1]);
  close(out);
  close(nul);
  free(env);
  int32_t sid = -1;
  if (child > 0) {
    if (read(pfd[0], &sid, sizeof sid) != (ssize_t)sizeof sid)
      sid = -1;
    int st;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
      ;
  }
  close(pfd[0]);
  return (pid_t)sid;
}

static enum tw_rc local_launch(struct tw_provider *p,
                               const struct tw_launch *req,
                               struct tw_instance *out, struct tw_err *err) {
  struct local_ctx *c = p->ctx;
  if (!req->client_token || !*req->client_token)
    return tw_err_field(err, TW_E_INVALID, "client_token",
                        "local: a launch needs a client token");
  int cpus = slice_cpus(req->offer->instance_type);
  if (cpus < 1 || cpus > c->cpus || strcmp(req->offer->region, LOCAL_REGION))
    return tw_err_set(err, TW_E_INVALID,
                      "local: no instance type %s here (offers: local-Nc)",
                      req->offer->instance_type);
  struct rec r;
  char id[40];
  id_of(req->client_token, id);
  pthread_mutex_lock(&c->lock);
  struct tw_err e2 = {0};
  enum tw_rc rc = rec_load(c, id, &r, &e2);
  if (rc == TW_OK) { /* the same launch again */
    pthread_mutex_unlock(&c->lock);
    to_instance(p, &r, out);
    return TW_OK;
  }
  /* what is free, counted as list_offers counts it */
  struct tw_offer_list offers;
  tw_offer_list_init(&offers);
  pthread_mutex_unlock(&c->lock);
  rc = local_list_offers(p, &offers, err);
  pthread_mutex_lock(&c->lock);
  int64_t cap = 0;
  for (size_t i = 0; i < offers.n; i++)
    if (!strcmp(offers.items[i].instance_type, req->offer->instance_type))
      cap = offers.items[i].capacity;
  tw_offer_list_release(&offers);
  if (rc || cap < 1) {
    pthread_mutex_unlock(&c->lock);
    return rc ? rc
              : tw_err_set(err, TW_E_CAPACITY,
                           "local: no room for %s (the host's cpus are taken)",
                           req->offer->instance_type);
  }
  char sandbox[4096], ud[4200];
  mkdir(c->dir, 0700);
  path_of(c, id, NULL, sandbox, sizeof sandbox);
  if (!sandbox[0] || (mkdir(sandbox, 0700) && errno != EEXIST)) {
    pthread_mutex_unlock(&c->lock);
    return tw_err_set(err, TW_E_IO, "local: cannot make %s: %s", sandbox,
                      strerror(errno));
  }
  path_of(c, id, "user-data", ud, sizeof ud);
  FILE *f = fopen(ud, "w");
  const char *script = req->user_data ? req->user_data : "";
  bool ok = f && fputs(script, f) >= 0;
  if (f && fclose(f))
    ok = false;
  if (!ok) {
    pthread_mutex_unlock(&c->lock);
    return tw_err_set(err, TW_E_IO, "local: cannot write %s", ud);
  }
  memset(&r, 0, sizeof r);
  snprintf(r.id, sizeof r.id, "%s", id);
  TW_SET(r.client_token, req->client_token);
  TW_SET(r.job_id, req->job_id ? req->job_id : "");
  TW_SET(r.attempt_id, req->attempt_id ? req->attempt_id : "");
  TW_SET(r.tenant, req->tenant ? req->tenant : "");
  TW_SET(r.type, req->offer->instance_type);
  r.cpus = cpus;
  r.launched_ms = tw_clock_now_ms(p->clock);
  /* written before the process starts, then with its session: a crash in
   * between leaves a record whose session is 0, which reads as gone */
  if ((rc = rec_save(c, &r, err))) {
    pthread_mutex_unlock(&c->lock);
    return rc;
  }
  r.sid = spawn(sandbox, id);
  if (r.sid <= 0) {
    r.terminated = true;
    r.ended_ms = r.launched_ms;
    rec_save(c, &r, NULL);
    pthread_mutex_unlock(&c->lock);
    return tw_err_set(err, TW_E_IO, "local: cannot start %s", id);
  }
  rc = rec_save(c, &r, err);
  pthread_mutex_unlock(&c->lock);
  if (rc) {
    session_signal((pid_t)r.sid, SIGKILL);
    return rc;
  }
  tw_log_info("local", "instance=%s session=%lld job=%s launched", id,
              (long long)r.sid, r.job_id);
  to_instance(p, &r, out);
  return TW_OK;
}

static enum tw_rc local_describe(struct tw_provider *p, const char *id,
                                 struct tw_instance *out, struct tw_err *err) {
  struct rec r;
  enum tw_rc rc = rec_load(p->ctx, id, &r, err);
  if (rc)
    return rc;
  to_instance(p, &r, out);
  return TW_OK;
}

static enum tw_rc local_terminate(struct tw_provider *p, const char *id,
                                  struct tw_err *err) {
  struct local_ctx *c = p->ctx;
  struct rec r;
  pthread_mutex_lock(&c->lock);
  enum tw_rc rc = rec_load(c, id, &r, err);
  if (rc == TW_OK) {
    session_signal((pid_t)r.sid, SIGKILL);
    if (!r.terminated) {
      r.terminated = true;
      r.ended_ms = tw_clock_now_ms(p->clock);
      rc = rec_save(c, &r, err);
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (rc == TW_E_NOTFOUND) {
    tw_err_clear(err);
    return TW_OK; /* idempotent: nothing of that id is running here */
  }
  return rc;
}

static enum tw_rc local_list_managed(struct tw_provider *p,
                                     struct tw_instance_list *out,
                                     struct tw_err *err) {
  struct local_ctx *c = p->ctx;
  DIR *d = opendir(c->dir);
  if (!d)
    return errno == ENOENT
               ? TW_OK
               : tw_err_set(err, TW_E_IO, "local: cannot read %s", c->dir);
  struct dirent *de;
  while ((de = readdir(d))) {
    struct rec r;
    struct tw_err e = {0};
    if (!id_ok(de->d_name) || rec_load(c, de->d_name, &r, &e))
      continue;
    if (!r.job_id[0])
      continue;
    to_instance(p, &r, tw_instance_list_add(out));
  }
  closedir(d);
  return TW_OK;
}

static enum tw_rc local_find_by_token(struct tw_provider *p, const char *token,
                                      const char *region,
                                      struct tw_instance *out,
                                      struct tw_err *err) {
  char id[40];
  id_of(token, id);
  return local_describe(p, id, out, err);
}

static const struct tw_provider_info local_info = {
    .billing = {.kind = TW_BILLING_FROM_CONFIG,
                .source = "the broker's own host: the chargeback rates of "
                          "the provider's rates (default 0)"},
    .notice_url = "",
    .notice_signal = "",
    .focus_provider = "Local",
    .focus_compute_service = "Local Host",
    .focus_network_service = "Data Transfer",
    .catalog_zone_ids = false,
    .catalog_risk_feed = false,
    .arch_of_type = NULL,
    .type_accels = NULL};

const struct tw_provider_ops tw_provider_local = {
    .name = "local",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports = TW_PROV_CLIENT_TOKEN,
    .init = local_init,
    .list_offers = local_list_offers,
    .launch = local_launch,
    .describe = local_describe,
    .terminate = local_terminate,
    .list_managed = local_list_managed,
    .poll_events = NULL,
    .free = local_free,
    .read_output = NULL,
    .info = &local_info,
    .find_by_token = local_find_by_token,
};
