/* fuzz_policies.c - the policies: section (PUT /v1/policies bodies, the
 * config file) on arbitrary bytes: no crash, no leak, and a built set is
 * whole (every plugin has ops, the weights are in range).  Inputs naming
 * files (a network matrix, a plugin path) are skipped: the target must not
 * open or load what a mutation happens to name. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "policies/place/policy.h"

static bool has(const uint8_t *d, size_t n, const char *w) {
  size_t k = strlen(w);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(d + i, w, k))
      return true;
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (has(data, size, "path") || has(data, size, "network"))
    return 0;
  struct tw_policy_set *s = NULL;
  struct tw_err err = {0};
  if (tw_policy_set_parse((const char *)data, size, "/nonexistent", &s, &err) !=
      TW_OK) {
    if (s || !err.msg[0])
      __builtin_trap();
    return 0;
  }
  if (!s->n_scores || s->n_filters > TW_POLICY_MAX_FILTERS || !s->net)
    __builtin_trap();
  for (size_t i = 0; i < s->n_filters; i++)
    if (!s->filters[i].ops || !s->filters[i].ops->filter)
      __builtin_trap();
  for (size_t i = 0; i < s->n_scores; i++)
    if (!s->scores[i].ops || !s->scores[i].ops->score ||
        s->scores[i].weight < 0 || s->scores[i].weight > TW_SCORE_MAX)
      __builtin_trap();
  struct tw_buf b;
  tw_buf_init(&b);
  tw_policy_set_to_json(s, &b);
  tw_buf_release(&b);
  tw_policy_set_unref(s);
  return 0;
}
