/* spec_cache.h - stored job specs, parsed once and shared.
 *
 * A job's spec is stored as canonical JSON (tw_store_job_create) and the
 * modules that follow the job need it as a struct tw_job_spec: the
 * scheduler at every pass for every queued and live job, the reconciler
 * for the node count of a gang, the meter when an attempt starts.  The
 * cache parses a job's spec once per version of its record and hands the
 * same parsed spec to all of them.
 *
 * An entry is keyed by the job's id and valid for its record's updated_ms.
 * A record with another stamp (a state change, a note) whose spec text is
 * the one cached keeps the parse and moves the stamp, so a job is parsed
 * again only when its spec text differs, which a stored spec never does
 * today.  The cache holds at most max_entries parses; when full, the one
 * unused longest is dropped.  A job in a terminal state is parsed for the
 * caller but not kept, and its entry is dropped: finished jobs leave the
 * cache as the scheduler sees them finish.
 *
 * Threads: every function is thread-safe; a spec handed out is read-only
 * and stays valid until released, whatever else happens to the cache. */
#ifndef TW_CORE_SPEC_CACHE_H
#define TW_CORE_SPEC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_job_rec;
struct tw_job_spec;
struct tw_spec_cache;

/* A cache of at most max_entries parses (0: 4096).  Free with
 * tw_spec_cache_free() once every spec it handed out is released. */
struct tw_spec_cache *tw_spec_cache_new(size_t max_entries);
void tw_spec_cache_free(struct tw_spec_cache *c); /* NULL ok */

/* The parsed spec of job (its spec_json), shared and read-only; give it
 * back with tw_spec_cache_release().  NULL with err set (TW_E_INVALID)
 * when the stored text does not parse.  c may be NULL: the spec is then
 * parsed for this caller alone, so a module given no cache works as it
 * did before there was one. */
const struct tw_job_spec *tw_spec_cache_acquire(struct tw_spec_cache *c,
                                                const struct tw_job_rec *job,
                                                struct tw_err *err);
/* Gives back a spec from tw_spec_cache_acquire() on the same c.  NULL
 * spec ok. */
void tw_spec_cache_release(struct tw_spec_cache *c,
                           const struct tw_job_spec *spec);

/* Drops job_id's entry (a spec still held stays valid until released). */
void tw_spec_cache_forget(struct tw_spec_cache *c, const char *job_id);

struct tw_spec_cache_stats {
  uint64_t hits;      /* acquired without parsing */
  uint64_t parses;    /* acquired by parsing (misses) */
  uint64_t evictions; /* dropped because the cache was full */
  size_t entries;     /* kept now */
};
void tw_spec_cache_stats(struct tw_spec_cache *c,
                         struct tw_spec_cache_stats *out);

#endif
