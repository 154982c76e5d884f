/* The workflow routes over loopback: the server and store in-process on
 * port 0 (open mode), a real HTTP client.  POST /v1/workflows, an array
 * and a dependency through POST /v1/jobs, GET with progress, /tasks,
 * /graph, DELETE, and the problems bad documents get. */
#include "tests/twtest.h"

#include <jansson.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"
#include "tests/integration/twtest_daemon.h"

static char dir[64], dbpath[128];
static struct tw_store *store;
static struct tw_api *api;
static int port;

struct resp {
  long status;
  struct twtest_resp r;
  const char *body; /* r.body */
  json_t *json;
};

static struct resp req(const char *method, const char *path,
                       const char *yaml) {
  struct resp r;
  memset(&r, 0, sizeof r);
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
  int rc = twtest_http(base, method, path, yaml ? "application/yaml" : NULL,
                       yaml, &r.r);
  TW_CHECK(rc == 0, "%s %s: %s", method, path, r.r.error);
  r.status = r.r.status;
  r.body = r.r.body;
  r.json = json_loads(r.r.body, 0, NULL);
  return r;
}

static void resp_free(struct resp *r) {
  twtest_resp_release(&r->r);
  json_decref(r->json);
}

static const char *jstr(json_t *j, const char *k) {
  return json_string_value(json_object_get(j, k));
}

static long long jint(json_t *j, const char *k) {
  return (long long)json_integer_value(json_object_get(j, k));
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-wfapi-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(dbpath, sizeof dbpath, "%s/api.db", dir);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = dbpath, .sync_full = false};
  if (tw_store_open(&so, &store, &err))
    return -1;
  struct tw_api_opts ao = {.listen = "127.0.0.1:0",
                           .store = store,
                           .max_body_bytes = 1 << 20,
                           .auth = {.open = true}};
  if (tw_api_start(&ao, &api, &err))
    return -1;
  port = tw_api_port(api);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_store_close(store);
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    char p[160];
    snprintf(p, sizeof p, "%s%s", dbpath, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static void pass(void) {
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_pass(store, 0, 100, NULL, &err), TW_OK, err);
}

static void workflow_round_trip(void **state) {
  (void)state;
  struct resp r = req("POST", "/v1/workflows",
                      "name: pipe\ntasks:\n"
                      "  - {name: prep, job: {run: a}}\n"
                      "  - {name: train, depends: [prep], for_each: [x, y],"
                      " job: {run: b}}\n");
  TW_CHECK(r.status == 201, "%ld: %s", r.status, r.body);
  const char *id = jstr(r.json, "id");
  TW_CHECK(id && !strncmp(id, "w-", 2), "%s", r.body);
  char gid[64], path[128];
  snprintf(gid, sizeof gid, "%s", id);
  snprintf(path, sizeof path, "/v1/workflows/%s", gid);
  TW_CHECK_STR(r.r.location, path);
  TW_CHECK_STR(jstr(r.json, "kind"), "workflow");
  TW_CHECK_STR(jstr(r.json, "state"), "running");
  TW_CHECK_INT(jint(r.json, "tasks"), 3);
  json_t *pr = json_object_get(r.json, "progress");
  TW_CHECK_INT(jint(pr, "ready"), 1);
  TW_CHECK_INT(jint(pr, "waiting"), 2);
  resp_free(&r);
  pass();
  r = req("GET", path, NULL);
  TW_CHECK(r.status == 200, "%ld", r.status);
  TW_CHECK_INT(jint(json_object_get(r.json, "progress"), "pending"), 1);
  TW_CHECK_STR(jstr(r.json, "cost_so_far_usd"), "0.000000");
  resp_free(&r);
  snprintf(path, sizeof path, "/v1/workflows/%s/tasks?limit=2", gid);
  r = req("GET", path, NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  json_t *items = json_object_get(r.json, "items");
  TW_CHECK_INT(json_array_size(items), 2);
  TW_CHECK_STR(jstr(json_array_get(items, 0), "state"), "pending");
  TW_CHECK_STR(jstr(json_array_get(items, 1), "param"), "x");
  TW_CHECK_STR(jstr(r.json, "next_cursor"), "c1");
  resp_free(&r);
  snprintf(path, sizeof path, "/v1/workflows/%s/graph", gid);
  r = req("GET", path, NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  json_t *edges = json_object_get(r.json, "edges");
  TW_CHECK_INT(json_array_size(edges), 2);
  TW_CHECK_INT(jint(json_array_get(edges, 0), "from"), 0);
  TW_CHECK_STR(jstr(json_array_get(edges, 0), "when"), "succeeded");
  TW_CHECK_STR(jstr(json_array_get(edges, 0), "state"), "open");
  resp_free(&r);
  snprintf(path, sizeof path, "/v1/workflows/%s", gid);
  r = req("DELETE", path, NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  resp_free(&r);
  pass();
  r = req("GET", path, NULL);
  TW_CHECK_STR(jstr(r.json, "state"), "cancelled");
  TW_CHECK_INT(jint(json_object_get(r.json, "progress"), "cancelled"), 3);
  resp_free(&r);
  r = req("DELETE", path, NULL);
  TW_CHECK(r.status == 409, "%ld", r.status);
  resp_free(&r);
  r = req("GET", "/v1/workflows/w-nope", NULL);
  TW_CHECK(r.status == 404, "%ld", r.status);
  resp_free(&r);
}

static void arrays_and_dependencies_through_jobs(void **state) {
  (void)state;
  struct resp r = req("POST", "/v1/jobs", "name: sweep\narray: \"0-9%3\"\n");
  TW_CHECK(r.status == 201, "%ld: %s", r.status, r.body);
  TW_CHECK_STR(jstr(r.json, "kind"), "array");
  TW_CHECK_INT(jint(r.json, "max_running"), 3);
  TW_CHECK(!strncmp(r.r.location, "/v1/workflows/a-", 16), "%s", r.r.location);
  char aid[64];
  snprintf(aid, sizeof aid, "%s", jstr(r.json, "id"));
  resp_free(&r);
  /* a job after the whole array */
  char y[256];
  snprintf(y, sizeof y, "name: after\ndepends_on: \"afterok:%s\"\n", aid);
  r = req("POST", "/v1/jobs", y);
  TW_CHECK(r.status == 201, "%ld: %s", r.status, r.body);
  TW_CHECK_STR(jstr(r.json, "state"), "waiting");
  resp_free(&r);
  r = req("GET", "/v1/jobs?state=waiting", NULL);
  TW_CHECK(r.status == 200, "%ld", r.status);
  TW_CHECK_INT(json_array_size(json_object_get(r.json, "items")), 1);
  resp_free(&r);
}

static void bad_documents_get_problems(void **state) {
  (void)state;
  static const struct {
    const char *path, *body, *field;
  } BAD[] = {
      {"/v1/workflows", "name: w\ntasks:\n  - {name: a, depends: [b], job: {}}\n",
       "tasks[0].depends[0]"},
      {"/v1/workflows", "name: w\n", "tasks"},
      {"/v1/workflows",
       "name: w\ntasks:\n  - {name: a, job: {resources: {cpus: x}}}\n",
       "tasks[0].job.resources.cpus"},
      {"/v1/jobs", "name: j\ndepends_on: \"afterok:j-0000000000000000000000\"\n",
       "depends_on"},
      {"/v1/jobs", "name: j\ndepends_on: \"afterok:a,afterok:b?afterok:c\"\n",
       "depends_on"},
      {"/v1/jobs", "name: j\narray: \"9-1\"\n", "array"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct resp r = req("POST", BAD[i].path, BAD[i].body);
    TW_CHECK(r.status == 400, "case %zu: %ld %s", i, r.status, r.body);
    TW_CHECK_STR(jstr(r.json, "field"), BAD[i].field);
    resp_free(&r);
  }
}

/* GET /v1/workflows: arrays and workflows (never a plain job's group of
 * one), newest first, paged, filtered by state and tenant; after the
 * tests above: pipe (cancelled), sweep (an array, running). */
static void the_list_pages_and_filters(void **state) {
  (void)state;
  struct resp r = req("POST", "/v1/workflows",
                      "name: l1\ntasks:\n  - {name: a, job: {run: a}}\n");
  TW_CHECK(r.status == 201, "%ld: %s", r.status, r.body);
  resp_free(&r);
  r = req("POST", "/v1/workflows",
          "name: l2\ntasks:\n  - {name: a, job: {run: a}}\n");
  TW_CHECK(r.status == 201, "%ld: %s", r.status, r.body);
  resp_free(&r);
  /* newest first: (created_at, id) descending; groups made in the same
   * millisecond are ordered by id */
  r = req("GET", "/v1/workflows", NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  json_t *items = json_object_get(r.json, "items");
  TW_CHECK_INT(json_array_size(items), 4);
  char all[4][64], names[160] = "";
  for (size_t i = 0; i < 4; i++) {
    json_t *it = json_array_get(items, i);
    snprintf(all[i], sizeof all[i], "%s", jstr(it, "id"));
    size_t o = strlen(names);
    snprintf(names + o, sizeof names - o, "%s%s", i ? "," : "",
             jstr(it, "name"));
    if (i) {
      json_t *prev = json_array_get(items, i - 1);
      int c = strcmp(jstr(prev, "created_at"), jstr(it, "created_at"));
      TW_CHECK(c > 0 || (c == 0 && strcmp(all[i - 1], all[i]) > 0),
               "not newest first at %zu: %s", i, r.body);
    }
    if (!strcmp(jstr(it, "name"), "sweep")) {
      TW_CHECK_STR(jstr(it, "kind"), "array");
      TW_CHECK_INT(jint(it, "tasks"), 10);
    }
  }
  /* l1 and l2 are the newest two, in either order (one millisecond) */
  TW_CHECK(!strncmp(names, "l1,l2,", 6) || !strncmp(names, "l2,l1,", 6),
           "%s", names);
  TW_CHECK_STR(names + 6, "sweep,pipe");
  TW_CHECK(json_is_null(json_object_get(r.json, "next_cursor")), "%s",
           r.body);
  resp_free(&r);
  /* two pages of two: the same four in the same order */
  r = req("GET", "/v1/workflows?limit=2", NULL);
  items = json_object_get(r.json, "items");
  TW_CHECK_INT(json_array_size(items), 2);
  TW_CHECK_STR(jstr(json_array_get(items, 0), "id"), all[0]);
  TW_CHECK_STR(jstr(json_array_get(items, 1), "id"), all[1]);
  char path[128];
  const char *cur = jstr(r.json, "next_cursor");
  TW_CHECK(cur, "%s", r.body);
  snprintf(path, sizeof path, "/v1/workflows?limit=2&cursor=%s", cur);
  resp_free(&r);
  r = req("GET", path, NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  items = json_object_get(r.json, "items");
  TW_CHECK_INT(json_array_size(items), 2);
  TW_CHECK_STR(jstr(json_array_get(items, 0), "id"), all[2]);
  TW_CHECK_STR(jstr(json_array_get(items, 1), "id"), all[3]);
  TW_CHECK(json_is_null(json_object_get(r.json, "next_cursor")), "%s",
           r.body);
  resp_free(&r);
  r = req("GET", "/v1/workflows?state=cancelled", NULL);
  items = json_object_get(r.json, "items");
  TW_CHECK_INT(json_array_size(items), 1);
  TW_CHECK_STR(jstr(json_array_get(items, 0), "name"), "pipe");
  resp_free(&r);
  r = req("GET", "/v1/workflows?state=running&limit=500", NULL);
  TW_CHECK_INT(json_array_size(json_object_get(r.json, "items")), 3);
  resp_free(&r);
  r = req("GET", "/v1/workflows?tenant=nobody", NULL);
  TW_CHECK(r.status == 200, "%ld: %s", r.status, r.body);
  TW_CHECK_INT(json_array_size(json_object_get(r.json, "items")), 0);
  resp_free(&r);
  static const struct {
    const char *q, *field;
  } BAD[] = {{"state=sleepy", "state"}, {"limit=0", "limit"},
             {"limit=501", "limit"},    {"limit=2x", "limit"},
             {"cursor=zz", "cursor"},   {"cursor=c-3", "cursor"},
             {"cursor=c5", "cursor"},   {"cursor=c5_", "cursor"}};
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    snprintf(path, sizeof path, "/v1/workflows?%s", BAD[i].q);
    r = req("GET", path, NULL);
    TW_CHECK(r.status == 400, "%s: %ld %s", BAD[i].q, r.status, r.body);
    TW_CHECK_STR(jstr(r.json, "field"), BAD[i].field);
    resp_free(&r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(workflow_round_trip),
      cmocka_unit_test(arrays_and_dependencies_through_jobs),
      cmocka_unit_test(bad_documents_get_problems),
      cmocka_unit_test(the_list_pages_and_filters),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
