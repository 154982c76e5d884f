/* output.c - what the CLI prints: the exit-code table, problem lines,
 * indented JSON and aligned tables. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* The one table from error classes to exit codes (STYLE.md section 4). */
static const struct {
  enum tw_rc rc;
  int exit;
} exit_table[] = {
    {TW_OK, TW_EXIT_OK},
    /* The server answered 4xx: it understood and refused. */
    {TW_E_INVALID, TW_EXIT_REJECTED},
    {TW_E_NOTFOUND, TW_EXIT_REJECTED},
    {TW_E_CONFLICT, TW_EXIT_REJECTED},
    {TW_E_AUTH, TW_EXIT_REJECTED},
    {TW_E_FORBIDDEN, TW_EXIT_REJECTED},
    {TW_E_TOOBIG, TW_EXIT_REJECTED},
    {TW_E_UNSUPPORTED_MEDIA, TW_EXIT_REJECTED},
    {TW_E_QUOTA, TW_EXIT_REJECTED},
    {TW_E_CAPACITY, TW_EXIT_REJECTED},
    /* No answer, a 5xx, or an answer that makes no sense: try again later
     * or elsewhere; the request itself may be fine. */
    {TW_E_IO, TW_EXIT_UNREACHABLE},
    {TW_E_RETRYABLE, TW_EXIT_UNREACHABLE},
    {TW_E_INTERNAL, TW_EXIT_UNREACHABLE},
};

int tw_cli_exit_for_rc(enum tw_rc rc) {
  for (size_t i = 0; i < sizeof exit_table / sizeof exit_table[0]; i++)
    if (exit_table[i].rc == rc)
      return exit_table[i].exit;
  return TW_EXIT_UNREACHABLE;
}

int tw_cli_exit_for_state(const char *state) {
  if (!state)
    return -1;
  if (strcmp(state, "succeeded") == 0)
    return TW_EXIT_OK;
  if (strcmp(state, "failed") == 0)
    return TW_EXIT_JOB_FAILED;
  if (strcmp(state, "cancelled") == 0)
    return TW_EXIT_CANCELLED;
  return -1;
}

/* A failed job that reported its own exit code N (1..255) makes the wait
 * exit with N, so `submit --wait` stands in for the script in a pipeline,
 * as `docker run` and `srun` do.  A failure without a code (interruptions
 * beyond max_retries, a lost instance, a timeout) is 1.  N may coincide with
 * one of the CLI's own codes (3 unreachable, 4 cancelled, ...): the number
 * alone cannot tell them apart, so the last line on stderr names the state
 * ("failed (exit 3)") and with -o json the final job is printed on stdout
 * only when the job really finished. */
int tw_cli_exit_for_job(const char *state, long long exit_code, bool has_code) {
  int outcome = tw_cli_exit_for_state(state);
  if (outcome == TW_EXIT_JOB_FAILED && has_code && exit_code >= 1 &&
      exit_code <= 255)
    return (int)exit_code;
  return outcome;
}

void tw_cli_add_clean(struct tw_buf *out, const char *s) {
  tw_buf_adds(out, ""); /* an empty string still yields "" */
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
    tw_buf_addc(out, (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p);
}

static const char *reason_phrase(long status) {
  switch (status) {
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "no details";
  }
}

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

#define PROBLEM_LINE_MAX 400

void tw_cli_problem_line(long status, const char *body, size_t len,
                         struct tw_buf *out) {
  struct tw_buf text;
  tw_buf_init(&text);
  const char *request_id = NULL;
  json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
  if (json_is_object(j)) {
    const char *detail = jstr(j, "detail"), *title = jstr(j, "title");
    const char *field = jstr(j, "field");
    const char *what = detail && *detail ? detail : title;
    request_id = jstr(j, "request_id");
    if (what && *what) {
      if (field && *field && strncmp(what, field, strlen(field)) != 0)
        tw_buf_printf(&text, "%s: ", field);
      tw_buf_adds(&text, what);
    }
  }
  if (!text.len && body && len) {
    /* Not a problem document: its first non-empty line says the most. */
    const char *p = body, *end = body + len;
    while (p < end && (*p == '\n' || *p == '\r' || *p == ' '))
      p++;
    const char *nl = p;
    while (nl < end && *nl != '\n' && *nl != '\r' && *nl != '\0')
      nl++;
    tw_buf_add(&text, p, (size_t)(nl - p));
  }
  if (!text.len)
    tw_buf_adds(&text, reason_phrase(status));

  const char *kind = status >= 500   ? "server error"
                     : status >= 400 ? "rejected"
                                     : "unexpected answer";
  tw_buf_printf(out, "%s (%ld): ", kind, status);
  size_t n = text.len;
  if (n > PROBLEM_LINE_MAX) {
    n = PROBLEM_LINE_MAX;
    /* Do not cut a UTF-8 sequence in half. */
    while (n > 0 && ((unsigned char)text.data[n] & 0xc0) == 0x80)
      n--;
    text.data[n] = '\0';
  }
  tw_cli_add_clean(out, text.data);
  if (n < text.len)
    tw_buf_adds(out, "...");
  /* A 5xx is the operator's to chase; the request id finds it in the log. */
  if (status >= 500 && request_id && *request_id) {
    tw_buf_adds(out, " (request ");
    tw_cli_add_clean(out, request_id);
    tw_buf_adds(out, ")");
  }
  /* every problem of a document (a SkyPilot task's), one a line */
  json_t *all = json_is_object(j) ? json_object_get(j, "errors") : NULL;
  if (json_is_array(all) && json_array_size(all) > 1) {
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
      const char *d = jstr(e, "detail");
      if (!d)
        continue;
      tw_buf_adds(out, "\n  ");
      tw_cli_add_clean(out, d);
    }
  }
  tw_buf_release(&text);
  json_decref(j);
}

static void newline_indent(struct tw_buf *out, int depth) {
  tw_buf_addc(out, '\n');
  for (int i = 0; i < depth; i++)
    tw_buf_add(out, "  ", 2);
}

static bool json_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

enum tw_rc tw_cli_json_pretty(const char *text, size_t len, struct tw_buf *out,
                              struct tw_err *err) {
  json_error_t je;
  json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &je);
  if (!j)
    return tw_err_set(err, TW_E_INVALID, "not JSON: %s at line %d", je.text,
                      je.line);
  json_decref(j);
  /* Re-indent the text itself rather than re-encode the parsed value, so
   * numbers and escapes stay exactly as the server wrote them. */
  int depth = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_str) {
      tw_buf_addc(out, ch);
      if (esc)
        esc = false;
      else if (ch == '\\')
        esc = true;
      else if (ch == '"')
        in_str = false;
      continue;
    }
    if (json_ws(ch))
      continue;
    switch (ch) {
    case '"':
      in_str = true;
      tw_buf_addc(out, ch);
      break;
    case '{':
    case '[': {
      size_t k = i + 1;
      while (k < len && json_ws(text[k]))
        k++;
      tw_buf_addc(out, ch);
      if (k < len && (text[k] == '}' || text[k] == ']')) {
        tw_buf_addc(out, text[k]); /* {} and [] stay on one line */
        i = k;
      } else {
        newline_indent(out, ++depth);
      }
      break;
    }
    case '}':
    case ']':
      newline_indent(out, --depth);
      tw_buf_addc(out, ch);
      break;
    case ',':
      tw_buf_addc(out, ch);
      newline_indent(out, depth);
      break;
    case ':':
      tw_buf_add(out, ": ", 2);
      break;
    default:
      tw_buf_addc(out, ch);
    }
  }
  return TW_OK;
}

void tw_cli_fmt_uusd(int64_t uusd, char *out, size_t outsz) {
  uint64_t a = uusd < 0 ? (uint64_t)0 - (uint64_t)uusd : (uint64_t)uusd;
  char frac[8];
  snprintf(frac, sizeof frac, "%06" PRIu64, a % 1000000);
  size_t n = 6;
  while (n > 2 && frac[n - 1] == '0')
    frac[--n] = '\0';
  snprintf(out, outsz, "%s$%" PRIu64 ".%s", uusd < 0 ? "-" : "", a / 1000000,
           frac);
}

void tw_cli_fmt_age(int64_t ms, char *out, size_t outsz) {
  if (ms < 0) {
    snprintf(out, outsz, "-");
    return;
  }
  int64_t s = ms / 1000;
  if (s < 60)
    snprintf(out, outsz, "%" PRId64 "s", s);
  else if (s < 3600)
    snprintf(out, outsz, "%" PRId64 "m", s / 60);
  else if (s < 86400)
    snprintf(out, outsz, "%" PRId64 "h", s / 3600);
  else
    snprintf(out, outsz, "%" PRId64 "d", s / 86400);
}

void tw_cli_fmt_duration(int64_t ms, char *out, size_t outsz) {
  static const struct {
    const char *unit;
    int64_t ms;
  } units[] = {
      {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
  struct tw_buf b;
  tw_buf_init(&b);
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (ms >= units[i].ms) {
      tw_buf_printf(&b, "%" PRId64 "%s", ms / units[i].ms, units[i].unit);
      ms %= units[i].ms;
    }
  snprintf(out, outsz, "%s", b.len ? b.data : "0s");
  tw_buf_release(&b);
}

void tw_cli_table_init(struct tw_cli_table *t, size_t ncols,
                       const char *const *headers) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  t->headers = headers;
}

void tw_cli_table_add(struct tw_cli_table *t, const char *const *row) {
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 16;
    t->cells = tw_realloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
  }
  for (size_t c = 0; c < t->ncols; c++) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, row[c] && *row[c] ? row[c] : "-");
    t->cells[t->nrows * t->ncols + c] = tw_buf_detach(&b);
  }
  t->nrows++;
}

/* Characters, not bytes, so names in UTF-8 line up. */
static size_t utf8_width(const char *s) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xc0) != 0x80)
      n++;
  return n;
}

static void render_row(const struct tw_cli_table *t, const char *const *row,
                       const size_t *width, struct tw_buf *out) {
  for (size_t c = 0; c < t->ncols; c++) {
    tw_buf_adds(out, row[c]);
    if (c + 1 < t->ncols)
      for (size_t pad = utf8_width(row[c]); pad < width[c] + 2; pad++)
        tw_buf_addc(out, ' ');
  }
  tw_buf_addc(out, '\n');
}

void tw_cli_table_render(const struct tw_cli_table *t, struct tw_buf *out) {
  size_t *width = tw_calloc(t->ncols, sizeof *width);
  for (size_t c = 0; c < t->ncols; c++) {
    if (t->headers)
      width[c] = utf8_width(t->headers[c]);
    for (size_t r = 0; r < t->nrows; r++) {
      size_t w = utf8_width(t->cells[r * t->ncols + c]);
      if (w > width[c])
        width[c] = w;
    }
  }
  if (t->headers)
    render_row(t, t->headers, width, out);
  for (size_t r = 0; r < t->nrows; r++)
    render_row(t, (const char *const *)&t->cells[r * t->ncols], width, out);
  tw_buf_adds(out, "");
  free(width);
}

void tw_cli_table_release(struct tw_cli_table *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++)
    free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
