/* fuzz_tar.c - the workdir archive's reader and unpacker
 * (broker/base/tar.h) on arbitrary bytes: what the broker checks when a
 * workdir is uploaded (PUT /v1/workdirs/{sha256}) and what tradewind-agent
 * unpacks.
 *
 * Every entry the reader passes must have a relative path without '.' or
 * '..' components and, for a link, a target inside the tree; an archive it
 * accepts is unpacked into a fresh directory, and nothing may appear
 * beside that directory (an escape), or the target aborts. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/tar.h"

static char top[64];

static void remove_top(void) { rmdir(top); }

static int check(void *ctx, const struct tw_tar_entry *e, char *err,
                 size_t cap) {
  (void)ctx;
  (void)err;
  (void)cap;
  if (!e->path[0] || e->path[0] == '/' || strstr(e->path, "//") ||
      !strcmp(e->path, "..") || !strncmp(e->path, "../", 3) ||
      strstr(e->path, "/../") ||
      (strlen(e->path) >= 3 && !strcmp(e->path + strlen(e->path) - 3, "/..")))
    abort();
  if (e->type == TW_TAR_LINK && (!e->link[0] || e->link[0] == '/'))
    abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  struct tw_tar_limits lim = {.max_bytes = 1 << 20, .max_entries = 64};
  if (tw_tar_walk(data, size, &lim, check, NULL, err, sizeof err)) {
    if (!err[0])
      abort(); /* a refusal always says why */
    return 0;
  }
  if (!top[0]) {
    snprintf(top, sizeof top, "/tmp/tw-fuzz-tar-XXXXXX");
    if (!mkdtemp(top))
      abort();
    atexit(remove_top);
  }
  char dir[96];
  snprintf(dir, sizeof dir, "%s/x", top);
  tw_tar_unpack(data, size, &lim, dir, -1, -1, err, sizeof err);
  DIR *d = opendir(top);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
        strcmp(de->d_name, "x"))
      abort(); /* written beside the directory */
  if (d)
    closedir(d);
  if (tw_tar_remove_tree(dir))
    abort();
  return 0;
}
