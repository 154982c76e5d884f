/* catalog_csv.c - the CSV record reader and the SkyPilot catalog importer. */
#include "billing/catalog/catalog_csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "billing/catalog/catalog_int.h"
#include "billing/catalog/clouds.h"
#include "billing/catalog/normalize.h"
#include "broker/base/mem.h"

/* ---- records ---------------------------------------------------------------
 */

void tw_csv_reader_init(struct tw_csv_reader *r, const char *data, size_t len) {
  memset(r, 0, sizeof *r);
  r->p = data;
  r->end = data + len;
  r->line = 1;
}

void tw_csv_reader_release(struct tw_csv_reader *r) {
  free(r->scratch);
  r->scratch = NULL;
  r->scratch_len = r->scratch_cap = 0;
}

static size_t scratch_add(struct tw_csv_reader *r, const char *s, size_t n) {
  if (r->scratch_len + n + 1 > r->scratch_cap) {
    size_t cap = r->scratch_cap ? r->scratch_cap : 256;
    while (cap < r->scratch_len + n + 1)
      cap *= 2;
    r->scratch = tw_realloc(r->scratch, cap);
    r->scratch_cap = cap;
  }
  size_t off = r->scratch_len;
  memcpy(r->scratch + off, s, n);
  r->scratch_len += n;
  return off;
}

bool tw_csv_read(struct tw_csv_reader *r, struct tw_csv_record *rec) {
  const char *p = r->p, *end = r->end;
  while (p < end && (*p == '\n' || *p == '\r')) {
    if (*p == '\n')
      r->line++;
    p++;
  }
  if (p >= end) {
    r->p = p;
    return false;
  }
  rec->line = r->line;
  rec->n = 0;
  rec->overflow = rec->bad_quote = false;
  r->scratch_len = 0;
  /* fields unescaped into the scratch buffer are recorded as offsets and
   * turned into pointers at the end: the buffer may move as it grows */
  size_t scratch_off[TW_CSV_MAX_FIELDS];
  bool in_scratch[TW_CSV_MAX_FIELDS];
  for (;;) {
    const char *fs;
    size_t fl;
    bool scratch = false;
    size_t soff = 0;
    if (p < end && *p == '"') {
      const char *q, *start = ++p;
      bool esc = false;
      for (;;) {
        q = memchr(p, '"', (size_t)(end - p));
        for (const char *c = p; c < (q ? q : end); c++)
          if (*c == '\n')
            r->line++;
        if (!q) {
          rec->bad_quote = true;
          q = end;
          p = end;
          break;
        }
        if (q + 1 < end && q[1] == '"') {
          esc = true;
          p = q + 2;
          continue;
        }
        p = q + 1;
        break;
      }
      fs = start;
      fl = (size_t)(q - start);
      if (esc) {
        /* "" -> " */
        soff = r->scratch_len;
        for (const char *c = start; c < q; c++) {
          scratch_add(r, c, 1);
          if (*c == '"')
            c++;
        }
        fl = r->scratch_len - soff;
        scratch = true;
      }
      /* text between the closing quote and the delimiter is malformed */
      if (p < end && *p != ',' && *p != '\n' &&
          !(*p == '\r' && (p + 1 == end || p[1] == '\n'))) {
        rec->bad_quote = true;
        while (p < end && *p != ',' && *p != '\n')
          p++;
      }
    } else {
      fs = p;
      while (p < end && *p != ',' && *p != '\n')
        p++;
      fl = (size_t)(p - fs);
      if (fl && fs[fl - 1] == '\r' && (p == end || *p == '\n'))
        fl--;
    }
    if (rec->n < TW_CSV_MAX_FIELDS) {
      rec->f[rec->n] = fs;
      rec->len[rec->n] = fl;
      in_scratch[rec->n] = scratch;
      scratch_off[rec->n] = soff;
      rec->n++;
    } else {
      rec->overflow = true;
    }
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end && *p == '\r')
      p++;
    if (p < end && *p == '\n') {
      p++;
      r->line++;
    }
    break;
  }
  for (size_t i = 0; i < rec->n; i++)
    if (in_scratch[i])
      rec->f[i] = r->scratch + scratch_off[i];
  r->p = p;
  return true;
}

/* ---- reasons
 * ------------------------------------------------------------------ */

static const char *const REJECT_NAMES[TW_CAT_REJ_COUNT] = {
    "fields",    "bad_text",      "too_long",   "no_instance_type",
    "no_region", "zone_mismatch", "bad_number", "bad_price",
    "no_price",  "no_rate",       "duplicate",  "no_accelerator_price"};

static const char *const NOTE_NAMES[TW_CAT_NOTE_COUNT] = {
    "spot_not_offered",     "on_demand_not_offered", "zero_price",
    "extra_fields_joined",  "region_unknown",        "zone_name_unknown",
    "accelerator_unknown",  "accelerator_from_type", "accelerator_unnamed",
    "accelerator_fraction", "vcpu_fraction",         "arch_from_type",
    "price_rounded",        "accelerator_bundled",   "accelerator_attached"};

const char *tw_cat_reject_str(enum tw_cat_reject r) {
  return (unsigned)r < TW_CAT_REJ_COUNT ? REJECT_NAMES[r] : "unknown";
}

const char *tw_cat_note_str(enum tw_cat_note n) {
  return (unsigned)n < TW_CAT_NOTE_COUNT ? NOTE_NAMES[n] : "unknown";
}

uint64_t tw_cat_report_rejected(const struct tw_cat_report *r) {
  uint64_t n = 0;
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++)
    n += r->rejected[i];
  return n;
}

void tw_cat_report_accel_reject(struct tw_cat_report *r, const char *accel,
                                uint64_t line, enum tw_cat_reject why) {
  size_t i;
  for (i = 0; i < r->n_accel_rejected; i++)
    if (!strcmp(r->accel_rejected[i].accel, accel))
      break;
  if (i == r->n_accel_rejected) {
    if (i == TW_CAT_ACCEL_REJ_MAX)
      return;
    r->n_accel_rejected++;
    snprintf(r->accel_rejected[i].accel, sizeof r->accel_rejected[i].accel,
             "%s", accel);
    r->accel_rejected[i].first_line = line;
    r->accel_rejected[i].first_why = why;
  }
  r->accel_rejected[i].rows++;
}

void tw_cat_report_add(struct tw_cat_report *into,
                       const struct tw_cat_report *from) {
  for (size_t i = 0; i < from->n_accel_rejected; i++) {
    const struct tw_cat_accel_rej *a = &from->accel_rejected[i];
    /* counted once here, the rest added to the entry it landed in */
    tw_cat_report_accel_reject(into, a->accel, a->first_line, a->first_why);
    for (size_t k = 0; k < into->n_accel_rejected; k++)
      if (!strcmp(into->accel_rejected[k].accel, a->accel)) {
        into->accel_rejected[k].rows += a->rows - 1;
        break;
      }
  }
  into->rows += from->rows;
  into->normalized += from->normalized;
  into->offers += from->offers;
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++) {
    into->rejected[i] += from->rejected[i];
    if (!into->first_rejected_line[i])
      into->first_rejected_line[i] = from->first_rejected_line[i];
  }
  for (int i = 0; i < TW_CAT_NOTE_COUNT; i++)
    into->notes[i] += from->notes[i];
}

/* ---- columns
 * ------------------------------------------------------------------- */

enum col {
  C_TYPE = 0,
  C_ACCEL,
  C_ACCEL_COUNT,
  C_VCPUS,
  C_MEMORY,
  C_GPUINFO,
  C_PRICE,
  C_SPOT,
  C_REGION,
  C_ZONE,
  C_ARCH,
  C_GENERATION,
  C_RACK,
  C_CAPACITY,
  C_NCOLS
};

static const char *const COL_NAMES[C_NCOLS] = {"InstanceType",
                                               "AcceleratorName",
                                               "AcceleratorCount",
                                               "vCPUs",
                                               "MemoryGiB",
                                               "GpuInfo",
                                               "Price",
                                               "SpotPrice",
                                               "Region",
                                               "AvailabilityZone",
                                               "Arch",
                                               "Generation",
                                               "Rack",
                                               "Capacity"};

/* Columns whose text nothing reads: an unquoted comma inside the last of
 * them (Azure's Generation "V1,V2") can be joined back without changing
 * any value. */
static bool col_free_text(int c) { return c == C_GENERATION || c < 0; }

struct colmap {
  int idx[C_NCOLS]; /* field index of each known column, -1 absent */
  int *of_field;    /* known column of each header field, -1 unknown */
  size_t nfields;   /* header fields */
};

static void colmap_release(struct colmap *m) {
  free(m->of_field);
  m->of_field = NULL;
}

static void colmap_from(const struct tw_csv_record *h, struct colmap *m) {
  for (int c = 0; c < C_NCOLS; c++)
    m->idx[c] = -1;
  m->nfields = h->n;
  m->of_field = tw_malloc((h->n ? h->n : 1) * sizeof *m->of_field);
  for (size_t i = 0; i < h->n; i++) {
    m->of_field[i] = -1;
    const char *s = h->f[i];
    size_t n = h->len[i];
    while (n && (*s == ' ' || *s == '\t' || (unsigned char)*s == 0xef ||
                 (unsigned char)*s == 0xbb || (unsigned char)*s == 0xbf))
      s++, n--; /* spaces and a UTF-8 byte-order mark */
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
      n--;
    for (int c = 0; c < C_NCOLS; c++)
      if (strlen(COL_NAMES[c]) == n && !strncasecmp(COL_NAMES[c], s, n) &&
          m->idx[c] < 0) {
        m->idx[c] = (int)i;
        m->of_field[i] = c;
      }
  }
}

/* ---- specs
 * ------------------------------------------------------------------------ */

struct spec_row {
  char *type;
  char *f[C_NCOLS]; /* owned; NULL when absent */
};

struct tw_csv_specs {
  struct spec_row *rows;
  size_t n;
};

static char *dup_slice(const char *s, size_t n) { return tw_strndup(s, n); }

enum tw_rc tw_csv_specs_load(const char *data, size_t len,
                             struct tw_csv_specs **out, struct tw_err *err) {
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  struct colmap m = {0};
  struct tw_csv_specs *s = tw_calloc(1, sizeof *s);
  size_t cap = 0;
  *out = NULL;
  tw_csv_reader_init(&r, data, len);
  if (!tw_csv_read(&r, &rec)) {
    tw_csv_reader_release(&r);
    free(s);
    return tw_err_set(err, TW_E_INVALID, "specs: empty file");
  }
  colmap_from(&rec, &m);
  if (m.idx[C_TYPE] < 0) {
    colmap_release(&m);
    tw_csv_reader_release(&r);
    free(s);
    return tw_err_set(err, TW_E_INVALID, "specs: no InstanceType column");
  }
  while (tw_csv_read(&r, &rec)) {
    size_t ti = (size_t)m.idx[C_TYPE];
    if (ti >= rec.n || !rec.len[ti])
      continue;
    if (s->n == cap) {
      cap = cap ? cap * 2 : 32;
      s->rows = tw_realloc(s->rows, cap * sizeof *s->rows);
    }
    struct spec_row *row = &s->rows[s->n++];
    memset(row, 0, sizeof *row);
    row->type = dup_slice(rec.f[ti], rec.len[ti]);
    for (int c = 0; c < C_NCOLS; c++)
      if (m.idx[c] >= 0 && (size_t)m.idx[c] < rec.n)
        row->f[c] = dup_slice(rec.f[m.idx[c]], rec.len[m.idx[c]]);
  }
  colmap_release(&m);
  tw_csv_reader_release(&r);
  *out = s;
  return TW_OK;
}

void tw_csv_specs_free(struct tw_csv_specs *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->rows[i].type);
    for (int c = 0; c < C_NCOLS; c++)
      free(s->rows[i].f[c]);
  }
  free(s->rows);
  free(s);
}

static const struct spec_row *specs_find(const struct tw_csv_specs *s,
                                         const char *type, size_t n) {
  for (size_t i = 0; s && i < s->n; i++)
    if (strlen(s->rows[i].type) == n && !memcmp(s->rows[i].type, type, n))
      return &s->rows[i];
  return NULL;
}

/* ---- rows
 * ------------------------------------------------------------------------- */

struct slice {
  const char *s;
  size_t n;
};

/* Trims spaces around a field. */
static struct slice trim(const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t'))
    s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  return (struct slice){s, n};
}

static bool has_ctl(struct slice x) {
  for (size_t i = 0; i < x.n; i++)
    if ((unsigned char)x.s[i] < 0x20 || x.s[i] == 0x7f)
      return true;
  return false;
}

/* GpuInfo's first "SizeInMiB': N" (the AWS and GCP catalogs write a Python
 * dict there); 0 when absent. */
static int64_t gpuinfo_mib(struct slice g) {
  static const char KEY[] = "SizeInMiB";
  for (size_t i = 0; i + sizeof KEY - 1 <= g.n; i++) {
    if (memcmp(g.s + i, KEY, sizeof KEY - 1))
      continue;
    size_t k = i + sizeof KEY - 1;
    while (k < g.n &&
           (g.s[k] == '\'' || g.s[k] == '"' || g.s[k] == ':' || g.s[k] == ' '))
      k++;
    int64_t v = 0;
    size_t d = 0;
    while (k < g.n && g.s[k] >= '0' && g.s[k] <= '9' && d < 12) {
      v = v * 10 + (g.s[k++] - '0');
      d++;
    }
    return v;
  }
  return 0;
}

/* One ingestion's state: the builder's ids of the source's constant
 * strings and caches of the last location and shape. */
struct ingest {
  const struct tw_csv_opts *o;
  struct tw_cat_builder *b;
  struct tw_cat_report *rep;
  struct colmap m;
  const char *account;
  const struct tw_provider_info *cloud; /* clouds.h; NULL: no rules */
  uint32_t provider_sid, account_sid;
  uint16_t src;
  /* location cache: (region, zone, zone id) text -> loc */
  uint64_t *lc_keys;
  uint32_t *lc_vals;
  size_t lc_mask, lc_count;
  /* shapes seen, by the text of their columns: catalogs repeat a type's
   * columns on every row of it */
  struct shape_entry *sc;
  size_t sc_mask, sc_count;
  struct tw_strpool sc_raw;
  /* accelerator-only rows (GCP's GPUs), read ahead of the machines */
  struct attach_row *att;
  size_t n_att;
  struct attach_row **att_by_zone; /* att sorted by (region, zone) */
};

/* An accelerator-only row: a price to add to a machine's. */
struct attach_row {
  char region[64], zone[64], accel[64];
  int count;
  int64_t memory_mib; /* per device, from GpuInfo; 0 unknown */
  bool od, sp;        /* the market is priced */
  int64_t od_micro, od_uusd, sp_micro, sp_uusd;
  size_t line;
  bool used; /* its price went into an offer */
  /* the canonical accelerator (normalize.h); name NULL when unknown */
  struct tw_accel_info ai;
};

struct shape_entry {
  uint64_t h;   /* hash of the raw text; 0 empty */
  uint32_t raw; /* the raw text in sc_raw */
  uint32_t shape;
  uint8_t notes[4]; /* enum tw_cat_note, noted again at each reuse */
  uint8_t nnotes;
};

static struct shape_entry *shape_cache_find(struct ingest *g, uint64_t h,
                                            const char *raw, size_t len) {
  if (!g->sc)
    return NULL;
  for (size_t i = h & g->sc_mask;; i = (i + 1) & g->sc_mask) {
    struct shape_entry *e = &g->sc[i];
    if (!e->h)
      return NULL;
    if (e->h == h && !strncmp(tw_strpool_str(&g->sc_raw, e->raw), raw, len) &&
        tw_strpool_str(&g->sc_raw, e->raw)[len] == '\0')
      return e;
  }
}

static void shape_cache_put(struct ingest *g, uint64_t h, const char *raw,
                            size_t len, uint32_t shape,
                            const enum tw_cat_note *notes, int nnotes) {
  if (!g->sc || (g->sc_count + 1) * 2 > g->sc_mask + 1) {
    size_t n = g->sc ? (g->sc_mask + 1) * 2 : 256;
    struct shape_entry *t = tw_calloc(n, sizeof *t);
    for (size_t i = 0; g->sc && i <= g->sc_mask; i++)
      if (g->sc[i].h)
        for (size_t j = g->sc[i].h & (n - 1);; j = (j + 1) & (n - 1))
          if (!t[j].h) {
            t[j] = g->sc[i];
            break;
          }
    free(g->sc);
    g->sc = t;
    g->sc_mask = n - 1;
    if (!g->sc_raw.buf)
      tw_strpool_init(&g->sc_raw);
  }
  size_t i = h & g->sc_mask;
  while (g->sc[i].h)
    i = (i + 1) & g->sc_mask;
  struct shape_entry *e = &g->sc[i];
  e->h = h;
  e->raw = tw_strpool_intern(&g->sc_raw, raw, len);
  e->shape = shape;
  e->nnotes = (uint8_t)nnotes;
  for (int k = 0; k < nnotes && k < 4; k++)
    e->notes[k] = (uint8_t)notes[k];
  g->sc_count++;
}

static void reject(struct ingest *g, enum tw_cat_reject why, size_t line) {
  g->rep->rejected[why]++;
  if (!g->rep->first_rejected_line[why])
    g->rep->first_rejected_line[why] = line;
}

static void note(struct ingest *g, enum tw_cat_note n) { g->rep->notes[n]++; }

static uint32_t loc_cache_get(struct ingest *g, uint64_t k) {
  if (!g->lc_keys)
    return UINT32_MAX;
  for (size_t i = k & g->lc_mask;; i = (i + 1) & g->lc_mask) {
    if (!g->lc_vals[i])
      return UINT32_MAX;
    if (g->lc_keys[i] == k)
      return g->lc_vals[i] - 1;
  }
}

static void loc_cache_put(struct ingest *g, uint64_t k, uint32_t v) {
  if (!g->lc_keys || (g->lc_count + 1) * 2 > g->lc_mask + 1) {
    size_t n = g->lc_keys ? (g->lc_mask + 1) * 2 : 1024;
    uint64_t *keys = tw_calloc(n, sizeof *keys);
    uint32_t *vals = tw_calloc(n, sizeof *vals);
    for (size_t i = 0; g->lc_keys && i <= g->lc_mask; i++)
      if (g->lc_vals[i])
        for (size_t j = g->lc_keys[i] & (n - 1);; j = (j + 1) & (n - 1))
          if (!vals[j]) {
            keys[j] = g->lc_keys[i];
            vals[j] = g->lc_vals[i];
            break;
          }
    free(g->lc_keys);
    free(g->lc_vals);
    g->lc_keys = keys;
    g->lc_vals = vals;
    g->lc_mask = n - 1;
  }
  for (size_t i = k & g->lc_mask;; i = (i + 1) & g->lc_mask)
    if (!g->lc_vals[i]) {
      g->lc_keys[i] = k;
      g->lc_vals[i] = v + 1;
      g->lc_count++;
      return;
    }
}

/* A field of the row, or of the specs row when the file has no such
 * column. */
static struct slice col(const struct ingest *g, const struct tw_csv_record *rec,
                        const struct spec_row *sp, enum col c) {
  int i = g->m.idx[c];
  if (i >= 0 && (size_t)i < rec->n)
    return trim(rec->f[i], rec->len[i]);
  if (sp && sp->f[c])
    return trim(sp->f[c], strlen(sp->f[c]));
  return (struct slice){"", 0};
}

enum price_rc { P_NONE, P_OK, P_BAD };

/* Parses one price column into micro-units of the source currency and
 * micro-USD. */
static enum price_rc price_of(struct ingest *g, struct slice x, int64_t *micro,
                              int64_t *uusd, bool *zero) {
  bool exact;
  *zero = false;
  if (!x.n)
    return P_NONE;
  if (!tw_norm_decimal_micro(x.s, x.n, micro, &exact))
    return P_BAD;
  if (*micro == 0) {
    *zero = true;
    return P_NONE;
  }
  if (!exact)
    note(g, TW_CAT_NOTE_PRICE_ROUNDED);
  if (g->o->rate) {
    if (tw_rate_convert(g->o->rate, *micro, uusd, NULL))
      return P_BAD;
  } else {
    *uusd = *micro;
  }
  return *uusd > TW_MODEL_PRICE_MAX_UUSD ? P_BAD : P_OK;
}

/* Builds (or reuses) the shape of a row; false with *why set when a field
 * is unusable. */
static bool row_shape(struct ingest *g, const struct tw_csv_record *rec,
                      const struct spec_row *sp, struct slice type,
                      uint32_t *out, enum tw_cat_reject *why) {
  struct slice accel = col(g, rec, sp, C_ACCEL);
  struct slice count = col(g, rec, sp, C_ACCEL_COUNT);
  struct slice vcpus = col(g, rec, sp, C_VCPUS);
  struct slice mem = col(g, rec, sp, C_MEMORY);
  struct slice info = col(g, rec, sp, C_GPUINFO);
  struct slice arch = col(g, rec, sp, C_ARCH);
  /* the same shape as the previous row: reuse it (catalogs list a type's
   * rows together) */
  char raw[512];
  size_t rl = 0;
  const struct slice parts[] = {type, accel, count, vcpus, mem, arch, info};
  bool fits = true;
  for (size_t k = 0; k < sizeof parts / sizeof parts[0] && fits; k++) {
    if (rl + parts[k].n + 1 > sizeof raw) {
      fits = false;
      break;
    }
    memcpy(raw + rl, parts[k].s, parts[k].n);
    rl += parts[k].n;
    raw[rl++] = '|';
  }
  uint64_t rh = 0;
  if (fits) {
    rh = tw_cat_hash(raw, rl, 0x5a);
    rh = rh ? rh : 1;
    const struct shape_entry *e = shape_cache_find(g, rh, raw, rl);
    if (e) {
      for (int i = 0; i < e->nnotes; i++)
        note(g, (enum tw_cat_note)e->notes[i]);
      *out = e->shape;
      return true;
    }
  }
  enum tw_cat_note notes[4];
  int nnotes = 0;
  struct tw_cat_shape sh;
  memset(&sh, 0, sizeof sh);
  int64_t v;
  bool exact;
  if (has_ctl(accel) || has_ctl(arch) || accel.n > 63) {
    *why = has_ctl(accel) || has_ctl(arch) ? TW_CAT_REJ_BAD_TEXT
                                           : TW_CAT_REJ_TOO_LONG;
    return false;
  }
  if (!tw_norm_decimal_micro(vcpus.s, vcpus.n, &v, &exact) ||
      v >= 1000000LL * 100000) {
    *why = TW_CAT_REJ_BAD_NUMBER;
    return false;
  }
  sh.vcpus = (int32_t)(v / 1000000);
  if (v % 1000000)
    notes[nnotes++] = TW_CAT_NOTE_VCPU_FRACTION;
  if (!tw_norm_gib_to_mib(mem.s, mem.n, &sh.memory_mib) ||
      sh.memory_mib > (int64_t)1 << 40) {
    *why = TW_CAT_REJ_BAD_NUMBER;
    return false;
  }
  int64_t milli = 0;
  if (count.n) {
    if (!tw_norm_decimal_micro(count.s, count.n, &v, &exact) || v <= 0 ||
        v >= 1000000LL * 100000) {
      *why = TW_CAT_REJ_BAD_NUMBER;
      return false;
    }
    milli = (v + 500) / 1000;
    if (milli < 1)
      milli = 1;
  }
  char type_z[64];
  snprintf(type_z, sizeof type_z, "%.*s", (int)type.n, type.s);
  struct tw_accel_info ai;
  if (accel.n || milli) {
    if (!milli)
      milli = 1000;
    if (!accel.n) {
      if (tw_norm_accel_from_type(g->cloud, type_z, &ai)) {
        notes[nnotes++] = TW_CAT_NOTE_ACCEL_FROM_TYPE;
      } else {
        notes[nnotes++] = TW_CAT_NOTE_ACCEL_UNNAMED;
        milli = 0;
        ai.name = NULL;
      }
    } else if (!tw_norm_accel(accel.s, accel.n, gpuinfo_mib(info), &ai)) {
      notes[nnotes++] = TW_CAT_NOTE_ACCEL_UNKNOWN;
      ai.name = NULL; /* kept as written below */
    }
    if (milli) {
      if (milli % 1000)
        notes[nnotes++] = TW_CAT_NOTE_ACCEL_FRACTION;
      sh.accel_milli = (int32_t)milli;
      if (ai.name) {
        sh.accel = tw_cat_bld_cstr(g->b, ai.name);
        sh.accel_vendor = tw_cat_bld_cstr(g->b, ai.vendor);
        sh.accel_kind = (uint8_t)ai.kind;
        int64_t hint = gpuinfo_mib(info);
        sh.accel_memory_mib = hint > 0 ? hint : ai.memory_mib;
      } else {
        sh.accel = tw_cat_bld_str(g->b, accel.s, accel.n);
        sh.accel_vendor = ai.vendor ? tw_cat_bld_cstr(g->b, ai.vendor) : 0;
        sh.accel_kind = (uint8_t)ai.kind;
        sh.accel_memory_mib = gpuinfo_mib(info);
      }
    }
  }
  enum tw_arch a = arch.n ? tw_norm_arch(arch.s, arch.n) : TW_ARCH_ANY;
  if (a == TW_ARCH_ANY) {
    a = tw_norm_arch_guess(g->cloud, type_z);
    if (a != TW_ARCH_ANY)
      notes[nnotes++] = TW_CAT_NOTE_ARCH_GUESSED;
  }
  sh.arch = (uint8_t)a;
  sh.provider = g->provider_sid;
  sh.type = tw_cat_bld_str(g->b, type.s, type.n);
  *out = tw_cat_bld_shape(g->b, &sh);
  for (int i = 0; i < nnotes; i++)
    note(g, notes[i]);
  /* a raw text holding a NUL cannot be compared as a string: not cached */
  if (fits && !memchr(raw, '\0', rl))
    shape_cache_put(g, rh, raw, rl, *out, notes, nnotes);
  return true;
}

static bool slice_is_zone_id(struct slice z) {
  char buf[64];
  if (!z.n || z.n >= sizeof buf)
    return false;
  memcpy(buf, z.s, z.n);
  buf[z.n] = '\0';
  return tw_norm_is_zone_id(buf);
}

/* Resolves region and zone of a row into a location; false with *why. */
static bool row_loc(struct ingest *g, const struct tw_csv_record *rec,
                    const struct spec_row *sp, struct slice region,
                    struct slice zone, struct slice rack, uint32_t *out,
                    struct slice *zone_key, enum tw_cat_reject *why) {
  uint64_t ck = tw_cat_hash(region.s, region.n, 17);
  ck = tw_cat_hash(zone.s, zone.n, ck);
  ck = tw_cat_hash(rack.s, rack.n, ck);
  (void)rec;
  (void)sp;
  bool zone_is_id =
      g->cloud && g->cloud->catalog_zone_ids && slice_is_zone_id(zone);
  *zone_key = zone;
  uint32_t hit = loc_cache_get(g, ck);
  if (hit != UINT32_MAX) {
    const struct tw_cat_loc *l = &g->b->s->locs[hit];
    if (!l->has_geo)
      note(g, TW_CAT_NOTE_REGION_UNKNOWN);
    if (zone_is_id && !l->zone)
      note(g, TW_CAT_NOTE_ZONE_NAME_UNKNOWN);
    *out = hit;
    return true;
  }
  char rz[64], zz[64];
  snprintf(rz, sizeof rz, "%.*s", (int)region.n, region.s);
  snprintf(zz, sizeof zz, "%.*s", (int)zone.n, zone.s);
  struct tw_cat_loc l;
  memset(&l, 0, sizeof l);
  l.provider = g->provider_sid;
  l.account = g->account_sid;
  l.region = tw_cat_bld_str(g->b, region.s, region.n);
  l.rack = tw_cat_bld_str(g->b, rack.s, rack.n);
  if (zone.n) {
    if (zone_is_id) {
      bool local = false;
      const struct tw_region *zr =
          tw_regions_by_zone_id(g->o->regions, g->o->provider, zz, &local);
      if (zr && strcmp(zr->region, rz)) {
        *why = TW_CAT_REJ_ZONE_MISMATCH;
        return false;
      }
      l.zone_id = tw_cat_bld_str(g->b, zone.s, zone.n);
      l.local_zone = local;
    } else {
      /* names begin with their region: us-east-1a, us-central1-a */
      if (zone.n <= region.n || memcmp(zone.s, region.s, region.n)) {
        *why = TW_CAT_REJ_ZONE_MISMATCH;
        return false;
      }
      l.zone = tw_cat_bld_str(g->b, zone.s, zone.n);
    }
  }
  if (!tw_cat_loc_geo(g->b, &l, g->o->regions, g->o->provider, rz))
    note(g, TW_CAT_NOTE_REGION_UNKNOWN);
  if (zone_is_id)
    note(g, TW_CAT_NOTE_ZONE_NAME_UNKNOWN);
  *out = tw_cat_bld_loc(g->b, &l);
  loc_cache_put(g, ck, *out);
  return true;
}

/* ---- accelerators priced in rows of their own
 * ---------------------------------- */

/* row_body's answer for an accelerator-only row kept for the machines:
 * counted once the whole file is read (normalized when its price went
 * into an offer, else no_instance_type). */
#define ROW_DEFERRED ((enum tw_cat_reject)(TW_CAT_REJ_COUNT + 1))

static bool slice_copy(struct slice x, char *out, size_t outsz) {
  if (x.n >= outsz)
    return false;
  memcpy(out, x.s, x.n);
  out[x.n] = '\0';
  return true;
}

static int att_zone_cmp(const void *a, const void *b) {
  const struct attach_row *x = *(const struct attach_row *const *)a;
  const struct attach_row *y = *(const struct attach_row *const *)b;
  int c = strcmp(x->region, y->region);
  if (!c)
    c = strcmp(x->zone, y->zone);
  if (!c)
    c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

/* Reads the accelerator-only rows of the file ahead of the machines, for
 * a cloud whose machines carry or take accelerators priced apart. */
static void attach_scan(struct ingest *g, const char *data, size_t len) {
  if (!g->cloud || (!g->cloud->type_bundle && !g->cloud->accel_attach) ||
      g->m.idx[C_TYPE] < 0 || g->m.idx[C_ACCEL] < 0 ||
      g->m.idx[C_ACCEL_COUNT] < 0)
    return;
  struct tw_cat_report quiet, *saved = g->rep;
  memset(&quiet, 0, sizeof quiet);
  g->rep = &quiet; /* the rows are counted in the pass that follows */
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  size_t cap = 0;
  tw_csv_reader_init(&r, data, len);
  if (!g->o->columns)
    tw_csv_read(&r, &rec); /* the header */
  while (tw_csv_read(&r, &rec)) {
    if (rec.bad_quote || rec.n != g->m.nfields)
      continue;
    struct slice type = col(g, &rec, NULL, C_TYPE);
    struct slice accel = col(g, &rec, NULL, C_ACCEL);
    struct slice count = col(g, &rec, NULL, C_ACCEL_COUNT);
    struct slice region = col(g, &rec, NULL, C_REGION);
    struct slice zone = col(g, &rec, NULL, C_ZONE);
    if (type.n || !accel.n || !count.n || !region.n || has_ctl(accel) ||
        has_ctl(region) || has_ctl(zone))
      continue;
    struct attach_row a;
    memset(&a, 0, sizeof a);
    int64_t v;
    bool exact, zero;
    if (!slice_copy(region, a.region, sizeof a.region) ||
        !slice_copy(zone, a.zone, sizeof a.zone) ||
        !slice_copy(accel, a.accel, sizeof a.accel) ||
        !tw_norm_decimal_micro(count.s, count.n, &v, &exact) || !exact ||
        v % 1000000 || v < 1000000 || v > 1000000LL * TW_SPEC_ACCEL_COUNT_MAX)
      continue;
    a.count = (int)(v / 1000000);
    a.memory_mib = gpuinfo_mib(col(g, &rec, NULL, C_GPUINFO));
    enum price_rc od =
        g->m.idx[C_PRICE] >= 0
            ? price_of(g, col(g, &rec, NULL, C_PRICE), &a.od_micro, &a.od_uusd,
                       &zero)
            : P_NONE;
    enum price_rc sp =
        g->m.idx[C_SPOT] >= 0
            ? price_of(g, col(g, &rec, NULL, C_SPOT), &a.sp_micro, &a.sp_uusd,
                       &zero)
            : P_NONE;
    if (od == P_BAD || sp == P_BAD || (od == P_NONE && sp == P_NONE))
      continue;
    a.od = od == P_OK;
    a.sp = sp == P_OK;
    a.line = rec.line;
    if (!tw_norm_accel(a.accel, strlen(a.accel), a.memory_mib, &a.ai))
      a.ai.name = NULL;
    if (g->n_att == cap) {
      cap = cap ? cap * 2 : 64;
      g->att = tw_realloc(g->att, cap * sizeof *g->att);
    }
    g->att[g->n_att++] = a;
  }
  tw_csv_reader_release(&r);
  g->rep = saved;
  if (!g->n_att)
    return;
  g->att_by_zone = tw_calloc(g->n_att, sizeof *g->att_by_zone);
  for (size_t i = 0; i < g->n_att; i++)
    g->att_by_zone[i] = &g->att[i];
  qsort(g->att_by_zone, g->n_att, sizeof *g->att_by_zone, att_zone_cmp);
}

/* The accelerator-only row read at line, or NULL (att is in line order). */
static struct attach_row *attach_at_line(struct ingest *g, size_t line) {
  size_t lo = 0, hi = g->n_att;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g->att[mid].line < line)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->n_att && g->att[lo].line == line ? &g->att[lo] : NULL;
}

/* The first of the rows of (region, zone) in att_by_zone, and how many. */
static size_t attach_zone(const struct ingest *g, struct slice region,
                          struct slice zone, size_t *first) {
  size_t lo = 0, hi = g->n_att;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const struct attach_row *a = g->att_by_zone[mid];
    int c = strncmp(a->region, region.s, region.n);
    if (!c && a->region[region.n])
      c = 1;
    if (!c) {
      c = strncmp(a->zone, zone.s, zone.n);
      if (!c && a->zone[zone.n])
        c = 1;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *first = lo;
  size_t n = 0;
  while (lo + n < g->n_att) {
    const struct attach_row *a = g->att_by_zone[lo + n];
    if (strlen(a->region) != region.n || memcmp(a->region, region.s, region.n) ||
        strlen(a->zone) != zone.n || memcmp(a->zone, zone.s, zone.n))
      break;
    n++;
  }
  return n;
}

/* The shape of base with the accelerators of a (and type, when given). */
static uint32_t shape_with_accel(struct ingest *g, uint32_t base,
                                 const char *type, const struct attach_row *a) {
  struct tw_cat_shape sh = g->b->s->shapes[base];
  if (type)
    sh.type = tw_cat_bld_cstr(g->b, type);
  sh.accel_milli = a->count * 1000;
  if (a->ai.name) {
    sh.accel = tw_cat_bld_cstr(g->b, a->ai.name);
    sh.accel_vendor = tw_cat_bld_cstr(g->b, a->ai.vendor);
    sh.accel_kind = (uint8_t)a->ai.kind;
    sh.accel_memory_mib = a->memory_mib > 0 ? a->memory_mib : a->ai.memory_mib;
  } else {
    sh.accel = tw_cat_bld_cstr(g->b, a->accel);
    sh.accel_vendor = 0;
    sh.accel_kind = (uint8_t)TW_ACCEL_UNKNOWN;
    sh.accel_memory_mib = a->memory_mib;
  }
  sh.accel_listed = 0;
  return tw_cat_bld_shape(g->b, &sh);
}

/* The label that traces an offer's accelerator price to its row:
 * "accelerator_row=<line>" (the offer's own row is the machine's). */
static uint32_t accel_row_label(struct ingest *g, size_t line) {
  char l[48];
  int n = snprintf(l, sizeof l, "accelerator_row=%zu", line);
  return tw_cat_bld_str(g->b, l, (size_t)n);
}

/* The offers of one priced place and shape, per market priced. */
struct row_prices {
  bool od, sp;
  int64_t od_micro, od_uusd, sp_micro, sp_uusd;
};

static int emit_offers(struct ingest *g, struct tw_cat_offer *o,
                       const struct row_prices *p) {
  int n = 0;
  struct tw_billing_rule rule;
  if (p->od) {
    tw_norm_billing(g->cloud, TW_MARKET_ON_DEMAND, &rule);
    o->market = TW_MARKET_ON_DEMAND;
    o->price_uusd = p->od_uusd;
    o->src_price_micro = p->od_micro;
    o->granularity_s = (int32_t)rule.granularity_s;
    o->min_charge_s = (int32_t)rule.min_charge_s;
    n += tw_cat_bld_offer(g->b, o);
  }
  if (p->sp) {
    tw_norm_billing(g->cloud, TW_MARKET_SPOT, &rule);
    o->market = TW_MARKET_SPOT;
    o->price_uusd = p->sp_uusd;
    o->src_price_micro = p->sp_micro;
    o->granularity_s = (int32_t)rule.granularity_s;
    o->min_charge_s = (int32_t)rule.min_charge_s;
    n += tw_cat_bld_offer(g->b, o);
  }
  return n;
}

/* The machine's prices plus the accelerator row's, per market both
 * price; false when no market is left. */
static bool add_prices(const struct row_prices *m, const struct attach_row *a,
                       struct row_prices *out) {
  memset(out, 0, sizeof *out);
  out->od = m->od && a->od;
  out->sp = m->sp && a->sp;
  if (out->od) {
    out->od_micro = m->od_micro + a->od_micro;
    out->od_uusd = m->od_uusd + a->od_uusd;
  }
  if (out->sp) {
    out->sp_micro = m->sp_micro + a->sp_micro;
    out->sp_uusd = m->sp_uusd + a->sp_uusd;
  }
  return out->od || out->sp;
}

/* Normalizes one row into offers; returns why it was rejected, or
 * TW_CAT_REJ_COUNT when it was not. */
static enum tw_cat_reject row_body(struct ingest *g,
                                   const struct tw_csv_record *rec) {
  size_t line = rec->line;
  if (rec->bad_quote) {
    return TW_CAT_REJ_BAD_TEXT;
  }
  if (rec->n != g->m.nfields) {
    /* Azure's unquoted "V1,V2": extra fields after a last column nobody
     * reads are that column's text */
    if (rec->n > g->m.nfields && !rec->overflow && g->m.nfields > 0 &&
        col_free_text(g->m.of_field[g->m.nfields - 1])) {
      note(g, TW_CAT_NOTE_EXTRA_FIELDS);
    } else {
      return TW_CAT_REJ_FIELDS;
    }
  }
  struct slice type =
      g->m.idx[C_TYPE] >= 0
          ? col(g, rec, NULL, C_TYPE)
          : (struct slice){g->o->instance_type, strlen(g->o->instance_type)};
  if (!type.n) {
    /* an accelerator kept for the machines: counted at the end */
    return attach_at_line(g, line) ? ROW_DEFERRED : TW_CAT_REJ_NO_TYPE;
  }
  const struct spec_row *sp = specs_find(g->o->specs, type.s, type.n);
  struct slice region = col(g, rec, sp, C_REGION);
  struct slice zone = col(g, rec, sp, C_ZONE);
  struct slice rack = col(g, rec, sp, C_RACK);
  if (!region.n) {
    return TW_CAT_REJ_NO_REGION;
  }
  /* a colon in a name would make offer ids (account:region:zone:type:
   * market) ambiguous */
  if (has_ctl(type) || has_ctl(region) || has_ctl(zone) || has_ctl(rack) ||
      memchr(type.s, ':', type.n) || memchr(region.s, ':', region.n) ||
      memchr(zone.s, ':', zone.n) || memchr(zone.s, '/', zone.n) ||
      memchr(rack.s, ':', rack.n)) {
    return TW_CAT_REJ_BAD_TEXT;
  }
  if (type.n > 63 || region.n > 63 || zone.n > 63 || rack.n > 63) {
    return TW_CAT_REJ_TOO_LONG;
  }
  /* prices first: they decide whether there is anything to buy */
  int64_t od_micro = 0, od_uusd = 0, sp_micro = 0, sp_uusd = 0;
  bool od_zero, sp_zero;
  enum price_rc od = g->m.idx[C_PRICE] >= 0
                         ? price_of(g, col(g, rec, NULL, C_PRICE), &od_micro,
                                    &od_uusd, &od_zero)
                         : (od_zero = false, P_NONE);
  enum price_rc spt = g->m.idx[C_SPOT] >= 0
                          ? price_of(g, col(g, rec, NULL, C_SPOT), &sp_micro,
                                     &sp_uusd, &sp_zero)
                          : (sp_zero = false, P_NONE);
  if (od == P_BAD || spt == P_BAD) {
    return TW_CAT_REJ_BAD_PRICE;
  }
  if (od == P_NONE && spt == P_NONE) {
    return TW_CAT_REJ_NO_PRICE;
  }
  enum tw_cat_reject why = TW_CAT_REJ_COUNT;
  uint32_t loc, shape;
  struct slice zone_key;
  if (!row_loc(g, rec, sp, region, zone, rack, &loc, &zone_key, &why) ||
      !row_shape(g, rec, sp, type, &shape, &why)) {
    return why;
  }
  uint64_t key =
      tw_cat_offer_key(g->account, strlen(g->account), region.s, region.n,
                       zone_key.s, zone_key.n, rack.s, rack.n, type.s, type.n);
  if (tw_cat_bld_find(g->b, key, TW_MARKET_ON_DEMAND) >= 0 ||
      tw_cat_bld_find(g->b, key, TW_MARKET_SPOT) >= 0) {
    return TW_CAT_REJ_DUPLICATE;
  }
  if (od == P_NONE)
    note(g, od_zero ? TW_CAT_NOTE_ZERO_PRICE : TW_CAT_NOTE_OD_NOT_OFFERED);
  if (spt == P_NONE && g->m.idx[C_SPOT] >= 0)
    note(g, sp_zero ? TW_CAT_NOTE_ZERO_PRICE : TW_CAT_NOTE_SPOT_NOT_OFFERED);
  int64_t capacity = -1;
  struct slice cap = col(g, rec, sp, C_CAPACITY);
  if (cap.n) {
    int64_t v;
    bool exact;
    if (!tw_norm_decimal_micro(cap.s, cap.n, &v, &exact) || !exact ||
        v % 1000000 || v / 1000000 > INT32_MAX) {
      return TW_CAT_REJ_BAD_NUMBER;
    }
    capacity = v / 1000000;
  }
  struct row_prices pr = {.od = od == P_OK,
                          .sp = spt == P_OK,
                          .od_micro = od_micro,
                          .od_uusd = od_uusd,
                          .sp_micro = sp_micro,
                          .sp_uusd = sp_uusd};
  char type_z[64];
  snprintf(type_z, sizeof type_z, "%.*s", (int)type.n, type.s);
  bool bare = g->b->s->shapes[shape].accel_milli == 0;
  /* a machine that always carries accelerators billed apart is offered at
   * the sum, or not at all */
  const char *bacc;
  int bcount;
  size_t acc_row = 0;
  if (bare && g->n_att && g->cloud->type_bundle &&
      g->cloud->type_bundle(type_z, &bacc, &bcount)) {
    size_t first, nz = attach_zone(g, region, zone, &first);
    struct attach_row *ba = NULL;
    for (size_t k = 0; k < nz && !ba; k++) {
      struct attach_row *a = g->att_by_zone[first + k];
      if (a->count == bcount && !strcasecmp(a->accel, bacc))
        ba = a;
    }
    struct row_prices whole;
    if (!ba || !add_prices(&pr, ba, &whole))
      return TW_CAT_REJ_NO_ACCEL_PRICE;
    pr = whole;
    acc_row = ba->line;
    shape = shape_with_accel(g, shape, NULL, ba);
    ba->used = true;
    bare = false;
    note(g, TW_CAT_NOTE_ACCEL_BUNDLED);
  } else if (bare && g->cloud && g->cloud->type_bundle &&
             g->cloud->type_bundle(type_z, &bacc, &bcount)) {
    return TW_CAT_REJ_NO_ACCEL_PRICE;
  }
  struct tw_cat_offer o;
  memset(&o, 0, sizeof o);
  o.loc = loc;
  o.shape = shape;
  o.row = (uint32_t)(line > UINT32_MAX ? UINT32_MAX : line);
  o.key = key;
  o.capacity = (int32_t)capacity;
  o.risk = TW_CAT_RISK_NONE;
  o.src = g->src;
  o.observed_ms = g->o->observed_ms;
  o.labels = acc_row ? accel_row_label(g, acc_row) : 0;
  int n = emit_offers(g, &o, &pr);
  /* a machine that takes accelerators: once more per accelerator row of
   * its zone within the cloud's limits, at the sum of both prices */
  if (bare && g->n_att && g->cloud->accel_attach) {
    const struct tw_cat_shape base = g->b->s->shapes[shape];
    size_t first, nz = attach_zone(g, region, zone, &first);
    for (size_t k = 0; k < nz; k++) {
      struct attach_row *a = g->att_by_zone[first + k];
      if (!g->cloud->accel_attach(type_z, base.vcpus, base.memory_mib,
                                  a->accel, a->count))
        continue;
      char t2[64];
      int tl = snprintf(t2, sizeof t2, "%s+%sx%d", type_z, a->accel, a->count);
      struct row_prices whole;
      if (tl < 0 || (size_t)tl >= sizeof t2 || !add_prices(&pr, a, &whole))
        continue;
      uint64_t k2 = tw_cat_offer_key(g->account, strlen(g->account), region.s,
                                     region.n, zone_key.s, zone_key.n, rack.s,
                                     rack.n, t2, (size_t)tl);
      if (tw_cat_bld_find(g->b, k2, TW_MARKET_ON_DEMAND) >= 0 ||
          tw_cat_bld_find(g->b, k2, TW_MARKET_SPOT) >= 0)
        continue;
      o.key = k2;
      o.shape = shape_with_accel(g, shape, t2, a);
      o.labels = accel_row_label(g, a->line);
      n += emit_offers(g, &o, &whole);
      a->used = true;
    }
  }
  g->rep->normalized++;
  g->rep->offers += (uint64_t)n;
  return TW_CAT_REJ_COUNT;
}

/* The accelerator a row names, canonical when known, into out; false when
 * it names none. */
static bool row_accel(struct ingest *g, const struct tw_csv_record *rec,
                      char *out, size_t outsz) {
  if (g->m.idx[C_ACCEL] < 0 || rec->n != g->m.nfields)
    return false;
  struct slice a = col(g, rec, NULL, C_ACCEL);
  if (!a.n || has_ctl(a))
    return false;
  struct tw_accel_info ai;
  if (tw_norm_accel(a.s, a.n, gpuinfo_mib(col(g, rec, NULL, C_GPUINFO)), &ai))
    snprintf(out, outsz, "%s", ai.name);
  else
    snprintf(out, outsz, "%.*s", (int)(a.n < outsz ? a.n : outsz - 1), a.s);
  return true;
}

static void accel_reject(struct ingest *g, const struct tw_csv_record *rec,
                         enum tw_cat_reject why) {
  char name[32];
  if (row_accel(g, rec, name, sizeof name)) {
    tw_cat_report_accel_reject(g->rep, name, rec->line, why);
    return;
  }
  /* a machine whose bundled accelerators had no price */
  const char *bacc;
  int bcount;
  char type[64];
  struct slice t = g->m.idx[C_TYPE] >= 0 ? col(g, rec, NULL, C_TYPE)
                                         : (struct slice){"", 0};
  struct tw_accel_info ai;
  if (why == TW_CAT_REJ_NO_ACCEL_PRICE && g->cloud && g->cloud->type_bundle &&
      slice_copy(t, type, sizeof type) &&
      g->cloud->type_bundle(type, &bacc, &bcount))
    tw_cat_report_accel_reject(
        g->rep, tw_norm_accel(bacc, strlen(bacc), 0, &ai) ? ai.name : bacc,
        rec->line, why);
}

static void ingest_row(struct ingest *g, const struct tw_csv_record *rec) {
  /* notes count only for rows that end normalized: a rejection restores
   * the counts as they were before the row */
  struct tw_cat_report saved = *g->rep;
  enum tw_cat_reject why = row_body(g, rec);
  if (why == ROW_DEFERRED) {
    *g->rep = saved;
  } else if (why != TW_CAT_REJ_COUNT) {
    *g->rep = saved;
    reject(g, why, rec->line);
    accel_reject(g, rec, why);
  }
  g->rep->rows++;
}

enum tw_rc tw_csv_ingest(const char *data, size_t len,
                         const struct tw_csv_opts *o, struct tw_cat_builder *b,
                         struct tw_cat_report *rep, struct tw_err *err) {
  struct ingest g;
  memset(&g, 0, sizeof g);
  g.o = o;
  g.b = b;
  g.rep = rep;
  g.src = o->source;
  g.account = o->account && *o->account ? o->account : o->provider;
  g.cloud = tw_cat_cloud(o->adapters, o->provider);

  struct tw_csv_reader r;
  struct tw_csv_record rec;
  enum tw_rc rc = TW_OK;
  tw_csv_reader_init(&r, data, len);
  if (o->columns) {
    struct tw_csv_reader hr;
    tw_csv_reader_init(&hr, o->columns, strlen(o->columns));
    if (!tw_csv_read(&hr, &rec)) {
      tw_csv_reader_release(&hr);
      tw_csv_reader_release(&r);
      return tw_err_set(err, TW_E_INVALID, "columns: empty");
    }
    colmap_from(&rec, &g.m);
    tw_csv_reader_release(&hr);
  } else {
    if (!tw_csv_read(&r, &rec)) {
      tw_csv_reader_release(&r);
      return tw_err_set(err, TW_E_INVALID, "no header line");
    }
    colmap_from(&rec, &g.m);
  }
  if (g.m.idx[C_REGION] < 0 && !(o->specs && g.m.idx[C_TYPE] >= 0))
    rc = tw_err_set(err, TW_E_INVALID, "no Region column");
  else if (g.m.idx[C_PRICE] < 0 && g.m.idx[C_SPOT] < 0)
    rc = tw_err_set(err, TW_E_INVALID, "no Price or SpotPrice column");
  else if (g.m.idx[C_TYPE] < 0 && !(o->instance_type && *o->instance_type))
    rc = tw_err_set(err, TW_E_INVALID,
                    "no InstanceType column and no instance_type given");
  else if (g.m.idx[C_VCPUS] < 0 && !o->specs)
    rc = tw_err_set(err, TW_E_INVALID, "no vCPUs column and no specs table");
  if (rc == TW_OK) {
    /* a catalog row is 40 to 300 bytes and gives up to two offers */
    tw_cat_bld_reserve(b, len / 40 + 16);
    g.provider_sid = tw_cat_bld_cstr(b, o->provider);
    g.account_sid = tw_cat_bld_cstr(b, g.account);
    attach_scan(&g, data, len);
    while (tw_csv_read(&r, &rec))
      ingest_row(&g, &rec);
    /* the accelerator-only rows, now that every machine was read */
    for (size_t i = 0; i < g.n_att; i++) {
      if (g.att[i].used) {
        rep->normalized++;
        note(&g, TW_CAT_NOTE_ACCEL_ATTACHED);
      } else {
        reject(&g, TW_CAT_REJ_NO_TYPE, g.att[i].line);
        tw_cat_report_accel_reject(rep,
                                   g.att[i].ai.name ? g.att[i].ai.name
                                                    : g.att[i].accel,
                                   g.att[i].line, TW_CAT_REJ_NO_TYPE);
      }
    }
  }
  free(g.att);
  free(g.att_by_zone);
  colmap_release(&g.m);
  free(g.lc_keys);
  free(g.lc_vals);
  free(g.sc);
  if (g.sc_raw.buf)
    tw_strpool_release(&g.sc_raw);
  tw_csv_reader_release(&r);
  return rc;
}
