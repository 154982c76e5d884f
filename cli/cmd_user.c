/* cmd_user.c - `tradewind user create|list|disable`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* shared with cmd_tenant.c */
const char *tn_jstr(json_t *o, const char *key);
void tn_param(struct tw_buf *q, const char *name, const char *value);
void tn_print_table(struct tw_cli *c, struct tw_cli_table *t);
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out);
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp);
void tn_time(json_t *o, const char *key, char *out, size_t outsz);

enum { OPT_ROLE = 1, OPT_TENANT, OPT_SERVICE };

static const struct tw_cli_opt create_opts[] = {
    {"role", 0, true, OPT_ROLE},
    {"tenant", 0, true, OPT_TENANT},
    {"service", 0, false, OPT_SERVICE},
    {0},
};

static void row_of(struct tw_cli_table *t, json_t *u) {
  char created[32];
  tn_time(u, "created_at", created, sizeof created);
  json_t *svc = json_object_get(u, "service"),
         *dis = json_object_get(u, "disabled");
  const char *row[] = {tn_jstr(u, "name"),
                       tn_jstr(u, "tenant"),
                       tn_jstr(u, "role"),
                       json_is_true(svc) ? "service" : "user",
                       json_is_true(dis) ? "disabled" : "active",
                       created};
  tw_cli_table_add(t, row);
}

static const char *const HEADERS[] = {"NAME", "TENANT", "ROLE",
                                      "KIND", "STATE",  "CREATED"};

static int one_user(struct tw_cli *c, const char *method, const char *path,
                    char *body) {
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, method, path, body, NULL, &resp, &out);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    code = tn_print(c, &resp);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table t;
    tw_cli_table_init(&t, 6, HEADERS);
    row_of(&t, out);
    tn_print_table(c, &t);
    tw_cli_table_release(&t);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

static int cmd_user_create(struct tw_cli *c, const struct tw_cli_parsed *p) {
  json_t *req = json_pack("{s:s}", "name", p->pos[0]);
  bool role = false;
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    if (o->id == OPT_ROLE) {
      json_object_set_new(req, "role", json_string(o->value));
      role = true;
    } else if (o->id == OPT_TENANT) {
      json_object_set_new(req, "tenant", json_string(o->value));
    } else if (o->id == OPT_SERVICE) {
      json_object_set_new(req, "service", json_true());
    }
  }
  if (!role) {
    json_decref(req);
    return tw_cli_usage(
        c, "--role is required (admin, tenant-admin, member, viewer, "
           "finance or ci)");
  }
  char *body = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  int code = one_user(c, "POST", "/v1/users", body);
  free(body);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_user_create = {
    .name = "user create",
    .args = "NAME",
    .summary = "make a principal with one role in one tenant",
    .help = "Options:\n"
            "  --role ROLE      admin (global: tenant \"*\"), tenant-admin, "
            "member,\n"
            "                   viewer, finance, ci or metrics (scrapes\n"
            "                   /metrics only)\n"
            "  --tenant NAME    its tenant; default yours\n"
            "  --service        a service account (CI), not a person\n"
            "\n"
            "Then give it a token: tradewind token create --principal NAME\n",
    .opts = create_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_user_create,
};

static const struct tw_cli_opt list_opts[] = {{"tenant", 0, true, OPT_TENANT},
                                              {0}};

static int cmd_user_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_buf q;
  tw_buf_init(&q);
  for (size_t i = 0; i < p->nopts; i++)
    tn_param(&q, "tenant", p->opts[i].value);
  char *path = tw_asprintf("/v1/users%s", q.len ? q.data : "");
  tw_buf_release(&q);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, &resp, &out);
  free(path);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    code = tn_print(c, &resp);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table t;
    tw_cli_table_init(&t, 6, HEADERS);
    json_t *items = json_object_get(out, "items");
    for (size_t i = 0; i < json_array_size(items); i++)
      row_of(&t, json_array_get(items, i));
    tn_print_table(c, &t);
    tw_cli_table_release(&t);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_user_list = {
    .name = "user list",
    .args = "",
    .summary = "list principals (a tenant-admin sees its tenant's)",
    .help = "Options:\n  --tenant NAME   only this tenant's\n",
    .opts = list_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_user_list,
};

static int cmd_user_disable(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *e = tw_cli_http_escape(p->pos[0]);
  char *path = tw_asprintf("/v1/users/%s/disable", e);
  free(e);
  int code = one_user(c, "POST", path, NULL);
  free(path);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_user_disable = {
    .name = "user disable",
    .args = "NAME",
    .summary = "disable a principal; its tokens stop at once",
    .help = "",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_user_disable,
};
