/* tmp_store.h - a test's sqlite database in a directory of its own.
 *
 * Unit tests open their store at DIR/t.db under a mkdtemp directory; this
 * removes what sqlite leaves there (the file, its -wal and -shm), the
 * agent's output segments (PATH-logs) and the directory, so every test cleans up the same way. */
#ifndef TW_TESTS_UNIT_TMP_STORE_H
#define TW_TESTS_UNIT_TMP_STORE_H

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

static inline void tw_test_store_remove(const char *path, const char *dir) {
  static const char *const sfx[] = {"", "-wal", "-shm"};
  char p[512];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  /* the agent's output beside the database (PATH-logs/seg-N) */
  snprintf(p, sizeof p, "%s-logs", path);
  DIR *d = opendir(p);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (e->d_name[0] != '.') {
        char f[1024];
        snprintf(f, sizeof f, "%s/%s", p, e->d_name);
        unlink(f);
      }
    closedir(d);
    rmdir(p);
  }
  rmdir(dir);
}

#endif
