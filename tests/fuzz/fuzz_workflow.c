/* fuzz_workflow.c - the workflow document, dependency and array parsers on
 * arbitrary bytes.
 *
 * Each input is read as a workflow document (YAML and JSON), then its
 * first line as a dependency expression and as array indices.  A plan
 * that validates must hold together: every edge between tasks it has, no
 * template without its tasks; canonical array text must parse back to the
 * same indices.  Anything else aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/flow.h"
#include "tests/fuzz/fuzz.h"

static void doc(const uint8_t *data, size_t size, bool json) {
  struct tw_flow_plan p;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_flow_doc_parse((const char *)data, size, json, NULL, &p, &err) !=
      TW_OK)
    return;
  size_t counted = 0;
  for (size_t i = 0; i < p.n_tmpl; i++)
    counted += p.tmpl[i].n_tasks;
  if (counted != p.n_tasks || !p.n_tasks)
    abort();
  for (size_t e = 0; e < p.n_edges; e++)
    if (p.edges[e].from >= p.n_tasks || p.edges[e].to >= p.n_tasks ||
        p.edges[e].from == p.edges[e].to)
      abort();
  tw_flow_plan_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  doc(data, size, false);
  doc(data, size, true);
  char line[512];
  size_t n = 0;
  while (n < size && n + 1 < sizeof line && data[n] != '\n' && data[n])
    n++;
  memcpy(line, data, n);
  line[n] = '\0';
  struct tw_dep_expr e;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_dep_parse(line, "d", &e, &err) == TW_OK) {
    if (!e.n || e.n > TW_DEP_TERMS_MAX)
      abort();
    tw_dep_release(&e);
  }
  struct tw_array a, b;
  tw_err_clear(&err);
  if (tw_array_parse(line, "a", &a, &err) == TW_OK) {
    struct tw_buf t;
    tw_buf_init(&t);
    tw_array_to_text(&a, &t);
    tw_err_clear(&err);
    if (tw_array_parse(t.data, "a", &b, &err) != TW_OK || b.n != a.n ||
        b.max_running != a.max_running ||
        memcmp(a.idx, b.idx, a.n * sizeof *a.idx))
      abort();
    tw_array_release(&b);
    tw_buf_release(&t);
    tw_array_release(&a);
  }
  return 0;
}
