/* skypilot.h - SkyPilot task files read as job specs (docs/skypilot.md).
 *
 * A SkyPilot task (name, workdir, num_nodes, resources with infra,
 * accelerators, any_of/ordered, ..., envs, secrets, file_mounts, setup,
 * run) is translated into a Tradewind spec: what maps is mapped, what the
 * broker cannot honour is refused with the reason, and every problem of
 * the file is reported at once, each naming its key path in the task
 * ("resources.any_of[1].infra") and, for YAML, its line.
 *
 * The translation is a pure function of the document: the API runs it for
 * POST /v1/jobs and the plan, `tradewind convert` prints its result. */
#ifndef TW_BROKER_SKYPILOT_H
#define TW_BROKER_SKYPILOT_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/core/spec.h"

struct tw_node;

/* Every error of one document, in the order found (at most
 * TW_SPEC_ERRS_MAX; further ones are counted in n_more). */
#define TW_SPEC_ERRS_MAX 64
struct tw_spec_errs {
  struct tw_err v[TW_SPEC_ERRS_MAX];
  size_t n;
  size_t n_more;
};

/* Whether root reads as a SkyPilot task rather than a Tradewind spec: a
 * mapping with a key only SkyPilot has (num_nodes, envs, secrets, workdir,
 * file_mounts, config, service; resources.infra, cloud, region, zone,
 * instance_type, disk_size, disk_tier, image_id, ports, labels, any_of,
 * ordered, job_recovery, ...) and none only Tradewind has (nodes, env,
 * tenant, project, placement, datasets, duration, deadline, priority,
 * checkpoint, fallback, image, disk, ports, max_price_per_hour, ...). */
bool tw_skypilot_is_task(const struct tw_node *root);

/* Translates task root into the native spec, appended to out as JSON
 * (valid input of tw_spec_parse_opts).  Every problem is added to errs;
 * TW_OK when there is none, else TW_E_INVALID (out then holds nothing
 * useful).  opts gives the provider names infra may use (NULL: any
 * provider-shaped word). */
enum tw_rc tw_skypilot_to_native(const struct tw_node *root,
                                 const struct tw_spec_opts *opts,
                                 struct tw_buf *out, struct tw_spec_errs *errs);

/* Parses text (JSON when is_json, else YAML) as tw_spec_parse_opts does,
 * a SkyPilot task translated first.  On failure err holds the first
 * problem and errs (may be NULL) every one; *is_sky (may be NULL) tells
 * whether the document was read as a SkyPilot task. */
enum tw_rc tw_spec_parse_any(const char *text, size_t len, bool is_json,
                             const struct tw_spec_opts *opts,
                             struct tw_job_spec *spec,
                             struct tw_spec_errs *errs, bool *is_sky,
                             struct tw_err *err);

#endif
