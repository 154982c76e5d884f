/* tmp_store.h - a test's sqlite database in a directory of its own.
 *
 * Unit tests open their store at DIR/t.db under a mkdtemp directory; this
 * removes what sqlite leaves there (the file, its -wal and -shm) and the
 * directory, so every test cleans up the same way. */
#ifndef TW_TESTS_UNIT_TMP_STORE_H
#define TW_TESTS_UNIT_TMP_STORE_H

#include <stdio.h>
#include <unistd.h>

static inline void tw_test_store_remove(const char *path, const char *dir) {
  static const char *const sfx[] = {"", "-wal", "-shm"};
  char p[512];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
}

#endif
