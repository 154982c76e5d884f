/* netmatrix.c - parsing and answering the network matrix (netmatrix.h). */
#include "policies/place/netmatrix.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/spec.h"

#define MAX_REGIONS 4096
#define MAX_LINKS 262144
#define MAX_RULES 1024

/* Built-in defaults, from the providers' public list prices: internet and
 * inter-cloud egress is about $0.09/GB on AWS, Azure and Alibaba's
 * international tier, inter-region within one provider about $0.02/GB. */
#define DEF_RTT_US 150000
#define DEF_BW_KBPS 1000000
#define DEF_EGRESS_UUSD 90000
#define DEF_SAME_PROVIDER_UUSD 20000
#define SAME_REGION_RTT_US 1000
#define SAME_REGION_BW_KBPS 10000000

struct link {
  uint32_t src, dst;
  int64_t rtt_us;      /* -1: not given */
  int64_t bw_kbps;     /* -1 */
  int64_t egress_uusd; /* -1 */
};

struct rule {
  enum { R_EGRESS, R_BW } kind;
  char provider[32]; /* egress: the source's provider */
  enum tw_net_scope scope;
  char from[64], to[64]; /* globs on the region part; "" any */
  int64_t value;         /* uusd per GB, or kbps */
};

struct tw_netmatrix {
  struct tw_net_region *regions;
  size_t n_regions, cap_regions;
  uint32_t *rhash; /* open addressing: region index + 1, 0 empty */
  size_t rhash_cap;
  struct link *links;
  size_t n_links, cap_links;
  uint32_t *lhash; /* link index + 1 */
  size_t lhash_cap;
  struct rule *rules;
  size_t n_rules, cap_rules;
  int64_t def_rtt_us, def_bw_kbps, def_egress_uusd;
};

const char *tw_net_scope_str(enum tw_net_scope s) {
  switch (s) {
  case TW_NET_SAME_REGION:
    return "same-region";
  case TW_NET_SAME_PROVIDER:
    return "same-provider";
  case TW_NET_INTER_PROVIDER:
    return "inter-provider";
  case TW_NET_INTERNET:
    return "internet";
  }
  return "?";
}

static bool scope_parse(const char *s, enum tw_net_scope *out) {
  for (int i = 0; i <= TW_NET_INTERNET; i++)
    if (!strcmp(s, tw_net_scope_str((enum tw_net_scope)i))) {
      *out = (enum tw_net_scope)i;
      return true;
    }
  return false;
}

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t h =
      a * 0x9e3779b97f4a7c15ULL ^ (b + 0x7f4a7c159e3779b9ULL + (a << 6));
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ULL;
}

struct tw_netmatrix *tw_netmatrix_empty(void) {
  struct tw_netmatrix *m = tw_calloc(1, sizeof *m);
  m->def_rtt_us = DEF_RTT_US;
  m->def_bw_kbps = DEF_BW_KBPS;
  m->def_egress_uusd = DEF_EGRESS_UUSD;
  return m;
}

void tw_netmatrix_free(struct tw_netmatrix *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->n_regions; i++)
    free((char *)m->regions[i].key);
  free(m->regions);
  free(m->rhash);
  free(m->links);
  free(m->lhash);
  free(m->rules);
  free(m);
}

static long region_find(const struct tw_netmatrix *m, const char *key) {
  if (!m->rhash_cap)
    return -1;
  size_t mask = m->rhash_cap - 1;
  for (size_t i = fnv(key, strlen(key)) & mask;; i = (i + 1) & mask) {
    uint32_t v = m->rhash[i];
    if (!v)
      return -1;
    if (!strcmp(m->regions[v - 1].key, key))
      return (long)(v - 1);
  }
}

static void rhash_put(struct tw_netmatrix *m, uint32_t idx) {
  size_t mask = m->rhash_cap - 1;
  const char *key = m->regions[idx].key;
  size_t i = fnv(key, strlen(key)) & mask;
  while (m->rhash[i])
    i = (i + 1) & mask;
  m->rhash[i] = idx + 1;
}

/* Returns the region's index, adding it when new; -1 when full. */
static long region_intern(struct tw_netmatrix *m, const char *key) {
  long f = region_find(m, key);
  if (f >= 0)
    return f;
  if (m->n_regions >= MAX_REGIONS)
    return -1;
  if (m->n_regions == m->cap_regions) {
    m->cap_regions = m->cap_regions ? m->cap_regions * 2 : 64;
    m->regions = tw_realloc(m->regions, m->cap_regions * sizeof *m->regions);
  }
  struct tw_net_region *r = &m->regions[m->n_regions];
  memset(r, 0, sizeof *r);
  r->key = tw_strdup(key);
  m->n_regions++;
  if ((m->n_regions + 1) * 2 > m->rhash_cap) {
    free(m->rhash);
    m->rhash_cap = m->rhash_cap ? m->rhash_cap * 2 : 128;
    m->rhash = tw_calloc(m->rhash_cap, sizeof *m->rhash);
    for (size_t i = 0; i < m->n_regions; i++)
      rhash_put(m, (uint32_t)i);
  } else {
    rhash_put(m, (uint32_t)(m->n_regions - 1));
  }
  return (long)(m->n_regions - 1);
}

static struct link *link_find(const struct tw_netmatrix *m, uint32_t s,
                              uint32_t d) {
  if (!m->lhash_cap)
    return NULL;
  size_t mask = m->lhash_cap - 1;
  for (size_t i = mix(s, d) & mask;; i = (i + 1) & mask) {
    uint32_t v = m->lhash[i];
    if (!v)
      return NULL;
    struct link *l = &m->links[v - 1];
    if (l->src == s && l->dst == d)
      return l;
  }
}

static void lhash_put(struct tw_netmatrix *m, uint32_t idx) {
  size_t mask = m->lhash_cap - 1;
  size_t i = mix(m->links[idx].src, m->links[idx].dst) & mask;
  while (m->lhash[i])
    i = (i + 1) & mask;
  m->lhash[i] = idx + 1;
}

/* The link s -> d, made when new (all values "not given"); NULL when
 * full. */
static struct link *link_get(struct tw_netmatrix *m, uint32_t s, uint32_t d) {
  struct link *l = link_find(m, s, d);
  if (l)
    return l;
  if (m->n_links >= MAX_LINKS)
    return NULL;
  if (m->n_links == m->cap_links) {
    m->cap_links = m->cap_links ? m->cap_links * 2 : 256;
    m->links = tw_realloc(m->links, m->cap_links * sizeof *m->links);
  }
  l = &m->links[m->n_links++];
  *l = (struct link){
      .src = s, .dst = d, .rtt_us = -1, .bw_kbps = -1, .egress_uusd = -1};
  if ((m->n_links + 1) * 2 > m->lhash_cap) {
    free(m->lhash);
    m->lhash_cap = m->lhash_cap ? m->lhash_cap * 2 : 512;
    m->lhash = tw_calloc(m->lhash_cap, sizeof *m->lhash);
    for (size_t i = 0; i < m->n_links; i++)
      lhash_put(m, (uint32_t)i);
  } else {
    lhash_put(m, (uint32_t)(m->n_links - 1));
  }
  return l;
}

static void rule_add(struct tw_netmatrix *m, const struct rule *r) {
  if (m->n_rules == m->cap_rules) {
    m->cap_rules = m->cap_rules ? m->cap_rules * 2 : 16;
    m->rules = tw_realloc(m->rules, m->cap_rules * sizeof *m->rules);
  }
  m->rules[m->n_rules++] = *r;
}

/* ---- answering ------------------------------------------------------------
 */

int64_t tw_net_rtt_estimate_us(int32_t lat1_e4, int32_t lon1_e4,
                               int32_t lat2_e4, int32_t lon2_e4) {
  /* Haversine; distances are not money, and the result is rounded to a
   * whole microsecond at once. */
  const double k = M_PI / 180.0 / 10000.0;
  double p1 = lat1_e4 * k, p2 = lat2_e4 * k;
  double dp = (lat2_e4 - lat1_e4) * k, dl = (lon2_e4 - lon1_e4) * k;
  double a =
      sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2);
  if (a > 1)
    a = 1;
  double km = 2 * 6371.0 * atan2(sqrt(a), sqrt(1 - a));
  return SAME_REGION_RTT_US + (int64_t)llround(km * 18.0);
}

/* "aws:us-east-1" -> provider length (3), or 0 when there is no ':'. */
static size_t provider_len(const char *key) {
  const char *c = strchr(key, ':');
  return c ? (size_t)(c - key) : 0;
}

static enum tw_net_scope classify(const char *src, const char *dst) {
  size_t ps = provider_len(src), pd = provider_len(dst);
  /* "https://host/x" is a place on the internet, not a region */
  if (!ps || !pd || strchr(src, '/') || strchr(dst, '/'))
    return TW_NET_INTERNET;
  if (!strcmp(src, dst))
    return TW_NET_SAME_REGION;
  if (ps == pd && !strncmp(src, dst, ps))
    return TW_NET_SAME_PROVIDER;
  return TW_NET_INTER_PROVIDER;
}

static bool glob_ok(const char *glob, const char *key) {
  if (!glob[0])
    return true;
  size_t p = provider_len(key);
  return fnmatch(glob, p ? key + p + 1 : key, 0) == 0;
}

void tw_netmatrix_link(const struct tw_netmatrix *m, const char *src,
                       const char *dst, struct tw_net_link *out) {
  memset(out, 0, sizeof *out);
  out->scope = classify(src, dst);
  long si = region_find(m, src), di = region_find(m, dst);
  const struct link *fw = NULL, *bw = NULL;
  if (si >= 0 && di >= 0) {
    fw = link_find(m, (uint32_t)si, (uint32_t)di);
    bw = link_find(m, (uint32_t)di, (uint32_t)si);
  }
  /* latency */
  if (fw && fw->rtt_us >= 0) {
    out->rtt_us = fw->rtt_us, out->rtt_how = 'l';
  } else if (bw && bw->rtt_us >= 0) {
    out->rtt_us = bw->rtt_us, out->rtt_how = 'l';
  } else if (out->scope == TW_NET_SAME_REGION) {
    out->rtt_us = SAME_REGION_RTT_US, out->rtt_how = 'r';
  } else if (si >= 0 && di >= 0 && m->regions[si].has_geo &&
             m->regions[di].has_geo) {
    const struct tw_net_region *a = &m->regions[si], *b = &m->regions[di];
    out->rtt_us =
        tw_net_rtt_estimate_us(a->lat_e4, a->lon_e4, b->lat_e4, b->lon_e4);
    out->rtt_how = 'g';
  } else {
    out->rtt_us = m->def_rtt_us, out->rtt_how = 'd';
  }
  /* bandwidth */
  out->bw_how = 'd';
  out->bandwidth_kbps = m->def_bw_kbps;
  if (fw && fw->bw_kbps >= 0) {
    out->bandwidth_kbps = fw->bw_kbps, out->bw_how = 'l';
  } else if (bw && bw->bw_kbps >= 0) {
    out->bandwidth_kbps = bw->bw_kbps, out->bw_how = 'l';
  } else {
    bool found = false;
    for (size_t i = 0; i < m->n_rules && !found; i++) {
      const struct rule *r = &m->rules[i];
      if (r->kind == R_BW && r->scope == out->scope) {
        out->bandwidth_kbps = r->value, out->bw_how = 'r';
        found = true;
      }
    }
    if (!found && out->scope == TW_NET_SAME_REGION)
      out->bandwidth_kbps = SAME_REGION_BW_KBPS, out->bw_how = 'r';
  }
  /* egress: the source's provider charges */
  if (fw && fw->egress_uusd >= 0) {
    out->egress_uusd_per_gb = fw->egress_uusd, out->egress_how = 'l';
    return;
  }
  size_t pl = provider_len(src);
  for (size_t i = 0; i < m->n_rules; i++) {
    const struct rule *r = &m->rules[i];
    if (r->kind != R_EGRESS || r->scope != out->scope)
      continue;
    if (r->provider[0] &&
        (strlen(r->provider) != pl || strncmp(r->provider, src, pl)))
      continue;
    if (!glob_ok(r->from, src) || !glob_ok(r->to, dst))
      continue;
    out->egress_uusd_per_gb = r->value, out->egress_how = 'r';
    return;
  }
  out->egress_how = 'd';
  out->egress_uusd_per_gb = out->scope == TW_NET_SAME_REGION ? 0
                            : out->scope == TW_NET_SAME_PROVIDER
                                ? DEF_SAME_PROVIDER_UUSD
                                : m->def_egress_uusd;
}

const struct tw_net_region *tw_netmatrix_region(const struct tw_netmatrix *m,
                                                const char *key) {
  long i = region_find(m, key);
  return i < 0 ? NULL : &m->regions[i];
}

size_t tw_netmatrix_n_regions(const struct tw_netmatrix *m) {
  return m->n_regions;
}
size_t tw_netmatrix_n_links(const struct tw_netmatrix *m) { return m->n_links; }
const struct tw_net_region *tw_netmatrix_region_at(const struct tw_netmatrix *m,
                                                   size_t i) {
  return i < m->n_regions ? &m->regions[i] : NULL;
}

bool tw_netmatrix_has_link(const struct tw_netmatrix *m, const char *src,
                           const char *dst) {
  long si = region_find(m, src), di = region_find(m, dst);
  return si >= 0 && di >= 0 && link_find(m, (uint32_t)si, (uint32_t)di);
}

/* ---- parsing --------------------------------------------------------------
 */

/* Parses "[-]D[.D]" into value x 10^scale exactly; more decimals than
 * scale are refused, as are results past `max` (scaled) in magnitude. */
static bool fixed_parse(const char *s, int scale, int64_t max, int64_t *out) {
  bool neg = *s == '-';
  if (neg)
    s++;
  if (!isdigit((unsigned char)*s))
    return false;
  int64_t v = 0;
  int digits = 0, dec = 0;
  for (; isdigit((unsigned char)*s); s++) {
    if (++digits > 15)
      return false;
    v = v * 10 + (*s - '0');
  }
  if (*s == '.') {
    s++;
    if (!isdigit((unsigned char)*s))
      return false;
    for (; isdigit((unsigned char)*s); s++) {
      if (++dec > scale)
        return false;
      v = v * 10 + (*s - '0');
    }
  }
  if (*s)
    return false;
  for (; dec < scale; dec++) {
    if (v > max)
      return false;
    v *= 10;
  }
  if (v > max)
    return false;
  *out = neg ? -v : v;
  return true;
}

struct parser {
  struct tw_netmatrix *m;
  const char *name;
  size_t line;
  struct tw_err *err;
};

#define PFAIL(p, ...)                                                          \
  do {                                                                         \
    char m_[200];                                                              \
    snprintf(m_, sizeof m_, __VA_ARGS__);                                      \
    return tw_err_set((p)->err, TW_E_INVALID, "%s:%zu: %s", (p)->name,         \
                      (p)->line, m_);                                          \
  } while (0)

/* Splits "key=value"; false when there is no '=' or the key is empty. */
static bool kv(char *tok, char **k, char **v) {
  char *eq = strchr(tok, '=');
  if (!eq || eq == tok)
    return false;
  *eq = '\0';
  *k = tok;
  *v = eq + 1;
  return true;
}

static bool region_key_ok(const char *s) {
  size_t p = provider_len(s), n = strlen(s);
  if (!p || p + 1 >= n || n >= 128)
    return false;
  for (const char *c = s; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr(":-_.", *c))
      return false;
  return strchr(s + p + 1, ':') == NULL;
}

static bool name_ok(const char *s, size_t max) {
  size_t n = strlen(s);
  if (!n || n >= max)
    return false;
  for (const char *c = s; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("-_.", *c))
      return false;
  return true;
}

static bool glob_text_ok(const char *s, size_t max) {
  size_t n = strlen(s);
  if (!n || n >= max)
    return false;
  for (const char *c = s; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("-_.*?", *c))
      return false;
  return true;
}

static enum tw_rc parse_usd(struct parser *p, const char *k, const char *v,
                            int64_t *out) {
  int64_t u;
  if (tw_parse_usd_uusd(v, &u) || u < 0 || u > 1000LL * 1000000)
    PFAIL(p, "%s: expected a price in USD from 0 to 1000, got \"%.40s\"", k, v);
  *out = u;
  return TW_OK;
}

static enum tw_rc parse_ms(struct parser *p, const char *k, const char *v,
                           int64_t *out_us) {
  if (!fixed_parse(v, 3, 3600000000LL, out_us) || *out_us < 0)
    PFAIL(p,
          "%s: expected milliseconds from 0 to 3600000 (3 decimals at most), "
          "got \"%.40s\"",
          k, v);
  return TW_OK;
}

static enum tw_rc parse_mbps(struct parser *p, const char *k, const char *v,
                             int64_t *out_kbps) {
  if (!fixed_parse(v, 3, 100000000000LL, out_kbps) || *out_kbps <= 0)
    PFAIL(p, "%s: expected Mbit/s from 0.001 to 100000000, got \"%.40s\"", k,
          v);
  return TW_OK;
}

static enum tw_rc line_default(struct parser *p, char **tok, int n) {
  for (int i = 1; i < n; i++) {
    char *k, *v;
    enum tw_rc rc;
    if (!kv(tok[i], &k, &v))
      PFAIL(p, "default: expected key=value, got \"%.40s\"", tok[i]);
    if (!strcmp(k, "rtt_ms"))
      rc = parse_ms(p, k, v, &p->m->def_rtt_us);
    else if (!strcmp(k, "bandwidth_mbps"))
      rc = parse_mbps(p, k, v, &p->m->def_bw_kbps);
    else if (!strcmp(k, "egress_usd_per_gb"))
      rc = parse_usd(p, k, v, &p->m->def_egress_uusd);
    else
      PFAIL(p, "default: unknown key \"%.40s\"", k);
    if (rc)
      return rc;
  }
  return TW_OK;
}

static enum tw_rc line_rule(struct parser *p, char **tok, int n, bool egress) {
  struct rule r = {.kind = egress ? R_EGRESS : R_BW, .scope = TW_NET_INTERNET};
  bool have_scope = false, have_value = false;
  const char *what = egress ? "egress" : "bandwidth";
  for (int i = 1; i < n; i++) {
    char *k, *v;
    enum tw_rc rc = TW_OK;
    if (!kv(tok[i], &k, &v))
      PFAIL(p, "%s: expected key=value, got \"%.40s\"", what, tok[i]);
    if (!strcmp(k, "scope")) {
      if (!scope_parse(v, &r.scope))
        PFAIL(p,
              "%s: unknown scope \"%.40s\" (same-region, same-provider, "
              "inter-provider, internet)",
              what, v);
      have_scope = true;
    } else if (egress && !strcmp(k, "provider")) {
      if (!name_ok(v, sizeof r.provider))
        PFAIL(p, "egress: provider: expected a name, got \"%.40s\"", v);
      snprintf(r.provider, sizeof r.provider, "%s", v);
    } else if (egress && (!strcmp(k, "from") || !strcmp(k, "to"))) {
      if (!glob_text_ok(v, sizeof r.from))
        PFAIL(p, "egress: %s: expected a region glob, got \"%.40s\"", k, v);
      snprintf(k[0] == 'f' ? r.from : r.to, sizeof r.from, "%s", v);
    } else if (egress && !strcmp(k, "usd_per_gb")) {
      rc = parse_usd(p, k, v, &r.value);
      have_value = true;
    } else if (!egress && !strcmp(k, "mbps")) {
      rc = parse_mbps(p, k, v, &r.value);
      have_value = true;
    } else {
      PFAIL(p, "%s: unknown key \"%.40s\"", what, k);
    }
    if (rc)
      return rc;
  }
  if (!have_scope)
    PFAIL(p, "%s: scope= is required", what);
  if (!have_value)
    PFAIL(p, "%s: %s= is required", what, egress ? "usd_per_gb" : "mbps");
  if (egress && !r.provider[0])
    PFAIL(p, "egress: provider= is required");
  if (p->m->n_rules >= MAX_RULES)
    PFAIL(p, "%s: more than %d rules", what, MAX_RULES);
  rule_add(p->m, &r);
  return TW_OK;
}

static enum tw_rc line_region(struct parser *p, char **tok, int n) {
  if (n < 2 || !region_key_ok(tok[1]))
    PFAIL(p, "region: expected provider:region first, got \"%.60s\"",
          n > 1 ? tok[1] : "");
  long idx = region_intern(p->m, tok[1]);
  if (idx < 0)
    PFAIL(p, "region: more than %d regions", MAX_REGIONS);
  struct tw_net_region *r = &p->m->regions[idx];
  bool lat = false, lon = false;
  for (int i = 2; i < n; i++) {
    char *k, *v;
    int64_t x;
    if (!kv(tok[i], &k, &v))
      PFAIL(p, "region: expected key=value, got \"%.40s\"", tok[i]);
    if (!strcmp(k, "lat") || !strcmp(k, "lon")) {
      int64_t lim = k[1] == 'a' ? 900000 : 1800000;
      if (!fixed_parse(v, 4, 1800000, &x) || x < -lim || x > lim)
        PFAIL(p,
              "region: %s: expected degrees within +-%d (4 decimals at most), "
              "got \"%.40s\"",
              k, (int)(lim / 10000), v);
      if (k[1] == 'a')
        r->lat_e4 = (int32_t)x, lat = true;
      else
        r->lon_e4 = (int32_t)x, lon = true;
    } else if (!strcmp(k, "country")) {
      if (!name_ok(v, sizeof r->country))
        PFAIL(p, "region: country: expected a short code, got \"%.40s\"", v);
      snprintf(r->country, sizeof r->country, "%s", v);
    } else if (!strcmp(k, "jurisdiction")) {
      if (!name_ok(v, sizeof r->jurisdiction))
        PFAIL(p, "region: jurisdiction: expected a short code, got \"%.40s\"",
              v);
      snprintf(r->jurisdiction, sizeof r->jurisdiction, "%s", v);
    } else {
      PFAIL(p, "region: unknown key \"%.40s\"", k);
    }
  }
  if (lat != lon)
    PFAIL(p, "region: lat and lon go together");
  r->has_geo = lat;
  return TW_OK;
}

static enum tw_rc line_link(struct parser *p, char **tok, int n) {
  if (n < 3 || !region_key_ok(tok[1]) || !region_key_ok(tok[2]))
    PFAIL(p, "link: expected two provider:region names first");
  long s = region_intern(p->m, tok[1]), d = region_intern(p->m, tok[2]);
  if (s < 0 || d < 0)
    PFAIL(p, "link: more than %d regions", MAX_REGIONS);
  struct link *l = link_get(p->m, (uint32_t)s, (uint32_t)d);
  if (!l)
    PFAIL(p, "link: more than %d links", MAX_LINKS);
  for (int i = 3; i < n; i++) {
    char *k, *v;
    enum tw_rc rc;
    if (!kv(tok[i], &k, &v))
      PFAIL(p, "link: expected key=value, got \"%.40s\"", tok[i]);
    if (!strcmp(k, "rtt_ms"))
      rc = parse_ms(p, k, v, &l->rtt_us);
    else if (!strcmp(k, "bandwidth_mbps"))
      rc = parse_mbps(p, k, v, &l->bw_kbps);
    else if (!strcmp(k, "egress_usd_per_gb"))
      rc = parse_usd(p, k, v, &l->egress_uusd);
    else
      PFAIL(p, "link: unknown key \"%.40s\"", k);
    if (rc)
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_netmatrix_parse(const char *text, size_t len, const char *name,
                              struct tw_netmatrix **out, struct tw_err *err) {
  *out = NULL;
  if (len > TW_NET_TEXT_MAX)
    return tw_err_set(err, TW_E_TOOBIG, "%s: larger than %u bytes", name,
                      TW_NET_TEXT_MAX);
  struct tw_netmatrix *m = tw_netmatrix_empty();
  struct parser p = {.m = m, .name = name, .err = err};
  enum tw_rc rc = TW_OK;
  bool header = false;
  char buf[1024];
  size_t pos = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n')
      end++;
    p.line++;
    size_t n = end - pos;
    if (n && text[pos + n - 1] == '\r')
      n--;
    if (n >= sizeof buf) {
      rc = tw_err_set(err, TW_E_INVALID, "%s:%zu: line longer than %zu bytes",
                      name, p.line, sizeof buf - 1);
      goto fail;
    }
    memcpy(buf, text + pos, n);
    buf[n] = '\0';
    pos = end + 1;
    if (memchr(buf, '\0', n)) {
      rc = tw_err_set(err, TW_E_INVALID, "%s:%zu: NUL byte", name, p.line);
      goto fail;
    }
    char *hash = strchr(buf, '#');
    if (hash)
      *hash = '\0';
    char *tok[32];
    int nt = 0;
    for (char *s = strtok(buf, " \t"); s; s = strtok(NULL, " \t")) {
      if (nt == 32) {
        rc = tw_err_set(err, TW_E_INVALID, "%s:%zu: more than 32 fields", name,
                        p.line);
        goto fail;
      }
      tok[nt++] = s;
    }
    if (!nt)
      continue;
    if (!header) {
      if (nt != 2 || strcmp(tok[0], "tradewind-network") ||
          strcmp(tok[1], "1")) {
        rc = tw_err_set(err, TW_E_INVALID,
                        "%s:%zu: expected the header \"tradewind-network 1\"",
                        name, p.line);
        goto fail;
      }
      header = true;
      continue;
    }
    if (!strcmp(tok[0], "default"))
      rc = line_default(&p, tok, nt);
    else if (!strcmp(tok[0], "egress"))
      rc = line_rule(&p, tok, nt, true);
    else if (!strcmp(tok[0], "bandwidth"))
      rc = line_rule(&p, tok, nt, false);
    else if (!strcmp(tok[0], "region"))
      rc = line_region(&p, tok, nt);
    else if (!strcmp(tok[0], "link"))
      rc = line_link(&p, tok, nt);
    else
      rc = tw_err_set(
          err, TW_E_INVALID,
          "%s:%zu: unknown line \"%.40s\" (default, egress, bandwidth, "
          "region, link)",
          name, p.line, tok[0]);
    if (rc)
      goto fail;
  }
  if (!header) {
    rc = tw_err_set(err, TW_E_INVALID,
                    "%s: empty: expected \"tradewind-network 1\"", name);
    goto fail;
  }
  *out = m;
  return TW_OK;
fail:
  tw_netmatrix_free(m);
  return rc;
}

/* netmatrix_builtin.c, generated by policies/CMakeLists.txt */
extern const char tw_netmatrix_builtin_text[];
extern const size_t tw_netmatrix_builtin_len;

struct tw_netmatrix *tw_netmatrix_builtin(void) {
  struct tw_netmatrix *m = NULL;
  /* the shipped file is parsed by a test on every build: it cannot fail
   * here, short of memory */
  if (tw_netmatrix_parse(tw_netmatrix_builtin_text, tw_netmatrix_builtin_len,
                         "built-in", &m, NULL))
    m = tw_netmatrix_empty();
  return m;
}

static enum tw_rc slurp(const char *path, size_t max, struct tw_buf *b,
                        struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_set(err, TW_E_IO, "%s: cannot open: %s", path,
                      strerror(errno));
  char chunk[16384];
  size_t n;
  tw_buf_adds(b, "");
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b->len + n > max) {
      fclose(f);
      return tw_err_set(err, TW_E_TOOBIG, "%s: larger than %zu bytes", path,
                        max);
    }
    tw_buf_add(b, chunk, n);
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad)
    return tw_err_set(err, TW_E_IO, "%s: read error", path);
  return TW_OK;
}

enum tw_rc tw_netmatrix_load(const char *path, struct tw_netmatrix **out,
                             struct tw_err *err) {
  struct tw_buf b;
  tw_buf_init(&b);
  enum tw_rc rc = slurp(path, TW_NET_TEXT_MAX, &b, err);
  if (!rc)
    rc = tw_netmatrix_parse(b.data, b.len, path, out, err);
  tw_buf_release(&b);
  return rc;
}

/* ---- measured profiles (Skyplane CSV) ------------------------------------ */

/* "gcp:us-east1-b" -> "gcp:us-east1"; other names are regions already. */
static void sky_region(const char *in, size_t n, char *out, size_t outsz) {
  snprintf(out, outsz, "%.*s", (int)n, in);
  if (!strncmp(out, "gcp:", 4)) {
    size_t l = strlen(out);
    if (l > 6 && out[l - 2] == '-' && isalpha((unsigned char)out[l - 1]))
      out[l - 2] = '\0';
  }
}

/* Calls fn for each data row (header skipped), fields split on ','. */
static void sky_rows(const char *text, size_t len,
                     void (*fn)(struct tw_netmatrix *, char **f, int n),
                     struct tw_netmatrix *m) {
  size_t pos = 0;
  bool first = true;
  char line[4096];
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n')
      end++;
    size_t n = end - pos;
    if (n && text[pos + n - 1] == '\r')
      n--;
    if (n < sizeof line && !first) {
      memcpy(line, text + pos, n);
      line[n] = '\0';
      char *f[32];
      int nf = 0;
      char *s = line;
      while (nf < 32) {
        f[nf++] = s;
        char *c = strchr(s, ',');
        if (!c)
          break;
        *c = '\0';
        s = c + 1;
      }
      fn(m, f, nf);
    }
    first = false;
    pos = end + 1;
  }
}

static struct link *sky_link(struct tw_netmatrix *m, const char *a,
                             const char *b) {
  char s[128], d[128];
  sky_region(a, strlen(a), s, sizeof s);
  sky_region(b, strlen(b), d, sizeof d);
  if (!region_key_ok(s) || !region_key_ok(d))
    return NULL;
  long si = region_intern(m, s), di = region_intern(m, d);
  if (si < 0 || di < 0)
    return NULL;
  return link_get(m, (uint32_t)si, (uint32_t)di);
}

static void sky_latency(struct tw_netmatrix *m, char **f, int n) {
  /* src_region,src_tier,src_class,dst_region,dst_tier,dst_class,min,avg,... */
  if (n < 8)
    return;
  struct link *l = sky_link(m, f[0], f[3]);
  char *end;
  double ms = strtod(f[7], &end);
  if (l && end != f[7] && ms >= 0 && ms < 3600000)
    l->rtt_us = (int64_t)llround(ms * 1000.0);
}

static void sky_throughput(struct tw_netmatrix *m, char **f, int n) {
  /* ..., throughput_sent (11), throughput_received (12), cpu, success (14) */
  if (n < 15 || strcmp(f[14], "True"))
    return;
  struct link *l = sky_link(m, f[0], f[3]);
  char *end;
  double bps = strtod(f[12], &end);
  if (l && end != f[12] && bps > 1000 && bps < 1e15)
    l->bw_kbps = (int64_t)llround(bps / 1000.0);
}

static void sky_cost(struct tw_netmatrix *m, char **f, int n) {
  /* src,dest,src_tier,dest_tier,cost (USD/GB) */
  if (n < 5)
    return;
  struct link *l = sky_link(m, f[0], f[1]);
  int64_t u;
  if (l && !tw_parse_usd_uusd(f[4], &u) && u >= 0)
    l->egress_uusd = u;
}

enum tw_rc tw_netmatrix_load_skyplane(const char *dir,
                                      struct tw_netmatrix **out,
                                      struct tw_err *err) {
  static const char *const files[] = {"latency.csv", "throughput.csv",
                                      "cost.csv"};
  void (*const fns[])(struct tw_netmatrix *, char **,
                      int) = {sky_latency, sky_throughput, sky_cost};
  *out = NULL;
  struct tw_netmatrix *m = tw_netmatrix_empty();
  for (int i = 0; i < 3; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    struct tw_buf b;
    tw_buf_init(&b);
    enum tw_rc rc = slurp(path, 64u << 20, &b, err);
    if (rc) {
      tw_buf_release(&b);
      tw_netmatrix_free(m);
      return rc;
    }
    sky_rows(b.data, b.len, fns[i], m);
    tw_buf_release(&b);
  }
  *out = m;
  return TW_OK;
}
