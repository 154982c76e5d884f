/* live.c - see live.h. */
#include "broker/core/live.h"

#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

static int id_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

size_t tw_live_pos(const struct tw_live *l, int64_t id) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->at[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const struct tw_attempt_rec *tw_live_find(const struct tw_live *l,
                                          int64_t id) {
  size_t at = tw_live_pos(l, id);
  return at < l->n && l->at[at].id == id ? &l->at[at] : NULL;
}

static enum tw_rc read_whole(struct tw_live *l, struct tw_store *s,
                             int64_t now_ms, struct tw_err *err) {
  struct tw_attempt_rec *live = NULL;
  size_t n = 0;
  enum tw_rc rc = tw_store_attempts_live(s, &live, &n, err);
  if (rc)
    return rc;
  free(l->at);
  l->at = live;
  l->n = l->cap = n;
  l->have = true;
  l->full_ms = now_ms;
  return TW_OK;
}

/* The attempts changes ch[0..n) name, read again: each replaced in place
 * if still live, appended if new and above the last (ids ascend), marked
 * and left to one merge otherwise (dropped, or new below the last). */
static enum tw_rc apply(struct tw_live *l, struct tw_store *s,
                        const struct tw_store_change *ch, size_t n,
                        struct tw_live_sync *out, struct tw_err *err) {
  int64_t *ids = tw_calloc(n ? n : 1, sizeof *ids);
  size_t n_ids = 0;
  for (size_t i = 0; i < n; i++) {
    if (ch[i].attempt_id > 0) {
      ids[n_ids++] = ch[i].attempt_id;
      continue;
    }
    out->jobs = tw_realloc(out->jobs, (out->n_jobs + 1) * sizeof *out->jobs);
    out->jobs[out->n_jobs++] = ch[i];
  }
  qsort(ids, n_ids, sizeof *ids, id_cmp);
  size_t k = 0;
  for (size_t i = 0; i < n_ids; i++)
    if (!k || ids[k - 1] != ids[i])
      ids[k++] = ids[i];
  n_ids = k;
  struct tw_attempt_rec *now = tw_calloc(n_ids ? n_ids : 1, sizeof *now);
  bool *found = tw_calloc(n_ids ? n_ids : 1, sizeof *found);
  enum tw_rc rc = n_ids ? tw_store_attempts_by_id(s, ids, n_ids, now, found,
                                                  err)
                        : TW_OK;
  if (rc)
    goto done;
  bool merge = false;
  for (size_t i = 0; i < n_ids; i++) {
    bool live = found[i] && now[i].state != TW_ATTEMPT_ENDED;
    size_t at = tw_live_pos(l, ids[i]);
    bool there = at < l->n && l->at[at].id == ids[i];
    found[i] = false; /* true below: inserted by the merge */
    out->changed |= there || live;
    out->ended |= !live;
    if (there && live) {
      l->at[at] = now[i];
    } else if (there) {
      l->at[at].state = TW_ATTEMPT_ENDED; /* dropped by the merge */
      out->dropped = merge = true;
    } else if (live && at == l->n) {
      if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->at = tw_realloc(l->at, l->cap * sizeof *l->at);
      }
      l->at[l->n++] = now[i];
    } else if (live) {
      found[i] = merge = true;
    }
  }
  if (merge) {
    size_t extra = 0;
    for (size_t i = 0; i < n_ids; i++)
      extra += found[i];
    size_t cap = l->n + extra ? l->n + extra : 1;
    struct tw_attempt_rec *to = tw_calloc(cap, sizeof *to);
    size_t o = 0, j = 0;
    for (size_t i = 0; i < l->n; i++) {
      for (; j < n_ids && (!found[j] || now[j].id < l->at[i].id); j++)
        if (found[j])
          to[o++] = now[j];
      if (l->at[i].state != TW_ATTEMPT_ENDED)
        to[o++] = l->at[i];
    }
    for (; j < n_ids; j++)
      if (found[j])
        to[o++] = now[j];
    free(l->at);
    l->at = to;
    l->n = o;
    l->cap = cap;
  }
done:
  free(ids);
  free(now);
  free(found);
  return rc;
}

enum tw_rc tw_live_sync(struct tw_live *l, struct tw_store *s, int64_t now_ms,
                        int64_t full_every_ms, struct tw_live_sync *out,
                        struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_store_change *ch = NULL;
  size_t n_ch = 0;
  /* the cursor first: what commits after it comes with the next look */
  bool known = tw_store_changes_since(s, &l->cursor, &ch, &n_ch);
  enum tw_rc rc = TW_E_RETRYABLE; /* read whole */
  if (known && l->have && now_ms >= l->full_ms &&
      now_ms - l->full_ms < full_every_ms)
    rc = n_ch ? apply(l, s, ch, n_ch, out, err) : TW_OK;
  free(ch);
  if (rc) {
    free(out->jobs);
    memset(out, 0, sizeof *out);
    out->whole = out->changed = true;
    if ((rc = read_whole(l, s, now_ms, err))) {
      l->have = false; /* read whole next time */
      out->changed = false;
    }
  }
  return rc;
}

void tw_live_release(struct tw_live *l) {
  free(l->at);
  memset(l, 0, sizeof *l);
}
