/* adapter_util.c - see adapter_util.h. */
#include "providers/adapter_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/provider.h"

enum tw_rc tw_adapter_offers_by_region(struct tw_provider *p,
                                       char *const *regions, size_t n,
                                       tw_region_offers_fn fn,
                                       struct tw_offer_list *out,
                                       struct tw_err *err) {
  for (size_t r = 0; r < n; r++) {
    enum tw_rc rc = fn(p, regions[r], out, err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

bool tw_adapter_find_instance(const struct tw_instance_list *l, const char *id,
                              const char *region, struct tw_instance *out) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].id, id)) {
      *out = l->items[i];
      TW_SET(out->region, region);
      return true;
    }
  return false;
}

void tw_adapter_iso_time(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t tw_adapter_http_date_ms(const char *s) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  char mon[4];
  int d, y, h, mi, se;
  if (!s ||
      sscanf(s, "%*3s, %d %3s %d %d:%d:%d GMT", &d, mon, &y, &h, &mi, &se) != 6)
    return -1;
  const char *m = strstr(months, mon);
  if (!m || (m - months) % 3)
    return -1;
  struct tm tm = {.tm_sec = se,
                  .tm_min = mi,
                  .tm_hour = h,
                  .tm_mday = d,
                  .tm_mon = (int)((m - months) / 3),
                  .tm_year = y - 1900};
  return (int64_t)timegm(&tm) * 1000;
}

void tw_region_memo_init(struct tw_region_memo *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->lock, NULL);
}

void tw_region_memo_release(struct tw_region_memo *m) {
  free(m->where);
  free(m->slots);
  m->where = NULL;
  m->slots = NULL;
  m->n_where = m->next_where = 0;
  pthread_mutex_destroy(&m->lock);
}

#define MEMO_SLOTS (2u * TW_REGION_MEMO_MAX) /* a power of two */

static uint64_t memo_hash(const char *id) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)id; *c; c++)
    h = (h ^ *c) * 1099511628211ull;
  return h;
}

/* The slot holding id's entry, or the empty slot where it would go. */
static size_t memo_slot(const struct tw_region_memo *m, const char *id,
                        uint64_t h) {
  size_t i = (size_t)(h & (MEMO_SLOTS - 1));
  while (m->slots[i]) {
    const struct tw_region_memo_entry *e = &m->where[m->slots[i] - 1];
    if (e->hash == h && !strcmp(e->id, id))
      break;
    i = (i + 1) & (MEMO_SLOTS - 1);
  }
  return i;
}

/* Empties slot i, moving later entries of its probe run back so that
 * every entry stays reachable from its home slot. */
static void memo_unslot(struct tw_region_memo *m, size_t i) {
  for (;;) {
    m->slots[i] = 0;
    size_t k = i;
    for (;;) {
      k = (k + 1) & (MEMO_SLOTS - 1);
      if (!m->slots[k])
        return;
      size_t home =
          (size_t)(m->where[m->slots[k] - 1].hash & (MEMO_SLOTS - 1));
      /* k stays when its home lies cyclically in (i, k] */
      bool stays = i <= k ? (i < home && home <= k) : (i < home || home <= k);
      if (!stays)
        break;
    }
    m->slots[i] = m->slots[k];
    i = k;
  }
}

void tw_region_memo_put(struct tw_region_memo *m, const char *id,
                        const char *region) {
  if (m->n_regions == 1)
    return;
  pthread_mutex_lock(&m->lock);
  if (!m->where) {
    m->where = tw_calloc(TW_REGION_MEMO_MAX, sizeof *m->where);
    m->slots = tw_calloc(MEMO_SLOTS, sizeof *m->slots);
  }
  uint64_t h = memo_hash(id);
  size_t s = memo_slot(m, id, h);
  size_t i;
  if (m->slots[s]) {
    i = m->slots[s] - 1;
  } else {
    if (m->n_where < TW_REGION_MEMO_MAX) {
      i = m->n_where++;
    } else {
      i = m->next_where; /* the oldest goes */
      m->next_where = (m->next_where + 1) % TW_REGION_MEMO_MAX;
      memo_unslot(m, memo_slot(m, m->where[i].id, m->where[i].hash));
      s = memo_slot(m, id, h); /* the run may have moved */
    }
    TW_SET(m->where[i].id, id);
    m->where[i].hash = h;
    m->slots[s] = (uint32_t)i + 1;
  }
  TW_SET(m->where[i].region, region);
  pthread_mutex_unlock(&m->lock);
}

size_t tw_region_memo_hint(struct tw_region_memo *m, const char *id) {
  size_t hint = 0;
  pthread_mutex_lock(&m->lock);
  if (m->where) {
    size_t s = memo_slot(m, id, memo_hash(id));
    if (m->slots[s]) {
      const struct tw_region_memo_entry *e = &m->where[m->slots[s] - 1];
      for (size_t r = 0; r < m->n_regions; r++)
        if (!strcmp(m->regions[r], e->region))
          hint = r;
    }
  }
  pthread_mutex_unlock(&m->lock);
  return hint;
}

enum tw_rc tw_region_memo_run(struct tw_region_memo *m, struct tw_provider *p,
                              const char *id, tw_region_fn fn, void *arg,
                              struct tw_err *err) {
  size_t first = tw_region_memo_hint(m, id);
  enum tw_rc rc = TW_E_NOTFOUND;
  for (size_t k = 0; k < m->n_regions; k++) {
    const char *region = m->regions[(first + k) % m->n_regions];
    struct tw_err e = {0};
    rc = fn(p, region, id, arg, &e);
    if (rc == TW_OK) {
      tw_region_memo_put(m, id, region);
      return TW_OK;
    }
    if (rc != TW_E_NOTFOUND || k + 1 == m->n_regions) {
      if (err && err->rc == TW_OK)
        *err = e;
      return rc;
    }
  }
  return rc;
}

const char *tw_adapter_disk_tier(const char *const tiers[4], const char *type) {
  static const char *const words[] = {"low", "medium", "high", "ultra"};
  if (!type)
    return NULL;
  if (!strcmp(type, "best"))
    return tiers[3];
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(type, words[i]))
      return tiers[i];
  return type;
}

/* ---- machine images per region and architecture ------------------------- */

enum tw_rc tw_adapter_images_read(const struct tw_node *cfg, const char *what,
                                  struct tw_adapter_images *out,
                                  struct tw_err *err) {
  memset(out, 0, sizeof *out);
  const char *img;
  enum tw_rc rc = tw_provider_cfg_str(cfg, "image", NULL, &img, err);
  if (rc)
    return rc;
  const struct tw_node *imgs = tw_node_get(cfg, "images");
  if (imgs && imgs->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "images",
                        "images: expected a mapping of regions to images");
  size_t cap = 1;
  for (size_t i = 0; imgs && i < imgs->n; i++)
    cap += imgs->items[i]->kind == TW_NODE_MAP ? imgs->items[i]->n : 1;
  out->v = tw_calloc(cap, sizeof *out->v);
  if (img)
    out->v[out->n++].image = tw_strdup(img);
  for (size_t i = 0; imgs && i < imgs->n; i++) {
    const struct tw_node *iv = imgs->items[i];
    bool map = iv->kind == TW_NODE_MAP;
    for (size_t j = 0; j < (map ? iv->n : 1); j++) {
      const struct tw_node *e = map ? iv->items[j] : iv;
      enum tw_arch arch = TW_ARCH_ANY;
      if (map && !strcmp(iv->keys[j], "x86_64"))
        arch = TW_ARCH_X86_64;
      else if (map && !strcmp(iv->keys[j], "arm64"))
        arch = TW_ARCH_ARM64;
      else if (map)
        return tw_err_field(err, TW_E_INVALID, "images",
                            "images.%s.%s: expected x86_64 or arm64",
                            imgs->keys[i], iv->keys[j]);
      if (e->kind != TW_NODE_SCALAR ||
          strlen(imgs->keys[i]) >= TW_MODEL_NAME_MAX)
        return tw_err_field(err, TW_E_INVALID, "images",
                            "images.%s: expected %s or {x86_64: id, "
                            "arm64: id}",
                            imgs->keys[i], what);
      struct tw_adapter_image *im = &out->v[out->n++];
      TW_SET(im->region, strcmp(imgs->keys[i], "*") ? imgs->keys[i] : "");
      im->arch = arch;
      im->image = tw_strdup(e->str);
    }
  }
  return TW_OK;
}

const char *tw_adapter_image_for(const struct tw_adapter_images *ims,
                                 const char *region, enum tw_arch arch) {
  const char *best = NULL;
  int best_score = -1;
  for (size_t i = 0; i < ims->n; i++) {
    const struct tw_adapter_image *im = &ims->v[i];
    bool here = !strcmp(im->region, region);
    if ((!here && im->region[0]) ||
        (im->arch != TW_ARCH_ANY && im->arch != arch))
      continue;
    int score = (here ? 2 : 0) + (im->arch != TW_ARCH_ANY);
    if (score > best_score) {
      best_score = score;
      best = im->image;
    }
  }
  return best;
}

void tw_adapter_images_release(struct tw_adapter_images *ims) {
  for (size_t i = 0; i < ims->n; i++)
    free(ims->v[i].image);
  free(ims->v);
  memset(ims, 0, sizeof *ims);
}

/* ---- a refusal after an unanswered try ---------------------------------- */

enum tw_rc tw_adapter_refusal_settled(enum tw_rc rc, unsigned unanswered,
                                      const char *what, struct tw_err *err) {
  if (rc == TW_OK || rc == TW_E_RETRYABLE || !unanswered)
    return rc;
  struct tw_err was = err ? *err : (struct tw_err){0};
  if (err)
    tw_err_clear(err);
  tw_err_set(err, TW_E_RETRYABLE,
             "%s: refused after %u unanswered tr%s, which may still be acted "
             "on, so the outcome is unknown: %s%s%s",
             what, unanswered, unanswered == 1 ? "y" : "ies", tw_rc_str(rc),
             was.msg[0] ? ": " : "", was.msg);
  if (err)
    tw_err_detail(err,
                  was.detail[0] ? was.detail : "refused_after_unanswered");
  return TW_E_RETRYABLE;
}
