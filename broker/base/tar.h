/* tar.h - a job's working directory as an archive (docs/skypilot.md,
 * "workdir"): packed by `tradewind submit` from a local directory, checked
 * by the broker when it is uploaded, unpacked by tradewind-agent into the
 * job's directory.
 *
 * The archive is POSIX ustar, written deterministically: entries sorted by
 * path (bytewise), directories before what they hold, owner 0, times 0,
 * modes 0755 (directories, files executable by their owner) or 0644, no
 * user or group names.  So the same tree packs to the same bytes, and its
 * SHA-256 names it.  Only directories, regular files and symbolic links
 * whose target stays inside the tree are taken; anything else (hard links,
 * devices, FIFOs, extended headers) is refused by the reader with the
 * entry's path and the reason.  The reader is a pure function over bytes
 * (tests/fuzz/fuzz_tar.c); the unpacker never follows a link while it
 * writes, so an archive cannot reach outside its directory. */
#ifndef TW_BASE_TAR_H
#define TW_BASE_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/mem.h"

#define TW_TAR_PATH_MAX 256 /* ustar: a 155-byte prefix, '/', 100 bytes */
#define TW_TAR_LINK_MAX 100

enum tw_tar_type { TW_TAR_FILE, TW_TAR_DIR, TW_TAR_LINK };

struct tw_tar_entry {
  enum tw_tar_type type;
  char path[TW_TAR_PATH_MAX + 1]; /* relative, no trailing '/' */
  char link[TW_TAR_LINK_MAX + 1]; /* TW_TAR_LINK: the target */
  unsigned mode;                  /* permission bits, 07777 */
  const unsigned char *data;      /* TW_TAR_FILE: size bytes inside the
                                     archive */
  size_t size;
};

struct tw_tar_limits {
  uint64_t max_bytes;   /* of file content, all entries; 0: 1 GiB */
  uint64_t max_entries; /* 0: 100000 */
};

/* Calls fn for each entry of the archive in data[0..len) after checking
 * it: a valid header (checksum, octal fields), a relative path without
 * "..", "." or empty components, a known type, a link target that is
 * relative and stays inside the tree, the content inside the archive, the
 * limits.  The archive ends with two zero blocks (or at len, on a block
 * boundary).  fn may be NULL (only the checks); returning non-zero stops
 * the walk (its message in err).  Returns 0, or -1 with a message that
 * starts with the entry's path in err. */
typedef int (*tw_tar_fn)(void *ctx, const struct tw_tar_entry *e, char *err,
                         size_t cap);
int tw_tar_walk(const void *data, size_t len, const struct tw_tar_limits *lim,
                tw_tar_fn fn, void *ctx, char *err, size_t cap);

/* Packs the tree under dir into out (appended), as described above,
 * leaving out what the directory's ignore files exclude, as SkyPilot does:
 * with a `.skyignore` at its top, each directory's `.skyignore`; else
 * `.git/info/exclude` at the top and each directory's `.gitignore`
 * (patterns as git reads them: `#` comments, `!` negation, a trailing `/`
 * for directories only, a `/` elsewhere anchors the pattern to the file's
 * directory, `*`, `?`, `[...]` and `**`).  At most max_bytes (0: 1 GiB) of
 * archive.  Returns 0, or -1 with a message naming the path in err. */
int tw_tar_pack(const char *dir, uint64_t max_bytes, struct tw_buf *out,
                char *err, size_t cap);

/* Unpacks the archive (checked as tw_tar_walk) into dir, which must not
 * exist yet: it is made 0700 (0755 when uid is not -1).  Never follows a
 * symbolic link: every directory is opened with O_NOFOLLOW from dir down,
 * every file created with O_EXCL, so an entry named twice is refused.
 * With uid and gid other than -1 every entry is given to them.  Returns 0,
 * or -1 with the message in err (what was unpacked stays; the caller
 * removes it). */
int tw_tar_unpack(const void *data, size_t len, const struct tw_tar_limits *lim,
                  const char *dir, int uid, int gid, char *err, size_t cap);

/* Removes the tree at path (never following a link).  0 or -1. */
int tw_tar_remove_tree(const char *path);

#endif
