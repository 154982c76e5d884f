/* cmd_convert.c - `tradewind convert FILE`: the Tradewind job spec a
 * SkyPilot task file (or a spec) stands for, printed without a server.
 * The translation is the daemon's own (broker/core/skypilot.h), so what
 * this prints is what `submit` of the same file stores. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/core/skypilot.h"
#include "broker/core/spec.h"
#include "cli/cli_int.h"

#define CONVERT_MAX_BYTES (8u * 1024 * 1024)

static bool json_name(const char *file) {
  size_t n = strlen(file);
  return n >= 5 && !strcasecmp(file + n - 5, ".json");
}

static int cmd_convert(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *file = p->pos[0];
  FILE *f = strcmp(file, "-") ? fopen(file, "rb") : c->io->in;
  if (!f)
    return tw_cli_usage(c, "cannot read %s: %s", file, strerror(errno));
  struct tw_buf text;
  tw_buf_init(&text);
  tw_buf_adds(&text, "");
  char chunk[16384];
  size_t n;
  bool big = false;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && !big) {
    big = text.len + n > CONVERT_MAX_BYTES;
    tw_buf_add(&text, chunk, n);
  }
  bool bad = ferror(f);
  if (f != c->io->in)
    fclose(f);
  if (big || bad || !text.len) {
    tw_buf_release(&text);
    return tw_cli_usage(c, "cannot read %s: %s", file,
                        big ? "too large" : bad ? "read error" : "empty");
  }
  /* a local workdir: packed (not uploaded) and named by its hash, as
   * submit would store it */
  bool packed = false;
  int wcode = tw_cli_workdir(c, &text, json_name(file), false, &packed);
  if (wcode) {
    tw_buf_release(&text);
    return wcode;
  }
  struct tw_job_spec spec;
  struct tw_spec_errs *errs = tw_calloc(1, sizeof *errs);
  struct tw_err err = {0};
  bool sky = false;
  int code = TW_EXIT_OK;
  if (tw_spec_parse_any(text.data, text.len, packed || json_name(file), NULL,
                        &spec, errs, &sky, &err)) {
    for (size_t i = 0; i < errs->n; i++) {
      struct tw_buf line;
      tw_buf_init(&line);
      tw_cli_add_clean(&line, errs->v[i].msg);
      tw_cli_errorf(c, "%s", line.data);
      tw_buf_release(&line);
    }
    if (errs->n_more)
      tw_cli_errorf(c, "and %zu more", errs->n_more);
    code = TW_EXIT_REJECTED;
  } else {
    struct tw_buf out;
    tw_buf_init(&out);
    tw_spec_to_json(&spec, &out);
    code = tw_cli_print_json_text(c, out.data, out.len);
    tw_buf_release(&out);
    tw_spec_release(&spec);
  }
  free(errs);
  tw_buf_release(&text);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_convert = {
    .name = "convert",
    .args = "FILE",
    .summary = "print the job spec a SkyPilot task file stands for",
    .help =
        "Reads FILE (- reads stdin), a SkyPilot task or a Tradewind spec,\n"
        "and prints the Tradewind spec it is, in canonical JSON (-o yaml\n"
        "for YAML), without a server: the translation is the daemon's, so\n"
        "`submit FILE` stores the same (a local workdir: packed, and shown\n"
        "as the hash submit would upload).  Every problem of the file is\n"
        "printed, one a line, and the exit code is 5.  docs/skypilot.md\n"
        "says what each SkyPilot key becomes.\n",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_convert,
    .local = true,
};
