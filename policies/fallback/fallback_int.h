/* fallback_int.h - what the fallback strategy files share
 * (fallback_strategy.c: the table, the simple strategies and apply;
 * fallback_deadline.c: Uniform Progress) and nobody else. */
#ifndef TW_POLICIES_FALLBACK_INT_H
#define TW_POLICIES_FALLBACK_INT_H

#include "policies/fallback/fallback_strategy.h"

/* failover, as the other strategies fall back to it; prefix names the
 * strategy in the reason. */
void fb__failover(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j, const char *prefix,
                  struct tw_fallback_decision *out);
void fb__deadline(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j,
                  struct tw_fallback_decision *out);

#endif
