/* bench_place.c - placement decisions per second and their latency on one
 * core, over catalogs of 10k, 100k and 1M offers.
 *
 *   bench-place [--quick] [--smoke] [--sizes 10000,100000,1000000]
 *               [--decisions N] [--data DIR] [--network FILE] [--cpu N]
 *
 * Offers: the real public catalogs in the shared data directory (Azure
 * and GCP in full, the AWS rows there are), on-demand and spot, sampled
 * down to the smaller sizes and copied into generated zones of the same
 * regions (prices within +-8%) up to the larger ones.  They are held the
 * way a compact catalog holds them (about 40 bytes each, names interned)
 * and handed to the index through a struct tw_offer_source that
 * materializes an offer on demand, as the catalog will.
 *
 * Decisions: a fixed mix of 16 job specs (CPU and GPU, spot and
 * on-demand, residency, region selectors, provider lists, datasets with
 * egress, deadlines, gangs), planned round-robin with one workspace, the
 * way the scheduler plans.  Each decision is timed alone (CLOCK_MONOTONIC);
 * the figures are decisions per second over the whole run and the 50th,
 * 99th and 99.9th percentiles.  Also measured: cold decisions (a fresh
 * workspace each, so nothing is cached), plans with exact rejection counts
 * (what `tradewind plan` does), and the index build.
 *
 * Output: one `key value unit` line per figure; `#` lines give context.
 * Exit 77 when the shared data is absent (its path is printed). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "policies/place/index.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"

#ifndef TW_SOURCE_DIR
#define TW_SOURCE_DIR "."
#endif

/* ---- a compact catalog ------------------------------------------------------
 */

struct b_shape {
  char provider[12];
  char type[48];
  int vcpus;
  int64_t memory_mib;
  char accel[32];
  int accel_count;
  int arch;
};

struct b_loc {
  char provider[12];
  char region[40];
  char zone[48];
};

struct b_offer {
  uint32_t shape, loc;
  int64_t price;
  int8_t market;
  int8_t intr;
};

struct catalog {
  struct b_shape *shapes;
  size_t n_shapes, cap_shapes;
  struct b_loc *locs;
  size_t n_locs, cap_locs;
  struct b_offer *offers;
  size_t n, cap;
  struct tw_offer *tmpl; /* one per location: materializing starts here */
};

static uint32_t intern_shape(struct catalog *c, const struct b_shape *s) {
  /* linear probe over a small hash keyed by provider+type */
  static uint32_t *h;
  static size_t hcap;
  if (!h) {
    hcap = 1 << 16;
    h = calloc(hcap, sizeof *h);
  }
  uint64_t x = 1469598103934665603ULL;
  for (const char *p = s->type; *p; p++)
    x = (x ^ (unsigned char)*p) * 1099511628211ULL;
  for (const char *p = s->provider; *p; p++)
    x = (x ^ (unsigned char)*p) * 1099511628211ULL;
  for (size_t i = x & (hcap - 1);; i = (i + 1) & (hcap - 1)) {
    if (!h[i]) {
      if (c->n_shapes == c->cap_shapes) {
        c->cap_shapes = c->cap_shapes ? c->cap_shapes * 2 : 1024;
        c->shapes = realloc(c->shapes, c->cap_shapes * sizeof *c->shapes);
      }
      c->shapes[c->n_shapes] = *s;
      h[i] = (uint32_t)++c->n_shapes;
      return h[i] - 1;
    }
    const struct b_shape *o = &c->shapes[h[i] - 1];
    if (!strcmp(o->type, s->type) && !strcmp(o->provider, s->provider))
      return h[i] - 1;
  }
}

static uint32_t intern_loc(struct catalog *c, const char *prov,
                           const char *region, const char *zone) {
  static uint32_t *h;
  static size_t hcap;
  if (!h) {
    hcap = 1 << 16;
    h = calloc(hcap, sizeof *h);
  }
  uint64_t x = 1469598103934665603ULL;
  const char *parts[3] = {prov, region, zone};
  for (int k = 0; k < 3; k++) {
    for (const char *p = parts[k]; *p; p++)
      x = (x ^ (unsigned char)*p) * 1099511628211ULL;
    x = (x ^ 0x1f) * 1099511628211ULL;
  }
  for (size_t i = x & (hcap - 1);; i = (i + 1) & (hcap - 1)) {
    if (!h[i]) {
      if (c->n_locs == c->cap_locs) {
        c->cap_locs = c->cap_locs ? c->cap_locs * 2 : 1024;
        c->locs = realloc(c->locs, c->cap_locs * sizeof *c->locs);
      }
      struct b_loc *l = &c->locs[c->n_locs];
      snprintf(l->provider, sizeof l->provider, "%s", prov);
      snprintf(l->region, sizeof l->region, "%s", region);
      snprintf(l->zone, sizeof l->zone, "%s", zone);
      h[i] = (uint32_t)++c->n_locs;
      return h[i] - 1;
    }
    const struct b_loc *l = &c->locs[h[i] - 1];
    if (!strcmp(l->provider, prov) && !strcmp(l->region, region) &&
        !strcmp(l->zone, zone))
      return h[i] - 1;
  }
}

static void add_offer(struct catalog *c, uint32_t shape, uint32_t loc,
                      int64_t price, enum tw_market m, int intr) {
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 4096;
    c->offers = realloc(c->offers, c->cap * sizeof *c->offers);
  }
  c->offers[c->n++] =
      (struct b_offer){shape, loc, price, (int8_t)m, (int8_t)intr};
}

/* "0.00924" -> 9240 micro-USD, rounding up past six decimals. */
static int64_t usd(const char *s, size_t n) {
  int64_t whole = 0, frac = 0;
  size_t i = 0;
  int digits = 0;
  bool up = false;
  for (; i < n && isdigit((unsigned char)s[i]); i++)
    whole = whole * 10 + (s[i] - '0');
  if (i < n && s[i] == '.')
    for (i++; i < n && isdigit((unsigned char)s[i]); i++) {
      if (digits < 6)
        frac = frac * 10 + (s[i] - '0'), digits++;
      else if (s[i] != '0')
        up = true;
    }
  for (; digits < 6; digits++)
    frac *= 10;
  return whole * 1000000 + frac + up;
}

/* Splits one CSV line (quotes honoured) into fields. */
static int split(char *line, char **f, size_t *len, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    if (*p == '"') {
      char *s = ++p;
      while (*p && !(*p == '"' && p[1] != '"'))
        p += *p == '"' ? 2 : 1;
      f[n] = s;
      len[n++] = (size_t)(p - s);
      if (*p)
        p++;
    } else {
      char *s = p;
      while (*p && *p != ',' && *p != '\n' && *p != '\r')
        p++;
      f[n] = s;
      len[n++] = (size_t)(p - s);
    }
    if (*p != ',')
      break;
    p++;
  }
  return n;
}

static void fld(char *out, size_t outsz, const char *f, size_t n) {
  if (n >= outsz)
    n = outsz - 1;
  memcpy(out, f, n);
  out[n] = '\0';
}

static int64_t num(const char *f, size_t n) {
  char b[32];
  fld(b, sizeof b, f, n);
  return (int64_t)strtod(b, NULL);
}

static void upper_accel(char *a) {
  for (char *p = a; *p; p++)
    *p = (char)toupper((unsigned char)*p);
}

/* Azure and GCP rows in the SkyPilot layout; columns found by name. */
static size_t load_skypilot(struct catalog *c, const char *path,
                            const char *prov) {
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  char line[4096];
  char *f[32];
  size_t len[32];
  int col_type = -1, col_acc = -1, col_accn = -1, col_cpu = -1, col_mem = -1,
      col_price = -1, col_spot = -1, col_region = -1, col_zone = -1;
  size_t before = c->n;
  if (fgets(line, sizeof line, fp)) {
    int n = split(line, f, len, 32);
    for (int i = 0; i < n; i++) {
      char name[32];
      fld(name, sizeof name, f[i], len[i]);
      if (!strcmp(name, "InstanceType"))
        col_type = i;
      else if (!strcmp(name, "AcceleratorName"))
        col_acc = i;
      else if (!strcmp(name, "AcceleratorCount"))
        col_accn = i;
      else if (!strcmp(name, "vCPUs"))
        col_cpu = i;
      else if (!strcmp(name, "MemoryGiB"))
        col_mem = i;
      else if (!strcmp(name, "Price"))
        col_price = i;
      else if (!strcmp(name, "SpotPrice"))
        col_spot = i;
      else if (!strcmp(name, "Region"))
        col_region = i;
      else if (!strcmp(name, "AvailabilityZone"))
        col_zone = i;
    }
  }
  while (fgets(line, sizeof line, fp)) {
    int n = split(line, f, len, 32);
    if (n <= col_region || n <= col_price || !len[col_type])
      continue;
    struct b_shape s = {.arch = TW_ARCH_X86_64};
    snprintf(s.provider, sizeof s.provider, "%s", prov);
    fld(s.type, sizeof s.type, f[col_type], len[col_type]);
    s.vcpus = (int)num(f[col_cpu], len[col_cpu]);
    s.memory_mib = num(f[col_mem], len[col_mem]) * 1024;
    if (len[col_acc]) {
      fld(s.accel, sizeof s.accel, f[col_acc], len[col_acc]);
      upper_accel(s.accel);
      s.accel_count = (int)num(f[col_accn], len[col_accn]);
      if (s.accel_count < 1)
        s.accel[0] = '\0', s.accel_count = 0;
    }
    if (strstr(s.type, "ps") && prov[1] == 'z') /* Azure Arm sizes: D2ps_v5 */
      s.arch = TW_ARCH_ARM64;
    if (!strncmp(s.type, "t2a", 3) || !strncmp(s.type, "c4a", 3))
      s.arch = TW_ARCH_ARM64;
    char region[40], zone[48] = "";
    fld(region, sizeof region, f[col_region], len[col_region]);
    if (col_zone >= 0 && n > col_zone)
      fld(zone, sizeof zone, f[col_zone], len[col_zone]);
    uint32_t sh = intern_shape(c, &s), lo = intern_loc(c, prov, region, zone);
    int64_t od = len[col_price] ? usd(f[col_price], len[col_price]) : 0;
    int64_t sp = col_spot >= 0 && n > col_spot && len[col_spot]
                     ? usd(f[col_spot], len[col_spot])
                     : 0;
    if (od > 0)
      add_offer(c, sh, lo, od, TW_MARKET_ON_DEMAND, -1);
    if (sp > 0)
      add_offer(c, sh, lo, sp, TW_MARKET_SPOT, (int)(c->n % 23));
  }
  fclose(fp);
  return c->n - before;
}

/* The AWS rows: specs.csv plus one .rows file per type. */
static size_t load_aws(struct catalog *c, const char *dir) {
  char path[1400], line[4096];
  char *f[32];
  size_t len[32];
  snprintf(path, sizeof path, "%s/specs.csv", dir);
  FILE *sp = fopen(path, "r");
  if (!sp)
    return 0;
  size_t before = c->n;
  if (!fgets(line, sizeof line, sp)) {
    fclose(sp);
    return 0;
  }
  while (fgets(line, sizeof line, sp)) {
    int n = split(line, f, len, 32);
    if (n < 7)
      continue;
    struct b_shape s = {.arch = TW_ARCH_X86_64};
    snprintf(s.provider, sizeof s.provider, "aws");
    fld(s.type, sizeof s.type, f[0], len[0]);
    if (len[1]) {
      fld(s.accel, sizeof s.accel, f[1], len[1]);
      upper_accel(s.accel);
      s.accel_count = (int)num(f[2], len[2]);
    }
    s.vcpus = (int)num(f[3], len[3]);
    s.memory_mib = num(f[4], len[4]) * 1024;
    uint32_t sh = intern_shape(c, &s);
    snprintf(path, sizeof path, "%s/%s.rows", dir, s.type);
    FILE *rp = fopen(path, "r");
    while (rp && fgets(line, sizeof line, rp)) {
      int m = split(line, f, len, 32);
      if (m < 4)
        continue;
      char region[40], zone[48];
      fld(region, sizeof region, f[2], len[2]);
      fld(zone, sizeof zone, f[3], len[3]);
      uint32_t lo = intern_loc(c, "aws", region, zone);
      if (len[0])
        add_offer(c, sh, lo, usd(f[0], len[0]), TW_MARKET_ON_DEMAND, -1);
      if (len[1])
        add_offer(c, sh, lo, usd(f[1], len[1]), TW_MARKET_SPOT,
                  (int)(c->n % 23));
    }
    if (rp)
      fclose(rp);
  }
  fclose(sp);
  return c->n - before;
}

/* Materializes offer i of the compact catalog (struct tw_offer_source). */
static const struct tw_offer *cat_get(const struct tw_offer_source *src,
                                      size_t i, struct tw_offer *o) {
  const struct catalog *c = src->ctx;
  const struct b_offer *b = &c->offers[i];
  const struct b_shape *s = &c->shapes[b->shape];
  memcpy(o, &c->tmpl[b->loc], sizeof *o);
  memcpy(o->instance_type, s->type, sizeof s->type);
  o->vcpus = s->vcpus;
  o->memory_mib = s->memory_mib;
  o->arch = (enum tw_arch)s->arch;
  memcpy(o->accel_name, s->accel, sizeof s->accel);
  o->accel_count = s->accel_count;
  o->market = (enum tw_market)b->market;
  o->price_uusd_per_hour = b->price;
  o->interruption_pct = b->intr;
  /* id: account:region:zone:type:market, the template holds the prefix */
  size_t k = strlen(o->id);
  size_t t = strlen(s->type);
  const char *m = b->market == TW_MARKET_SPOT ? ":spot" : ":on-demand";
  if (k + t + strlen(m) < sizeof o->id) {
    memcpy(o->id + k, s->type, t);
    strcpy(o->id + k + t, m);
  }
  return o;
}

static void make_templates(struct catalog *c) {
  c->tmpl = calloc(c->n_locs ? c->n_locs : 1, sizeof *c->tmpl);
  for (size_t l = 0; l < c->n_locs; l++) {
    struct tw_offer *o = &c->tmpl[l];
    tw_offer_init(o);
    snprintf(o->provider, sizeof o->provider, "%s", c->locs[l].provider);
    snprintf(o->account, sizeof o->account, "%s-main", c->locs[l].provider);
    snprintf(o->region, sizeof o->region, "%s", c->locs[l].region);
    snprintf(o->zone, sizeof o->zone, "%s", c->locs[l].zone);
    o->billing_granularity_s = !strcmp(o->provider, "aws") ? 1 : 60;
    o->min_charge_s = 60;
    snprintf(o->id, sizeof o->id, "%.24s:%.40s:%.48s:", o->account, o->region,
             o->zone);
  }
}

/* A catalog of exactly n offers from the base: every k-th offer when n is
 * smaller, the base plus copies in generated zones when larger. */
static void derive(const struct catalog *base, size_t n, struct catalog *out) {
  memset(out, 0, sizeof *out);
  out->shapes = base->shapes;
  out->n_shapes = base->n_shapes;
  if (n <= base->n) {
    out->locs = malloc(base->n_locs * sizeof *out->locs);
    memcpy(out->locs, base->locs, base->n_locs * sizeof *out->locs);
    out->n_locs = base->n_locs;
    out->offers = malloc(n * sizeof *out->offers);
    for (size_t i = 0; i < n; i++)
      out->offers[i] = base->offers[(size_t)((double)i * base->n / n)];
    out->n = n;
    make_templates(out);
    return;
  }
  size_t copies = (n + base->n - 1) / base->n;
  out->n_locs = base->n_locs * copies;
  out->locs = malloc(out->n_locs * sizeof *out->locs);
  for (size_t k = 0; k < copies; k++)
    for (size_t l = 0; l < base->n_locs; l++) {
      struct b_loc *d = &out->locs[k * base->n_locs + l];
      *d = base->locs[l];
      if (k) {
        /* a generated zone of the same region */
        char z[64];
        snprintf(z, sizeof z, "%.30s-g%zu", d->zone[0] ? d->zone : d->region,
                 k);
        snprintf(d->zone, sizeof d->zone, "%.47s", z);
      }
    }
  out->offers = malloc(n * sizeof *out->offers);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < n; i++) {
    size_t k = i / base->n;
    struct b_offer o = base->offers[i % base->n];
    o.loc += (uint32_t)(k * base->n_locs);
    if (k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      o.price = o.price * (int64_t)(92 + x % 17) / 100; /* +-8% */
    }
    out->offers[i] = o;
  }
  out->n = n;
  make_templates(out);
}

/* ---- the job mix
 * ---------------------------------------------------------------- */

static const char *const MIX[] = {
    "name: web\nresources: {cpus: 4+, memory: 16+}\nduration: 2h\n",
    "name: batch\nresources: {cpus: 8+, use_spot: true}\nduration: 6h\n",
    "name: train\nresources: {accelerators: A100:8}\nduration: 12h\n"
    "checkpoint: {interval: 30m, uri: s3://ckpt/t/}\n",
    "name: eu-ft\nresources: {accelerators: H100:1}\nplacement: {residency: "
    "EU}\nduration: 4h\n",
    "name: infer\nresources: {accelerators: T4:1}\nplacement: {providers: "
    "[aws]}\n",
    "name: we\nresources: {cpus: 16+}\nplacement: {regions: "
    "[\"azure:westeurope\", \"azure:northeurope\"]}\n",
    "name: etl\nresources: {cpus: 32+}\nduration: 3h\n"
    "datasets: [{uri: s3://lake/events/, size: 500GB, location: "
    "aws:us-east-1}]\n",
    "name: v100\nresources: {accelerators: V100:1}\nduration: 1h\n"
    "deadline: 2025-11-30T06:00:00Z\n",
    "name: small\nresources: {cpus: 2, memory: 8}\n",
    "name: l4\nresources: {accelerators: L4:1, use_spot: true}\nplacement: "
    "{residency: US}\n",
    "name: mpi\nresources: {cpus: 64+}\nnodes: 4\nduration: 8h\n",
    "name: od80\nresources: {accelerators: A100-80GB:8, market: on-demand}\n"
    "max_price_per_hour: 45\n",
    "name: jp\nresources: {cpus: 8+}\nplacement: {regions: "
    "[\"azure:japan*\"]}\n",
    "name: genomics\nresources: {cpus: 16+, memory: 128+}\nduration: 10h\n"
    "datasets: [{uri: gs://ref/hg38/, size: 3TB, location: "
    "azure:westeurope}]\n",
    "name: arm\nresources: {cpus: 4+, arch: arm64}\n",
    "name: h100x8\nresources: {accelerators: H100:8, use_spot: "
    "true}\nduration: 24h\n"
    "checkpoint: {interval: 1h, uri: s3://ckpt/h/}\n",
};
#define NMIX (sizeof MIX / sizeof MIX[0])

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* This thread's CPU time: what the decisions cost the core, without the
 * time other processes held it (the machine is shared). */
static int64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const int64_t *sorted, size_t n, double p) {
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return (double)sorted[i] / 1000.0;
}

static int run_size(const struct catalog *base, size_t n,
                    const struct tw_policy_set *set, struct tw_job_spec *specs,
                    size_t decisions, bool smoke, bool quick) {
  struct catalog cat;
  derive(base, n, &cat);
  struct tw_offer_source src = {
      .n = cat.n, .get = cat_get, .ctx = &cat, .stable = false};
  struct tw_offer_index *ix;
  struct tw_err err = {0};
  if (tw_offer_index_build(&src, &ix, &err)) {
    fprintf(stderr, "bench-place: %s\n", err.msg);
    return 1;
  }
  struct tw_offer_index_stats st;
  tw_offer_index_stats(ix, &st);
  printf("# offers=%zu shapes=%zu locations=%zu regions=%zu cells=%zu\n",
         st.offers, st.shapes, st.locations, st.regions, st.cells);
  printf("place_%zu_build %.1f ms\n", n, (double)st.build_us / 1000.0);
  printf("place_%zu_index_bytes_per_offer %.0f B\n", n,
         (double)st.bytes / (double)st.offers);
  struct tw_place_snapshot snap = {.index = ix};
  const int64_t now = 1764460800000; /* 2025-11-30T00:00Z */
  struct tw_plan_ws *ws = tw_plan_ws_new();
  size_t fits[NMIX] = {0};
  /* warm-up: one round of each job fills the stage caches */
  for (size_t w = 0; w < NMIX * 4; w++) {
    struct tw_plan p;
    struct tw_plan_input in = {.job = &specs[w % NMIX], .now_ms = now};
    tw_plan_make(set, &snap, &in, NULL, ws, &p, NULL);
    fits[w % NMIX] = p.n;
    tw_plan_release(&p);
  }
  int64_t *lat = malloc(decisions * sizeof *lat);
  int64_t *per = malloc(decisions * sizeof *per);
  const char *strat[NMIX] = {0};
  uint64_t steps[NMIX] = {0};
  uint64_t visited = 0, chosen = 0;
  int64_t t0 = now_ns(), c0 = cpu_ns();
  for (size_t d = 0; d < decisions; d++) {
    struct tw_plan p;
    size_t jj = d % NMIX;
    struct tw_plan_input in = {.job = &specs[jj], .now_ms = now + (int64_t)d};
    int64_t a = now_ns();
    tw_plan_make(set, &snap, &in, NULL, ws, &p, NULL);
    lat[d] = now_ns() - a;
    per[d] = lat[d];
    strat[jj] = p.strategy;
    steps[jj] = p.steps;
    visited += p.visited;
    chosen += p.n > 0;
    tw_plan_release(&p);
  }
  int64_t wall = now_ns() - t0;
  int64_t cpu = cpu_ns() - c0;
  /* per job: its median, and how the search went */
  printf("# per job p50 (us) and search:");
  for (size_t j = 0; j < NMIX && decisions >= NMIX; j++) {
    size_t cnt = 0;
    for (size_t d = j; d < decisions; d += NMIX)
      per[cnt++] = lat[d];
    qsort(per, cnt, sizeof *per, cmp_i64);
    printf(" %zu:%.1f/%s/%llu", j, pct(per, cnt, 0.5),
           strat[j] ? strat[j] : "-", (unsigned long long)steps[j]);
  }
  printf("\n");
  free(per);
  qsort(lat, decisions, sizeof *lat, cmp_i64);
  printf("place_%zu_rate %.0f decisions/s\n", n,
         (double)decisions * 1e9 / (double)wall);
  printf("place_%zu_rate_cpu %.0f decisions/s\n", n,
         (double)decisions * 1e9 / (double)cpu);
  printf("place_%zu_p50 %.1f us\n", n, pct(lat, decisions, 0.50));
  printf("place_%zu_p99 %.1f us\n", n, pct(lat, decisions, 0.99));
  printf("place_%zu_p999 %.1f us\n", n, pct(lat, decisions, 0.999));
  printf("place_%zu_max %.1f us\n", n, (double)lat[decisions - 1] / 1000.0);
  printf("place_%zu_visited %.1f offers/decision\n", n,
         (double)visited / (double)decisions);
  printf("place_%zu_placed %.1f %%\n", n,
         100.0 * (double)chosen / (double)decisions);
  /* cold: nothing cached */
  size_t cold_n = smoke ? NMIX : NMIX * 8;
  int64_t *cl = malloc(cold_n * sizeof *cl);
  for (size_t d = 0; d < cold_n; d++) {
    struct tw_plan_ws *w2 = tw_plan_ws_new();
    struct tw_plan p;
    struct tw_plan_input in = {.job = &specs[d % NMIX], .now_ms = now};
    int64_t a = now_ns();
    tw_plan_make(set, &snap, &in, NULL, w2, &p, NULL);
    cl[d] = now_ns() - a;
    tw_plan_release(&p);
    tw_plan_ws_free(w2);
  }
  qsort(cl, cold_n, sizeof *cl, cmp_i64);
  printf("place_%zu_cold_p50 %.1f us\n", n, pct(cl, cold_n, 0.5));
  printf("place_%zu_cold_max %.1f us\n", n, (double)cl[cold_n - 1] / 1000.0);
  /* with exact rejection counts, and checked against the search */
  size_t cn = smoke ? NMIX : quick ? NMIX * 4 : NMIX * 16;
  int64_t *cc = malloc(cn * sizeof *cc);
  int bad = 0;
  for (size_t d = 0; d < cn; d++) {
    struct tw_plan p, q;
    struct tw_plan_input in = {.job = &specs[d % NMIX], .now_ms = now};
    struct tw_plan_opts o = {.counts = true};
    int64_t a = now_ns();
    tw_plan_make(set, &snap, &in, &o, ws, &p, NULL);
    cc[d] = now_ns() - a;
    tw_plan_make(set, &snap, &in, NULL, ws, &q, NULL);
    if (p.n != q.n || (p.n && p.cands[0].index != q.cands[0].index)) {
      fprintf(stderr, "bench-place: job %zu: search and scan disagree\n",
              d % NMIX);
      bad = 1;
    }
    if (d < NMIX) { /* the counts, against a visit of every offer */
      struct tw_plan ref;
      struct tw_plan_opts ro = {.counts = true, .scan = true};
      tw_plan_make(set, &snap, &in, &ro, ws, &ref, NULL);
      bool same = ref.feasible == p.feasible && ref.n_rejects == p.n_rejects;
      for (size_t k = 0; same && k < p.n_rejects; k++)
        same = ref.rejects[k].count == p.rejects[k].count;
      if (!same) {
        fprintf(stderr, "bench-place: job %zu: counts differ from a scan\n",
                d % NMIX);
        bad = 1;
      }
      tw_plan_release(&ref);
    }
    tw_plan_release(&p);
    tw_plan_release(&q);
  }
  qsort(cc, cn, sizeof *cc, cmp_i64);
  printf("place_%zu_counted_p50 %.1f us\n", n, pct(cc, cn, 0.5));
  printf("place_%zu_counted_p99 %.1f us\n", n, pct(cc, cn, 0.99));
  printf("# jobs with a placement: ");
  for (size_t j = 0; j < NMIX; j++)
    printf("%s%zu", j ? " " : "", fits[j] ? (size_t)1 : (size_t)0);
  printf("\n");
  free(lat);
  free(cl);
  free(cc);
  tw_plan_ws_free(ws);
  tw_offer_index_unref(ix);
  free(cat.locs);
  free(cat.offers);
  free(cat.tmpl);
  return bad;
}

int main(int argc, char **argv) {
  bool quick = false, smoke = false;
  const char *sizes = NULL, *data = getenv("TRADEWIND_TESTDATA"), *net = NULL;
  long decisions = 0, cpu = -1;
  char datab[1024];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--smoke"))
      smoke = true;
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
      sizes = argv[++i];
    else if (!strcmp(argv[i], "--decisions") && i + 1 < argc)
      decisions = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--network") && i + 1 < argc)
      net = argv[++i];
    else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
      cpu = strtol(argv[++i], NULL, 10);
    else {
      fprintf(stderr,
              "usage: bench-place [--quick] [--smoke] [--sizes N,N,...] "
              "[--decisions N]\n"
              "                   [--data DIR] [--network FILE] [--cpu N]\n");
      return 2;
    }
  }
  if (!data) {
    snprintf(datab, sizeof datab, "%s/../shared/data", TW_SOURCE_DIR);
    data = datab;
  }
  if (!sizes)
    sizes = smoke ? "10000" : "10000,100000,1000000";
  if (!decisions)
    decisions = smoke ? 2000 : quick ? 50000 : 400000;
  /* one core: pin to the one we start on unless told */
  if (cpu < 0)
    cpu = sched_getcpu();
  cpu_set_t cs;
  CPU_ZERO(&cs);
  CPU_SET((int)cpu, &cs);
  sched_setaffinity(0, sizeof cs, &cs);

  struct catalog base = {0};
  char path[1200];
  snprintf(path, sizeof path, "%s/catalogs/anycloud/azure/vms.csv", data);
  size_t az = load_skypilot(&base, path, "azure");
  snprintf(path, sizeof path, "%s/catalogs/anycloud/gcp/vms.csv", data);
  size_t gc = load_skypilot(&base, path, "gcp");
  snprintf(path, sizeof path, "%s/catalogs/skypilot/aws_v8_subset", data);
  size_t aw = load_aws(&base, path);
  if (!base.n) {
    printf("SKIPPED: no catalogs under %s\n", data);
    return 77;
  }
  printf("# real offers: azure %zu, gcp %zu, aws %zu; shapes %zu, locations "
         "%zu; cpu %ld\n",
         az, gc, aw, base.n_shapes, base.n_locs, cpu);

  char netb[1200];
  if (!net) {
    snprintf(netb, sizeof netb, "%s/configs/network/default.net",
             TW_SOURCE_DIR);
    net = netb;
  }
  /* a network file comes from policies.network_dir (docs/security.md) */
  char dirb[1200];
  snprintf(dirb, sizeof dirb, "%s", net);
  char *slash = strrchr(dirb, '/');
  const char *net_name = slash ? slash + 1 : net;
  if (slash)
    *slash = '\0';
  char cfg[2600];
  snprintf(cfg, sizeof cfg, "network_dir: %s\nnetwork: %s\n",
           slash ? dirb : ".", net_name);
  struct tw_policy_set *set;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), NULL, &set, &err)) {
    fprintf(stderr, "bench-place: %s\n", err.msg);
    return 1;
  }
  struct tw_job_spec specs[NMIX];
  for (size_t j = 0; j < NMIX; j++)
    if (tw_spec_parse(MIX[j], strlen(MIX[j]), false, &specs[j], &err)) {
      fprintf(stderr, "bench-place: job %zu: %s\n", j, err.msg);
      return 1;
    }
  int bad = 0;
  for (const char *p = sizes; *p;) {
    char *end;
    size_t n = strtoull(p, &end, 10);
    if (end == p)
      break;
    printf("# --- %zu offers, %ld decisions ---\n", n, decisions);
    fflush(stdout);
    bad |= run_size(&base, n, set, specs, (size_t)decisions, smoke, quick);
    fflush(stdout);
    p = *end == ',' ? end + 1 : end;
  }
  for (size_t j = 0; j < NMIX; j++)
    tw_spec_release(&specs[j]);
  tw_policy_set_unref(set);
  free(base.shapes);
  free(base.locs);
  free(base.offers);
  return bad;
}
