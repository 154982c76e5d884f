/* h_datasets.c - POST /v1/datasets (register, or add what is known: a
 * size, more locations, whether it is shared) and GET /v1/datasets (list
 * with cursor paging, or one with ?uri=).  A dataset is its registering
 * tenant's: only it (or the admin) changes it, others see it only when
 * shared.  broker/core/datasets.h keeps them; placement reads them for
 * egress and transfer costs and for shared replication. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "broker/base/clock.h"
#include "broker/core/datasets.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "api/h_placement.h"

static void add_time(struct tw_buf *b, const char *key, int64_t ms) {
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

/* The caller's tenant: "*" for the admin and without authentication. */
static const char *reader(struct tw_req *r) {
  const struct tw_principal *who = tw_auth_who(r);
  return who && who->role != TW_ROLE_ADMIN ? who->tenant : "*";
}

static void render(struct tw_buf *b, const struct tw_dataset_rec *d) {
  tw_buf_adds(b, "{\"uri\":");
  tw_buf_json_str(b, d->uri);
  tw_buf_adds(b, ",\"owner\":");
  tw_buf_json_str(b, d->owner);
  tw_buf_printf(b, ",\"shared\":%s", d->shared ? "true" : "false");
  tw_buf_printf(b, ",\"size_bytes\":%lld", (long long)d->size_bytes);
  add_time(b, "created_at", d->created_ms);
  add_time(b, "updated_at", d->updated_ms);
  tw_buf_adds(b, ",\"locations\":[");
  for (size_t i = 0; i < d->n_locations; i++) {
    const struct tw_dataset_location *l = &d->locations[i];
    tw_buf_adds(b, i ? ",{\"location\":" : "{\"location\":");
    tw_buf_json_str(b, l->location);
    tw_buf_adds(b, ",\"origin\":");
    tw_buf_json_str(b, l->origin);
    tw_buf_printf(b, ",\"cost_uusd\":%lld", (long long)l->cost_uusd);
    add_time(b, "created_at", l->created_ms);
    tw_buf_adds(b, ",\"note\":");
    tw_buf_json_str(b, l->note);
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "]}");
}

static void invalid(struct tw_req *r, const char *field, const char *msg) {
  tw_problem(r, 400, "invalid-field", field, "%s", msg);
}

void tw_h_datasets_create(struct tw_req *r) {
  bool is_json;
  if (!tw_h_placement_media(r, &is_json))
    return;
  struct tw_node *root = NULL;
  struct tw_err err = {0};
  const char *body = r->body.data ? r->body.data : "";
  if ((is_json ? tw_node_parse_json : tw_node_parse_yaml)(body, r->body.len,
                                                          &root, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  static const char *const keys[] = {
      "uri", "size", "size_bytes", "location", "locations", "shared", NULL};
  const char *locs[TW_DATASET_LOCATIONS + 1];
  size_t n_locs = 0;
  struct tw_dataset_put req = {.providers = tw_api_provider_names(r->api),
                               .owner = reader(r)};
  if (root->kind != TW_NODE_MAP) {
    tw_problem(r, 400, "malformed", NULL,
               "expected a mapping with uri, size and locations");
    goto out;
  }
  for (size_t i = 0; i < root->n; i++) {
    size_t k;
    for (k = 0; keys[k] && strcmp(keys[k], root->keys[i]); k++)
      ;
    if (!keys[k]) {
      const char *near = tw_closest(root->keys[i], keys);
      tw_problem(r, 400, "invalid-field", root->keys[i],
                 "%.64s: unknown key%s%s%s", root->keys[i],
                 near ? "; did you mean \"" : "", near ? near : "",
                 near ? "\"?" : "");
      goto out;
    }
  }
  const struct tw_node *n = tw_node_get(root, "uri");
  if (!n || n->kind != TW_NODE_SCALAR) {
    invalid(r, "uri", "uri: required, a string");
    goto out;
  }
  req.uri = n->str;
  if ((n = tw_node_get(root, "size")) && n->kind != TW_NODE_NULL) {
    if (n->kind != TW_NODE_SCALAR ||
        tw_parse_size_bytes(n->str, &req.size_bytes)) {
      invalid(r, "size", "size: expected a size such as 1.5TB or 200GiB");
      goto out;
    }
  }
  if ((n = tw_node_get(root, "size_bytes")) && n->kind != TW_NODE_NULL) {
    if (tw_node_get(root, "size")) {
      invalid(r, "size_bytes", "size_bytes: give size or size_bytes, not both");
      goto out;
    }
    if (!tw_node_as_int(n, &req.size_bytes) || req.size_bytes < 0) {
      invalid(r, "size_bytes", "size_bytes: expected an integer >= 0");
      goto out;
    }
  }
  if ((n = tw_node_get(root, "location")) && n->kind != TW_NODE_NULL) {
    if (n->kind != TW_NODE_SCALAR) {
      invalid(r, "location", "location: expected provider:region");
      goto out;
    }
    locs[n_locs++] = n->str;
  }
  if ((n = tw_node_get(root, "locations")) && n->kind != TW_NODE_NULL) {
    if (n->kind != TW_NODE_SEQ) {
      invalid(r, "locations", "locations: expected a list of provider:region");
      goto out;
    }
    for (size_t i = 0; i < n->n; i++) {
      if (n_locs == TW_DATASET_LOCATIONS) {
        tw_problem(r, 413, "too-large", "locations", "locations: at most %d",
                   TW_DATASET_LOCATIONS);
        goto out;
      }
      if (n->items[i]->kind != TW_NODE_SCALAR) {
        char f[32];
        snprintf(f, sizeof f, "locations[%zu]", i);
        tw_problem(r, 400, "invalid-field", f, "%s: expected provider:region",
                   f);
        goto out;
      }
      locs[n_locs++] = n->items[i]->str;
    }
  }
  if ((n = tw_node_get(root, "shared")) && n->kind != TW_NODE_NULL) {
    if (n->kind != TW_NODE_SCALAR || n->quoted ||
        (strcmp(n->str, "true") && strcmp(n->str, "false"))) {
      invalid(r, "shared", "shared: expected true or false");
      goto out;
    }
    req.shared = !strcmp(n->str, "true") ? 1 : -1;
  }
  req.locations = locs;
  req.n_locations = n_locs;
  struct tw_dataset_rec rec;
  bool created = false;
  if (tw_datasets_put(tw_api_store(r->api), &req,
                      tw_clock_now_ms(tw_api_clock(r->api)), &rec, &created,
                      &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  render(&r->out, &rec);
  tw_dataset_rec_release(&rec);
  tw_req_json(r, created ? 201 : 200);
out:
  tw_node_free(root);
}

void tw_h_datasets_list(struct tw_req *r) {
  struct tw_err err = {0};
  const char *uri = tw_req_query(r, "uri");
  if (uri) {
    struct tw_dataset_rec rec;
    if (tw_datasets_get(tw_api_store(r->api), uri, &rec, &err)) {
      tw_problem_err(r, &err);
      return;
    }
    if (!tw_dataset_readable(&rec, reader(r))) {
      /* another tenant's, not shared: as absent as an unknown one */
      tw_dataset_rec_release(&rec);
      tw_problem(r, 404, "not-found", NULL, "no dataset %.200s", uri);
      return;
    }
    tw_buf_adds(&r->out, "{\"items\":[");
    render(&r->out, &rec);
    tw_buf_adds(&r->out, "],\"next_cursor\":null}");
    tw_dataset_rec_release(&rec);
    tw_req_json(r, 200);
    return;
  }
  long limit = 50;
  const char *ql = tw_req_query(r, "limit");
  if (ql) {
    char *end;
    limit = strtol(ql, &end, 10);
    if (!*ql || *end || limit < 1 || limit > 500) {
      tw_problem(r, 400, "invalid-field", "limit",
                 "limit: expected an integer from 1 to 500, got \"%.32s\"", ql);
      return;
    }
  }
  /* the cursor is opaque to clients: "d" + the last URI seen */
  const char *cursor = tw_req_query(r, "cursor");
  if (cursor && *cursor && cursor[0] != 'd') {
    tw_problem(r, 400, "invalid-field", "cursor",
               "cursor: not a cursor this server issued");
    return;
  }
  struct tw_dataset_rec *items;
  size_t n;
  bool more;
  if (tw_datasets_list(tw_api_store(r->api),
                       cursor && *cursor ? cursor + 1 : NULL, reader(r),
                       (int)limit, &items, &n, &more, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    render(&r->out, &items[i]);
  }
  tw_buf_adds(&r->out, "],\"next_cursor\":");
  if (more && n) {
    struct tw_buf c;
    tw_buf_init(&c);
    tw_buf_printf(&c, "d%s", items[n - 1].uri);
    tw_buf_json_str(&r->out, c.data);
    tw_buf_release(&c);
  } else {
    tw_buf_adds(&r->out, "null");
  }
  tw_buf_addc(&r->out, '}');
  for (size_t i = 0; i < n; i++)
    tw_dataset_rec_release(&items[i]);
  free(items);
  tw_req_json(r, 200);
}
