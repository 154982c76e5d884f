/* cmd_submit.c - `tradewind submit FILE [--wait] [--timeout D]
 * [--idempotency-key K] [--secret KEY[=VALUE]]...`: POST /v1/jobs with the
 * spec as written (with --secret: its `secrets` filled in, sent as JSON). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "broker/base/node.h"
#include "cli/cli_int.h"

/* Specs are a few kilobytes; anything near this is a wrong file. */
#define SPEC_MAX_BYTES (8u * 1024 * 1024)

enum { OPT_WAIT = 1, OPT_TIMEOUT, OPT_IDEMPOTENCY_KEY, OPT_SECRET };

static const struct tw_cli_opt submit_opts[] = {
    {"wait", 0, false, OPT_WAIT},
    {"timeout", 0, true, OPT_TIMEOUT},
    {"idempotency-key", 0, true, OPT_IDEMPOTENCY_KEY},
    {"secret", 0, true, OPT_SECRET},
    {0},
};

/* Reads f to the end: 0, or an errno value (EFBIG past SPEC_MAX_BYTES). */
static int read_all(FILE *f, struct tw_buf *b) {
  char chunk[16384];
  size_t n;
  tw_buf_adds(b, "");
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b->len + n > SPEC_MAX_BYTES)
      return EFBIG;
    tw_buf_add(b, chunk, n);
  }
  return ferror(f) ? (errno ? errno : EIO) : 0;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* The media type to send.  The server reads YAML for JSON too, but naming
 * JSON as such gets JSON's stricter parser and its error positions. */
static const char *media_type(const char *file, const char *text, size_t len) {
  if (ends_with(file, ".json"))
    return "application/json";
  if (ends_with(file, ".yaml") || ends_with(file, ".yml"))
    return "application/yaml";
  /* stdin or another name: a document opening with { is JSON. */
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
      continue;
    return text[i] == '{' ? "application/json" : "application/yaml";
  }
  return "application/yaml";
}

/* Zeroes b's bytes (it may hold secret values) and releases it. */
static void wipe_buf(struct tw_buf *b) {
  for (volatile char *q = b->data, *e = b->data + b->len; q && q < e; q++)
    *q = 0;
  tw_buf_release(b);
}

static bool env_name(const char *s, size_t n) {
  if (n == 0 || n > 128 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') ||
                             (s[0] >= 'a' && s[0] <= 'z')))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
      return false;
  return true;
}

static struct tw_node *new_scalar(const char *v) {
  struct tw_node *n = tw_calloc(1, sizeof *n);
  n->kind = TW_NODE_SCALAR;
  n->str = tw_strdup(v);
  n->quoted = true;
  return n;
}

/* Sets m[key] (m a mapping) to n, replacing what was there. */
static void map_set(struct tw_node *m, const char *key, size_t klen,
                    struct tw_node *n) {
  for (size_t i = 0; i < m->n; i++)
    if (strlen(m->keys[i]) == klen && !strncmp(m->keys[i], key, klen)) {
      tw_node_free(m->items[i]);
      m->items[i] = n;
      return;
    }
  m->keys = tw_realloc(m->keys, (m->n + 1) * sizeof *m->keys);
  m->items = tw_realloc(m->items, (m->n + 1) * sizeof *m->items);
  m->keys[m->n] = tw_strndup(key, klen);
  m->items[m->n++] = n;
}

/* SkyPilot's --secret: KEY=VALUE, or KEY taking the value from the
 * environment, put in the file's `secrets` (the same key in a task and in
 * a spec), which is then sent as JSON.  TW_EXIT_OK, or a usage error. */
static int fill_secrets(struct tw_cli *c, const struct tw_cli_parsed *p,
                        struct tw_buf *spec, bool is_json) {
  struct tw_node *root = NULL;
  struct tw_err err = {0};
  if ((is_json ? tw_node_parse_json : tw_node_parse_yaml)(spec->data,
                                                          spec->len, &root,
                                                          &err) ||
      !root || root->kind != TW_NODE_MAP) {
    tw_node_free(root);
    return tw_cli_usage(c, "--secret: the file is not a mapping%s%s",
                        err.msg[0] ? ": " : "", err.msg);
  }
  struct tw_node *sec = tw_node_get(root, "secrets");
  if (!sec || sec->kind != TW_NODE_MAP) {
    if (sec && sec->kind != TW_NODE_NULL) {
      tw_node_free(root);
      return tw_cli_usage(c, "--secret: the file's secrets is not a mapping");
    }
    sec = tw_calloc(1, sizeof *sec);
    sec->kind = TW_NODE_MAP;
    map_set(root, "secrets", 7, sec);
  }
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    if (o->id != OPT_SECRET)
      continue;
    const char *eq = strchr(o->value, '=');
    size_t klen = eq ? (size_t)(eq - o->value) : strlen(o->value);
    if (!env_name(o->value, klen)) {
      tw_node_free(root);
      return tw_cli_usage(c,
                          "--secret: expected KEY or KEY=VALUE with KEY a "
                          "variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    const char *v = eq ? eq + 1 : NULL;
    if (!v) {
      char name[129];
      memcpy(name, o->value, klen);
      name[klen] = '\0';
      v = getenv(name);
      if (!v) {
        tw_node_free(root);
        return tw_cli_usage(c,
                            "--secret %s: not set in the environment (give "
                            "--secret %s=VALUE)",
                            name, name);
      }
    }
    map_set(sec, o->value, klen, new_scalar(v));
  }
  wipe_buf(spec);
  tw_buf_init(spec);
  tw_node_to_json(root, spec);
  /* the parsed copy held the values too */
  for (size_t i = 0; i < sec->n; i++)
    if (sec->items[i] && sec->items[i]->str)
      for (volatile char *q = sec->items[i]->str; *q; q++)
        *q = 0;
  tw_node_free(root);
  return TW_EXIT_OK;
}

static int cmd_submit(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *file = p->pos[0], *key = NULL;
  bool wait = false, timeout_given = false, secrets = false;
  int64_t timeout_ms = 0;
  struct tw_buf spec;
  struct tw_cli_http_resp resp;
  json_t *job = NULL;
  int code;

  tw_buf_init(&spec);
  tw_cli_http_resp_init(&resp);
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    switch (o->id) {
    case OPT_WAIT:
      wait = true;
      break;
    case OPT_TIMEOUT:
      if (tw_cli_parse_duration_ms(o->value, &timeout_ms)) {
        code = tw_cli_usage(c,
                            "--timeout: expected a duration such as 90s, "
                            "10m or 1h30m, got \"%.64s\"",
                            o->value);
        goto out;
      }
      timeout_given = true;
      break;
    case OPT_IDEMPOTENCY_KEY:
      key = o->value;
      if (strlen(key) < 1 || strlen(key) > 128) {
        code = tw_cli_usage(c,
                            "--idempotency-key: expected 1..128 "
                            "characters, got %zu",
                            strlen(key));
        goto out;
      }
      for (const unsigned char *q = (const unsigned char *)key; *q; q++)
        if (*q <= 0x20 || *q >= 0x7f) {
          code = tw_cli_usage(c, "--idempotency-key: only printable ASCII "
                                 "without spaces is allowed");
          goto out;
        }
      break;
    case OPT_SECRET:
      secrets = true;
      break;
    default:
      break;
    }
  }
  if (timeout_given && !wait) {
    code = tw_cli_usage(c, "--timeout applies to --wait only");
    goto out;
  }

  int e;
  if (strcmp(file, "-") == 0) {
    e = read_all(c->io->in, &spec);
  } else {
    FILE *f = fopen(file, "rb");
    if (!f) {
      code = tw_cli_usage(c, "cannot read %s: %s", file, strerror(errno));
      goto out;
    }
    e = read_all(f, &spec);
    fclose(f);
  }
  if (e == EFBIG) {
    code = tw_cli_usage(c, "cannot read %s: larger than %u bytes", file,
                        SPEC_MAX_BYTES);
    goto out;
  }
  if (e) {
    code = tw_cli_usage(c, "cannot read %s: %s", file, strerror(e));
    goto out;
  }
  if (spec.len == 0) {
    code = tw_cli_usage(c, "%s is empty", strcmp(file, "-") ? file : "stdin");
    goto out;
  }

  const char *mt = media_type(file, spec.data, spec.len);
  /* a local workdir: packed and uploaded first, then named by its hash */
  bool packed = false;
  if ((code = tw_cli_workdir(c, &spec, !strcmp(mt, "application/json"), true,
                             &packed)))
    goto out;
  if (packed)
    mt = "application/json";
  if (secrets) {
    if ((code = fill_secrets(c, p, &spec, !strcmp(mt, "application/json"))))
      goto out;
    mt = "application/json";
  }
  code = tw_cli_request(c, "POST", "/v1/jobs", mt, spec.data, spec.len, key,
                        &resp, &job);
  if (code != TW_EXIT_OK)
    goto out;
  json_t *idv = json_object_get(job, "id");
  if (!json_is_string(idv) || !*json_string_value(idv)) {
    tw_cli_errorf(c, "the server's answer (%ld) has no job id", resp.status);
    code = TW_EXIT_UNREACHABLE;
    goto out;
  }
  const char *id = json_string_value(idv);
  if (resp.replayed) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, id);
    tw_cli_errorf(c,
                  "job %s was already submitted with this idempotency key; "
                  "not submitted again",
                  b.data);
    tw_buf_release(&b);
  }
  /* With --wait and -o json only the final job is printed, so stdout stays
   * one JSON document. */
  if (tw_cli_structured(c) && !wait) {
    code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    goto out;
  }
  if (!tw_cli_structured(c)) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, id);
    fprintf(c->io->out, "%s\n", b.data);
    /* Scripts read the id before the wait ends. */
    fflush(c->io->out);
    tw_buf_release(&b);
  }
  /* an array's answer is its group (kind: array) */
  if (wait)
    code = json_is_string(json_object_get(job, "kind"))
               ? tw_cli_wait_workflow(c, id, timeout_ms)
               : tw_cli_wait_job(c, id, timeout_ms);

out:
  json_decref(job);
  tw_cli_http_resp_release(&resp);
  wipe_buf(&spec);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_submit = {
    .name = "submit",
    .args = "FILE",
    .summary = "submit a job spec (YAML or JSON; - reads stdin)",
    .help =
        "FILE is sent as application/json when it ends in .json, else as\n"
        "application/yaml (stdin: JSON when it opens with '{').  Prints the\n"
        "job id, or the job with -o json.  A SkyPilot task file is taken as\n"
        "it is (docs/skypilot.md); every problem of a refused file is\n"
        "printed, one a line.  A local `workdir:` (relative to the current\n"
        "directory, ~ for home) is packed, what its .skyignore or\n"
        ".gitignore files name left out, uploaded first, and sent as its\n"
        "hash; the job's setup and run run in it.\n"
        "\n"
        "Options:\n"
        "  --wait                  wait until the job finishes; the exit code\n"
        "                          is the job's (0 succeeded; failed: the\n"
        "                          job's own exit code, or 1 without one;\n"
        "                          4 cancelled, 6 timed out)\n"
        "  --timeout DURATION      give up waiting after DURATION (90s, 10m,\n"
        "                          1h30m); needs --wait\n"
        "  --idempotency-key KEY   1..128 characters; submitting the same\n"
        "                          spec with the same key again returns the\n"
        "                          first job instead of a new one\n"
        "  --secret KEY[=VALUE]    a secret of the job's environment (the\n"
        "                          file's secrets: KEY); without a value it\n"
        "                          is taken from this environment.  Sealed\n"
        "                          by the broker, never shown; repeatable\n",
    .opts = submit_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_submit,
};
