#include "broker/core/spec_cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/job.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"

struct entry {
  struct tw_job_spec spec; /* first: the pointer handed out is the entry */
  char job_id[TW_JOB_ID_LEN + 1];
  int64_t updated_ms;
  char *text; /* the spec_json it was parsed from */
  int refs;   /* handed out and not released; under mu when cached was
                 ever true */
  bool cached;
  struct entry *hnext;       /* bucket chain */
  struct entry *prev, *next; /* recency list, most recent first */
};

struct tw_spec_cache {
  pthread_mutex_t mu;
  struct entry **buckets;
  size_t mask; /* buckets - 1, a power of two minus one */
  size_t n, max;
  struct entry *head, *tail;
  struct tw_spec_cache_stats st;
};

struct tw_spec_cache *tw_spec_cache_new(size_t max_entries) {
  struct tw_spec_cache *c = tw_calloc(1, sizeof *c);
  c->max = max_entries ? max_entries : 4096;
  size_t nb = 16;
  while (nb < c->max)
    nb *= 2;
  c->buckets = tw_calloc(nb, sizeof *c->buckets);
  c->mask = nb - 1;
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

static void entry_free(struct entry *e) {
  tw_spec_release(&e->spec);
  free(e->text);
  free(e);
}

void tw_spec_cache_free(struct tw_spec_cache *c) {
  if (!c)
    return;
  for (struct entry *e = c->head, *next; e; e = next) {
    next = e->next;
    entry_free(e);
  }
  free(c->buckets);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static size_t hash_id(const char *id) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = id; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return (size_t)h;
}

static struct entry **slot_of(struct tw_spec_cache *c, const char *id) {
  struct entry **pp = &c->buckets[hash_id(id) & c->mask];
  while (*pp && strcmp((*pp)->job_id, id))
    pp = &(*pp)->hnext;
  return pp;
}

static void lru_unlink(struct tw_spec_cache *c, struct entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    c->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    c->tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_front(struct tw_spec_cache *c, struct entry *e) {
  e->next = c->head;
  e->prev = NULL;
  if (c->head)
    c->head->prev = e;
  c->head = e;
  if (!c->tail)
    c->tail = e;
}

/* Takes e out of the table; freed now when nobody holds it, else by the
 * last release.  Under mu. */
static void drop(struct tw_spec_cache *c, struct entry **slot) {
  struct entry *e = *slot;
  *slot = e->hnext;
  e->hnext = NULL;
  lru_unlink(c, e);
  e->cached = false;
  c->n--;
  if (!e->refs)
    entry_free(e);
}

/* Room for one more, dropping the least recent entry nobody holds.
 * False when every entry is held.  Under mu. */
static bool make_room(struct tw_spec_cache *c) {
  if (c->n < c->max)
    return true;
  for (struct entry *e = c->tail; e; e = e->prev)
    if (!e->refs) {
      drop(c, slot_of(c, e->job_id));
      c->st.evictions++;
      return true;
    }
  return false;
}

/* The cached entry of job, made current for its stamp; NULL when there is
 * none for its text.  Under mu. */
static struct entry *lookup(struct tw_spec_cache *c,
                            const struct tw_job_rec *job, const char *text) {
  struct entry **slot = slot_of(c, job->id);
  struct entry *e = *slot;
  if (!e)
    return NULL;
  if (e->updated_ms != job->updated_ms) {
    /* a new version of the record: the parse holds while the text does */
    if (strcmp(e->text, text)) {
      drop(c, slot);
      return NULL;
    }
    e->updated_ms = job->updated_ms;
  }
  lru_unlink(c, e);
  lru_front(c, e);
  return e;
}

const struct tw_job_spec *tw_spec_cache_acquire(struct tw_spec_cache *c,
                                                const struct tw_job_rec *job,
                                                struct tw_err *err) {
  const char *text = job->spec_json ? job->spec_json : "";
  bool keep = !tw_job_state_terminal(job->state);
  if (c) {
    pthread_mutex_lock(&c->mu);
    struct entry *e = NULL;
    if (keep)
      e = lookup(c, job, text);
    else if (*slot_of(c, job->id))
      drop(c, slot_of(c, job->id));
    if (e) {
      e->refs++;
      c->st.hits++;
    }
    pthread_mutex_unlock(&c->mu);
    if (e)
      return &e->spec;
  }
  /* parsed outside the lock: the other threads' hits do not wait for it */
  struct entry *e = tw_calloc(1, sizeof *e);
  if (tw_spec_parse(text, strlen(text), true, &e->spec, err)) {
    free(e);
    return NULL;
  }
  snprintf(e->job_id, sizeof e->job_id, "%s", job->id);
  e->updated_ms = job->updated_ms;
  e->text = tw_strdup(text);
  e->refs = 1;
  if (!c)
    return &e->spec;
  pthread_mutex_lock(&c->mu);
  c->st.parses++;
  if (keep) {
    struct entry *other = lookup(c, job, text);
    if (other) { /* another thread parsed it meanwhile: share that one */
      other->refs++;
      pthread_mutex_unlock(&c->mu);
      entry_free(e);
      return &other->spec;
    }
    if (make_room(c)) {
      struct entry **slot = slot_of(c, job->id);
      e->hnext = *slot;
      *slot = e;
      lru_front(c, e);
      e->cached = true;
      c->n++;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return &e->spec;
}

void tw_spec_cache_release(struct tw_spec_cache *c,
                           const struct tw_job_spec *spec) {
  if (!spec)
    return;
  struct entry *e = (struct entry *)(void *)spec;
  if (!c) {
    entry_free(e);
    return;
  }
  pthread_mutex_lock(&c->mu);
  bool last = --e->refs == 0 && !e->cached;
  pthread_mutex_unlock(&c->mu);
  if (last)
    entry_free(e);
}

void tw_spec_cache_forget(struct tw_spec_cache *c, const char *job_id) {
  if (!c)
    return;
  pthread_mutex_lock(&c->mu);
  struct entry **slot = slot_of(c, job_id);
  if (*slot)
    drop(c, slot);
  pthread_mutex_unlock(&c->mu);
}

void tw_spec_cache_stats(struct tw_spec_cache *c,
                         struct tw_spec_cache_stats *out) {
  memset(out, 0, sizeof *out);
  if (!c)
    return;
  pthread_mutex_lock(&c->mu);
  *out = c->st;
  out->entries = c->n;
  pthread_mutex_unlock(&c->mu);
}
