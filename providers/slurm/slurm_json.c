/* slurm_json.c - see slurm_json.h. */
#include "providers/slurm/slurm_json.h"
#include "broker/base/hex.h"
#include "broker/core/spec.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bodies larger than this are not parsed (the http helper caps them too). */
#define SLURM_JSON_MAX (64u << 20)

static json_t *load(const char *body, size_t len, struct tw_err *err) {
  json_error_t je;
  if (!body || len > SLURM_JSON_MAX) {
    tw_err_set(err, TW_E_INVALID, "slurm: answer missing or too large");
    return NULL;
  }
  json_t *root = json_loadb(body, len, JSON_DECODE_ANY, &je);
  if (!root) {
    tw_err_set(err, TW_E_INVALID, "slurm: answer is not JSON: %s (line %d)",
               je.text, je.line);
    return NULL;
  }
  if (!json_is_object(root)) {
    json_decref(root);
    tw_err_set(err, TW_E_INVALID, "slurm: answer is not a JSON object");
    return NULL;
  }
  return root;
}

/* ---- field readers: absent, null or of another type reads as the default */

static void get_str(const json_t *o, const char *key, char *dst, size_t size) {
  const json_t *v = json_object_get(o, key);
  const char *s = json_is_string(v) ? json_string_value(v) : "";
  size_t n = strlen(s);
  if (n >= size)
    n = size - 1; /* free text only: ids are never read through here */
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static int64_t get_int(const json_t *o, const char *key, int64_t def) {
  const json_t *v = json_object_get(o, key);
  if (json_is_integer(v))
    return (int64_t)json_integer_value(v);
  if (json_is_real(v)) {
    double d = json_real_value(v);
    if (d > -9e18 && d < 9e18)
      return (int64_t)d;
  }
  return def;
}

static int clamp_int(int64_t v) {
  if (v < 0)
    return 0;
  return v > 1 << 30 ? 1 << 30 : (int)v;
}

/* ---- errors ----------------------------------------------------------- */

static void read_error(const json_t *e, struct slurm_error *out) {
  memset(out, 0, sizeof *out);
  int64_t code = get_int(e, "error_code", 0);
  if (!code)
    code = get_int(e, "error_number", 0);
  if (!code)
    code = get_int(e, "errno", 0);
  if (code < -1000000 || code > 1000000)
    code = -1;
  out->code = (int)code;
  char what[96], desc[150];
  get_str(e, "error", what, sizeof what);
  get_str(e, "description", desc, sizeof desc);
  if (*what && *desc && strstr(desc, what) == NULL)
    snprintf(out->text, sizeof out->text, "%s: %s", what, desc);
  else
    snprintf(out->text, sizeof out->text, "%s", *desc ? desc : what);
  if (!out->code && !out->text[0])
    snprintf(out->text, sizeof out->text, "unspecified error");
}

static size_t errors_of(const json_t *root, struct slurm_error *first) {
  const json_t *a = json_object_get(root, "errors");
  if (first)
    memset(first, 0, sizeof *first);
  if (!json_is_array(a) || json_array_size(a) == 0)
    return 0;
  if (first)
    read_error(json_array_get(a, 0), first);
  return json_array_size(a);
}

size_t slurm_parse_errors(const char *body, size_t len,
                          struct slurm_error *first) {
  if (first)
    memset(first, 0, sizeof *first);
  json_t *root = load(body, len, NULL);
  if (!root)
    return 0;
  size_t n = errors_of(root, first);
  json_decref(root);
  return n;
}

/* ---- GRES and features -------------------------------------------------- */

int slurm_gres_gpus(const char *gres, char *type, size_t type_size) {
  int total = 0;
  if (type && type_size)
    type[0] = '\0';
  if (!gres)
    return 0;
  const char *p = gres;
  while (*p) {
    /* one entry: up to a comma outside parentheses */
    const char *q = p;
    int depth = 0;
    while (*q && (depth > 0 || *q != ',')) {
      if (*q == '(')
        depth++;
      else if (*q == ')' && depth > 0)
        depth--;
      q++;
    }
    char ent[128];
    size_t n = (size_t)(q - p);
    if (n >= sizeof ent)
      n = sizeof ent - 1;
    memcpy(ent, p, n);
    ent[n] = '\0';
    char *paren = strchr(ent, '(');
    if (paren)
      *paren = '\0';
    char *s = ent;
    if (!strncmp(s, "gres:", 5))
      s += 5;
    if (!strncmp(s, "gpu", 3) && (s[3] == ':' || s[3] == '\0')) {
      /* gpu[:type][:count]; a bare "gpu" is one */
      char *f1 = s[3] == ':' ? s + 4 : NULL;
      char *f2 = f1 ? strchr(f1, ':') : NULL;
      if (f2)
        *f2++ = '\0';
      const char *count = NULL, *ty = NULL;
      if (f2) {
        ty = f1;
        count = f2;
      } else if (f1 && *f1 && isdigit((unsigned char)*f1)) {
        count = f1;
      } else if (f1) {
        ty = f1;
      }
      long c = 1;
      if (count) {
        char *end;
        c = strtol(count, &end, 10);
        /* "2K" style suffixes are not used for GPUs; refuse the entry */
        if (end == count || *end || c < 0 || c > 1 << 20)
          c = 0;
      }
      if (c > 0 && ty && *ty && type && type_size && !type[0])
        snprintf(type, type_size, "%s", ty);
      if (total + c <= 1 << 20)
        total += (int)c;
    }
    p = *q ? q + 1 : q;
  }
  return total;
}

/* A rack from node features "a,rack=r1,b" (also "rack:r1"). */
static void rack_of(const char *features, char *out, size_t size) {
  out[0] = '\0';
  const char *p = features;
  while (p && *p) {
    const char *q = strchr(p, ',');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n > 5 && (!strncmp(p, "rack=", 5) || !strncmp(p, "rack:", 5))) {
      size_t v = n - 5;
      if (v >= size)
        v = size - 1;
      memcpy(out, p + 5, v);
      out[v] = '\0';
      return;
    }
    p = q ? q + 1 : NULL;
  }
}

/* ---- nodes -------------------------------------------------------------- */

/* Flags that keep a node from taking new work.  NOT_RESPONDING also means
 * jobs already on it are lost (its slurmd is gone). */
static const char *const NODE_BAD_FLAGS[] = {"DRAIN",
                                             "DRAINING",
                                             "DRAINED",
                                             "NOT_RESPONDING",
                                             "MAINTENANCE",
                                             "RESERVED",
                                             "FAIL",
                                             "FAILING",
                                             "POWER_DOWN",
                                             "POWERED_DOWN",
                                             "POWERING_DOWN",
                                             "POWERING_UP",
                                             "REBOOT_REQUESTED",
                                             "REBOOT_ISSUED",
                                             "INVALID_REG",
                                             NULL};

static void read_node(const json_t *o, struct slurm_node *n) {
  memset(n, 0, sizeof *n);
  get_str(o, "name", n->name, sizeof n->name);
  get_str(o, "state", n->state, sizeof n->state);
  for (char *c = n->state; *c; c++)
    *c = (char)tolower((unsigned char)*c);
  char arch[32];
  get_str(o, "architecture", arch, sizeof arch);
  if (!strcmp(arch, "x86_64"))
    n->arch = TW_ARCH_X86_64;
  else if (!strcmp(arch, "aarch64") || !strcmp(arch, "arm64"))
    n->arch = TW_ARCH_ARM64;
  n->cpus = clamp_int(get_int(o, "cpus", 0));
  n->alloc_cpus = clamp_int(get_int(o, "alloc_cpus", 0));
  n->memory_mb = get_int(o, "real_memory", 0);
  if (n->memory_mb < 0)
    n->memory_mb = 0;
  n->alloc_memory_mb = get_int(o, "alloc_memory", 0);
  if (n->alloc_memory_mb < 0)
    n->alloc_memory_mb = 0;
  char gres[256], used[256], type2[32];
  get_str(o, "gres", gres, sizeof gres);
  get_str(o, "gres_used", used, sizeof used);
  n->gpus = slurm_gres_gpus(gres, n->gpu_type, sizeof n->gpu_type);
  n->gpus_used = slurm_gres_gpus(used, type2, sizeof type2);
  char feat[512];
  get_str(o, "active_features", feat, sizeof feat);
  if (!*feat)
    get_str(o, "features", feat, sizeof feat);
  rack_of(feat, n->rack, sizeof n->rack);
  const json_t *parts = json_object_get(o, "partitions");
  for (size_t i = 0; json_is_array(parts) && i < json_array_size(parts) &&
                     n->n_partitions < SLURM_NODE_PARTS_MAX;
       i++) {
    const char *s = json_string_value(json_array_get(parts, i));
    if (s && *s && strlen(s) < SLURM_NAME_MAX)
      strcpy(n->partitions[n->n_partitions++], s);
  }

  bool up = !strcmp(n->state, "idle") || !strcmp(n->state, "mixed") ||
            !strcmp(n->state, "allocated") || !strcmp(n->state, "completing");
  n->usable = up;
  n->down =
      !up && (!strcmp(n->state, "down") || !strcmp(n->state, "error") ||
              !strcmp(n->state, "unknown") || !strcmp(n->state, "future"));
  if (!up)
    snprintf(n->why, sizeof n->why, "%s", n->state[0] ? n->state : "unknown");
  const json_t *flags = json_object_get(o, "state_flags");
  for (size_t i = 0; json_is_array(flags) && i < json_array_size(flags); i++) {
    const char *f = json_string_value(json_array_get(flags, i));
    if (!f)
      continue;
    for (size_t k = 0; NODE_BAD_FLAGS[k]; k++)
      if (!strcasecmp(f, NODE_BAD_FLAGS[k])) {
        if (n->usable)
          snprintf(n->why, sizeof n->why, "%s", NODE_BAD_FLAGS[k]);
        n->usable = false;
      }
    if (!strcasecmp(f, "NOT_RESPONDING"))
      n->down = true;
  }
  /* "down*" / "idle*": sinfo's not-responding marker, should it appear */
  size_t sl = strlen(n->state);
  if (sl && n->state[sl - 1] == '*') {
    n->usable = false;
    n->down = true;
  }
}

enum tw_rc slurm_parse_nodes(const char *body, size_t len,
                             struct slurm_node **out, size_t *n,
                             struct tw_err *err) {
  *out = NULL;
  *n = 0;
  json_t *root = load(body, len, err);
  if (!root)
    return TW_E_INVALID;
  const json_t *a = json_object_get(root, "nodes");
  if (!json_is_array(a)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID, "slurm nodes: no \"nodes\" array");
  }
  size_t cnt = json_array_size(a);
  *out = tw_calloc(cnt ? cnt : 1, sizeof **out);
  for (size_t i = 0; i < cnt; i++) {
    const json_t *o = json_array_get(a, i);
    if (!json_is_object(o))
      continue;
    read_node(o, &(*out)[*n]);
    if ((*out)[*n].name[0])
      (*n)++;
  }
  json_decref(root);
  return TW_OK;
}

/* ---- partitions --------------------------------------------------------- */

enum tw_rc slurm_parse_partitions(const char *body, size_t len,
                                  struct slurm_partition **out, size_t *n,
                                  struct tw_err *err) {
  *out = NULL;
  *n = 0;
  json_t *root = load(body, len, err);
  if (!root)
    return TW_E_INVALID;
  const json_t *a = json_object_get(root, "partitions");
  if (!json_is_array(a)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID,
                      "slurm partitions: no \"partitions\" array");
  }
  size_t cnt = json_array_size(a);
  *out = tw_calloc(cnt ? cnt : 1, sizeof **out);
  for (size_t i = 0; i < cnt; i++) {
    const json_t *o = json_array_get(a, i);
    if (!json_is_object(o))
      continue;
    struct slurm_partition *p = &(*out)[*n];
    memset(p, 0, sizeof *p);
    get_str(o, "name", p->name, sizeof p->name);
    if (!p->name[0])
      continue;
    char st[24];
    get_str(o, "state", st, sizeof st);
    p->up = !strcasecmp(st, "UP");
    const json_t *flags = json_object_get(o, "flags");
    for (size_t k = 0; json_is_array(flags) && k < json_array_size(flags);
         k++) {
      const char *f = json_string_value(json_array_get(flags, k));
      if (f && !strcasecmp(f, "default"))
        p->is_default = true;
    }
    p->max_time_min = get_int(o, "max_time_limit", -1);
    if (p->max_time_min < 0)
      p->max_time_min = -1;
    (*n)++;
  }
  json_decref(root);
  return TW_OK;
}

/* ---- jobs --------------------------------------------------------------- */

static void read_job(const json_t *o, struct slurm_job *j) {
  memset(j, 0, sizeof *j);
  j->id = get_int(o, "job_id", -1);
  get_str(o, "name", j->name, sizeof j->name);
  get_str(o, "comment", j->comment, sizeof j->comment);
  get_str(o, "job_state", j->state, sizeof j->state);
  get_str(o, "state_reason", j->reason, sizeof j->reason);
  get_str(o, "partition", j->partition, sizeof j->partition);
  get_str(o, "nodes", j->nodes, sizeof j->nodes);
  get_str(o, "features", j->features, sizeof j->features);
  const json_t *ec = json_object_get(o, "exit_code");
  j->raw_exit = json_is_integer(ec) ? (int64_t)json_integer_value(ec) : -1;
  j->restart_cnt = clamp_int(get_int(o, "restart_cnt", 0));
  j->submit_time = get_int(o, "submit_time", 0);
  j->start_time = get_int(o, "start_time", 0);
  j->end_time = get_int(o, "end_time", 0);
  /* "cpus" is the allocation once running and the request before */
  j->node_count = clamp_int(get_int(o, "node_count", 1));
  if (j->node_count < 1)
    j->node_count = 1;
  int cpus = clamp_int(get_int(o, "cpus", 0));
  j->cpus = (cpus + j->node_count - 1) / j->node_count;
  j->memory_per_node_mb = get_int(o, "memory_per_node", 0);
  if (j->memory_per_node_mb < 0)
    j->memory_per_node_mb = 0;
  if (!j->memory_per_node_mb) {
    int64_t per_cpu = get_int(o, "memory_per_cpu", 0);
    if (per_cpu > 0 && per_cpu < (1LL << 40))
      j->memory_per_node_mb = per_cpu * (j->cpus ? j->cpus : 1);
  }
  char tres[256];
  get_str(o, "tres_per_node", tres, sizeof tres);
  j->gpus = slurm_gres_gpus(tres, j->gpu_type, sizeof j->gpu_type);
}

enum tw_rc slurm_parse_jobs(const char *body, size_t len,
                            struct slurm_job **out, size_t *n,
                            struct tw_err *err) {
  *out = NULL;
  *n = 0;
  json_t *root = load(body, len, err);
  if (!root)
    return TW_E_INVALID;
  const json_t *a = json_object_get(root, "jobs");
  if (!json_is_array(a)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID, "slurm jobs: no \"jobs\" array");
  }
  size_t cnt = json_array_size(a);
  *out = tw_calloc(cnt ? cnt : 1, sizeof **out);
  for (size_t i = 0; i < cnt; i++) {
    const json_t *o = json_array_get(a, i);
    if (!json_is_object(o))
      continue;
    read_job(o, &(*out)[*n]);
    if ((*out)[*n].id > 0)
      (*n)++;
  }
  json_decref(root);
  return TW_OK;
}

enum tw_rc slurm_parse_submit(const char *body, size_t len, int64_t *job_id,
                              struct slurm_error *first, struct tw_err *err) {
  *job_id = -1;
  memset(first, 0, sizeof *first);
  json_t *root = load(body, len, err);
  if (!root)
    return TW_E_INVALID;
  errors_of(root, first);
  int64_t id = get_int(root, "job_id", -1);
  if (id > 0)
    *job_id = id;
  json_decref(root);
  return TW_OK;
}

/* ---- hostlists ---------------------------------------------------------- */

/* Does the bracket body "1-3,05,7" hold the number written as digits
 * (compared as numbers; zero padding must match in width)? */
static bool range_has(const char *body, size_t len, const char *digits) {
  size_t dl = strlen(digits);
  if (!dl || dl > 18)
    return false;
  long long v = strtoll(digits, NULL, 10);
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && body[j] != ',')
      j++;
    /* one term body[i..j): "N" or "N-M" */
    size_t dash = i;
    while (dash < j && body[dash] != '-')
      dash++;
    size_t w = dash - i;
    if (w > 0 && w <= 18) {
      char a[20], b[20];
      memcpy(a, body + i, w);
      a[w] = '\0';
      long long lo = strtoll(a, NULL, 10), hi = lo;
      size_t w2 = dash < j ? j - dash - 1 : 0;
      if (dash < j && w2 > 0 && w2 <= 18) {
        memcpy(b, body + dash + 1, w2);
        b[w2] = '\0';
        hi = strtoll(b, NULL, 10);
      }
      /* a zero-padded range ("01-10") names hosts of that width only */
      bool width_ok = a[0] != '0' || w == 1 || dl == w;
      if (width_ok && v >= lo && v <= hi)
        return true;
    }
    i = j + 1;
  }
  return false;
}

static bool term_has(const char *t, size_t len, const char *host) {
  const char *br = memchr(t, '[', len);
  if (!br) /* a plain name */
    return strlen(host) == len && !memcmp(t, host, len);
  size_t pre = (size_t)(br - t);
  const char *close = memchr(br, ']', len - pre);
  if (!close || strncmp(host, t, pre) || strlen(host) < pre)
    return false;
  const char *suffix = close + 1;
  size_t suf_len = len - (size_t)(suffix - t);
  const char *num = host + pre;
  size_t nd = 0;
  while (isdigit((unsigned char)num[nd]))
    nd++;
  if (!nd || strlen(num + nd) != suf_len || memcmp(num + nd, suffix, suf_len))
    return false;
  char digits[20];
  if (nd >= sizeof digits)
    return false;
  memcpy(digits, num, nd);
  digits[nd] = '\0';
  return range_has(br + 1, (size_t)(close - br - 1), digits);
}

bool slurm_hostlist_has(const char *list, const char *host) {
  if (!list || !host || !*host)
    return false;
  const char *p = list;
  while (*p) {
    const char *q = p;
    int depth = 0;
    while (*q && (depth || *q != ',')) {
      if (*q == '[')
        depth++;
      else if (*q == ']' && depth)
        depth--;
      q++;
    }
    if (q > p && term_has(p, (size_t)(q - p), host))
      return true;
    p = *q ? q + 1 : q;
  }
  return false;
}

/* ---- exit codes and states ---------------------------------------------- */

int slurm_exit_code(int64_t raw) {
  if (raw < 0)
    return -1;
  int st = (int)(raw & 0xffff);
  if ((st & 0x7f) == 0)
    return (st >> 8) & 0xff;
  return 128 + (st & 0x7f);
}

void slurm_run_times(const struct slurm_job *j, const struct slurm_state_map *m,
                     int64_t *running_ms, int64_t *ended_ms) {
  *running_ms = *ended_ms = 0;
  if (m->state != TW_INST_PENDING && j->start_time > 0)
    *running_ms = j->start_time * 1000;
  if ((m->finished || tw_instance_state_gone(m->state)) && j->start_time > 0 &&
      j->end_time >= j->start_time)
    *ended_ms = j->end_time * 1000;
}

void slurm_map_state(const struct slurm_job *j, struct slurm_state_map *m) {
  memset(m, 0, sizeof *m);
  const char *s = j->state;
  int code = slurm_exit_code(j->raw_exit);
  bool ended = true;
  if (!strcmp(s, "PENDING") || !strcmp(s, "REQUEUED") ||
      !strcmp(s, "REQUEUE_HOLD") || !strcmp(s, "REQUEUE_FED")) {
    m->state = TW_INST_PENDING;
    ended = false;
  } else if (!strcmp(s, "RUNNING") || !strcmp(s, "CONFIGURING") ||
             !strcmp(s, "COMPLETING") || !strcmp(s, "SUSPENDED") ||
             !strcmp(s, "RESIZING") || !strcmp(s, "STAGE_OUT") ||
             !strcmp(s, "SIGNALING")) {
    /* COMPLETING: the script ended but its step is still being cleaned
     * up; the outcome is final once COMPLETED/FAILED */
    m->state = TW_INST_RUNNING;
    ended = false;
  } else if (!strcmp(s, "COMPLETED")) {
    m->state = TW_INST_TERMINATED;
    m->finished = true;
    m->exit_code = code > 0 ? code : 0;
  } else if (!strcmp(s, "FAILED") || !strcmp(s, "OUT_OF_MEMORY") ||
             !strcmp(s, "TIMEOUT") || !strcmp(s, "DEADLINE")) {
    /* The job's own doing: it ran and ended badly.  A zero code here
     * (the script never started, or was killed at its time limit) still
     * has to read as a failure. */
    m->state = TW_INST_TERMINATED;
    m->finished = true;
    if (code > 0)
      m->exit_code = code;
    else if (!strcmp(s, "TIMEOUT") || !strcmp(s, "DEADLINE"))
      m->exit_code = 124; /* as timeout(1) */
    else if (!strcmp(s, "OUT_OF_MEMORY"))
      m->exit_code = 137;
    else
      m->exit_code = 1;
  } else if (!strcmp(s, "CANCELLED") || !strcmp(s, "NODE_FAIL") ||
             !strcmp(s, "PREEMPTED") || !strcmp(s, "BOOT_FAIL") ||
             !strcmp(s, "REVOKED")) {
    /* not the job's doing: the broker places it again */
    m->state = TW_INST_TERMINATED;
  } else {
    m->state = TW_INST_UNKNOWN;
    ended = false;
  }
  /* Requeued by Slurm after a node failure or preemption: it will start
   * over on its own later.  The broker treats that as an interruption. */
  if (!ended && j->restart_cnt > 0)
    m->requeued = true;
}

/* ---- tags --------------------------------------------------------------- */

static bool tag_safe(unsigned char c) {
  return isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':' ||
         c == '/' || c == '@' || c == '+';
}

static void put_tag(struct tw_buf *b, const char *key, const char *v) {
  tw_buf_printf(b, " %s=", key);
  for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++)
    if (tag_safe(*p))
      tw_buf_addc(b, (char)*p);
    else
      tw_buf_printf(b, "%%%02X", *p);
}

void slurm_tags_format(const struct slurm_tags *t, struct tw_buf *out) {
  tw_buf_adds(out, "tradewind");
  put_tag(out, "job", t->job);
  put_tag(out, "attempt", t->attempt);
  put_tag(out, "tenant", t->tenant);
  put_tag(out, "type", t->type);
}

/* Decodes src[0..n) into dst[size]; false when it does not fit or is
 * malformed. */
static bool get_tag(const char *src, size_t n, char *dst, size_t size) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)src[i];
    if (c == '%') {
      if (i + 2 >= n)
        return false;
      int hi = tw_hexval((unsigned char)src[i + 1]),
          lo = tw_hexval((unsigned char)src[i + 2]);
      if (hi < 0 || lo < 0)
        return false;
      c = hi * 16 + lo;
      i += 2;
    }
    if (c == 0 || k + 1 >= size)
      return false;
    dst[k++] = (char)c;
  }
  dst[k] = '\0';
  return true;
}

bool slurm_tags_parse(const char *comment, struct slurm_tags *out) {
  memset(out, 0, sizeof *out);
  if (!comment || strncmp(comment, "tradewind", 9) ||
      (comment[9] != ' ' && comment[9] != '\0'))
    return false;
  const char *p = comment + 9;
  while (*p) {
    while (*p == ' ')
      p++;
    const char *eq = p;
    while (*eq && *eq != '=' && *eq != ' ')
      eq++;
    if (*eq != '=') {
      p = eq;
      continue;
    }
    const char *v = eq + 1, *e = v;
    while (*e && *e != ' ')
      e++;
    size_t kl = (size_t)(eq - p), vl = (size_t)(e - v);
    char *dst = NULL;
    size_t size = 0;
    if (kl == 3 && !strncmp(p, "job", 3)) {
      dst = out->job;
      size = sizeof out->job;
    } else if (kl == 7 && !strncmp(p, "attempt", 7)) {
      dst = out->attempt;
      size = sizeof out->attempt;
    } else if (kl == 6 && !strncmp(p, "tenant", 6)) {
      dst = out->tenant;
      size = sizeof out->tenant;
    } else if (kl == 4 && !strncmp(p, "type", 4)) {
      dst = out->type;
      size = sizeof out->type;
    }
    if (dst && !get_tag(v, vl, dst, size))
      dst[0] = '\0';
    p = e;
  }
  return true;
}

/* ---- classification ----------------------------------------------------- */

enum tw_rc slurm_classify(long status, int code) {
  if (status == 401 || status == 403)
    return TW_E_AUTH;
  switch (code) {
  case 2017: /* ESLURM_INVALID_JOB_ID */
    return TW_E_NOTFOUND;
  case 2000: /* ESLURM_INVALID_PARTITION_NAME */
  case 2014: /* ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE */
  case 2015: /* ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE */
  case 2029: /* ESLURM_INVALID_FEATURE */
    return TW_E_CAPACITY;
  case 1007: /* SLURM_PROTOCOL_AUTHENTICATION_ERROR */
  case 5005: /* zero bytes: slurmctld dropped a request it would not
                authenticate */
    return TW_E_AUTH;
  case 1800: /* unable to contact slurm controller */
    return TW_E_RETRYABLE;
  default:
    break;
  }
  if (code >= 1000 && code <= 1014)
    return TW_E_RETRYABLE;
  if (code >= 2000 && code < 3000)
    return TW_E_INVALID;
  if (code == -1)
    return TW_E_RETRYABLE;
  if (status >= 200 && status < 300)
    return code ? TW_E_INVALID : TW_OK;
  if (status == 400)
    return TW_E_INVALID;
  if (status == 404)
    return TW_E_NOTFOUND;
  if (status == 408 || status == 429 || status >= 500 || status == 0)
    return TW_E_RETRYABLE;
  if (status >= 400)
    return TW_E_INVALID;
  return TW_E_INTERNAL;
}

/* ---- submission --------------------------------------------------------- */

void slurm_submit_json(const struct slurm_submit *s, struct tw_buf *out) {
  json_t *job = json_object();
  json_object_set_new(job, "name", json_string(s->name ? s->name : "tw"));
  if (s->comment)
    json_object_set_new(job, "comment", json_string(s->comment));
  if (s->partition && *s->partition)
    json_object_set_new(job, "partition", json_string(s->partition));
  if (s->constraints && *s->constraints)
    json_object_set_new(job, "constraints", json_string(s->constraints));
  int nodes = s->nodes > 0 ? s->nodes : 1;
  json_object_set_new(job, "nodes", json_integer(nodes));
  /* one task per node, holding the node's whole share of CPUs */
  json_object_set_new(job, "tasks", json_integer(nodes));
  if (nodes > 1)
    json_object_set_new(job, "tasks_per_node", json_integer(1));
  json_object_set_new(job, "cpus_per_task",
                      json_integer(s->cpus > 0 ? s->cpus : 1));
  if (s->memory_mb > 0)
    json_object_set_new(job, "memory_per_node", json_integer(s->memory_mb));
  if (s->gpus > 0) {
    char g[96];
    if (s->gpu_type && *s->gpu_type)
      snprintf(g, sizeof g, "gpu:%s:%d", s->gpu_type, s->gpus);
    else
      snprintf(g, sizeof g, "gpu:%d", s->gpus);
    json_object_set_new(job, "gres", json_string(g));
  }
  if (s->time_limit_min > 0)
    json_object_set_new(job, "time_limit", json_integer(s->time_limit_min));
  /* The broker places an interrupted job again itself; 22.05 ignores this
   * (only JobRequeue=0 in slurm.conf stops requeues) but newer releases
   * honour it. */
  json_object_set_new(job, "requeue", json_false());
  if (s->cwd)
    json_object_set_new(job, "current_working_directory", json_string(s->cwd));
  if (s->output) {
    json_object_set_new(job, "standard_output", json_string(s->output));
    json_object_set_new(job, "standard_error", json_string(s->output));
  }
  json_t *env = json_object();
  for (size_t i = 0; i < s->n_env; i++)
    if (s->env[i].key && *s->env[i].key)
      json_object_set_new(env, s->env[i].key,
                          json_string(s->env[i].value ? s->env[i].value : ""));
  /* slurmrestd refuses a submission without an environment */
  if (json_object_size(env) == 0)
    json_object_set_new(env, "PATH",
                        json_string("/usr/local/bin:/usr/bin:/bin"));
  json_object_set_new(job, "environment", env);

  const char *script = s->script ? s->script : "true\n";
  struct tw_buf sb;
  tw_buf_init(&sb);
  if (strncmp(script, "#!", 2))
    tw_buf_adds(&sb, "#!/bin/sh\n");
  tw_buf_adds(&sb, script);
  if (!sb.len || sb.data[sb.len - 1] != '\n')
    tw_buf_addc(&sb, '\n');
  json_t *root = json_object();
  /* json_stringn: the script may hold bytes jansson would refuse as
   * invalid UTF-8; those are replaced rather than dropping the job */
  json_t *js = json_stringn(sb.data, sb.len);
  if (!js) {
    for (size_t i = 0; i < sb.len; i++)
      if ((unsigned char)sb.data[i] >= 0x80)
        sb.data[i] = '?';
    js = json_stringn(sb.data, sb.len);
  }
  json_object_set_new(root, "script",
                      js ? js : json_string("#!/bin/sh\ntrue\n"));
  json_object_set_new(root, "job", job);
  char *text = json_dumps(root, JSON_COMPACT);
  if (text) {
    tw_buf_adds(out, text);
    free(text);
  }
  json_decref(root);
  tw_buf_release(&sb);
}

/* ---- JWT ---------------------------------------------------------------- */

static int b64url_val(int c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-' || c == '+')
    return 62;
  if (c == '_' || c == '/')
    return 63;
  return -1;
}

int64_t slurm_jwt_exp(const char *token) {
  if (!token)
    return -1;
  const char *p = strchr(token, '.');
  const char *q = p ? strchr(p + 1, '.') : NULL;
  if (!p || !q || q - p - 1 > 4096)
    return -1;
  size_t n = (size_t)(q - p - 1);
  unsigned char buf[3072];
  size_t k = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64url_val((unsigned char)p[1 + i]);
    if (v < 0) {
      if (p[1 + i] == '=')
        break;
      return -1;
    }
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (k < sizeof buf)
        buf[k++] = (unsigned char)((acc >> bits) & 0xff);
    }
  }
  json_error_t je;
  json_t *root = json_loadb((const char *)buf, k, 0, &je);
  if (!root)
    return -1;
  int64_t exp = get_int(root, "exp", -1);
  json_decref(root);
  return exp;
}
