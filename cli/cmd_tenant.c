/* cmd_tenant.c - `tradewind tenant create|list`, and the helpers the
 * tenancy commands share (cmd_token.c, cmd_user.c, cmd_quota.c,
 * cmd_budget.c, cmd_audit.c declare them where they use them). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* ---- shared -----------------------------------------------------------------
 */

const char *tn_jstr(json_t *o, const char *key);
int64_t tn_jint(json_t *o, const char *key);
void tn_param(struct tw_buf *q, const char *name, const char *value);
void tn_print_table(struct tw_cli *c, struct tw_cli_table *t);
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out);
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp);
void tn_time(json_t *o, const char *key, char *out, size_t outsz);

const char *tn_jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t tn_jint(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

void tn_param(struct tw_buf *q, const char *name, const char *value) {
  char *e = tw_cli_http_escape(value);
  tw_buf_printf(q, "%c%s=%s", q->len ? '&' : '?', name, e);
  free(e);
}

void tn_print_table(struct tw_cli *c, struct tw_cli_table *t) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_table_render(t, &b);
  fputs(b.data ? b.data : "", c->io->out);
  tw_buf_release(&b);
}

/* "2026-01-02 03:04" from an RFC 3339 member, "-" when null. */
void tn_time(json_t *o, const char *key, char *out, size_t outsz) {
  const char *t = tn_jstr(o, key);
  if (!t || strlen(t) < 16)
    snprintf(out, outsz, "-");
  else
    snprintf(out, outsz, "%.10s %.5s", t, t + 11);
}

/* As tw_cli_request with a JSON body and an optional If-Match; the answer
 * (with its ETag) goes to resp when not NULL. */
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out) {
  struct tw_cli_http_req req = {.base_url = c->url,
                                .token = c->token,
                                .method = method,
                                .path = path,
                                .cacert = c->cacert,
                                .content_type =
                                    body ? "application/json" : NULL,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .if_match = if_match};
  struct tw_cli_http_resp local;
  struct tw_cli_http_resp *r = resp ? resp : &local;
  struct tw_err err;
  struct tw_buf line;
  int code = TW_EXIT_OK;
  tw_cli_http_resp_init(&local);
  tw_buf_init(&line);
  tw_err_clear(&err);
  enum tw_rc rc = tw_cli_http_do(&req, r, &err);
  if (rc) {
    tw_cli_errorf(c, "%s", err.msg);
    code = rc == TW_E_INVALID ? TW_EXIT_USAGE : TW_EXIT_UNREACHABLE;
    goto done;
  }
  if ((rc = tw_cli_http_status_rc(r->status))) {
    tw_cli_problem_line(r->status, r->body.data, r->body.len, &line);
    tw_cli_errorf(c, "%s", line.data);
    code = tw_cli_exit_for_rc(rc);
    goto done;
  }
  if (out) {
    json_error_t je;
    *out = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
    if (!*out) {
      tw_cli_errorf(c, "%s %s: the server's answer is not JSON: %s", method,
                    path, je.text);
      code = TW_EXIT_UNREACHABLE;
    }
  }
done:
  tw_buf_release(&line);
  tw_cli_http_resp_release(&local);
  return code;
}

/* -o json: the server's own text, indented. */
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp) {
  return tw_cli_print_json_text(c, resp->body.data ? resp->body.data : "",
                                resp->body.len);
}

/* ---- tenant create / list
 * ------------------------------------------------------ */

static int cmd_tenant_create(struct tw_cli *c, const struct tw_cli_parsed *p) {
  json_t *req = json_pack("{s:s}", "name", p->pos[0]);
  char *body = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "POST", "/v1/tenants", body, NULL, &resp, &out);
  free(body);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      fprintf(c->io->out, "%s\n", tn_jstr(out, "name"));
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_tenant_create = {
    .name = "tenant create",
    .args = "NAME",
    .summary = "make a tenant (admin)",
    .help =
        "Tenant names are 1 to 63 of [A-Za-z0-9._-].  Give it a quota with\n"
        "`tradewind quota set` and principals with `tradewind user create`.\n",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_tenant_create,
};

static int cmd_tenant_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  (void)p;
  static const char *const headers[] = {"NAME", "COHORT", "CREATED"};
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "GET", "/v1/tenants", NULL, NULL, &resp, &out);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    code = tn_print(c, &resp);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table t;
    tw_cli_table_init(&t, 3, headers);
    json_t *items = json_object_get(out, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *it = json_array_get(items, i);
      char created[32];
      tn_time(it, "created_at", created, sizeof created);
      const char *row[] = {tn_jstr(it, "name"), tn_jstr(it, "cohort"), created};
      tw_cli_table_add(&t, row);
    }
    tn_print_table(c, &t);
    tw_cli_table_release(&t);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_tenant_list = {
    .name = "tenant list",
    .args = "",
    .summary = "list tenants (others than the admin see their own)",
    .help = "",
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_tenant_list,
};
