/* catalog.c - the catalog: its sources, their refresh, the merged snapshot
 * it publishes, its metrics and its configuration. */
#include "billing/catalog/catalog.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "billing/catalog/catalog_int.h"
#include "broker/base/clock.h"
#include "broker/core/config.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/provider.h"

#define DEFAULT_REFRESH_MS 300000
/* A source whose refresh failed is tried again after at most this long,
 * not a whole interval later. */
#define RETRY_MS 30000

struct source {
  struct tw_catalog *cat;
  char name[64];
  bool is_file;
  /* adapter */
  struct tw_provider *prov;
  struct tw_cat_adapter_opts aopts;
  /* file */
  char *path, *provider, *account, *columns, *instance_type, *specs_path;
  const struct tw_rate *rate;
  enum tw_cat_mode mode;
  int64_t refresh_ms;

  /* under cat->mu */
  struct tw_cat_snap *table; /* last complete ingestion; NULL none */
  int64_t attempted_ms, ok_ms;
  uint64_t refreshes, failures, unchanged;
  char last_error[256];
  bool attempted, from_store;

  /* under run_mu: one refresh of a source at a time */
  pthread_mutex_t run_mu;
  int64_t file_mtime_ns, file_size;

  pthread_t thread;
  bool started;
};

struct tw_catalog {
  struct tw_store *store;
  struct tw_clock *clock;
  const struct tw_provider_ops *const *adapters; /* borrowed; may be NULL */
  struct tw_regions *regions;
  struct tw_rates *rates;
  struct tw_cat_risk *risk;
  struct source *srcs;
  size_t n;
  int keep;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct tw_cat_snap *current; /* under mu */
  uint64_t version;            /* under merge_mu */
  int pending;                 /* sources not yet attempted; under mu */
  bool stopping;               /* under mu */
  pthread_mutex_t merge_mu;    /* one merge at a time, in order */
};

static char *dup_or_null(const char *s) {
  return s && *s ? tw_strdup(s) : NULL;
}

static void source_release(struct source *s) {
  tw_cat_snap_release(s->table);
  free(s->path);
  free(s->provider);
  free(s->account);
  free(s->columns);
  free(s->instance_type);
  free(s->specs_path);
  pthread_mutex_destroy(&s->run_mu);
}

static enum tw_rc slurp_file(const char *path, char **out, size_t *len,
                             struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_set(err, TW_E_IO, "%s: cannot open: %s", path,
                      strerror(errno));
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    tw_buf_add(&b, chunk, n);
    if (b.len > (512u << 20)) {
      fclose(f);
      tw_buf_release(&b);
      return tw_err_set(err, TW_E_TOOBIG, "%s: larger than 512 MiB", path);
    }
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    tw_buf_release(&b);
    return tw_err_set(err, TW_E_IO, "%s: read error", path);
  }
  *len = b.len;
  *out = b.data ? tw_buf_detach(&b) : tw_strdup("");
  return TW_OK;
}

/* ---- merging and publishing
 * ------------------------------------------------------ */

static void publish(struct tw_catalog *c, int64_t now_ms) {
  pthread_mutex_lock(&c->merge_mu);
  struct tw_cat_snap **tables = tw_calloc(c->n ? c->n : 1, sizeof *tables);
  size_t nt = 0;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++)
    if (c->srcs[i].table) {
      tw_cat_snap_retain(c->srcs[i].table);
      tables[nt++] = c->srcs[i].table;
    }
  pthread_mutex_unlock(&c->mu);
  struct tw_cat_snap *merged;
  tw_cat_snap_merge(tables, nt, c->risk, c->adapters, ++c->version, now_ms,
                    &merged);
  for (size_t i = 0; i < nt; i++)
    tw_cat_snap_release(tables[i]);
  free(tables);
  pthread_mutex_lock(&c->mu);
  struct tw_cat_snap *old = c->current;
  c->current = merged;
  pthread_mutex_unlock(&c->mu);
  tw_cat_snap_release(old);
  pthread_mutex_unlock(&c->merge_mu);
}

struct tw_cat_snap *tw_catalog_acquire(struct tw_catalog *c) {
  pthread_mutex_lock(&c->mu);
  struct tw_cat_snap *s = c->current;
  tw_cat_snap_retain(s);
  pthread_mutex_unlock(&c->mu);
  return s;
}

/* ---- one refresh
 * -------------------------------------------------------------------- */

static void source_info_base(const struct source *s,
                             struct tw_cat_source_info *si) {
  memset(si, 0, sizeof *si);
  snprintf(si->name, sizeof si->name, "%s", s->name);
  snprintf(si->kind, sizeof si->kind, "%s", s->is_file ? "file" : "adapter");
  si->mode = s->mode;
  snprintf(si->provider, sizeof si->provider, "%s",
           s->is_file ? s->provider : tw_provider_name(s->prov));
  snprintf(si->account, sizeof si->account, "%s",
           s->is_file ? (s->account ? s->account : s->provider)
                      : tw_provider_account(s->prov));
  snprintf(si->path, sizeof si->path, "%s", s->path ? s->path : "");
  if (s->rate)
    si->rate = *s->rate;
  else
    si->rate = *tw_rates_find(s->cat->rates, "USD");
}

static enum tw_rc load_file(struct tw_catalog *c, struct source *s, int64_t now,
                            struct tw_cat_snap **fresh, bool *unchanged,
                            struct tw_err *err) {
  struct stat st;
  if (stat(s->path, &st) != 0)
    return tw_err_set(err, TW_E_IO, "%s: %s", s->path, strerror(errno));
  int64_t mtime_ns =
      (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  pthread_mutex_lock(&c->mu);
  bool have = s->table != NULL;
  char old_sha[65];
  snprintf(old_sha, sizeof old_sha, "%s", have ? s->table->srcs[0].sha256 : "");
  pthread_mutex_unlock(&c->mu);
  /* the conditional request of a file: unchanged time and size, then an
   * unchanged hash, mean nothing to ingest */
  if (have && mtime_ns == s->file_mtime_ns && st.st_size == s->file_size) {
    *unchanged = true;
    return TW_OK;
  }
  char *data;
  size_t len;
  enum tw_rc rc = slurp_file(s->path, &data, &len, err);
  if (rc)
    return rc;
  struct tw_cat_source_info si;
  source_info_base(s, &si);
  tw_cat_sha256_hex(data, len, si.sha256);
  s->file_mtime_ns = mtime_ns;
  s->file_size = st.st_size;
  if (have && !strcmp(si.sha256, old_sha)) {
    free(data);
    *unchanged = true;
    return TW_OK;
  }
  si.fetched_ms = now;
  struct tw_csv_specs *specs = NULL;
  if (s->specs_path) {
    char *sd;
    size_t sl;
    if ((rc = slurp_file(s->specs_path, &sd, &sl, err))) {
      free(data);
      return rc;
    }
    rc = tw_csv_specs_load(sd, sl, &specs, err);
    free(sd);
    if (rc) {
      free(data);
      return rc;
    }
  }
  struct tw_csv_opts o = {.provider = s->provider,
                          .account = s->account,
                          .rate = s->rate,
                          .columns = s->columns,
                          .instance_type = s->instance_type,
                          .specs = specs,
                          .regions = c->regions,
                          .adapters = c->adapters,
                          .observed_ms = (int64_t)st.st_mtim.tv_sec * 1000};
  struct tw_err local = {0};
  rc = tw_cat_snap_from_csv(data, len, &o, &si, fresh, &local);
  if (rc)
    tw_err_set(err, rc, "%s: %s", s->path, local.msg);
  tw_csv_specs_free(specs);
  free(data);
  return rc;
}

static enum tw_rc load_adapter(struct tw_catalog *c, struct source *s,
                               int64_t now, struct tw_cat_snap **fresh,
                               bool *unchanged, struct tw_err *err) {
  struct tw_offer_list list;
  tw_offer_list_init(&list);
  enum tw_rc rc = tw_provider_list_offers(s->prov, &list, err);
  if (rc) {
    tw_offer_list_release(&list);
    return rc;
  }
  struct tw_cat_source_info si;
  source_info_base(s, &si);
  si.fetched_ms = now;
  rc = tw_cat_snap_from_offers(list.items, list.n, &s->aopts, &si, fresh, err);
  tw_offer_list_release(&list);
  if (rc)
    return rc;
  /* identical offers: keep the table (and its stored version) */
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cat_snap_write_csv(*fresh, &b);
  tw_cat_sha256_hex(b.data, b.len, (*fresh)->srcs[0].sha256);
  tw_buf_release(&b);
  pthread_mutex_lock(&c->mu);
  bool same =
      s->table && !strcmp(s->table->srcs[0].sha256, (*fresh)->srcs[0].sha256);
  pthread_mutex_unlock(&c->mu);
  if (same) {
    tw_cat_snap_release(*fresh);
    *fresh = NULL;
    *unchanged = true;
  }
  return TW_OK;
}

static enum tw_rc refresh_one(struct tw_catalog *c, struct source *s,
                              struct tw_err *err) {
  pthread_mutex_lock(&s->run_mu);
  int64_t now = tw_clock_now_ms(c->clock);
  struct tw_cat_snap *fresh = NULL;
  bool unchanged = false;
  struct tw_err local = {0};
  enum tw_rc rc = s->is_file
                      ? load_file(c, s, now, &fresh, &unchanged, &local)
                      : load_adapter(c, s, now, &fresh, &unchanged, &local);
  if (rc == TW_OK && fresh && c->store) {
    pthread_mutex_lock(&c->mu);
    struct tw_cat_snap *prev = s->table;
    if (prev)
      tw_cat_snap_retain(prev);
    pthread_mutex_unlock(&c->mu);
    int64_t version = 0;
    struct tw_err serr = {0};
    if (tw_cat_store_put(c->store, fresh, prev, c->keep, &version, &serr))
      tw_log_warn("catalog", "source=%s not stored: %s", s->name, serr.msg);
    else
      fresh->srcs[0].version = version;
    tw_cat_snap_release(prev);
  }
  struct tw_cat_snap *old = NULL;
  pthread_mutex_lock(&c->mu);
  s->attempted_ms = now;
  s->refreshes++;
  if (rc) {
    s->failures++;
    snprintf(s->last_error, sizeof s->last_error, "%s", local.msg);
  } else {
    s->ok_ms = now;
    s->last_error[0] = '\0';
    if (unchanged)
      s->unchanged++;
    if (fresh) {
      old = s->table;
      s->table = fresh;
      s->from_store = false;
    }
  }
  pthread_mutex_unlock(&c->mu);
  if (rc) {
    tw_log_warn("catalog",
                "source=%s refresh failed, keeping the previous "
                "table: %s",
                s->name, local.msg);
  } else if (fresh) {
    const struct tw_cat_report *r = &fresh->srcs[0].report;
    tw_log_info("catalog",
                "source=%s rows=%" PRIu64 " normalized=%" PRIu64
                " rejected=%" PRIu64 " offers=%zu version=%" PRId64
                " refreshed",
                s->name, r->rows, r->normalized, tw_cat_report_rejected(r),
                fresh->n_offers, fresh->srcs[0].version);
  }
  tw_cat_snap_release(old);
  if (fresh)
    publish(c, now);
  /* ready only once what it brought is published */
  pthread_mutex_lock(&c->mu);
  if (!s->attempted) {
    s->attempted = true;
    c->pending--;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&s->run_mu);
  if (rc)
    tw_err_set(err, rc, "%s", local.msg);
  return rc;
}

int tw_catalog_refresh_due(struct tw_catalog *c, int64_t now_ms) {
  int n = 0;
  for (size_t i = 0; i < c->n; i++) {
    struct source *s = &c->srcs[i];
    pthread_mutex_lock(&c->mu);
    /* due when it never succeeded or its interval passed since the last
     * success: a failing source is tried again at every call */
    bool due = !s->ok_ms || now_ms - s->ok_ms >= s->refresh_ms;
    pthread_mutex_unlock(&c->mu);
    if (!due)
      continue;
    refresh_one(c, s, NULL);
    n++;
  }
  return n;
}

enum tw_rc tw_catalog_refresh(struct tw_catalog *c, const char *name,
                              struct tw_err *err) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->srcs[i].name, name))
      return refresh_one(c, &c->srcs[i], err);
  return tw_err_set(err, TW_E_NOTFOUND, "catalog: no source named \"%s\"",
                    name);
}

void tw_catalog_wait_ready(struct tw_catalog *c) {
  pthread_mutex_lock(&c->mu);
  while (c->pending > 0 && !c->stopping)
    pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
}

/* ---- threads
 * -------------------------------------------------------------------------- */

static void *source_main(void *arg) {
  struct source *s = arg;
  struct tw_catalog *c = s->cat;
  for (;;) {
    pthread_mutex_lock(&c->mu);
    bool stop = c->stopping;
    pthread_mutex_unlock(&c->mu);
    if (stop)
      break;
    enum tw_rc rc = refresh_one(c, s, NULL);
    int64_t wait_ms = rc && s->refresh_ms > RETRY_MS ? RETRY_MS : s->refresh_ms;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (wait_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&c->mu);
    while (!c->stopping &&
           pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
      ;
    pthread_mutex_unlock(&c->mu);
  }
  return NULL;
}

enum tw_rc tw_catalog_start(struct tw_catalog *c, struct tw_err *err) {
  for (size_t i = 0; i < c->n; i++) {
    if (c->srcs[i].started)
      continue;
    if (pthread_create(&c->srcs[i].thread, NULL, source_main, &c->srcs[i]))
      return tw_err_set(err, TW_E_INTERNAL,
                        "catalog: cannot start the refresh thread of %s",
                        c->srcs[i].name);
    c->srcs[i].started = true;
  }
  return TW_OK;
}

/* ---- creation
 * ---------------------------------------------------------------------------
 */

static bool name_taken(const struct tw_catalog *c, size_t upto,
                       const char *name) {
  for (size_t i = 0; i < upto; i++)
    if (!strcmp(c->srcs[i].name, name))
      return true;
  return false;
}

enum tw_rc tw_catalog_new(const struct tw_catalog_opts *o,
                          struct tw_catalog **out, struct tw_err *err) {
  struct tw_catalog *c = tw_calloc(1, sizeof *c);
  enum tw_rc rc = TW_OK;
  *out = NULL;
  c->store = o->store;
  c->adapters = o->adapters;
  c->clock = o->clock ? o->clock : tw_clock_real();
  c->keep = o->keep_snapshots > 0 ? o->keep_snapshots : 2;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->merge_mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  int64_t refresh = o->refresh_ms > 0 ? o->refresh_ms : DEFAULT_REFRESH_MS;

  if ((rc = o->regions_path
                ? tw_regions_load_file(o->regions_path, &c->regions, err)
                : tw_regions_builtin(&c->regions, err)))
    goto fail;
  if ((rc = o->rates_path ? tw_rates_load_file(o->rates_path, &c->rates, err)
                          : tw_rates_builtin(&c->rates, err)))
    goto fail;
  if (o->interruption_path) {
    char *text;
    size_t len;
    struct tw_err local = {0};
    if ((rc = slurp_file(o->interruption_path, &text, &len, err)))
      goto fail;
    rc = tw_cat_risk_load(text, len, &c->risk, &local);
    free(text);
    if (rc) {
      tw_err_set(err, rc, "%s: %s", o->interruption_path, local.msg);
      goto fail;
    }
  }

  c->srcs = tw_calloc(o->n_providers + o->n_files + 1, sizeof *c->srcs);
  for (size_t i = 0; i < o->n_providers; i++) {
    struct source *s = &c->srcs[c->n];
    const char *acct = tw_provider_account(o->providers[i]);
    if (name_taken(c, c->n, acct)) {
      rc = tw_err_set(err, TW_E_INVALID, "catalog: two sources named %s", acct);
      goto fail;
    }
    s->cat = c;
    pthread_mutex_init(&s->run_mu, NULL);
    c->n++;
    snprintf(s->name, sizeof s->name, "%s", acct);
    s->prov = o->providers[i];
    s->mode = TW_CAT_ADAPTER;
    s->refresh_ms = refresh;
    s->aopts.regions = c->regions;
    s->aopts.rates = c->rates;
    s->aopts.info = tw_provider_info(o->providers[i]);
    s->aopts.adapters = o->adapters;
    for (size_t k = 0; k < o->n_accounts; k++) {
      const struct tw_catalog_account *a = &o->accounts[k];
      if (strcmp(a->account, acct))
        continue;
      if (a->refresh_ms > 0)
        s->refresh_ms = a->refresh_ms;
      s->aopts.granularity_s = a->granularity_s;
      s->aopts.min_charge_s = a->min_charge_s;
      s->aopts.chargeback_vcpu_uusd = a->chargeback_vcpu_uusd;
      s->aopts.chargeback_gib_uusd = a->chargeback_gib_uusd;
      s->aopts.chargeback_accel_uusd = a->chargeback_accel_uusd;
    }
  }
  for (size_t i = 0; i < o->n_files; i++) {
    const struct tw_catalog_file *f = &o->files[i];
    struct source *s = &c->srcs[c->n];
    const char *name = f->name && *f->name ? f->name : f->path;
    if (!f->path || !*f->path || !f->provider || !*f->provider) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "catalog file %zu: path and provider are required", i);
      goto fail;
    }
    if (name_taken(c, c->n, name)) {
      rc = tw_err_set(err, TW_E_INVALID, "catalog: two sources named %s", name);
      goto fail;
    }
    /* offer ids are account:region:zone:type:market */
    if (strpbrk(f->provider, ":/") ||
        (f->account && strpbrk(f->account, ":/"))) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "catalog file %s: provider and account may not hold ':' "
                      "or '/'",
                      name);
      goto fail;
    }
    if (f->mode == TW_CAT_ADAPTER) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "catalog file %s: mode is seed or override", name);
      goto fail;
    }
    const struct tw_rate *rate = NULL;
    if (f->currency && *f->currency &&
        !(rate = tw_rates_find(c->rates, f->currency))) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "catalog file %s: no rate for currency %s", name,
                      f->currency);
      goto fail;
    }
    if (access(f->path, R_OK) != 0 ||
        (f->specs && *f->specs && access(f->specs, R_OK) != 0)) {
      rc = tw_err_set(err, TW_E_IO, "catalog file %s: cannot read %s", name,
                      access(f->path, R_OK) ? f->path : f->specs);
      goto fail;
    }
    s->cat = c;
    pthread_mutex_init(&s->run_mu, NULL);
    c->n++;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->is_file = true;
    s->path = tw_strdup(f->path);
    s->provider = tw_strdup(f->provider);
    s->account = dup_or_null(f->account);
    s->columns = dup_or_null(f->columns);
    s->instance_type = dup_or_null(f->instance_type);
    s->specs_path = dup_or_null(f->specs);
    s->rate = rate && strcmp(rate->currency, "USD") ? rate : NULL;
    s->mode = f->mode;
    s->refresh_ms = f->refresh_ms > 0 ? f->refresh_ms : refresh;
  }
  c->pending = (int)c->n;

  if (c->store) {
    /* what the last run ingested, so placement has offers before any
     * source answers; marked as loaded, with its own fetch time */
    for (size_t i = 0; i < c->n; i++) {
      struct tw_cat_snap *t = NULL;
      struct tw_err lerr = {0};
      if (tw_cat_store_latest(c->store, c->srcs[i].name, c->regions, &t,
                              &lerr)) {
        tw_log_warn("catalog", "source=%s stored snapshot unreadable: %s",
                    c->srcs[i].name, lerr.msg);
        continue;
      }
      if (t) {
        c->srcs[i].table = t;
        c->srcs[i].from_store = true;
      }
    }
  }
  publish(c, tw_clock_now_ms(c->clock));
  *out = c;
  return TW_OK;
fail:
  tw_catalog_free(c);
  return rc;
}

void tw_catalog_free(struct tw_catalog *c) {
  if (!c)
    return;
  pthread_mutex_lock(&c->mu);
  c->stopping = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (size_t i = 0; i < c->n; i++)
    if (c->srcs[i].started)
      pthread_join(c->srcs[i].thread, NULL);
  for (size_t i = 0; i < c->n; i++)
    source_release(&c->srcs[i]);
  free(c->srcs);
  tw_cat_snap_release(c->current);
  tw_regions_free(c->regions);
  tw_rates_free(c->rates);
  tw_cat_risk_free(c->risk);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->merge_mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

/* ---- status and metrics
 * --------------------------------------------------------------- */

void tw_catalog_status(struct tw_catalog *c, struct tw_catalog_status **out,
                       size_t *n) {
  int64_t now = tw_clock_now_ms(c->clock);
  struct tw_catalog_status *st = tw_calloc(c->n ? c->n : 1, sizeof *st);
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++) {
    const struct source *s = &c->srcs[i];
    struct tw_catalog_status *x = &st[i];
    if (s->table)
      x->info = s->table->srcs[0];
    else
      source_info_base(s, &x->info);
    /* offers and superseded as the published snapshot counts them */
    for (size_t k = 0; c->current && k < c->current->n_srcs; k++)
      if (!strcmp(c->current->srcs[k].name, s->name)) {
        x->info.offers = c->current->srcs[k].offers;
        x->info.superseded = c->current->srcs[k].superseded;
      }
    x->refresh_ms = s->refresh_ms;
    x->attempted_ms = s->attempted_ms;
    /* age: since the data was last known current (a fetch, or a check
     * that found it unchanged); a table loaded from the store is as old
     * as its fetch */
    int64_t fresh_ms = s->ok_ms   ? s->ok_ms
                       : s->table ? s->table->srcs[0].fetched_ms
                                  : 0;
    x->age_ms = fresh_ms ? now - fresh_ms : -1;
    x->stale = x->age_ms < 0 || x->age_ms > 2 * s->refresh_ms;
    x->loaded_from_store = s->from_store;
    x->refreshes = s->refreshes;
    x->failures = s->failures;
    x->unchanged = s->unchanged;
    snprintf(x->last_error, sizeof x->last_error, "%s", s->last_error);
  }
  pthread_mutex_unlock(&c->mu);
  *out = st;
  *n = c->n;
}

const struct tw_rates *tw_catalog_rates(const struct tw_catalog *c) {
  return c->rates;
}

enum tw_rc tw_catalog_history(struct tw_catalog *c, const char *offer_id,
                              size_t max, struct tw_cat_price_point **out,
                              size_t *n, struct tw_err *err) {
  *out = NULL;
  *n = 0;
  if (!c->store)
    return TW_OK;
  return tw_cat_store_history(c->store, offer_id, max, out, n, err);
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void label_value(struct tw_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      tw_buf_addc(b, '\\');
    if (*s == '\n') {
      tw_buf_adds(b, "\\n");
      continue;
    }
    tw_buf_addc(b, *s);
  }
}

static void metric_src(struct tw_buf *b, const char *name, const char *src,
                       const char *extra_k, const char *extra_v) {
  tw_buf_printf(b, "%s{source=\"", name);
  label_value(b, src);
  tw_buf_addc(b, '"');
  if (extra_k) {
    tw_buf_printf(b, ",%s=\"", extra_k);
    label_value(b, extra_v);
    tw_buf_addc(b, '"');
  }
  tw_buf_adds(b, "} ");
}

void tw_catalog_metrics(struct tw_catalog *c, struct tw_buf *out) {
  if (!c)
    return;
  struct tw_cat_snap *snap = tw_catalog_acquire(c);
  tw_buf_printf(out,
                "# HELP tradewind_catalog_snapshot_version Version of the "
                "published catalog snapshot.\n"
                "# TYPE tradewind_catalog_snapshot_version gauge\n"
                "tradewind_catalog_snapshot_version %" PRIu64 "\n"
                "# HELP tradewind_catalog_offers Offers in the published "
                "snapshot.\n"
                "# TYPE tradewind_catalog_offers gauge\n"
                "tradewind_catalog_offers %zu\n"
                "# HELP tradewind_catalog_snapshot_bytes Memory held by the "
                "published snapshot.\n"
                "# TYPE tradewind_catalog_snapshot_bytes gauge\n"
                "tradewind_catalog_snapshot_bytes %zu\n",
                snap->version, snap->n_offers, snap->bytes);
  tw_cat_snap_release(snap);
  struct tw_catalog_status *st;
  size_t n;
  tw_catalog_status(c, &st, &n);
  static const struct {
    const char *name, *type, *help;
  } M[] = {
      {"tradewind_catalog_source_age_seconds", "gauge",
       "Seconds since the source's data was last known current."},
      {"tradewind_catalog_source_stale", "gauge",
       "1 when the source is older than twice its refresh interval."},
      {"tradewind_catalog_source_offers", "gauge",
       "Offers of the source in the published snapshot."},
      {"tradewind_catalog_refreshes_total", "counter",
       "Refresh attempts of the source."},
      {"tradewind_catalog_refresh_failures_total", "counter",
       "Failed refresh attempts of the source."},
      {"tradewind_catalog_rows_total", "gauge",
       "Rows of the source's current table, by outcome and reason."},
  };
  for (size_t m = 0; m < sizeof M / sizeof M[0]; m++) {
    tw_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", M[m].name, M[m].help,
                  M[m].name, M[m].type);
    for (size_t i = 0; i < n; i++) {
      const struct tw_catalog_status *x = &st[i];
      const char *src = x->info.name;
      switch (m) {
      case 0:
        if (x->age_ms < 0)
          break;
        metric_src(out, M[m].name, src, NULL, NULL);
        tw_buf_printf(out, "%" PRId64 ".%03" PRId64 "\n", x->age_ms / 1000,
                      x->age_ms % 1000);
        break;
      case 1:
        metric_src(out, M[m].name, src, NULL, NULL);
        tw_buf_printf(out, "%d\n", x->stale ? 1 : 0);
        break;
      case 2:
        metric_src(out, M[m].name, src, NULL, NULL);
        tw_buf_printf(out, "%" PRIu64 "\n", x->info.offers);
        break;
      case 3:
        metric_src(out, M[m].name, src, NULL, NULL);
        tw_buf_printf(out, "%" PRIu64 "\n", x->refreshes);
        break;
      case 4:
        metric_src(out, M[m].name, src, NULL, NULL);
        tw_buf_printf(out, "%" PRIu64 "\n", x->failures);
        break;
      case 5: {
        const struct tw_cat_report *r = &x->info.report;
        tw_buf_printf(out, "%s{source=\"", M[m].name);
        label_value(out, src);
        tw_buf_printf(out, "\",outcome=\"normalized\"} %" PRIu64 "\n",
                      r->normalized);
        for (int k = 0; k < TW_CAT_REJ_COUNT; k++) {
          if (!r->rejected[k])
            continue;
          tw_buf_printf(out, "%s{source=\"", M[m].name);
          label_value(out, src);
          tw_buf_printf(
              out, "\",outcome=\"rejected\",reason=\"%s\"} %" PRIu64 "\n",
              tw_cat_reject_str((enum tw_cat_reject)k), r->rejected[k]);
        }
        break;
      }
      }
    }
  }
  free(st);
}

/* ---- configuration
 * ------------------------------------------------------------------------ */

/* The `catalog:` section as tw_catalog_opts, with the arrays owned here. */
struct cfg_opts {
  struct tw_catalog_opts o;
  struct tw_catalog_file files[64];
  struct tw_catalog_account accounts[64];
};

static const char *scalar(const struct tw_node *n) {
  return n && n->kind == TW_NODE_SCALAR ? n->str : NULL;
}

static enum tw_rc cfg_str(const struct tw_node *m, const char *key,
                          const char *path, const char **out,
                          struct tw_err *err) {
  const struct tw_node *n = tw_node_get(m, key);
  *out = NULL;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  if (n->kind != TW_NODE_SCALAR || !*n->str)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: expected a non-empty string, got %s", path, key,
                        tw_node_type_name(n));
  *out = n->str;
  return TW_OK;
}

static enum tw_rc cfg_int(const struct tw_node *m, const char *key,
                          const char *path, int64_t min, int64_t max,
                          int64_t *out, struct tw_err *err) {
  const struct tw_node *n = tw_node_get(m, key);
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  int64_t v;
  if (!tw_node_as_int(n, &v) || v < min || v > max)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: expected an integer from %lld to %lld, got %s",
                        path, key, (long long)min, (long long)max,
                        scalar(n) ? scalar(n) : tw_node_type_name(n));
  *out = v;
  return TW_OK;
}

/* Dollars as written ("0.012") to micro-USD. */
static enum tw_rc cfg_usd(const struct tw_node *m, const char *key,
                          const char *path, int64_t *out, struct tw_err *err) {
  const struct tw_node *n = tw_node_get(m, key);
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  const char *s = scalar(n);
  int64_t v;
  if (!s || !tw_norm_decimal_micro(s, strlen(s), &v, NULL))
    return tw_err_field(
        err, TW_E_INVALID, path,
        "%s.%s: expected dollars per hour like \"0.012\", got %s", path, key,
        s ? s : tw_node_type_name(n));
  *out = v;
  return TW_OK;
}

static enum tw_rc cfg_keys(const struct tw_node *m, const char *path,
                           const char *const *known, struct tw_err *err) {
  if (m->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s: expected a mapping, got %s", path,
                        tw_node_type_name(m));
  for (size_t i = 0; i < m->n; i++) {
    size_t k;
    for (k = 0; known[k]; k++)
      if (!strcmp(known[k], m->keys[i]))
        break;
    if (!known[k]) {
      const char *near = tw_closest(m->keys[i], known);
      if (near)
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s.%s: unknown key; did you mean \"%s\"?", path,
                            m->keys[i], near);
      return tw_err_field(err, TW_E_INVALID, path, "%s.%s: unknown key", path,
                          m->keys[i]);
    }
  }
  return TW_OK;
}

static enum tw_rc cfg_parse(const struct tw_node *sec, int64_t def_refresh_s,
                            struct cfg_opts *co, struct tw_err *err) {
  static const char *const TOP[] = {
      "refresh_s",      "regions",  "rates", "interruption",
      "keep_snapshots", "accounts", "files", NULL};
  static const char *const ACCT[] = {"refresh_s", "granularity_s",
                                     "min_charge_s", "chargeback", NULL};
  static const char *const CHARGE[] = {"vcpu_hour", "gib_hour",
                                       "accelerator_hour", NULL};
  static const char *const FILE_KEYS[] = {
      "name",    "path",          "provider", "account",   "currency", "mode",
      "columns", "instance_type", "specs",    "refresh_s", NULL};
  enum tw_rc rc;
  int64_t refresh_s = def_refresh_s, keep = 2;
  memset(co, 0, sizeof *co);
  if (sec && sec->kind != TW_NODE_NULL) {
    if ((rc = cfg_keys(sec, "catalog", TOP, err)) ||
        (rc = cfg_int(sec, "refresh_s", "catalog", 10, 86400, &refresh_s,
                      err)) ||
        (rc = cfg_int(sec, "keep_snapshots", "catalog", 1, 100, &keep, err)) ||
        (rc = cfg_str(sec, "regions", "catalog", &co->o.regions_path, err)) ||
        (rc = cfg_str(sec, "rates", "catalog", &co->o.rates_path, err)) ||
        (rc = cfg_str(sec, "interruption", "catalog", &co->o.interruption_path,
                      err)))
      return rc;
    const struct tw_node *acc = tw_node_get(sec, "accounts");
    if (acc && acc->kind != TW_NODE_NULL) {
      if (acc->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, "catalog.accounts",
                            "catalog.accounts: expected a mapping of account "
                            "names, got %s",
                            tw_node_type_name(acc));
      if (acc->n > sizeof co->accounts / sizeof co->accounts[0])
        return tw_err_set(err, TW_E_INVALID, "catalog.accounts: at most 64");
      for (size_t i = 0; i < acc->n; i++) {
        char path[160];
        snprintf(path, sizeof path, "catalog.accounts.%s", acc->keys[i]);
        struct tw_catalog_account *a = &co->accounts[co->o.n_accounts++];
        const struct tw_node *m = acc->items[i];
        int64_t r = 0;
        a->account = acc->keys[i];
        if ((rc = cfg_keys(m, path, ACCT, err)) ||
            (rc = cfg_int(m, "refresh_s", path, 10, 86400, &r, err)) ||
            (rc = cfg_int(m, "granularity_s", path, 1, 86400, &a->granularity_s,
                          err)) ||
            (rc = cfg_int(m, "min_charge_s", path, 0, 86400, &a->min_charge_s,
                          err)))
          return rc;
        a->refresh_ms = r * 1000;
        const struct tw_node *cb = tw_node_get(m, "chargeback");
        if (cb && cb->kind != TW_NODE_NULL) {
          char cpath[192];
          snprintf(cpath, sizeof cpath, "%s.chargeback", path);
          if ((rc = cfg_keys(cb, cpath, CHARGE, err)) ||
              (rc = cfg_usd(cb, "vcpu_hour", cpath, &a->chargeback_vcpu_uusd,
                            err)) ||
              (rc = cfg_usd(cb, "gib_hour", cpath, &a->chargeback_gib_uusd,
                            err)) ||
              (rc = cfg_usd(cb, "accelerator_hour", cpath,
                            &a->chargeback_accel_uusd, err)))
            return rc;
        }
      }
    }
    const struct tw_node *files = tw_node_get(sec, "files");
    if (files && files->kind != TW_NODE_NULL) {
      if (files->kind != TW_NODE_SEQ)
        return tw_err_field(err, TW_E_INVALID, "catalog.files",
                            "catalog.files: expected a list, got %s",
                            tw_node_type_name(files));
      if (files->n > sizeof co->files / sizeof co->files[0])
        return tw_err_set(err, TW_E_INVALID, "catalog.files: at most 64");
      for (size_t i = 0; i < files->n; i++) {
        char path[64];
        snprintf(path, sizeof path, "catalog.files[%zu]", i);
        struct tw_catalog_file *f = &co->files[co->o.n_files++];
        const struct tw_node *m = files->items[i];
        const char *mode = NULL;
        int64_t r = 0;
        if ((rc = cfg_keys(m, path, FILE_KEYS, err)) ||
            (rc = cfg_str(m, "name", path, &f->name, err)) ||
            (rc = cfg_str(m, "path", path, &f->path, err)) ||
            (rc = cfg_str(m, "provider", path, &f->provider, err)) ||
            (rc = cfg_str(m, "account", path, &f->account, err)) ||
            (rc = cfg_str(m, "currency", path, &f->currency, err)) ||
            (rc = cfg_str(m, "mode", path, &mode, err)) ||
            (rc = cfg_str(m, "columns", path, &f->columns, err)) ||
            (rc = cfg_str(m, "instance_type", path, &f->instance_type, err)) ||
            (rc = cfg_str(m, "specs", path, &f->specs, err)) ||
            (rc = cfg_int(m, "refresh_s", path, 10, 86400, &r, err)))
          return rc;
        if (!f->path || !f->provider)
          return tw_err_field(err, TW_E_INVALID, path,
                              "%s: path and provider are required", path);
        if (!mode || !strcmp(mode, "seed"))
          f->mode = TW_CAT_SEED;
        else if (!strcmp(mode, "override"))
          f->mode = TW_CAT_OVERRIDE;
        else
          return tw_err_field(err, TW_E_INVALID, path,
                              "%s.mode: expected seed or override, got \"%s\"",
                              path, mode);
        f->refresh_ms = r * 1000;
      }
    }
  }
  co->o.refresh_ms = refresh_s * 1000;
  co->o.keep_snapshots = (int)keep;
  co->o.files = co->files;
  co->o.accounts = co->accounts;
  return TW_OK;
}

enum tw_rc
tw_catalog_new_from_cfg(const struct tw_cfg *cfg, struct tw_store *store,
                        struct tw_clock *clock, struct tw_provider **providers,
                        size_t n_providers,
                        const struct tw_provider_ops *const *adapters,
                        struct tw_catalog **out, struct tw_err *err) {
  struct cfg_opts *co = tw_calloc(1, sizeof *co);
  const struct tw_node *sec = cfg->catalog;
  enum tw_rc rc = cfg_parse(sec, cfg->sched_offers_ttl_s, co, err);
  if (rc == TW_OK) {
    co->o.store = store;
    co->o.clock = clock;
    co->o.providers = providers;
    co->o.n_providers = n_providers;
    co->o.adapters = adapters;
    rc = tw_catalog_new(&co->o, out, err);
  }
  free(co);
  return rc;
}
