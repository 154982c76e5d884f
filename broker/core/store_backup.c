/* store_backup.c - copies of the database with sqlite's online backup API,
 * and the lock that keeps a second daemon off a database in use. */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/mem.h"
#include "broker/core/store.h"
#include "broker/core/store_int.h"

bool tw_store_is_file_path(const char *path) {
  return path && *path && path[0] != ':' && strncmp(path, "file:", 5) != 0;
}

enum tw_rc tw_store_backup(const char *db_path, const char *dest,
                           struct tw_err *err) {
  if (!tw_store_is_file_path(db_path))
    return tw_err_set(err, TW_E_INVALID,
                      "backup: %s is not a database file", db_path);
  if (!dest || !*dest)
    return tw_err_set(err, TW_E_INVALID, "backup: no destination file");
  if (access(db_path, R_OK) != 0)
    return tw_err_set(err, TW_E_IO, "backup: cannot read %s: %s", db_path,
                      strerror(errno));
  char *tmp = tw_asprintf("%s.partial", dest);
  /* the copy holds what the database holds: its owner's alone */
  unlink(tmp);
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    enum tw_rc rc = tw_err_set(err, TW_E_IO, "backup: cannot create %s: %s",
                               tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  close(fd);
  sqlite3 *src = NULL, *dst = NULL;
  enum tw_rc rc = TW_OK;
  if (sqlite3_open_v2(db_path, &src, SQLITE_OPEN_READONLY, NULL) !=
      SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "backup: cannot open %s: %s", db_path,
                    src ? sqlite3_errmsg(src) : "out of memory");
    goto out;
  }
  sqlite3_busy_timeout(src, 5000);
  if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "backup: cannot open %s: %s", tmp,
                    dst ? sqlite3_errmsg(dst) : "out of memory");
    goto out;
  }
  sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
  if (!b) {
    rc = tw_err_set(err, TW_E_IO, "backup: %s", sqlite3_errmsg(dst));
    goto out;
  }
  /* 256 pages a step: a busy daemon writes between the steps, and the
   * backup starts over only when it wrote through another connection */
  int r;
  for (int tries = 0;; tries++) {
    r = sqlite3_backup_step(b, 256);
    if (r == SQLITE_DONE || (r != SQLITE_OK && r != SQLITE_BUSY &&
                             r != SQLITE_LOCKED) ||
        tries > 1000000)
      break;
    if (r != SQLITE_OK) {
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  int fr = sqlite3_backup_finish(b);
  if (r != SQLITE_DONE || fr != SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "backup of %s failed: %s", db_path,
                    sqlite3_errstr(r != SQLITE_DONE ? r : fr));
    goto out;
  }
  /* the copy stands alone: no -wal beside it */
  char *msg = NULL;
  if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, &msg) !=
      SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "backup: %s: %s", tmp, msg ? msg : "?");
    sqlite3_free(msg);
    goto out;
  }
out:
  sqlite3_close(dst);
  sqlite3_close(src);
  if (rc == TW_OK) {
    fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
    if (rename(tmp, dest) != 0)
      rc = tw_err_set(err, TW_E_IO, "backup: cannot rename %s to %s: %s", tmp,
                      dest, strerror(errno));
  }
  if (rc != TW_OK)
    unlink(tmp);
  free(tmp);
  return rc;
}

int tw_store_lock(const char *db_path, struct tw_err *err) {
  char *lp = tw_asprintf("%s.lock", db_path);
  int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    tw_err_set(err, TW_E_IO, "store: cannot open the lock file %s: %s", lp,
               strerror(errno));
    free(lp);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = "";
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    pid[strcspn(pid, "\n")] = '\0';
    if (e == EWOULDBLOCK)
      tw_err_set(err, TW_E_CONFLICT,
                 "store: %.80s is in use by another tradewindd (pid %s): "
                 "two daemons on one database would both schedule; stop it "
                 "or give this one its own db",
                 db_path, *pid ? pid : "?");
    else
      tw_err_set(err, TW_E_IO, "store: cannot lock %s: %s", lp, strerror(e));
    close(fd);
    free(lp);
    return -1;
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
    /* the lock holds without the pid; the message just says "?" */
  }
  free(lp);
  return fd;
}
