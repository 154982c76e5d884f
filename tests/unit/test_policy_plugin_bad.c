/* Plugins the loader must refuse: built against another interface
 * version (BAD_VERSION), or offering a filter (BAD_FILTER). */
#include "broker/base/model.h"
#include "policies/place/policy.h"

static int64_t zero(const struct tw_policy *self,
                    const struct tw_place_ctx *ctx, const struct tw_cand *c) {
  (void)self;
  (void)ctx;
  (void)c;
  return 0;
}

#ifdef BAD_FILTER
static void pass_all(const struct tw_policy *self,
                     const struct tw_place_ctx *ctx, const struct tw_offer *o,
                     struct tw_verdict *out) {
  (void)self;
  (void)ctx;
  (void)o;
  out->pass = true;
}
#endif

const struct tw_policy_ops tw_policy_plugin = {
    .name = "bad",
#ifdef BAD_VERSION
    .version = TW_POLICY_ABI_VERSION + 1,
#else
    .version = TW_POLICY_ABI_VERSION,
#endif
#ifdef BAD_FILTER
    .filter = pass_all,
#endif
    .score = zero,
};
