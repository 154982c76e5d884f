/* adapter_util.c - see adapter_util.h. */
#include "adapter_util.h"

#include <stdlib.h>
#include <string.h>

#include "broker/mem.h"

void tw_region_memo_init(struct tw_region_memo *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->lock, NULL);
}

void tw_region_memo_release(struct tw_region_memo *m) {
  free(m->where);
  m->where = NULL;
  m->n_where = m->next_where = 0;
  pthread_mutex_destroy(&m->lock);
}

void tw_region_memo_put(struct tw_region_memo *m, const char *id,
                        const char *region) {
  if (m->n_regions == 1)
    return;
  pthread_mutex_lock(&m->lock);
  size_t i;
  for (i = 0; i < m->n_where && strcmp(m->where[i].id, id); i++)
    ;
  if (i == m->n_where) {
    if (!m->where)
      m->where = tw_calloc(TW_REGION_MEMO_MAX, sizeof *m->where);
    if (m->n_where < TW_REGION_MEMO_MAX) {
      i = m->n_where++;
    } else {
      i = m->next_where; /* the oldest goes */
      m->next_where = (m->next_where + 1) % TW_REGION_MEMO_MAX;
    }
  }
  TW_SET(m->where[i].id, id);
  TW_SET(m->where[i].region, region);
  pthread_mutex_unlock(&m->lock);
}

size_t tw_region_memo_hint(struct tw_region_memo *m, const char *id) {
  size_t hint = 0;
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->n_where; i++)
    if (!strcmp(m->where[i].id, id)) {
      for (size_t r = 0; r < m->n_regions; r++)
        if (!strcmp(m->regions[r], m->where[i].region))
          hint = r;
      break;
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
