/* normalize.c - canonical names, units, regions, rates and billing rules. */
#include "billing/catalog/normalize.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "billing/catalog/catalog_csv.h"
#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/base/units.h"
#include "providers/provider.h" /* struct tw_provider_info */

/* ---- decimals ------------------------------------------------------------ */

static const int64_t POW10[] = {1,         10,         100,          1000,
                                10000,     100000,     1000000,      10000000,
                                100000000, 1000000000, 10000000000LL};

/* Parses s into an integer scaled by 10^scale through the base's decimal
 * reader (broker/base/units.h: one reader, one rounding rule).  Catalog
 * fields are plain decimals: no sign, no exponent, no blanks ("5." and
 * ".5" are fine); the value stays below 10^18 once scaled. */
static bool parse_scaled(const char *s, size_t len, int scale, int64_t *out,
                         bool *exact) {
  char buf[64];
  if (!len || len >= sizeof buf ||
      !(isdigit((unsigned char)s[0]) || s[0] == '.'))
    return false;
  memcpy(buf, s, len);
  buf[len] = '\0';
  if (strpbrk(buf, "eE"))
    return false;
  const char *end;
  int64_t v;
  enum tw_dec_rc rc =
      tw_dec_scaled(buf, &end, POW10[scale], TW_DEC_BARE_POINT, &v);
  if ((rc != TW_DEC_OK && rc != TW_DEC_FRACTION) || *end ||
      v >= 1000000000000000000LL)
    return false;
  *out = v;
  if (exact)
    *exact = rc == TW_DEC_OK;
  return true;
}

bool tw_norm_decimal_micro(const char *s, size_t len, int64_t *out,
                           bool *exact) {
  return parse_scaled(s, len, 6, out, exact);
}

bool tw_norm_decimal_nano(const char *s, size_t len, int64_t *out,
                          bool *exact) {
  return parse_scaled(s, len, 9, out, exact);
}

void tw_norm_fmt_micro(int64_t v, char *out, size_t outsz) {
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char frac[8];
  snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(u % 1000000));
  int n = 6;
  while (n > 0 && frac[n - 1] == '0')
    frac[--n] = '\0';
  snprintf(out, outsz, "%s%llu%s%s", v < 0 ? "-" : "",
           (unsigned long long)(u / 1000000), n ? "." : "", frac);
}

bool tw_norm_gib_to_mib(const char *s, size_t len, int64_t *mib) {
  int64_t micro;
  if (!tw_norm_decimal_micro(s, len, &micro, NULL))
    return false;
  __int128 m = ((__int128)micro * 1024 + 500000) / 1000000;
  *mib = (int64_t)m;
  return true;
}

/* ---- accelerators ----------------------------------------------------------
 */

struct accel_entry {
  const char *name;
  const char *vendor;
  enum tw_accel_kind kind;
  int64_t memory_mib;
  /* aliases, normalized as key() writes them, '|' separated; a family
   * alias shared by several entries picks by memory */
  const char *aliases;
};

#define GIB(n) ((int64_t)(n)*1024)

static const struct accel_entry ACCELS[] = {
    /* NVIDIA data-centre GPUs; the first of a family is its default */
    {"A100-40GB", "NVIDIA", TW_ACCEL_GPU, GIB(40),
     "A100|A100-40GB|A100-SXM4-40GB|A100-PCIE-40GB|A100-40G"},
    {"A100-80GB", "NVIDIA", TW_ACCEL_GPU, GIB(80),
     "A100|A100-80GB|A100-SXM4-80GB|A100-PCIE-80GB|A100-80G"},
    {"H100-80GB", "NVIDIA", TW_ACCEL_GPU, GIB(80),
     "H100|H100-80GB|H100-SXM|H100-SXM5|H100-SXM5-80GB|H100-PCIE|H100-MEGA|"
     "H100-MEGA-80GB|H100-80G"},
    {"H100-94GB", "NVIDIA", TW_ACCEL_GPU, GIB(94), "H100|H100-NVL|H100-94GB"},
    {"H200", "NVIDIA", TW_ACCEL_GPU, 144384, "H200|H200-141GB|H200-SXM"},
    {"H20", "NVIDIA", TW_ACCEL_GPU, GIB(96), "H20"},
    {"B200", "NVIDIA", TW_ACCEL_GPU, GIB(180), "B200"},
    {"GB200", "NVIDIA", TW_ACCEL_GPU, GIB(186), "GB200"},
    {"V100-16GB", "NVIDIA", TW_ACCEL_GPU, GIB(16),
     "V100|V100-16GB|V100-SXM2-16GB|V100-PCIE-16GB"},
    {"V100-32GB", "NVIDIA", TW_ACCEL_GPU, GIB(32),
     "V100|V100-32GB|V100-SXM2-32GB"},
    {"T4", "NVIDIA", TW_ACCEL_GPU, GIB(16), "T4"},
    {"T4G", "NVIDIA", TW_ACCEL_GPU, GIB(16), "T4G"},
    {"A10G", "NVIDIA", TW_ACCEL_GPU, GIB(24), "A10G"},
    {"A10", "NVIDIA", TW_ACCEL_GPU, GIB(24), "A10"},
    {"A2", "NVIDIA", TW_ACCEL_GPU, GIB(16), "A2"},
    {"A30", "NVIDIA", TW_ACCEL_GPU, GIB(24), "A30"},
    {"A40", "NVIDIA", TW_ACCEL_GPU, GIB(48), "A40"},
    {"L4", "NVIDIA", TW_ACCEL_GPU, GIB(24), "L4"},
    {"L40", "NVIDIA", TW_ACCEL_GPU, GIB(48), "L40"},
    {"L40S", "NVIDIA", TW_ACCEL_GPU, GIB(48), "L40S"},
    {"A6000", "NVIDIA", TW_ACCEL_GPU, GIB(48), "A6000|RTX-A6000|RTXA6000"},
    {"K80", "NVIDIA", TW_ACCEL_GPU, GIB(12), "K80"},
    {"K520", "NVIDIA", TW_ACCEL_GPU, GIB(4), "K520|GRID-K520"},
    {"M60", "NVIDIA", TW_ACCEL_GPU, GIB(8), "M60"},
    {"P4", "NVIDIA", TW_ACCEL_GPU, GIB(8), "P4"},
    {"P40", "NVIDIA", TW_ACCEL_GPU, GIB(24), "P40"},
    {"P100", "NVIDIA", TW_ACCEL_GPU, GIB(16), "P100"},
    /* AMD */
    {"MI25", "AMD", TW_ACCEL_GPU, GIB(16), "MI25"},
    {"MI50", "AMD", TW_ACCEL_GPU, GIB(32), "MI50"},
    {"MI100", "AMD", TW_ACCEL_GPU, GIB(32), "MI100"},
    {"MI210", "AMD", TW_ACCEL_GPU, GIB(64), "MI210"},
    {"MI250X", "AMD", TW_ACCEL_GPU, GIB(128), "MI250X|MI250"},
    {"MI300X", "AMD", TW_ACCEL_GPU, GIB(192), "MI300X"},
    {"V520", "AMD", TW_ACCEL_GPU, GIB(8), "V520|RADEON-PRO-V520|RADEONPROV520"},
    /* neural ASICs */
    {"Ascend-910B", "Huawei", TW_ACCEL_NPU, GIB(64),
     "ASCEND-910B|ASCEND910B|910B"},
    {"Ascend-910", "Huawei", TW_ACCEL_NPU, GIB(32), "ASCEND-910|ASCEND910"},
    {"Ascend-310P", "Huawei", TW_ACCEL_NPU, GIB(24),
     "ASCEND-310P|ASCEND310P|310P"},
    {"Gaudi", "Intel", TW_ACCEL_NPU, GIB(32), "GAUDI|HL-205|GAUDI-HL-205"},
    {"Gaudi2", "Intel", TW_ACCEL_NPU, GIB(96), "GAUDI2|HL-225"},
    {"Inferentia", "AWS", TW_ACCEL_NPU, GIB(8), "INFERENTIA"},
    {"Inferentia2", "AWS", TW_ACCEL_NPU, GIB(32), "INFERENTIA2"},
    {"Trainium", "AWS", TW_ACCEL_NPU, GIB(32), "TRAINIUM"},
    {"Trainium2", "AWS", TW_ACCEL_NPU, GIB(96), "TRAINIUM2"},
    /* FPGAs */
    {"U250", "Xilinx", TW_ACCEL_FPGA, GIB(64), "U250|ALVEO-U250"},
    {"VU9P", "Xilinx", TW_ACCEL_FPGA, GIB(64), "VU9P|VIRTEX-VU9P"},
    {"VU47P", "Xilinx", TW_ACCEL_FPGA, GIB(16), "VU47P"},
};
#define NACCELS (sizeof ACCELS / sizeof ACCELS[0])

const char *tw_accel_kind_str(enum tw_accel_kind k) {
  switch (k) {
  case TW_ACCEL_NONE:
    return "";
  case TW_ACCEL_GPU:
    return "gpu";
  case TW_ACCEL_NPU:
    return "npu";
  case TW_ACCEL_TPU:
    return "tpu";
  case TW_ACCEL_FPGA:
    return "fpga";
  case TW_ACCEL_UNKNOWN:
    break;
  }
  return "unknown";
}

/* Upper-cases raw, turns runs of spaces, underscores and hyphens into one
 * hyphen and drops vendor words, so "NVIDIA Tesla V100_32GB" becomes
 * "V100-32GB".  False when it does not fit. */
static bool accel_key(const char *raw, size_t len, char *out, size_t outsz) {
  static const char *const VENDOR_WORDS[] = {
      "NVIDIA-", "TESLA-",  "AMD-", "INSTINCT-", "HUAWEI-", "XILINX-",
      "INTEL-",  "HABANA-", "AWS-", "GOOGLE-",   NULL};
  size_t n = 0;
  bool sep = true; /* drop leading separators */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)raw[i];
    if (c == ' ' || c == '_' || c == '-' || c == '\t') {
      if (!sep) {
        if (n + 1 >= outsz)
          return false;
        out[n++] = '-';
      }
      sep = true;
      continue;
    }
    if (n + 1 >= outsz)
      return false;
    out[n++] = (char)toupper(c);
    sep = false;
  }
  while (n && out[n - 1] == '-')
    n--;
  out[n] = '\0';
  for (bool again = true; again;) {
    again = false;
    for (int v = 0; VENDOR_WORDS[v]; v++) {
      size_t l = strlen(VENDOR_WORDS[v]);
      if (n > l && !strncmp(out, VENDOR_WORDS[v], l)) {
        memmove(out, out + l, n - l + 1);
        n -= l;
        again = true;
      }
    }
  }
  return n > 0;
}

static bool alias_has(const char *aliases, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = aliases; *p;) {
    const char *e = strchr(p, '|');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == kl && !memcmp(p, key, l))
      return true;
    if (!e)
      break;
    p = e + 1;
  }
  return false;
}

static void accel_fill(const struct accel_entry *e, struct tw_accel_info *out) {
  out->name = e->name;
  out->vendor = e->vendor;
  out->kind = e->kind;
  out->memory_mib = e->memory_mib;
}

bool tw_norm_accel(const char *raw, size_t len, int64_t mem_mib_hint,
                   struct tw_accel_info *out) {
  char key[64];
  memset(out, 0, sizeof *out);
  out->kind = TW_ACCEL_UNKNOWN;
  if (!accel_key(raw, len, key, sizeof key))
    return false;
  const struct accel_entry *best = NULL;
  int64_t best_d = 0;
  for (size_t i = 0; i < NACCELS; i++) {
    if (!alias_has(ACCELS[i].aliases, key))
      continue;
    int64_t d =
        mem_mib_hint > 0 ? llabs(ACCELS[i].memory_mib - mem_mib_hint) : 0;
    if (!best || d < best_d) {
      best = &ACCELS[i];
      best_d = d;
    }
  }
  if (best) {
    accel_fill(best, out);
    return true;
  }
  /* TPU slices ("tpu-v5litepod-8") have no fixed name: their family is
   * known, the slice stays as written */
  if (!strncmp(key, "TPU-", 4)) {
    out->vendor = "Google";
    out->kind = TW_ACCEL_TPU;
  }
  return false;
}

bool tw_norm_accel_from_type(const struct tw_provider_info *info,
                             const char *type, struct tw_accel_info *out) {
  for (const struct tw_provider_type_accel *h = info ? info->type_accels : NULL;
       h && h->type_prefix; h++)
    if (!strncmp(type, h->type_prefix, strlen(h->type_prefix)))
      return tw_norm_accel(h->accel, strlen(h->accel), 0, out);
  return false;
}

bool tw_norm_npu_resource(const char *name, bool *is_control) {
  if (!strcasecmp(name, "npu.compute")) {
    *is_control = false;
    return true;
  }
  if (!strcasecmp(name, "npu.control")) {
    *is_control = true;
    return true;
  }
  return false;
}

/* ---- CPU architecture
 * -------------------------------------------------------- */

enum tw_arch tw_norm_arch(const char *raw, size_t len) {
  static const struct {
    const char *name;
    enum tw_arch arch;
  } NAMES[] = {{"x86_64", TW_ARCH_X86_64}, {"amd64", TW_ARCH_X86_64},
               {"x86-64", TW_ARCH_X86_64}, {"x64", TW_ARCH_X86_64},
               {"i386", TW_ARCH_X86_64},   {"arm64", TW_ARCH_ARM64},
               {"aarch64", TW_ARCH_ARM64}, {"arm64_mac", TW_ARCH_ARM64}};
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
    if (strlen(NAMES[i].name) == len && !strncasecmp(NAMES[i].name, raw, len))
      return NAMES[i].arch;
  return TW_ARCH_ANY;
}

enum tw_arch tw_norm_arch_guess(const struct tw_provider_info *info,
                                const char *type) {
  return info && info->arch_of_type ? info->arch_of_type(type) : TW_ARCH_ANY;
}

/* ---- small CSV tables
 * ---------------------------------------------------------- */

/* Copies field i of rec into out (NUL-terminated, trimmed of spaces);
 * false when it does not fit or holds a control byte. */
static bool field_copy(const struct tw_csv_record *rec, size_t i, char *out,
                       size_t outsz) {
  if (i >= rec->n) {
    out[0] = '\0';
    return true;
  }
  const char *s = rec->f[i];
  size_t n = rec->len[i];
  while (n && (*s == ' ' || *s == '\t'))
    s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  if (n >= outsz)
    return false;
  for (size_t k = 0; k < n; k++)
    if ((unsigned char)s[k] < 0x20)
      return false;
  memcpy(out, s, n);
  out[n] = '\0';
  return true;
}

static bool is_comment(const struct tw_csv_record *rec) {
  return rec->n >= 1 && rec->len[0] && rec->f[0][0] == '#';
}

/* Checks the header record against the expected names. */
static enum tw_rc header_check(const struct tw_csv_record *rec,
                               const char *const *names, const char *what,
                               struct tw_err *err) {
  size_t n = 0;
  while (names[n])
    n++;
  bool ok = rec->n == n;
  for (size_t i = 0; ok && i < n; i++) {
    char f[32];
    ok = field_copy(rec, i, f, sizeof f) && !strcmp(f, names[i]);
  }
  if (!ok) {
    char want[160] = "";
    for (size_t i = 0; i < n; i++)
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
               i ? "," : "", names[i]);
    return tw_err_set(err, TW_E_INVALID, "%s line %zu: expected the header %s",
                      what, rec->line, want);
  }
  return TW_OK;
}

/* Signed decimal degrees to millionths. */
static bool parse_degrees(const char *s, int32_t limit_deg, int32_t *out) {
  bool neg = *s == '-';
  int64_t v;
  if (neg || *s == '+')
    s++;
  if (!tw_norm_decimal_micro(s, strlen(s), &v, NULL) ||
      v > (int64_t)limit_deg * 1000000)
    return false;
  *out = (int32_t)(neg ? -v : v);
  return true;
}

static bool is_upper_code(const char *s, size_t min, size_t max) {
  size_t n = strlen(s);
  if (n < min || n > max)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 'A' || s[i] > 'Z')
      return false;
  return true;
}

static enum tw_rc slurp(const char *path, const char *what, char **out,
                        size_t *len, struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_set(err, TW_E_IO, "%s %s: cannot open", what, path);
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[16384];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    tw_buf_add(&b, chunk, n);
    if (b.len > (64u << 20)) {
      fclose(f);
      tw_buf_release(&b);
      return tw_err_set(err, TW_E_TOOBIG, "%s %s: larger than 64 MiB", what,
                        path);
    }
  }
  fclose(f);
  *len = b.len;
  *out = b.data ? tw_buf_detach(&b) : tw_strdup("");
  return TW_OK;
}

/* ---- regions
 * ------------------------------------------------------------------ */

struct tw_regions {
  struct tw_region *items; /* sorted by (provider, region) */
  size_t n;
};

static int region_cmp(const void *a, const void *b) {
  const struct tw_region *x = a, *y = b;
  int c = strcmp(x->provider, y->provider);
  return c ? c : strcmp(x->region, y->region);
}

static const char *const EU_MEMBERS[] = {
    "AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR",
    "DE", "GR", "HU", "IE", "IT", "LV", "LT", "LU", "MT", "NL",
    "PL", "PT", "RO", "SK", "SI", "ES", "SE", NULL};

const char *tw_norm_jurisdiction_of(const char *country) {
  for (int i = 0; EU_MEMBERS[i]; i++)
    if (!strcmp(country, EU_MEMBERS[i]))
      return "EU";
  if (!strcmp(country, "GB"))
    return "UK";
  return country;
}

enum tw_rc tw_regions_load_text(const char *text, size_t len,
                                struct tw_regions **out, struct tw_err *err) {
  static const char *const HEADER[] = {"provider",     "region",   "country",
                                       "jurisdiction", "lat",      "lon",
                                       "zone_prefix",  "location", NULL};
  struct tw_regions *t = tw_calloc(1, sizeof *t);
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  size_t cap = 0;
  bool header = false;
  enum tw_rc rc = TW_OK;
  tw_csv_reader_init(&r, text, len);
  while (tw_csv_read(&r, &rec)) {
    if (is_comment(&rec))
      continue;
    if (!header) {
      if ((rc = header_check(&rec, HEADER, "regions", err)))
        goto fail;
      header = true;
      continue;
    }
    struct tw_region g;
    char lat[24], lon[24];
    memset(&g, 0, sizeof g);
    if (rec.n != 8 || !field_copy(&rec, 0, g.provider, sizeof g.provider) ||
        !field_copy(&rec, 1, g.region, sizeof g.region) ||
        !field_copy(&rec, 2, g.country, sizeof g.country) ||
        !field_copy(&rec, 3, g.jurisdiction, sizeof g.jurisdiction) ||
        !field_copy(&rec, 4, lat, sizeof lat) ||
        !field_copy(&rec, 5, lon, sizeof lon) ||
        !field_copy(&rec, 6, g.zone_prefix, sizeof g.zone_prefix) ||
        !field_copy(&rec, 7, g.location, sizeof g.location)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "regions line %zu: expected 8 fields of bounded length",
                      rec.line);
      goto fail;
    }
    if (!*g.provider || !*g.region) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "regions line %zu: provider and region are required",
                      rec.line);
      goto fail;
    }
    if (!is_upper_code(g.country, 2, 2)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "regions line %zu: country: expected an ISO 3166 code "
                      "like US, got \"%s\"",
                      rec.line, g.country);
      goto fail;
    }
    if (!*g.jurisdiction)
      snprintf(g.jurisdiction, sizeof g.jurisdiction, "%s",
               tw_norm_jurisdiction_of(g.country));
    if (!is_upper_code(g.jurisdiction, 2, 8)) {
      rc =
          tw_err_set(err, TW_E_INVALID,
                     "regions line %zu: jurisdiction: expected 2..8 upper-case "
                     "letters, got \"%s\"",
                     rec.line, g.jurisdiction);
      goto fail;
    }
    if (!parse_degrees(lat, 90, &g.lat_e6) ||
        !parse_degrees(lon, 180, &g.lon_e6)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "regions line %zu: lat/lon: expected decimal degrees "
                      "within -90..90 and -180..180",
                      rec.line);
      goto fail;
    }
    if (t->n == cap) {
      cap = cap ? cap * 2 : 128;
      t->items = tw_realloc(t->items, cap * sizeof *t->items);
    }
    t->items[t->n++] = g;
  }
  if (!header) {
    rc = tw_err_set(err, TW_E_INVALID, "regions: no header line");
    goto fail;
  }
  qsort(t->items, t->n, sizeof *t->items, region_cmp);
  for (size_t i = 1; i < t->n; i++)
    if (!region_cmp(&t->items[i - 1], &t->items[i])) {
      rc = tw_err_set(err, TW_E_INVALID, "regions: %s %s is listed twice",
                      t->items[i].provider, t->items[i].region);
      goto fail;
    }
  tw_csv_reader_release(&r);
  *out = t;
  return TW_OK;
fail:
  tw_csv_reader_release(&r);
  tw_regions_free(t);
  *out = NULL;
  return rc;
}

enum tw_rc tw_regions_load_file(const char *path, struct tw_regions **out,
                                struct tw_err *err) {
  char *text;
  size_t len;
  enum tw_rc rc = slurp(path, "regions", &text, &len, err);
  if (rc)
    return rc;
  struct tw_err local = {0};
  rc = tw_regions_load_text(text, len, out, &local);
  free(text);
  if (rc)
    tw_err_set(err, rc, "%s: %s", path, local.msg);
  return rc;
}

/* catalog_builtin.c, generated from configs/catalog at build time */
extern const char tw_catalog_builtin_regions[];
extern const size_t tw_catalog_builtin_regions_len;
extern const char tw_catalog_builtin_rates[];
extern const size_t tw_catalog_builtin_rates_len;

enum tw_rc tw_regions_builtin(struct tw_regions **out, struct tw_err *err) {
  return tw_regions_load_text(tw_catalog_builtin_regions,
                              tw_catalog_builtin_regions_len, out, err);
}

void tw_regions_free(struct tw_regions *t) {
  if (!t)
    return;
  free(t->items);
  free(t);
}

size_t tw_regions_count(const struct tw_regions *t) { return t ? t->n : 0; }

const struct tw_region *tw_regions_find(const struct tw_regions *t,
                                        const char *provider,
                                        const char *region) {
  if (!t || strlen(provider) >= sizeof t->items[0].provider ||
      strlen(region) >= sizeof t->items[0].region)
    return NULL;
  struct tw_region key;
  snprintf(key.provider, sizeof key.provider, "%s", provider);
  snprintf(key.region, sizeof key.region, "%s", region);
  return bsearch(&key, t->items, t->n, sizeof *t->items, region_cmp);
}

bool tw_norm_is_zone_id(const char *s) {
  /* <letters><digits>-[<letters><digits>-]az<digits> */
  size_t i = 0;
  if (!islower((unsigned char)s[i]))
    return false;
  while (islower((unsigned char)s[i]))
    i++;
  if (!isdigit((unsigned char)s[i]))
    return false;
  while (isdigit((unsigned char)s[i]))
    i++;
  if (s[i++] != '-')
    return false;
  const char *last = strrchr(s + i - 1, '-');
  if (strncmp(last, "-az", 3) || !isdigit((unsigned char)last[3]))
    return false;
  for (const char *p = last + 3; *p; p++)
    if (!isdigit((unsigned char)*p))
      return false;
  for (const char *p = s + i; p < last; p++)
    if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
      return false;
  return true;
}

const struct tw_region *tw_regions_by_zone_id(const struct tw_regions *t,
                                              const char *provider,
                                              const char *zone_id,
                                              bool *local) {
  if (!t || !provider || !tw_norm_is_zone_id(zone_id))
    return NULL;
  const char *dash = strchr(zone_id, '-');
  size_t pl = (size_t)(dash - zone_id);
  if (local)
    *local = strncmp(dash, "-az", 3) != 0;
  for (size_t i = 0; i < t->n; i++)
    if (strlen(t->items[i].zone_prefix) == pl &&
        !strncmp(t->items[i].zone_prefix, zone_id, pl) &&
        !strcmp(t->items[i].provider, provider))
      return &t->items[i];
  return NULL;
}

/* ---- currency
 * ------------------------------------------------------------------- */

struct tw_rates {
  struct tw_rate *items;
  size_t n;
};

enum tw_rc tw_rates_load_text(const char *text, size_t len,
                              struct tw_rates **out, struct tw_err *err) {
  static const char *const HEADER[] = {"currency", "usd_per_unit", "date",
                                       "source", NULL};
  struct tw_rates *t = tw_calloc(1, sizeof *t);
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  size_t cap = 4;
  bool header = false;
  enum tw_rc rc = TW_OK;
  t->items = tw_calloc(cap, sizeof *t->items);
  /* USD is exactly 1, always */
  struct tw_rate *usd = &t->items[t->n++];
  snprintf(usd->currency, sizeof usd->currency, "USD");
  usd->nusd_per_unit = 1000000000;
  snprintf(usd->text, sizeof usd->text, "1");
  snprintf(usd->source, sizeof usd->source, "identity");
  tw_csv_reader_init(&r, text, len);
  while (tw_csv_read(&r, &rec)) {
    if (is_comment(&rec))
      continue;
    if (!header) {
      if ((rc = header_check(&rec, HEADER, "rates", err)))
        goto fail;
      header = true;
      continue;
    }
    struct tw_rate x;
    memset(&x, 0, sizeof x);
    bool exact;
    if (rec.n != 4 || !field_copy(&rec, 0, x.currency, sizeof x.currency) ||
        !field_copy(&rec, 1, x.text, sizeof x.text) ||
        !field_copy(&rec, 2, x.date, sizeof x.date) ||
        !field_copy(&rec, 3, x.source, sizeof x.source)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "rates line %zu: expected 4 fields of bounded length",
                      rec.line);
      goto fail;
    }
    if (!is_upper_code(x.currency, 3, 3)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "rates line %zu: currency: expected an ISO 4217 code "
                      "like CNY, got \"%s\"",
                      rec.line, x.currency);
      goto fail;
    }
    if (!tw_norm_decimal_nano(x.text, strlen(x.text), &x.nusd_per_unit,
                              &exact) ||
        !exact || x.nusd_per_unit <= 0) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "rates line %zu: usd_per_unit: expected a positive "
                      "decimal with at most 9 decimals, got \"%s\"",
                      rec.line, x.text);
      goto fail;
    }
    int64_t ms;
    char ts[32];
    snprintf(ts, sizeof ts, "%sT00:00:00Z", x.date);
    if (strlen(x.date) != 10 || tw_time_parse_rfc3339(ts, &ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "rates line %zu: date: expected YYYY-MM-DD, got \"%s\"",
                      rec.line, x.date);
      goto fail;
    }
    if (!strcmp(x.currency, "USD")) {
      if (x.nusd_per_unit != 1000000000) {
        rc = tw_err_set(err, TW_E_INVALID,
                        "rates line %zu: USD is 1 by definition", rec.line);
        goto fail;
      }
      continue;
    }
    if (tw_rates_find(t, x.currency)) {
      rc = tw_err_set(err, TW_E_INVALID, "rates line %zu: %s is listed twice",
                      rec.line, x.currency);
      goto fail;
    }
    if (t->n == cap) {
      cap *= 2;
      t->items = tw_realloc(t->items, cap * sizeof *t->items);
    }
    t->items[t->n++] = x;
  }
  if (!header) {
    rc = tw_err_set(err, TW_E_INVALID, "rates: no header line");
    goto fail;
  }
  tw_csv_reader_release(&r);
  *out = t;
  return TW_OK;
fail:
  tw_csv_reader_release(&r);
  tw_rates_free(t);
  *out = NULL;
  return rc;
}

enum tw_rc tw_rates_load_file(const char *path, struct tw_rates **out,
                              struct tw_err *err) {
  char *text;
  size_t len;
  enum tw_rc rc = slurp(path, "rates", &text, &len, err);
  if (rc)
    return rc;
  struct tw_err local = {0};
  rc = tw_rates_load_text(text, len, out, &local);
  free(text);
  if (rc)
    tw_err_set(err, rc, "%s: %s", path, local.msg);
  return rc;
}

enum tw_rc tw_rates_builtin(struct tw_rates **out, struct tw_err *err) {
  return tw_rates_load_text(tw_catalog_builtin_rates,
                            tw_catalog_builtin_rates_len, out, err);
}

void tw_rates_free(struct tw_rates *r) {
  if (!r)
    return;
  free(r->items);
  free(r);
}

size_t tw_rates_count(const struct tw_rates *r) { return r ? r->n : 0; }

const struct tw_rate *tw_rates_at(const struct tw_rates *r, size_t i) {
  return r && i < r->n ? &r->items[i] : NULL;
}

const struct tw_rate *tw_rates_find(const struct tw_rates *r,
                                    const char *currency) {
  for (size_t i = 0; r && i < r->n; i++)
    if (!strcasecmp(r->items[i].currency, currency))
      return &r->items[i];
  return NULL;
}

enum tw_rc tw_rate_convert(const struct tw_rate *rate, int64_t micro,
                           int64_t *uusd, struct tw_err *err) {
  if (micro < 0)
    return tw_err_set(err, TW_E_INVALID, "price: negative amount");
  /* the rounding rule of broker/base/units.h */
  if (!tw_units_div_round((__int128)micro * rate->nusd_per_unit, 1000000000,
                          uusd))
    return tw_err_set(err, TW_E_INVALID, "price: %s amount out of range",
                      rate->currency);
  return TW_OK;
}

/* ---- billing rules
 * ----------------------------------------------------------------- */

bool tw_norm_billing(const struct tw_provider_info *info, enum tw_market market,
                     struct tw_billing_rule *out) {
  memset(out, 0, sizeof *out);
  if (!info || info->billing.kind != TW_BILLING_PUBLISHED)
    return false;
  out->granularity_s = info->billing.granularity_s;
  out->min_charge_s = info->billing.min_charge_s;
  if (market == TW_MARKET_SPOT)
    out->protection_s = info->billing.spot_protection_s;
  return true;
}

/* ---- interruption risk
 * -------------------------------------------------------------- */

static const char *const RISK_NAMES[TW_RISK_COUNT] = {
    "unknown", "<5%", "5-10%", "10-15%", "15-20%", ">20%"};
static const int RISK_PCT[TW_RISK_COUNT] = {-1, 5, 11, 16, 22, 100};

const char *tw_risk_str(enum tw_risk r) {
  return (unsigned)r < TW_RISK_COUNT ? RISK_NAMES[r] : "unknown";
}

int tw_risk_pct(enum tw_risk r) {
  return (unsigned)r < TW_RISK_COUNT ? RISK_PCT[r] : -1;
}

enum tw_risk tw_risk_parse(const char *s) {
  for (int i = 1; i < TW_RISK_COUNT; i++)
    if (!strcmp(s, RISK_NAMES[i]))
      return (enum tw_risk)i;
  return TW_RISK_UNKNOWN;
}
