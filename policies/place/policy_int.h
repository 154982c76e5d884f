/* policy_int.h - helpers the built-in plugins and the policy set share, and
 * nobody else. */
#ifndef TW_POLICIES_POLICY_INT_H
#define TW_POLICIES_POLICY_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "policies/place/policy.h"

/* A label of o: its own labels first, then the topology it names
 * (provider, account, region, zone, zone_id, rack), then the network
 * matrix's metadata of its region (country, jurisdiction).  NULL when
 * none. */
const char *pi_label(const struct tw_place_ctx *ctx, const struct tw_offer *o,
                     const char *key);

/* Does selector ("provider:region[:zone]" glob; the provider part may
 * also name the account) match o? */
bool pi_selector_match(const char *selector, const struct tw_offer *o);

/* Key parts: each value then a separator; NULL is distinct from "". */
void pi_key_str(struct tw_buf *b, const char *s);
void pi_key_int(struct tw_buf *b, int64_t v);

/* Config helpers: each names path.key in its error. */
enum tw_rc pi_cfg_keys(const struct tw_node *cfg, const char *path,
                       const char *const *known, struct tw_err *err);
enum tw_rc pi_cfg_int(const struct tw_node *cfg, const char *path,
                      const char *key, int64_t min, int64_t max, int64_t *out,
                      struct tw_err *err);
/* A string list (a sequence of scalars, or one scalar) into a
 * NULL-terminated array of owned strings (free with pi_strv_free). */
enum tw_rc pi_cfg_strv(const struct tw_node *cfg, const char *path,
                       const char *key, char ***out, struct tw_err *err);
void pi_strv_free(char **v);

/* The policy's state, typed. */
#define PI_STATE(self, type) ((const type *)(self)->state)

#endif
