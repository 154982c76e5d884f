/* cmd_token.c - `tradewind token create|list|revoke`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

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

enum { OPT_PRINCIPAL = 1, OPT_NAME, OPT_TTL, OPT_TENANT };

static const struct tw_cli_opt create_opts[] = {
    {"principal", 0, true, OPT_PRINCIPAL},
    {"name", 0, true, OPT_NAME},
    {"ttl", 0, true, OPT_TTL},
    {0},
};

static int cmd_token_create(struct tw_cli *c, const struct tw_cli_parsed *p) {
  json_t *req = json_object();
  for (size_t i = 0; i < p->nopts; i++) {
    const char *key = p->opts[i].id == OPT_PRINCIPAL ? "principal"
                      : p->opts[i].id == OPT_NAME    ? "name"
                      : p->opts[i].id == OPT_TTL     ? "ttl"
                                                     : NULL;
    if (key)
      json_object_set_new(req, key, json_string(p->opts[i].value));
  }
  char *body = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "POST", "/v1/tokens", body, NULL, &resp, &out);
  free(body);
  if (code == TW_EXIT_OK) {
    const char *tok = tn_jstr(out, "token");
    if (!tok) {
      tw_cli_errorf(c, "the server's answer holds no token");
      code = TW_EXIT_UNREACHABLE;
    } else if (tw_cli_structured(c)) {
      code = tn_print(c, &resp);
    } else {
      /* the token alone on stdout: TRADEWIND_TOKEN=$(tradewind token create) */
      fprintf(c->io->out, "%s\n", tok);
      char exp[32];
      tn_time(out, "expires_at", exp, sizeof exp);
      fprintf(
          c->io->err,
          "token %s for %s (tenant %s), expires %s; it is shown this once\n",
          tn_jstr(out, "id"), tn_jstr(out, "principal"), tn_jstr(out, "tenant"),
          strcmp(exp, "-") ? exp : "never");
    }
  }
  /* wipe what held the token */
  if (resp.body.data)
    OPENSSL_cleanse(resp.body.data, resp.body.len);
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_token_create = {
    .name = "token create",
    .args = "",
    .summary = "make a bearer token; prints it once",
    .help =
        "Options:\n"
        "  --principal NAME  for another principal (a tenant-admin: of its\n"
        "                    tenant; the admin: anybody); default yourself\n"
        "  --name TEXT       what it is for (\"laptop\", \"ci-main\")\n"
        "  --ttl DURATION    lifetime, \"30d\", \"12h\", or \"never\"; default "
        "90d\n"
        "\n"
        "The token goes to stdout alone, the rest to stderr:\n"
        "  export TRADEWIND_TOKEN=$(tradewind token create --name laptop)\n",
    .opts = create_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_token_create,
};

static const struct tw_cli_opt list_opts[] = {
    {"principal", 0, true, OPT_PRINCIPAL},
    {"tenant", 0, true, OPT_TENANT},
    {0},
};

static int cmd_token_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {
      "ID", "PRINCIPAL", "TENANT", "NAME", "CREATED", "EXPIRES", "REVOKED"};
  struct tw_buf q;
  tw_buf_init(&q);
  for (size_t i = 0; i < p->nopts; i++)
    tn_param(&q, p->opts[i].id == OPT_PRINCIPAL ? "principal" : "tenant",
             p->opts[i].value);
  char *path = tw_asprintf("/v1/tokens%s", q.len ? q.data : "");
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
    tw_cli_table_init(&t, 7, headers);
    json_t *items = json_object_get(out, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *it = json_array_get(items, i);
      char cr[32], ex[32], rv[32];
      tn_time(it, "created_at", cr, sizeof cr);
      tn_time(it, "expires_at", ex, sizeof ex);
      tn_time(it, "revoked_at", rv, sizeof rv);
      const char *row[] = {tn_jstr(it, "id"),
                           tn_jstr(it, "principal"),
                           tn_jstr(it, "tenant"),
                           tn_jstr(it, "name"),
                           cr,
                           ex,
                           rv};
      tw_cli_table_add(&t, row);
    }
    tn_print_table(c, &t);
    tw_cli_table_release(&t);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_token_list = {
    .name = "token list",
    .args = "",
    .summary = "list tokens in reach (never their text)",
    .help = "Options:\n"
            "  --principal NAME  only this principal's\n"
            "  --tenant NAME     only this tenant's (admin)\n",
    .opts = list_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_token_list,
};

static int cmd_token_revoke(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *e = tw_cli_http_escape(p->pos[0]);
  char *path = tw_asprintf("/v1/tokens/%s", e);
  free(e);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  int code = tn_call(c, "DELETE", path, NULL, NULL, &resp, NULL);
  free(path);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      fprintf(c->io->out, "%s revoked\n", p->pos[0]);
  }
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_token_revoke = {
    .name = "token revoke",
    .args = "ID",
    .summary = "revoke a token at once",
    .help = "",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_token_revoke,
};
