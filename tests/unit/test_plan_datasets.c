/* The dataset registry in the store: create, merge, replicas, paging,
 * the consistent walk placement builds its set from, and validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/core/datasets.h"
#include "broker/core/store.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_store *store;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-ds-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/s.db", dir);
  struct tw_store_opts so = {.path = path};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  return tw_store_open(&so, &store, NULL) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static void register_merge_and_replicate(void **state) {
  (void)state;
  const char *locs[] = {"aws:us-east-1"};
  struct tw_dataset_put req = {.uri = "s3://corpus/v3/",
                               .size_bytes = 1500000000000LL,
                               .locations = locs,
                               .n_locations = 1};
  struct tw_dataset_rec r;
  bool created = false;
  int64_t v0, v1;
  assert_int_equal(tw_datasets_version(store, &v0, NULL), TW_OK);
  assert_int_equal(tw_datasets_put(store, &req, 1000, &r, &created, NULL),
                   TW_OK);
  assert_true(created);
  assert_string_equal(r.uri, "s3://corpus/v3/");
  assert_int_equal(r.size_bytes, 1500000000000LL);
  assert_int_equal(r.n_locations, 1);
  assert_string_equal(r.locations[0].origin, "registered");
  tw_dataset_rec_release(&r);
  /* merging: size 0 keeps the known size, a new location is added */
  const char *more[] = {"aws:us-east-1", "azure:westeurope"};
  req = (struct tw_dataset_put){
      .uri = "s3://corpus/v3/", .locations = more, .n_locations = 2};
  assert_int_equal(tw_datasets_put(store, &req, 2000, &r, &created, NULL),
                   TW_OK);
  assert_false(created);
  assert_int_equal(r.size_bytes, 1500000000000LL);
  assert_int_equal(r.n_locations, 2);
  assert_int_equal(r.updated_ms, 2000);
  tw_dataset_rec_release(&r);
  assert_int_equal(
      tw_datasets_add_replica(store, "s3://corpus/v3/", "aws:eu-west-1",
                              30000000, "3 pending jobs read it", 3000, NULL),
      TW_OK);
  assert_int_equal(tw_datasets_get(store, "s3://corpus/v3/", &r, NULL), TW_OK);
  assert_int_equal(r.n_locations, 3);
  assert_string_equal(r.locations[2].location, "aws:eu-west-1");
  assert_string_equal(r.locations[2].origin, "replicated");
  assert_int_equal(r.locations[2].cost_uusd, 30000000);
  assert_string_equal(r.locations[2].note, "3 pending jobs read it");
  tw_dataset_rec_release(&r);
  assert_int_equal(tw_datasets_version(store, &v1, NULL), TW_OK);
  assert_int_equal(v1, v0 + 3);
  struct tw_err err = {0};
  assert_int_equal(tw_datasets_get(store, "s3://nope", &r, &err),
                   TW_E_NOTFOUND);
  assert_int_equal(tw_datasets_add_replica(store, "s3://nope", "aws:eu-west-1",
                                           0, NULL, 0, NULL),
                   TW_E_NOTFOUND);
}

struct seen {
  char text[1024];
};

static void each_cb(void *ctx, const char *uri, int64_t size, const char *loc,
                    const char *owner, bool shared) {
  struct seen *s = ctx;
  (void)owner;
  (void)shared;
  size_t n = strlen(s->text);
  snprintf(s->text + n, sizeof s->text - n, "%s%s=%lld@%s", n ? ";" : "", uri,
           (long long)size, loc ? loc : "-");
}

static void list_pages_and_walk_everything(void **state) {
  (void)state;
  for (int i = 0; i < 5; i++) {
    char uri[32];
    snprintf(uri, sizeof uri, "gs://b/%d", i);
    const char *loc[] = {"azure:eastus"};
    struct tw_dataset_put req = {.uri = uri,
                                 .size_bytes = 1000 * (i + 1),
                                 .locations = loc,
                                 .n_locations = i % 2};
    assert_int_equal(tw_datasets_put(store, &req, 10, NULL, NULL, NULL), TW_OK);
  }
  struct tw_dataset_rec *items;
  size_t n;
  bool more;
  assert_int_equal(
      tw_datasets_list(store, NULL, NULL, 2, &items, &n, &more, NULL), TW_OK);
  assert_int_equal(n, 2);
  assert_true(more);
  assert_string_equal(items[0].uri, "gs://b/0");
  assert_string_equal(items[1].uri, "gs://b/1");
  assert_int_equal(items[1].n_locations, 1);
  char after[64];
  snprintf(after, sizeof after, "%s", items[1].uri);
  for (size_t i = 0; i < n; i++)
    tw_dataset_rec_release(&items[i]);
  free(items);
  assert_int_equal(
      tw_datasets_list(store, after, NULL, 10, &items, &n, &more, NULL), TW_OK);
  assert_int_equal(n, 3);
  assert_false(more);
  for (size_t i = 0; i < n; i++)
    tw_dataset_rec_release(&items[i]);
  free(items);
  struct seen s = {""};
  int64_t v;
  assert_int_equal(tw_datasets_each(store, each_cb, &s, &v, NULL), TW_OK);
  assert_string_equal(
      s.text, "gs://b/0=1000@-;gs://b/1=2000@-;gs://b/2=3000@-;gs://b/3=4000@-;"
              "gs://b/4=5000@-;gs://b/1=0@azure:eastus;"
              "gs://b/3=0@azure:eastus");
  assert_int_equal(v, 5);
}

static void bad_input_is_named(void **state) {
  (void)state;
  static const struct {
    const char *uri, *loc;
    int64_t size;
    const char *field, *msg;
  } bad[] = {
      {"", NULL, 0, "uri",
       "uri: expected 1 to 2048 printable characters, got 0"},
      {"s3://a b", NULL, 0, "uri",
       "uri: spaces and control characters are not allowed"},
      {"s3://x", "useast1", 0, "locations[0]",
       "locations[0]: expected provider:region such as aws:us-east-1, got "
       "\"useast1\""},
      {"s3://x", "oracle:us-ashburn-1", 0, "locations[0]",
       "locations[0]: unknown provider \"oracle\""},
      {"s3://x", "aws:us east", 0, "locations[0]",
       "locations[0]: a region is letters, digits, '-', '_' and '.', got "
       "\"aws:us east\""},
      {"s3://x", NULL, -5, "size_bytes", "size_bytes: must be >= 0"},
  };
  static const char *const providers[] = {"aws", "azure", "alibaba", "slurm",
                                          NULL};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *loc[] = {bad[i].loc};
    struct tw_dataset_put req = {.uri = bad[i].uri,
                                 .size_bytes = bad[i].size,
                                 .locations = loc,
                                 .n_locations = bad[i].loc ? 1 : 0,
                                 .providers = providers};
    struct tw_err err = {0};
    assert_int_equal(tw_datasets_put(store, &req, 0, NULL, NULL, &err),
                     TW_E_INVALID);
    assert_string_equal(err.field, bad[i].field);
    assert_string_equal(err.msg, bad[i].msg);
  }
  /* at most 16 locations per dataset */
  const char *loc[1];
  char name[32];
  for (int i = 0; i <= 16; i++) {
    snprintf(name, sizeof name, "aws:r-%d", i);
    loc[0] = name;
    struct tw_dataset_put req = {
        .uri = "s3://many", .locations = loc, .n_locations = 1};
    assert_int_equal(tw_datasets_put(store, &req, 0, NULL, NULL, NULL),
                     i < 16 ? TW_OK : TW_E_TOOBIG);
  }
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(register_merge_and_replicate, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(list_pages_and_walk_everything, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(bad_input_is_named, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
