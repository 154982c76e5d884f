/* adapter_util.h - pieces the multi-region cloud adapters (aws, alibaba,
 * azure) share and nothing else uses: listing offers region by region;
 * timestamps for their requests and the server Date they learn clock skew from;
 * remembering which region an instance lives in, and running a per-instance
 * call in that region first.
 *
 * An adapter with several regions does not know, from an instance id
 * alone, where to send DescribeInstances or TerminateInstances.  It
 * remembers the region of every instance it launched or listed (a bounded
 * table, the oldest entry going first) and tries that region first, then
 * the others while they answer TW_E_NOTFOUND. */
#ifndef TW_PROVIDERS_ADAPTER_UTIL_H
#define TW_PROVIDERS_ADAPTER_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/model.h"

struct tw_provider;

/* ms since the epoch as "2008-06-03T11:05:30Z" (UTC, seconds truncated),
 * NUL-terminated in out. */
void tw_adapter_iso_time(int64_t ms, char out[32]);

/* An RFC 7231 Date ("Tue, 03 Jun 2008 11:05:30 GMT") in ms since the
 * epoch; -1 when s is NULL or malformed.  Lenient: neither the weekday
 * nor what follows the seconds ("GMT") is checked, nor the ranges of the
 * fields (timegm normalizes them); Azure's stricter tw_arm_http_date_ms
 * checks all three. */
int64_t tw_adapter_http_date_ms(const char *s);

/* Appends the offers of one region to out. */
typedef enum tw_rc (*tw_region_offers_fn)(struct tw_provider *p,
                                          const char *region,
                                          struct tw_offer_list *out,
                                          struct tw_err *err);

/* Calls fn for each of the n regions in order, stopping at (and returning)
 * the first error; the offers of the regions done before stay in out. */
enum tw_rc tw_adapter_offers_by_region(struct tw_provider *p,
                                       char *const *regions, size_t n,
                                       tw_region_offers_fn fn,
                                       struct tw_offer_list *out,
                                       struct tw_err *err);

/* Copies the item of l whose id is id to *out, with its region set to
 * region (a describe answer names no region); false, *out untouched, when
 * l does not hold id (the provider answered an empty set). */
bool tw_adapter_find_instance(const struct tw_instance_list *l, const char *id,
                              const char *region, struct tw_instance *out);

/* Instance -> region pairs remembered at the most (above the live
 * instances of a 20,000-job burst: a forgotten instance is looked for
 * region by region). */
#define TW_REGION_MEMO_MAX 32768

struct tw_region_memo_entry {
  char id[TW_MODEL_ID_MAX];
  char region[TW_MODEL_NAME_MAX];
  uint64_t hash; /* of id */
};

struct tw_region_memo {
  /* Borrowed: the adapter's configured regions, set by the adapter once it
   * has read them and not changed after init. */
  char *const *regions;
  size_t n_regions;

  pthread_mutex_t lock;               /* guards the rest */
  struct tw_region_memo_entry *where; /* allocated on first use */
  size_t n_where, next_where;
  /* where's index by id: open addressing, linear probing, 2 x
   * TW_REGION_MEMO_MAX slots holding an entry's index + 1 (0: empty), so
   * a put or a hint costs a few probes, not a scan of every entry */
  uint32_t *slots;
};

/* Initializes m with no regions and nothing remembered. */
void tw_region_memo_init(struct tw_region_memo *m);

/* Frees what m holds (not m).  No call may be in flight. */
void tw_region_memo_release(struct tw_region_memo *m);

/* Remembers that instance id lives in region (replacing what was known
 * of id; with the table full, the oldest entry goes).  Nothing to do, and
 * nothing done, with a single region.  Thread-safe. */
void tw_region_memo_put(struct tw_region_memo *m, const char *id,
                        const char *region);

/* The index in m->regions of the region to try first for id: the
 * remembered one when it is still configured, else 0.  Thread-safe. */
size_t tw_region_memo_hint(struct tw_region_memo *m, const char *id);

/* A call about instance id in one region; TW_E_NOTFOUND when the region
 * does not know id. */
typedef enum tw_rc (*tw_region_fn)(struct tw_provider *p, const char *region,
                                   const char *id, void *arg,
                                   struct tw_err *err);

/* Runs fn in the region id was remembered in, then in the other
 * configured regions in order while they answer TW_E_NOTFOUND, and
 * remembers the region that answered TW_OK.  Returns the first result
 * other than TW_E_NOTFOUND, or TW_E_NOTFOUND from the last region; err is
 * set (when not already set) from that call only, so the NotFound of the
 * regions tried before does not leak into it.  TW_E_NOTFOUND, err
 * untouched, when no region is configured. */
enum tw_rc tw_region_memo_run(struct tw_region_memo *m, struct tw_provider *p,
                              const char *id, tw_region_fn fn, void *arg,
                              struct tw_err *err);

/* A disk tier word of a job's `disk.type` (SkyPilot's disk_tier: low,
 * medium, high, ultra, best) as the cloud's own disk type, from the
 * adapter's table of four {low, medium, high, ultra} ("best" is ultra's);
 * any other type is the cloud's already and comes back as it is.  NULL
 * stays NULL. */
const char *tw_adapter_disk_tier(const char *const tiers[4], const char *type);

/* The machine image of each region and architecture, from a provider's
 * config: `image` for every region, `images: {region: image}` or
 * `{region: {x86_64: image, arm64: image}}`, region "*" every region. */
struct tw_adapter_image {
  char region[TW_MODEL_NAME_MAX]; /* "" = default */
  enum tw_arch arch;              /* TW_ARCH_ANY: every architecture */
  char *image;
};
struct tw_adapter_images {
  struct tw_adapter_image *v;
  size_t n;
};

/* Reads cfg's image and images into out (released by
 * tw_adapter_images_release whatever it returns); what ids look like is
 * the cloud's (what says so in errors: "an AMI id", "an image URN or
 * id"). TW_E_INVALID naming `images` for a bad shape. */
struct tw_node;
enum tw_rc tw_adapter_images_read(const struct tw_node *cfg, const char *what,
                                  struct tw_adapter_images *out,
                                  struct tw_err *err);
/* The image of region and arch: the region's for that architecture, the
 * region's for every one, then the defaults' in the same order; NULL when
 * none is configured. */
const char *tw_adapter_image_for(const struct tw_adapter_images *im,
                                 const char *region, enum tw_arch arch);
void tw_adapter_images_release(struct tw_adapter_images *im);

/* A launch's refusal after a try that went unanswered (resp.unanswered)
 * does not say the cloud made nothing: that try may still be acted on
 * after the refusal was sent (a retry answered first).  Such a refusal
 * becomes TW_E_RETRYABLE, the outcome unknown, and the launch is settled
 * by its token as any unanswered one; err says both.  Any other rc is
 * returned as it is. */
enum tw_rc tw_adapter_refusal_settled(enum tw_rc rc, unsigned unanswered,
                                      const char *what, struct tw_err *err);

#endif
