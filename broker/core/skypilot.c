/* skypilot.c - SkyPilot task files translated into job specs (skypilot.h;
 * every key and what becomes of it: docs/skypilot.md).
 *
 * Values that keep their meaning (accelerators, cpus, memory, use_spot,
 * num_nodes, envs, setup, run, ports, image_id) are checked by the spec's
 * own validator, one key at a time on a small document that borrows the
 * task's node, so each error keeps its line and every key is checked even
 * after one failed; the message's path is then the task's. */
#include "broker/core/skypilot.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/node.h"
#include "broker/base/units.h"

#define SKY_PATH_MAX 160
#define SKY_CANDIDATES_MAX 16

/* ---- errors ---------------------------------------------------------------- */

static void errs_add(struct tw_spec_errs *e, const char *path,
                     const struct tw_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void errs_add(struct tw_spec_errs *e, const char *path,
                     const struct tw_node *at, const char *fmt, ...) {
  if (e->n == TW_SPEC_ERRS_MAX) {
    e->n_more++;
    return;
  }
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  struct tw_err *x = &e->v[e->n++];
  memset(x, 0, sizeof *x);
  if (at && at->line > 0)
    tw_err_field(x, TW_E_INVALID, path, "%s: %s (line %d)", path, what,
                 at->line);
  else
    tw_err_field(x, TW_E_INVALID, path, "%s: %s", path, what);
}

/* Adds a validator's error, its native path prefix replaced by the task's. */
static void errs_add_native(struct tw_spec_errs *e, const struct tw_err *ne,
                            const char *native, const char *path) {
  if (e->n == TW_SPEC_ERRS_MAX) {
    e->n_more++;
    return;
  }
  struct tw_err *x = &e->v[e->n++];
  memset(x, 0, sizeof *x);
  size_t nl = strlen(native);
  const char *rest_f = ne->field, *rest_m = ne->msg;
  if (!strncmp(rest_f, native, nl))
    rest_f += nl;
  if (!strncmp(rest_m, native, nl))
    rest_m += nl;
  char field[sizeof x->field];
  snprintf(field, sizeof field, "%s%s", path, rest_f);
  tw_err_field(x, TW_E_INVALID, field, "%s%s", path, rest_m);
}

/* ---- the spec's validator on one key ----------------------------------------- */

/* Runs the validator on {name: probe, [sect: {]key: v[}]} and reports its
 * error under path.  Returns whether v passed. */
static bool probe_as(struct tw_spec_errs *e, const char *sect,
                     const char *key, const struct tw_node *v,
                     const char *path, const char *native_path) {
  char name_s[] = "sky-probe", k_name[] = "name", k_sect[32], k_key[32];
  snprintf(k_sect, sizeof k_sect, "%s", sect ? sect : "");
  snprintf(k_key, sizeof k_key, "%s", key);
  struct tw_node nm = {.kind = TW_NODE_SCALAR, .str = name_s, .quoted = true};
  struct tw_node inner = {.kind = TW_NODE_MAP, .n = 1};
  char *ik[1] = {k_key};
  struct tw_node *iv[1] = {(struct tw_node *)v};
  inner.keys = ik;
  inner.items = iv;
  struct tw_node top = {.kind = TW_NODE_MAP};
  char *tk[2];
  struct tw_node *tv[2];
  if (!strcmp(key, "name") && !sect) {
    tk[0] = k_name;
    tv[0] = (struct tw_node *)v;
    top.n = 1;
  } else {
    tk[0] = k_name;
    tv[0] = &nm;
    tk[1] = sect ? k_sect : k_key;
    tv[1] = sect ? &inner : (struct tw_node *)v;
    top.n = 2;
  }
  top.keys = tk;
  top.items = tv;
  struct tw_job_spec spec;
  struct tw_err ne = {0};
  if (tw_spec_from_node(&top, &spec, &ne) == TW_OK) {
    tw_spec_release(&spec);
    return true;
  }
  char native[80];
  if (native_path)
    snprintf(native, sizeof native, "%s", native_path);
  else if (sect)
    snprintf(native, sizeof native, "%s.%s", sect, key);
  else
    snprintf(native, sizeof native, "%s", key);
  errs_add_native(e, &ne, native, path);
  return false;
}

static bool probe(struct tw_spec_errs *e, const char *sect, const char *key,
                  const struct tw_node *v, const char *path) {
  return probe_as(e, sect, key, v, path, NULL);
}

/* ---- helpers ------------------------------------------------------------------ */

static bool is_null(const struct tw_node *n) {
  return !n || n->kind == TW_NODE_NULL;
}

static void path_key(char *out, const char *parent, const char *key) {
  char k[64];
  size_t i;
  for (i = 0; key[i] && i + 1 < sizeof k; i++) {
    unsigned char c = (unsigned char)key[i];
    k[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  k[i] = '\0';
  if (parent && *parent)
    snprintf(out, SKY_PATH_MAX, "%s.%s", parent, k);
  else
    snprintf(out, SKY_PATH_MAX, "%s", k);
}

static bool in_list(const char *k, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(*list, k))
      return true;
  return false;
}

static const char *scalar(const struct tw_node *n) {
  return n && n->kind == TW_NODE_SCALAR ? n->str : NULL;
}

/* ---- detection ------------------------------------------------------------------ */

static const char *const SKY_TOP[] = {
    "name",     "workdir", "num_nodes", "resources", "envs",
    "secrets",  "file_mounts", "setup", "run",       "config",
    "service",  "volumes", "event_callback", "experimental", NULL};
static const char *const SKY_ONLY_TOP[] = {
    "workdir", "num_nodes", "envs",    "file_mounts",  "config",
    "service", "volumes",   "event_callback", "experimental",
    NULL};
static const char *const SKY_RES[] = {
    "infra",         "cloud",        "region",    "zone",
    "accelerators",  "accelerator_args", "cpus",  "memory",
    "instance_type", "use_spot",     "disk_size", "disk_tier",
    "network_tier",  "image_id",     "ports",     "labels",
    "autostop",      "any_of",       "ordered",   "job_recovery",
    NULL};
static const char *const SKY_ONLY_RES[] = {
    "infra",     "cloud",        "region",   "zone",     "accelerator_args",
    "instance_type", "disk_size", "disk_tier", "network_tier", "image_id",
    "ports",     "labels",       "autostop", "any_of",   "ordered",
    "job_recovery", NULL};
static const char *const NATIVE_ONLY_TOP[] = {
    "nodes",    "env",        "tenant",   "project",
    "placement", "datasets",  "duration", "duration_s",
    "deadline", "priority",   "checkpoint", "fallback",
    "image",    "disk",       "ports",    "max_price_per_hour",
    "max_price_uusd_per_hour", NULL};
static const char *const NATIVE_ONLY_RES[] = {
    "cpus_at_least", "memory_mib", "memory_at_least", "arch",
    "instance_types", "families",  "market",          NULL};

bool tw_skypilot_is_task(const struct tw_node *root) {
  if (!root || root->kind != TW_NODE_MAP)
    return false;
  bool sky = false;
  for (size_t i = 0; i < root->n; i++) {
    if (in_list(root->keys[i], NATIVE_ONLY_TOP))
      return false;
    if (in_list(root->keys[i], SKY_ONLY_TOP))
      sky = true;
  }
  const struct tw_node *r = tw_node_get(root, "resources");
  if (r && r->kind == TW_NODE_MAP)
    for (size_t i = 0; i < r->n; i++) {
      if (in_list(r->keys[i], NATIVE_ONLY_RES))
        return false;
      if (in_list(r->keys[i], SKY_ONLY_RES))
        sky = true;
    }
  return sky;
}

/* ---- the translation ------------------------------------------------------------ */

/* One place a candidate may run: a provider, a region, a zone ("" when
 * not given; "*" as written). */
struct loc {
  char cloud[32], region[72], zone[72];
  bool set;
};

/* One candidate of any_of/ordered (or the resources block itself). */
struct cand {
  const struct tw_node *accel; /* NULL: none */
  char accel_path[SKY_PATH_MAX];
  struct loc loc;
  const struct tw_node *itype;
};

struct sky {
  const struct tw_spec_opts *opts;
  struct tw_spec_errs *e;
  struct tw_buf top, res; /* members of the spec and of its resources */
  bool top_first, res_first;
  /* placement and datasets, gathered */
  struct tw_buf regions, zones, datasets;
  size_t n_regions, n_zones, n_datasets;
  /* disk */
  int disk_gb;
  const char *disk_type;
};

static void member(struct tw_buf *b, bool *first, const char *key) {
  if (!*first)
    tw_buf_addc(b, ',');
  *first = false;
  tw_buf_json_str(b, key);
  tw_buf_addc(b, ':');
}

static void list_add(struct tw_buf *b, size_t *n, const char *s) {
  /* no duplicates: the spec refuses them */
  struct tw_buf q;
  tw_buf_init(&q);
  tw_buf_json_str(&q, s);
  bool dup = false;
  if (b->data) {
    const char *p = b->data;
    size_t ql = q.len;
    while ((p = strstr(p, q.data))) {
      bool start = p == b->data || p[-1] == ',';
      bool end = p[ql] == '\0' || p[ql] == ',';
      if (start && end) {
        dup = true;
        break;
      }
      p += ql;
    }
  }
  if (!dup) {
    if (*n)
      tw_buf_addc(b, ',');
    tw_buf_add(b, q.data, q.len);
    (*n)++;
  }
  tw_buf_release(&q);
}

/* Lower-cases a cloud name and checks it against the providers here. */
static bool check_cloud(struct sky *k, const char *cloud, const char *path,
                        const struct tw_node *at) {
  if (!*cloud || !strcmp(cloud, "*"))
    return true;
  if (!strcmp(cloud, "k8s") || !strcmp(cloud, "kubernetes")) {
    errs_add(k->e, path, at,
             "Kubernetes is not a Tradewind provider; name a cloud or a "
             "cluster the broker places on");
    return false;
  }
  const char *const *known = k->opts ? k->opts->providers : NULL;
  if (known) {
    for (const char *const *p = known; *p; p++)
      if (!strcmp(*p, cloud))
        return true;
    char names[160];
    tw_spec_names_join(known, names, sizeof names);
    errs_add(k->e, path, at, "no provider \"%s\" here; the broker places on %s",
             cloud, names);
    return false;
  }
  for (const char *p = cloud; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') {
      errs_add(k->e, path, at, "expected a cloud name, got \"%s\"", cloud);
      return false;
    }
  return true;
}

static bool loc_word_ok(const char *s) {
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("-_.*?", *s))
      return false;
  return true;
}

/* infra: cloud[/region[/zone]] */
static void parse_infra(struct sky *k, const struct tw_node *n,
                        const char *path, struct loc *out) {
  const char *s = scalar(n);
  if (!s || !*s) {
    errs_add(k->e, path, n,
             "expected cloud, cloud/region or cloud/region/zone like "
             "aws/us-east-1");
    return;
  }
  char buf[200];
  snprintf(buf, sizeof buf, "%s", s);
  char *parts[4] = {0};
  int np = 0;
  for (char *p = buf, *tok; np < 4 && (tok = strsep(&p, "/"));)
    parts[np++] = tok;
  if (np > 3) {
    errs_add(k->e, path, n,
             "expected cloud, cloud/region or cloud/region/zone, got \"%s\"",
             s);
    return;
  }
  for (int i = 0; i < np; i++)
    if (!*parts[i] || strlen(parts[i]) >= sizeof out->region ||
        !loc_word_ok(parts[i])) {
      errs_add(k->e, path, n,
               "expected cloud, cloud/region or cloud/region/zone, got \"%s\"",
               s);
      return;
    }
  for (char *p = parts[0]; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  if (strlen(parts[0]) >= sizeof out->cloud) {
    errs_add(k->e, path, n, "expected a cloud name, got \"%s\"", parts[0]);
    return;
  }
  if (!check_cloud(k, parts[0], path, n))
    return;
  snprintf(out->cloud, sizeof out->cloud, "%s", parts[0]);
  snprintf(out->region, sizeof out->region, "%s", np > 1 ? parts[1] : "");
  snprintf(out->zone, sizeof out->zone, "%s", np > 2 ? parts[2] : "");
  out->set = true;
}

/* The older cloud:, region:, zone: keys of one resources mapping. */
static void parse_cloud_keys(struct sky *k, const struct tw_node *m,
                             const char *parent, struct loc *out) {
  const struct tw_node *c = tw_node_get(m, "cloud"),
                       *r = tw_node_get(m, "region"),
                       *z = tw_node_get(m, "zone");
  char path[SKY_PATH_MAX];
  if (is_null(c) && is_null(r) && is_null(z))
    return;
  if (!is_null(tw_node_get(m, "infra"))) {
    path_key(path, parent, !is_null(c) ? "cloud" : !is_null(r) ? "region"
                                                                : "zone");
    errs_add(k->e, path, !is_null(c) ? c : !is_null(r) ? r : z,
             "give either infra or cloud/region/zone, not both");
    return;
  }
  const struct {
    const char *key;
    const struct tw_node *n;
    char *dst;
    size_t cap;
  } F[] = {{"cloud", c, out->cloud, sizeof out->cloud},
           {"region", r, out->region, sizeof out->region},
           {"zone", z, out->zone, sizeof out->zone}};
  bool ok = true;
  for (size_t i = 0; i < 3; i++) {
    if (is_null(F[i].n))
      continue;
    path_key(path, parent, F[i].key);
    const char *s = scalar(F[i].n);
    if (!s || !*s || strlen(s) >= F[i].cap || !loc_word_ok(s)) {
      errs_add(k->e, path, F[i].n, "expected a %s name", F[i].key);
      ok = false;
      continue;
    }
    snprintf(F[i].dst, F[i].cap, "%s", s);
  }
  for (char *p = out->cloud; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  path_key(path, parent, "cloud");
  if (ok && !*out->cloud) {
    errs_add(k->e, path, !is_null(r) ? r : z,
             "a region or zone needs its cloud (or write infra: "
             "cloud/region/zone)");
    ok = false;
  }
  if (ok && !check_cloud(k, out->cloud, path, c))
    ok = false;
  out->set = ok;
}

/* accelerators: SkyPilot's set form {'L4:1', 'H100:1'} (and the brief
 * {A100:8, H100:8}) reads in YAML as a mapping of "name:count" keys with
 * null values; it is the spec's list of alternatives, each such key one
 * entry and any other NAME: count pair its own. */
static bool accel_is_set_form(const struct tw_node *n) {
  if (n->kind != TW_NODE_MAP || !n->n)
    return false;
  for (size_t i = 0; i < n->n; i++)
    if (is_null(n->items[i]) && strchr(n->keys[i], ':'))
      return true;
  return false;
}

static void accel_json(const struct tw_node *n, struct tw_buf *b) {
  if (!accel_is_set_form(n)) {
    tw_node_to_json(n, b);
    return;
  }
  tw_buf_addc(b, '[');
  for (size_t i = 0; i < n->n; i++) {
    if (i)
      tw_buf_addc(b, ',');
    if (is_null(n->items[i]) && strchr(n->keys[i], ':')) {
      tw_buf_json_str(b, n->keys[i]);
    } else {
      char t[96];
      snprintf(t, sizeof t, "%s:%s", n->keys[i],
               scalar(n->items[i]) ? n->items[i]->str : "?");
      tw_buf_json_str(b, t);
    }
  }
  tw_buf_addc(b, ']');
}

static bool check_accel(struct sky *k, const struct tw_node *n,
                        const char *path) {
  if (!accel_is_set_form(n))
    return probe(k->e, "resources", "accelerators", n, path);
  /* the set form, checked as the list it stands for */
  enum { CAP = TW_SPEC_ACCELS_MAX + 1 };
  struct tw_node items[CAP], *ptrs[CAP];
  char txt[CAP][96];
  size_t cnt = n->n > CAP ? CAP : n->n;
  for (size_t i = 0; i < cnt; i++) {
    if (is_null(n->items[i]) && strchr(n->keys[i], ':')) {
      items[i] = (struct tw_node){.kind = TW_NODE_SCALAR,
                                  .line = n->items[i] ? n->items[i]->line
                                                      : n->line,
                                  .col = n->col,
                                  .str = n->keys[i],
                                  .quoted = true};
    } else {
      /* NAME: count beside NAME:count keys: the list's "NAME:count" */
      snprintf(txt[i], sizeof txt[i], "%s:%s", n->keys[i],
               scalar(n->items[i]) ? n->items[i]->str : "?");
      items[i] = (struct tw_node){.kind = TW_NODE_SCALAR,
                                  .line = n->items[i]->line,
                                  .col = n->items[i]->col,
                                  .str = txt[i],
                                  .quoted = true};
    }
    ptrs[i] = &items[i];
  }
  struct tw_node seq = {.kind = TW_NODE_SEQ,
                        .line = n->line,
                        .col = n->col,
                        .n = cnt,
                        .items = ptrs};
  size_t before = k->e->n;
  if (probe(k->e, "resources", "accelerators", &seq, path))
    return true;
  /* "[i]" of the list stands for the mapping's key i */
  if (k->e->n > before) {
    struct tw_err *x = &k->e->v[k->e->n - 1];
    size_t pl = strlen(path);
    unsigned long i;
    char *end;
    if (!strncmp(x->field, path, pl) && x->field[pl] == '[' &&
        (i = strtoul(x->field + pl + 1, &end, 10)) < cnt && *end == ']') {
      char f[sizeof x->field], m[sizeof x->msg];
      size_t cut = (size_t)(end + 1 - x->field);
      snprintf(f, sizeof f, "%s.%s%s", path, n->keys[i], x->field + cut);
      const char *mrest = !strncmp(x->msg, x->field, strlen(x->field))
                              ? x->msg + strlen(x->field)
                              : "";
      snprintf(m, sizeof m, "%s%s", f, mrest);
      snprintf(x->field, sizeof x->field, "%s", f);
      snprintf(x->msg, sizeof x->msg, "%s", m);
    }
  }
  return false;
}

/* memory: the spec's GiB forms, or SkyPilot's with a unit (KB MB GB TB
 * PB, powers of 1024), then "+". */
static void map_memory(struct sky *k, const struct tw_node *n,
                       const char *path) {
  const char *s = scalar(n);
  size_t len = s ? strlen(s) : 0;
  size_t body = len && s[len - 1] == '+' ? len - 1 : len;
  bool unit = body >= 2 && isalpha((unsigned char)s[body - 1]);
  if (!unit) {
    if (probe(k->e, "resources", "memory", n, path)) {
      member(&k->res, &k->res_first, "memory");
      tw_node_to_json(n, &k->res);
    }
    return;
  }
  char num[64];
  size_t ul = 0;
  while (ul < body && isalpha((unsigned char)s[body - 1 - ul]))
    ul++;
  if (ul != 2 || body - ul == 0 || body - ul >= sizeof num - 8) {
    errs_add(k->e, path, n,
             "expected GB like 32, 32+ or a size like 1024MB or 64GB+, got "
             "\"%.40s\"",
             s);
    return;
  }
  /* SkyPilot's KB..PB are powers of 1024: the spec's KiB..PiB */
  snprintf(num, sizeof num, "%.*s%ciB", (int)(body - ul), s,
           (char)toupper((unsigned char)s[body - ul]));
  int64_t bytes = 0;
  if (tw_parse_size_bytes(num, &bytes) || bytes <= 0 ||
      !strchr("KMGTP", num[body - ul])) {
    errs_add(k->e, path, n,
             "expected GB like 32, 32+ or a size like 1024MB or 64GB+, got "
             "\"%.40s\"",
             s);
    return;
  }
  if (bytes % (1024 * 1024)) {
    errs_add(k->e, path, n, "\"%.40s\" is not a whole number of MiB", s);
    return;
  }
  int64_t mib = bytes / (1024 * 1024);
  if (mib < 1 || mib > TW_SPEC_MEMORY_MIB_MAX) {
    errs_add(k->e, path, n, "must be at most 65536 GB, got \"%.40s\"", s);
    return;
  }
  member(&k->res, &k->res_first, "memory_mib");
  tw_buf_printf(&k->res, "%lld", (long long)mib);
  member(&k->res, &k->res_first, "memory_at_least");
  tw_buf_adds(&k->res, body < len ? "true" : "false");
}

/* disk_size: GB, or a size with a unit, floored to whole GB as SkyPilot
 * does. */
static void map_disk_size(struct sky *k, const struct tw_node *n,
                          const char *path) {
  const char *s = scalar(n);
  int64_t gb = -1;
  if (s && n->kind == TW_NODE_SCALAR) {
    int64_t v;
    if (!n->quoted && tw_node_as_int(n, &v)) {
      gb = v;
    } else {
      size_t len = strlen(s), ul = 0;
      while (ul < len && isalpha((unsigned char)s[len - 1 - ul]))
        ul++;
      char num[64];
      int64_t bytes = 0;
      if (ul == 2 && len > ul && len < sizeof num - 8 &&
          strchr("KMGTPkmgtp", s[len - 2])) {
        snprintf(num, sizeof num, "%.*s%ciB", (int)(len - ul), s,
                 (char)toupper((unsigned char)s[len - ul]));
        if (!tw_parse_size_bytes(num, &bytes))
          gb = bytes / ((int64_t)1 << 30);
      } else if (ul == 0 && tw_node_as_int(n, &v)) {
        gb = v;
      }
    }
  }
  if (gb < 0) {
    errs_add(k->e, path, n, "expected GB like 256 or a size like 256GB");
    return;
  }
  if (gb < 1 || gb > TW_SPEC_DISK_GB_MAX) {
    errs_add(k->e, path, n, "must be 1..%d GB, got %lld", TW_SPEC_DISK_GB_MAX,
             (long long)gb);
    return;
  }
  k->disk_gb = (int)gb;
}

static void map_disk_tier(struct sky *k, const struct tw_node *n,
                          const char *path) {
  static const char *const tiers[] = {"low", "medium", "high", "ultra", "best",
                                      NULL};
  const char *s = scalar(n);
  if (s)
    for (const char *const *t = tiers; *t; t++)
      if (!strcasecmp(*t, s)) {
        k->disk_type = *t;
        return;
      }
  const char *best = s ? tw_closest(s, tiers) : NULL;
  errs_add(k->e, path, n, "expected low, medium, high, ultra or best%s%s%s",
           best ? "; did you mean \"" : "", best ? best : "", best ? "\"?" : "");
}

static void map_image(struct sky *k, const struct tw_node *n,
                      const char *path) {
  if (n->kind == TW_NODE_MAP) {
    errs_add(k->e, path, n,
             "images per region are the operator's (the provider's config "
             "lists them); the job names one image");
    return;
  }
  const char *s = scalar(n);
  if (s && !strncmp(s, "docker:", 7)) {
    errs_add(k->e, path, n,
             "containers are not run by Tradewind's agent; name a machine "
             "image, or run the container from setup and run");
    return;
  }
  if (probe(k->e, NULL, "image", n, path)) {
    member(&k->top, &k->top_first, "image");
    tw_node_to_json(n, &k->top);
  }
}

static void map_job_recovery(struct sky *k, const struct tw_node *n,
                             const char *path) {
  const struct tw_node *st = n;
  char sub[SKY_PATH_MAX];
  snprintf(sub, sizeof sub, "%s", path);
  if (n->kind == TW_NODE_MAP) {
    static const char *const keys[] = {"strategy", "max_restarts_on_errors",
                                       "recover_on_exit_codes", NULL};
    for (size_t i = 0; i < n->n; i++)
      if (!in_list(n->keys[i], keys)) {
        path_key(sub, path, n->keys[i]);
        errs_add(k->e, sub, n->items[i], "unknown key");
      }
    const struct tw_node *mr = tw_node_get(n, "max_restarts_on_errors");
    int64_t v;
    if (!is_null(mr) && !(tw_node_as_int(mr, &v) && v == 0)) {
      path_key(sub, path, "max_restarts_on_errors");
      errs_add(k->e, sub, mr,
               "a job whose script fails is not run again by Tradewind "
               "(only interrupted attempts are); write 0 or leave it out");
    }
    const struct tw_node *ec = tw_node_get(n, "recover_on_exit_codes");
    if (!is_null(ec)) {
      path_key(sub, path, "recover_on_exit_codes");
      errs_add(k->e, sub, ec,
               "a job whose script fails is not run again by Tradewind, "
               "whatever its exit code");
    }
    st = tw_node_get(n, "strategy");
    path_key(sub, path, "strategy");
    if (is_null(st))
      return; /* SkyPilot's default, eager-next-region, is left to the config */
  }
  const char *s = scalar(st);
  if (s && !strcasecmp(s, "failover")) {
    member(&k->top, &k->top_first, "fallback");
    tw_buf_adds(&k->top, "\"failover\"");
  } else if (s && !strcasecmp(s, "eager_next_region")) {
    member(&k->top, &k->top_first, "fallback");
    tw_buf_adds(&k->top, "\"eager-next-region\"");
  } else if (s && !strcasecmp(s, "none")) {
    errs_add(k->e, sub, st,
             "Tradewind always recovers an interrupted attempt; name "
             "FAILOVER or EAGER_NEXT_REGION, or leave job_recovery out");
  } else {
    errs_add(k->e, sub, st, "expected FAILOVER or EAGER_NEXT_REGION");
  }
}

/* The keys of one resources mapping (the block itself, or a candidate of
 * any_of/ordered when cand_only). */
static void map_resources_keys(struct sky *k, const struct tw_node *m,
                               const char *parent, bool candidate,
                               struct cand *c) {
  static const char *const cand_keys[] = {"infra",  "cloud", "region",
                                          "zone",   "accelerators",
                                          "instance_type", NULL};
  char path[SKY_PATH_MAX];
  for (size_t i = 0; i < m->n; i++) {
    const char *key = m->keys[i];
    const struct tw_node *v = m->items[i];
    path_key(path, parent, key);
    if (!in_list(key, SKY_RES)) {
      const char *best = tw_closest(key, SKY_RES);
      if (best)
        errs_add(k->e, path, v, "unknown key; did you mean \"%s\"?", best);
      else
        errs_add(k->e, path, v, "unknown key");
      continue;
    }
    if (candidate && !in_list(key, cand_keys)) {
      errs_add(k->e, path, v,
               "a candidate may only change infra, cloud, region, zone, "
               "accelerators or instance_type: Tradewind takes one %s per "
               "job; set it beside any_of",
               key);
      continue;
    }
    if (is_null(v))
      continue;
    if (!strcmp(key, "infra")) {
      parse_infra(k, v, path, &c->loc);
    } else if (!strcmp(key, "accelerators")) {
      if (check_accel(k, v, path)) {
        c->accel = v;
        snprintf(c->accel_path, sizeof c->accel_path, "%s", path);
      }
    } else if (!strcmp(key, "instance_type")) {
      struct tw_node *one[1] = {(struct tw_node *)v};
      struct tw_node seq = {.kind = TW_NODE_SEQ,
                            .line = v->line,
                            .col = v->col,
                            .n = 1,
                            .items = one};
      if (v->kind != TW_NODE_SCALAR)
        errs_add(k->e, path, v, "expected an instance type like p4d.24xlarge");
      else if (probe_as(k->e, "resources", "instance_types", &seq, path,
                        "resources.instance_types[0]"))
        c->itype = v;
    } else if (!strcmp(key, "cloud") || !strcmp(key, "region") ||
               !strcmp(key, "zone")) {
      /* read together below */
    } else if (!strcmp(key, "cpus")) {
      if (probe(k->e, "resources", "cpus", v, path)) {
        member(&k->res, &k->res_first, "cpus");
        tw_node_to_json(v, &k->res);
      }
    } else if (!strcmp(key, "memory")) {
      map_memory(k, v, path);
    } else if (!strcmp(key, "use_spot")) {
      if (probe(k->e, "resources", "use_spot", v, path)) {
        member(&k->res, &k->res_first, "use_spot");
        tw_node_to_json(v, &k->res);
      }
    } else if (!strcmp(key, "disk_size")) {
      map_disk_size(k, v, path);
    } else if (!strcmp(key, "disk_tier")) {
      map_disk_tier(k, v, path);
    } else if (!strcmp(key, "network_tier")) {
      const char *s = scalar(v);
      if (!s || strcasecmp(s, "standard"))
        errs_add(k->e, path, v,
                 "no Tradewind provider offers a network tier beyond the "
                 "instance's own; write standard or leave it out");
    } else if (!strcmp(key, "image_id")) {
      map_image(k, v, path);
    } else if (!strcmp(key, "ports")) {
      if (probe(k->e, NULL, "ports", v, path)) {
        member(&k->top, &k->top_first, "ports");
        tw_node_to_json(v, &k->top);
      }
    } else if (!strcmp(key, "labels")) {
      errs_add(k->e, path, v,
               "instances are tagged by the broker (job, attempt, tenant); "
               "a job cannot add tags of its own");
    } else if (!strcmp(key, "autostop")) {
      errs_add(k->e, path, v,
               "a job's machines end with the job: there is no idle "
               "cluster to stop");
    } else if (!strcmp(key, "accelerator_args")) {
      errs_add(k->e, path, v,
               "TPU arguments: no Tradewind provider offers TPUs");
    } else if (!strcmp(key, "job_recovery")) {
      map_job_recovery(k, v, path);
    }
    /* any_of and ordered: the caller */
  }
  parse_cloud_keys(k, m, parent, &c->loc);
}

static bool same_node_text(const struct tw_node *a, const struct tw_node *b) {
  if (!a || !b)
    return a == b;
  struct tw_buf x, y;
  tw_buf_init(&x);
  tw_buf_init(&y);
  tw_node_to_json(a, &x);
  tw_node_to_json(b, &y);
  bool same = x.len == y.len && !memcmp(x.data, y.data, x.len);
  tw_buf_release(&x);
  tw_buf_release(&y);
  return same;
}

static bool same_loc(const struct loc *a, const struct loc *b) {
  return a->set == b->set && !strcmp(a->cloud, b->cloud) &&
         !strcmp(a->region, b->region) && !strcmp(a->zone, b->zone);
}

/* Where the candidates may run, as placement.regions and a zone selector. */
static void add_loc(struct sky *k, const struct loc *l) {
  if (!l->set)
    return;
  char r[128];
  snprintf(r, sizeof r, "%s:%s", *l->cloud ? l->cloud : "*",
           *l->region ? l->region : "*");
  list_add(&k->regions, &k->n_regions, r);
  if (*l->zone && strcmp(l->zone, "*"))
    list_add(&k->zones, &k->n_zones, l->zone);
}

static void map_resources(struct sky *k, const struct tw_node *m) {
  if (m->kind != TW_NODE_MAP) {
    errs_add(k->e, "resources", m, "expected a mapping");
    return;
  }
  struct cand base = {0};
  map_resources_keys(k, m, "resources", false, &base);

  const struct tw_node *any = tw_node_get(m, "any_of"),
                       *ord = tw_node_get(m, "ordered");
  const char *which = "any_of";
  if (!is_null(any) && !is_null(ord)) {
    errs_add(k->e, "resources.ordered", ord,
             "give either any_of or ordered, not both");
    ord = NULL;
  }
  if (is_null(any)) {
    any = ord;
    which = "ordered";
  }
  struct cand cands[SKY_CANDIDATES_MAX];
  size_t nc = 0;
  char path[32], cpath[SKY_PATH_MAX];
  snprintf(path, sizeof path, "resources.%s", which);
  if (!is_null(any)) {
    if (any->kind != TW_NODE_SEQ || !any->n) {
      errs_add(k->e, path, any, "expected a list of candidate resources");
    } else if (any->n > SKY_CANDIDATES_MAX) {
      errs_add(k->e, path, any, "at most %d candidates, got %zu",
               SKY_CANDIDATES_MAX, any->n);
    } else {
      for (size_t i = 0; i < any->n; i++) {
        snprintf(cpath, sizeof cpath, "%s[%zu]", path, i);
        if (any->items[i]->kind != TW_NODE_MAP) {
          errs_add(k->e, cpath, any->items[i], "expected a mapping");
          continue;
        }
        struct cand *c = &cands[nc++];
        *c = base; /* the fields outside are the candidates' defaults */
        struct cand own = {0};
        map_resources_keys(k, any->items[i], cpath, true, &own);
        if (own.accel)
          c->accel = own.accel, memcpy(c->accel_path, own.accel_path,
                                       sizeof c->accel_path);
        if (own.loc.set)
          c->loc = own.loc;
        if (own.itype)
          c->itype = own.itype;
      }
    }
  }
  if (!nc)
    cands[nc++] = base;

  /* The spec lists accelerators and places separately: candidates that
   * differ in both would be widened into every combination. */
  bool accel_vary = false, loc_vary = false, it_vary = false;
  for (size_t i = 1; i < nc; i++) {
    accel_vary |= !same_node_text(cands[i].accel, cands[0].accel);
    loc_vary |= !same_loc(&cands[i].loc, &cands[0].loc);
    it_vary |= !same_node_text(cands[i].itype, cands[0].itype);
  }
  if ((accel_vary && loc_vary) || (it_vary && (loc_vary || accel_vary))) {
    errs_add(k->e, path, any,
             "candidates that differ in more than one of accelerators, "
             "location and instance_type would be widened into every "
             "combination of them; Tradewind lists each separately");
    return;
  }
  for (size_t i = 0; i < nc; i++) {
    if (loc_vary && !cands[i].loc.set) {
      snprintf(cpath, sizeof cpath, "%s[%zu]", path, i);
      errs_add(k->e, cpath, any,
               "a candidate with no infra beside ones with: give every "
               "candidate its infra");
      return;
    }
    if (accel_vary && !cands[i].accel) {
      snprintf(cpath, sizeof cpath, "%s[%zu]", path, i);
      errs_add(k->e, cpath, any,
               "a candidate with no accelerators beside ones with: give "
               "every candidate its accelerators");
      return;
    }
  }
  /* accelerators: one candidate's as written, several as alternatives */
  if (cands[0].accel) {
    member(&k->res, &k->res_first, "accelerators");
    if (!accel_vary) {
      accel_json(cands[0].accel, &k->res);
    } else {
      tw_buf_addc(&k->res, '[');
      for (size_t i = 0; i < nc; i++) {
        struct tw_buf one;
        tw_buf_init(&one);
        accel_json(cands[i].accel, &one);
        /* a list's brackets are dropped: its entries are alternatives too */
        if (one.len >= 2 && one.data[0] == '[')
          tw_buf_add(&k->res, one.data + 1, one.len - 2);
        else if (one.len >= 2 && one.data[0] == '{') {
          /* a mapping of several: each entry its own alternative */
          const struct tw_node *a = cands[i].accel;
          for (size_t j = 0; j < a->n; j++) {
            if (j)
              tw_buf_addc(&k->res, ',');
            tw_buf_adds(&k->res, "{");
            tw_buf_json_str(&k->res, a->keys[j]);
            tw_buf_addc(&k->res, ':');
            tw_node_to_json(a->items[j], &k->res);
            tw_buf_adds(&k->res, "}");
          }
        } else
          tw_buf_add(&k->res, one.data, one.len);
        if (i + 1 < nc)
          tw_buf_addc(&k->res, ',');
        tw_buf_release(&one);
      }
      tw_buf_addc(&k->res, ']');
    }
  }
  if (cands[0].itype) {
    member(&k->res, &k->res_first, "instance_types");
    tw_buf_addc(&k->res, '[');
    size_t n_it = 0;
    struct tw_buf its;
    tw_buf_init(&its);
    for (size_t i = 0; i < nc; i++)
      if (cands[i].itype)
        list_add(&its, &n_it, cands[i].itype->str);
    tw_buf_add(&k->res, its.data ? its.data : "", its.len);
    tw_buf_release(&its);
    tw_buf_addc(&k->res, ']');
  }
  bool some_zone = false, all_zone = true;
  for (size_t i = 0; i < nc; i++) {
    bool z = cands[i].loc.set && *cands[i].loc.zone &&
             strcmp(cands[i].loc.zone, "*");
    some_zone |= z;
    all_zone &= z;
    add_loc(k, &cands[i].loc);
  }
  if (some_zone && !all_zone)
    errs_add(k->e, path, any,
             "zones on only some candidates: Tradewind's zone selector "
             "applies to the job; give every candidate a zone or none");
}

static bool bucket_uri(const char *s) {
  static const char *const schemes[] = {"s3://",  "gs://",   "gcs://",
                                        "az://",  "azure://", "oss://",
                                        "r2://",  "cos://",  "oci://",
                                        "https://", NULL};
  for (const char *const *p = schemes; *p; p++)
    if (!strncmp(s, *p, strlen(*p)) && s[strlen(*p)])
      return true;
  return false;
}

static void map_file_mounts(struct sky *k, const struct tw_node *m) {
  char path[SKY_PATH_MAX], sub[SKY_PATH_MAX];
  if (m->kind != TW_NODE_MAP) {
    errs_add(k->e, "file_mounts", m,
             "expected a mapping of remote path: source");
    return;
  }
  for (size_t i = 0; i < m->n; i++) {
    const char *dst = m->keys[i];
    const struct tw_node *v = m->items[i];
    path_key(path, "file_mounts", dst);
    if (dst[0] != '/' && dst[0] != '~') {
      errs_add(k->e, path, v,
               "expected an absolute remote path (/data) or one under ~");
      continue;
    }
    const struct tw_node *src = v;
    if (v->kind == TW_NODE_MAP) {
      static const char *const keys[] = {"source", "name",  "store", "mode",
                                         "persistent", "config", NULL};
      bool bad = false;
      for (size_t j = 0; j < v->n; j++)
        if (!in_list(v->keys[j], keys)) {
          path_key(sub, path, v->keys[j]);
          errs_add(k->e, sub, v->items[j], "unknown key");
          bad = true;
        }
      const char *store = scalar(tw_node_get(v, "store"));
      if (store && !strcasecmp(store, "volume")) {
        path_key(sub, path, "store");
        errs_add(k->e, sub, tw_node_get(v, "store"),
                 "volumes are not made or attached by Tradewind; ask for "
                 "disk_size, or read the data from a bucket");
        continue;
      }
      const char *mode = scalar(tw_node_get(v, "mode"));
      if (mode && strcasecmp(mode, "MOUNT") && strcasecmp(mode, "COPY") &&
          strcasecmp(mode, "MOUNT_CACHED")) {
        path_key(sub, path, "mode");
        errs_add(k->e, sub, tw_node_get(v, "mode"),
                 "expected MOUNT, COPY or MOUNT_CACHED");
        bad = true;
      }
      src = tw_node_get(v, "source");
      if (is_null(src)) {
        path_key(sub, path, "name");
        errs_add(k->e, is_null(tw_node_get(v, "name")) ? path : sub, v,
                 "a bucket made for the task: Tradewind creates no storage; "
                 "give source: s3://... of a bucket that exists");
        continue;
      }
      path_key(sub, path, "source");
      if (bad)
        continue;
    } else {
      snprintf(sub, sizeof sub, "%s", path);
    }
    const char *s = scalar(src);
    if (!s) {
      errs_add(k->e, sub, src, "expected a source path or bucket URI");
      continue;
    }
    if (!bucket_uri(s)) {
      errs_add(k->e, sub, src,
               "a local path: the broker has no way to copy files from "
               "the submitting machine; put them in a bucket (s3://, gs://, "
               "az://, oss://) and mount that");
      continue;
    }
    struct tw_node *one[1] = {(struct tw_node *)src};
    struct tw_node seq = {.kind = TW_NODE_SEQ,
                          .line = src->line,
                          .col = src->col,
                          .n = 1,
                          .items = one};
    if (!probe_as(k->e, NULL, "datasets", &seq, sub, "datasets[0]"))
      continue;
    if (k->n_datasets)
      tw_buf_addc(&k->datasets, ',');
    tw_buf_adds(&k->datasets, "{\"uri\":");
    tw_buf_json_str(&k->datasets, s);
    tw_buf_addc(&k->datasets, '}');
    k->n_datasets++;
  }
}

static void map_envs(struct sky *k, const struct tw_node *m) {
  if (m->kind == TW_NODE_MAP)
    for (size_t i = 0; i < m->n; i++)
      if (is_null(m->items[i])) {
        char path[SKY_PATH_MAX];
        path_key(path, "envs", m->keys[i]);
        errs_add(k->e, path, m->items[i] ? m->items[i] : m,
                 "no value: SkyPilot takes it from --env at launch; write "
                 "the value in the file");
        return;
      }
  if (probe(k->e, NULL, "env", m, "envs")) {
    member(&k->top, &k->top_first, "env");
    tw_node_to_json(m, &k->top);
  }
}

enum tw_rc tw_skypilot_to_native(const struct tw_node *root,
                                 const struct tw_spec_opts *opts,
                                 struct tw_buf *out,
                                 struct tw_spec_errs *errs) {
  struct sky k = {.opts = opts, .e = errs, .top_first = true,
                  .res_first = true};
  tw_buf_init(&k.top);
  tw_buf_init(&k.res);
  tw_buf_init(&k.regions);
  tw_buf_init(&k.zones);
  tw_buf_init(&k.datasets);
  size_t before = errs->n + errs->n_more;
  if (!root || root->kind != TW_NODE_MAP) {
    errs_add(errs, "", root, "expected a mapping at the top level");
    goto done;
  }
  char path[SKY_PATH_MAX];
  for (size_t i = 0; i < root->n; i++) {
    const char *key = root->keys[i];
    const struct tw_node *v = root->items[i];
    path_key(path, "", key);
    if (!in_list(key, SKY_TOP)) {
      const char *best = tw_closest(key, SKY_TOP);
      if (best)
        errs_add(errs, path, v, "unknown key; did you mean \"%s\"?", best);
      else
        errs_add(errs, path, v, "unknown key");
      continue;
    }
    if (is_null(v))
      continue;
    if (!strcmp(key, "name")) {
      if (probe(errs, NULL, "name", v, "name")) {
        member(&k.top, &k.top_first, "name");
        tw_node_to_json(v, &k.top);
      }
    } else if (!strcmp(key, "workdir")) {
      const char *w = scalar(v);
      if (w && tw_spec_workdir_ref(w)) {
        /* packed and uploaded by tradewind submit (docs/skypilot.md) */
        member(&k.top, &k.top_first, "workdir");
        tw_node_to_json(v, &k.top);
      } else if (w && *w) {
        errs_add(errs, path, v,
                 "a local directory: submit the task with tradewind submit, "
                 "which packs and uploads it (the API takes sha256:<hex> of "
                 "a workdir uploaded with PUT /v1/workdirs/{sha256})");
      } else {
        errs_add(errs, path, v,
                 "a git repository or another form: only a local directory "
                 "is taken (clone a repository in setup)");
      }
    } else if (!strcmp(key, "num_nodes")) {
      if (probe(errs, NULL, "nodes", v, "num_nodes")) {
        member(&k.top, &k.top_first, "nodes");
        tw_node_to_json(v, &k.top);
      }
    } else if (!strcmp(key, "resources")) {
      map_resources(&k, v);
    } else if (!strcmp(key, "envs")) {
      map_envs(&k, v);
    } else if (!strcmp(key, "secrets")) {
      /* the same key and shape in the spec; a null value is given at
       * submission (tradewind submit --secret KEY[=VALUE]) */
      if (probe(errs, NULL, "secrets", v, "secrets")) {
        member(&k.top, &k.top_first, "secrets");
        tw_node_to_json(v, &k.top);
      }
    } else if (!strcmp(key, "file_mounts")) {
      map_file_mounts(&k, v);
    } else if (!strcmp(key, "setup") || !strcmp(key, "run")) {
      if (probe(errs, NULL, key, v, key)) {
        member(&k.top, &k.top_first, key);
        tw_node_to_json(v, &k.top);
      }
    } else if (!strcmp(key, "config")) {
      errs_add(errs, path, v,
               "SkyPilot's own configuration (docker, kubernetes, cloud "
               "options) has no meaning to Tradewind");
    } else if (!strcmp(key, "service")) {
      errs_add(errs, path, v,
               "a SkyServe service: Tradewind runs jobs that end, not "
               "replicated services");
    } else {
      errs_add(errs, path, v, "not supported by Tradewind");
    }
  }
  if (errs->n + errs->n_more > before)
    goto done;
  /* the spec, in the order of docs/jobspec.md; the name first (SkyPilot's
   * is optional, the spec's is not) */
  tw_buf_addc(out, '{');
  if (is_null(tw_node_get(root, "name"))) {
    tw_buf_adds(out, "\"name\":\"sky-task\"");
    if (k.top.len)
      tw_buf_addc(out, ',');
  }
  tw_buf_add(out, k.top.data ? k.top.data : "", k.top.len);
  if (k.res.len) {
    tw_buf_adds(out, ",\"resources\":{");
    tw_buf_add(out, k.res.data, k.res.len);
    tw_buf_addc(out, '}');
  }
  if (k.disk_gb || k.disk_type) {
    tw_buf_adds(out, ",\"disk\":{");
    if (k.disk_gb)
      tw_buf_printf(out, "\"size_gb\":%d", k.disk_gb);
    if (k.disk_type)
      tw_buf_printf(out, "%s\"type\":\"%s\"", k.disk_gb ? "," : "",
                    k.disk_type);
    tw_buf_addc(out, '}');
  }
  if (k.n_regions || k.n_zones) {
    tw_buf_adds(out, ",\"placement\":{");
    if (k.n_regions) {
      tw_buf_adds(out, "\"regions\":[");
      tw_buf_add(out, k.regions.data, k.regions.len);
      tw_buf_addc(out, ']');
    }
    if (k.n_zones) {
      tw_buf_printf(out, "%s\"selectors\":[{\"label\":\"zone\",\"in\":[",
                    k.n_regions ? "," : "");
      tw_buf_add(out, k.zones.data, k.zones.len);
      tw_buf_adds(out, "]}]");
    }
    tw_buf_addc(out, '}');
  }
  if (k.n_datasets) {
    tw_buf_adds(out, ",\"datasets\":[");
    tw_buf_add(out, k.datasets.data, k.datasets.len);
    tw_buf_addc(out, ']');
  }
  tw_buf_addc(out, '}');
done:
  tw_buf_release(&k.top);
  tw_buf_release(&k.res);
  tw_buf_release(&k.regions);
  tw_buf_release(&k.zones);
  tw_buf_release(&k.datasets);
  return errs->n + errs->n_more > before ? TW_E_INVALID : TW_OK;
}

enum tw_rc tw_spec_parse_any(const char *text, size_t len, bool is_json,
                             const struct tw_spec_opts *opts,
                             struct tw_job_spec *spec,
                             struct tw_spec_errs *errs, bool *is_sky,
                             struct tw_err *err) {
  struct tw_spec_errs local;
  if (!errs)
    errs = &local;
  memset(errs, 0, sizeof *errs);
  if (is_sky)
    *is_sky = false;
  memset(spec, 0, sizeof *spec);
  struct tw_node *root = NULL;
  enum tw_rc rc = is_json ? tw_node_parse_json(text, len, &root, err)
                          : tw_node_parse_yaml(text, len, &root, err);
  if (rc) {
    if (err)
      errs->v[errs->n++] = *err;
    return rc;
  }
  if (!tw_skypilot_is_task(root)) {
    rc = tw_spec_from_node_opts(root, opts, spec, err);
    tw_node_free(root);
    if (rc && err)
      errs->v[errs->n++] = *err;
    return rc;
  }
  if (is_sky)
    *is_sky = true;
  struct tw_buf native;
  tw_buf_init(&native);
  rc = tw_skypilot_to_native(root, opts, &native, errs);
  tw_node_free(root);
  if (rc == TW_OK) {
    struct tw_err ne = {0};
    rc = tw_spec_parse_opts(native.data, native.len, true, opts, spec, &ne);
    if (rc) /* what the keys passed one by one did not catch together */
      errs->v[errs->n++] = ne;
  }
  tw_buf_release(&native);
  if (rc && err && errs->n) {
    *err = errs->v[0];
    size_t more = errs->n - 1 + errs->n_more;
    if (more) {
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l, " (and %zu more)", more);
    }
  }
  return rc;
}
