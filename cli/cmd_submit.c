/* cmd_submit.c - `tradewind submit FILE [--wait] [--timeout D]
 * [--idempotency-key K]`: POST /v1/jobs with the spec as written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* Specs are a few kilobytes; anything near this is a wrong file. */
#define SPEC_MAX_BYTES (8u * 1024 * 1024)

enum { OPT_WAIT = 1, OPT_TIMEOUT, OPT_IDEMPOTENCY_KEY };

static const struct tw_cli_opt submit_opts[] = {
    {"wait", 0, false, OPT_WAIT},
    {"timeout", 0, true, OPT_TIMEOUT},
    {"idempotency-key", 0, true, OPT_IDEMPOTENCY_KEY},
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

static int cmd_submit(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *file = p->pos[0], *key = NULL;
  bool wait = false, timeout_given = false;
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

  code = tw_cli_request(c, "POST", "/v1/jobs",
                        media_type(file, spec.data, spec.len), spec.data,
                        spec.len, key, &resp, &job);
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
  if (wait)
    code = tw_cli_wait_job(c, id, timeout_ms);

out:
  json_decref(job);
  tw_cli_http_resp_release(&resp);
  tw_buf_release(&spec);
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
        "printed, one a line.\n"
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
        "                          first job instead of a new one\n",
    .opts = submit_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_submit,
};
