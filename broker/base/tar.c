/* tar.c - ustar packing, checking and unpacking (tar.h). */
#define _GNU_SOURCE /* O_NOFOLLOW, O_DIRECTORY, nftw */
#include "broker/base/tar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define BLOCK 512
#define DEFAULT_MAX_BYTES ((uint64_t)1 << 30)
#define DEFAULT_MAX_ENTRIES 100000

/* ---- reading -------------------------------------------------------------
 */

static bool zero_block(const unsigned char *b) {
  for (int i = 0; i < BLOCK; i++)
    if (b[i])
      return false;
  return true;
}

/* An octal field: optional leading spaces, digits, then NUL or spaces to
 * the end.  -1 when malformed (base-256 included). */
static int64_t octal(const unsigned char *f, size_t n) {
  size_t i = 0;
  while (i < n && f[i] == ' ')
    i++;
  int64_t v = 0;
  size_t digits = 0;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v > (INT64_MAX >> 3))
      return -1;
    v = v * 8 + (f[i] - '0');
  }
  if (!digits)
    return -1;
  for (; i < n; i++)
    if (f[i] != '\0' && f[i] != ' ')
      return -1;
  return v;
}

static void field(char *out, const unsigned char *f, size_t n) {
  size_t i = 0;
  for (; i < n && f[i]; i++)
    out[i] = (char)f[i];
  out[i] = '\0';
}

/* Checks path's components (relative, none empty, "." or ".."); 0 or -1
 * with the reason. */
static int path_ok(const char *path, const char **why) {
  if (!*path) {
    *why = "an empty path";
    return -1;
  }
  if (path[0] == '/') {
    *why = "an absolute path";
    return -1;
  }
  const char *s = path;
  for (;;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0) {
      *why = "an empty path component";
      return -1;
    }
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
      *why = "a '.' or '..' path component";
      return -1;
    }
    if (!e)
      return 0;
    s = e + 1;
  }
}

/* A link at path to target stays inside the tree: relative, and its ".."
 * never climb above the top from the link's directory. */
static bool link_inside(const char *path, const char *target) {
  if (!*target || target[0] == '/')
    return false;
  long depth = 0;
  for (const char *q = path; *q; q++)
    if (*q == '/')
      depth++;
  const char *s = target;
  for (;;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') {
      if (--depth < 0)
        return false;
    } else if (n && !(n == 1 && s[0] == '.')) {
      depth++;
    }
    if (!e)
      return true;
    s = e + 1;
  }
}

int tw_tar_walk(const void *data, size_t len, const struct tw_tar_limits *lim,
                tw_tar_fn fn, void *ctx, char *err, size_t cap) {
  const unsigned char *d = data;
  uint64_t max_bytes =
      lim && lim->max_bytes ? lim->max_bytes : DEFAULT_MAX_BYTES;
  uint64_t max_entries =
      lim && lim->max_entries ? lim->max_entries : DEFAULT_MAX_ENTRIES;
  uint64_t bytes = 0, entries = 0;
  size_t off = 0;
  struct tw_tar_entry *e = malloc(sizeof *e);
  if (!e) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  int rc = -1;
  for (;;) {
    if (off == len) {
      rc = 0; /* the end markers left out: the archive ends here */
      break;
    }
    if (len - off < BLOCK) {
      snprintf(err, cap, "archive: truncated at byte %zu (a header needs %d)",
               off, BLOCK);
      break;
    }
    const unsigned char *h = d + off;
    if (zero_block(h)) {
      rc = 0; /* the end: what follows is padding */
      break;
    }
    unsigned long sum = 0;
    for (int i = 0; i < BLOCK; i++)
      sum += (i >= 148 && i < 156) ? ' ' : h[i];
    int64_t want = octal(h + 148, 8);
    if (want < 0 || (unsigned long)want != sum) {
      snprintf(err, cap,
               "archive: the header at byte %zu is not a tar header (bad "
               "checksum)",
               off);
      break;
    }
    bool ustar = !memcmp(h + 257, "ustar", 5);
    char name[101], prefix[156];
    field(name, h, 100);
    field(prefix, h + 345, 155);
    if (!ustar || !memcmp(h + 257, "ustar  ", 8))
      prefix[0] = '\0'; /* old and GNU headers have no prefix field */
    char full[TW_TAR_PATH_MAX + 2];
    snprintf(full, sizeof full, "%s%s%s", prefix, prefix[0] ? "/" : "", name);
    char *p = full;
    while (p[0] == '.' && p[1] == '/')
      p += 2;
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/')
      p[--pl] = '\0';
    char type = (char)h[156];
    int64_t size = octal(h + 124, 12), mode = octal(h + 100, 8);
    if (size < 0 || mode < 0) {
      snprintf(err, cap, "%.256s: a malformed size or mode field", p);
      break;
    }
    if (++entries > max_entries) {
      snprintf(err, cap, "archive: more than %llu entries",
               (unsigned long long)max_entries);
      break;
    }
    size_t blocks = ((size_t)size + BLOCK - 1) / BLOCK;
    if ((uint64_t)size > len || blocks * BLOCK > len - off - BLOCK) {
      snprintf(err, cap, "%.256s: its %lld bytes run past the archive's end", p,
               (long long)size);
      break;
    }
    memset(e, 0, sizeof *e);
    e->mode = (unsigned)mode & 07777;
    const char *why = NULL;
    if (type == '0' || type == '\0' || type == '7') {
      e->type = TW_TAR_FILE;
    } else if (type == '5') {
      e->type = TW_TAR_DIR;
    } else if (type == '2') {
      e->type = TW_TAR_LINK;
    } else {
      const char *what =
          type == '1'                  ? "a hard link"
          : type == '3' || type == '4' ? "a device"
          : type == '6'                ? "a FIFO"
          : type == 'x' || type == 'g' || type == 'L' || type == 'K'
              ? "an extended header (pack with tradewind submit, or tar "
                "--format=ustar)"
              : "an unknown entry type";
      snprintf(err, cap, "%.256s: %s is not taken", p, what);
      break;
    }
    if (e->type == TW_TAR_DIR && !*p) {
      off += BLOCK + blocks * BLOCK; /* the top itself ("./") */
      continue;
    }
    if (path_ok(p, &why)) {
      snprintf(err, cap, "%.256s: %s", p, why);
      break;
    }
    if (strlen(p) > TW_TAR_PATH_MAX) {
      snprintf(err, cap, "%.256s: longer than %d bytes", p, TW_TAR_PATH_MAX);
      break;
    }
    memcpy(e->path, p, strlen(p) + 1); /* at most TW_TAR_PATH_MAX bytes */
    if (e->type != TW_TAR_FILE && size) {
      snprintf(err, cap, "%.256s: a %s with content", p,
               e->type == TW_TAR_DIR ? "directory" : "link");
      break;
    }
    if (e->type == TW_TAR_LINK) {
      field(e->link, h + 157, 100);
      if (!link_inside(e->path, e->link)) {
        snprintf(err, cap, "%.256s: a link to %.100s, outside the directory",
                 e->path, e->link);
        break;
      }
    }
    bytes += (uint64_t)size;
    if (bytes > max_bytes) {
      snprintf(err, cap, "archive: its files hold more than %llu bytes",
               (unsigned long long)max_bytes);
      break;
    }
    e->data = d + off + BLOCK;
    e->size = (size_t)size;
    if (fn && fn(ctx, e, err, cap))
      break;
    off += BLOCK + blocks * BLOCK;
  }
  free(e);
  return rc;
}

/* ---- ignore files -------------------------------------------------------
 */

struct rule {
  char *base; /* the ignore file's directory, relative; "" the top */
  char *pat;
  bool neg, dir_only, anchored;
};

struct rules {
  struct rule *v;
  size_t n, cap;
};

/* git's wildmatch, the parts ignore files use: '*' and '?' within one
 * component, '**' across them, [...] classes with '!' or '^', '\'. */
static bool glob(const char *p, const char *s) {
  for (;;) {
    switch (*p) {
    case '\0':
      return !*s;
    case '*':
      if (p[1] == '*') {
        const char *r = p + 2;
        bool slash_after = *r == '/';
        if (slash_after)
          r++;
        if (!*r)
          return true; /* "x/" then "**": everything below */
        for (const char *t = s;; t++) {
          if ((slash_after ? (t == s || t[-1] == '/') : true) && glob(r, t))
            return true;
          if (!*t)
            return false;
        }
      }
      for (const char *t = s;; t++) {
        if (glob(p + 1, t))
          return true;
        if (!*t || *t == '/')
          return false;
      }
    case '?':
      if (!*s || *s == '/')
        return false;
      p++, s++;
      break;
    case '[': {
      if (!*s || *s == '/')
        return false;
      const char *q = p + 1;
      bool neg = *q == '!' || *q == '^';
      if (neg)
        q++;
      bool hit = false;
      bool first = true;
      while (*q && (first || *q != ']')) {
        first = false;
        char lo = *q == '\\' && q[1] ? *++q : *q;
        char hi = lo;
        if (q[1] == '-' && q[2] && q[2] != ']') {
          hi = q[2] == '\\' && q[3] ? q[3] : q[2];
          q += q[2] == '\\' ? 3 : 2;
        }
        if (*s >= lo && *s <= hi)
          hit = true;
        q++;
      }
      if (*q != ']')
        return *p == *s && glob(p + 1, s + 1); /* no class: a '[' */
      if (hit == neg)
        return false;
      p = q + 1, s++;
      break;
    }
    case '\\':
      if (p[1])
        p++;
      /* fall through */
    default:
      if (*p != *s)
        return false;
      p++, s++;
    }
  }
}

static void rules_read(struct rules *r, const char *file, const char *base) {
  FILE *f = fopen(file, "r");
  if (!f)
    return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    while (n && line[n - 1] == ' ' && !(n > 1 && line[n - 2] == '\\'))
      line[--n] = '\0';
    char *s = line;
    if (!*s || *s == '#')
      continue;
    struct rule u = {0};
    if (*s == '!') {
      u.neg = true;
      s++;
    } else if (*s == '\\' && (s[1] == '!' || s[1] == '#')) {
      s++;
    }
    n = strlen(s);
    if (n && s[n - 1] == '/') {
      u.dir_only = true;
      s[--n] = '\0';
    }
    if (!n)
      continue;
    u.anchored = strchr(s, '/') != NULL;
    if (*s == '/')
      s++;
    if (r->n == r->cap) {
      r->cap = r->cap ? r->cap * 2 : 16;
      r->v = tw_realloc(r->v, r->cap * sizeof *r->v);
    }
    u.base = tw_strdup(base);
    u.pat = tw_strdup(s);
    r->v[r->n++] = u;
  }
  fclose(f);
}

static void rules_truncate(struct rules *r, size_t n) {
  while (r->n > n) {
    r->n--;
    free(r->v[r->n].base);
    free(r->v[r->n].pat);
  }
}

static bool ignored(const struct rules *r, const char *rel, bool is_dir) {
  bool out = false;
  for (size_t i = 0; i < r->n; i++) {
    const struct rule *u = &r->v[i];
    if (u->dir_only && !is_dir)
      continue;
    const char *sub = rel;
    size_t bl = strlen(u->base);
    if (bl) {
      if (strncmp(rel, u->base, bl) || rel[bl] != '/')
        continue;
      sub = rel + bl + 1;
    }
    bool hit;
    if (u->anchored) {
      hit = glob(u->pat, sub);
    } else {
      const char *slash = strrchr(sub, '/');
      hit = glob(u->pat, slash ? slash + 1 : sub);
    }
    if (hit)
      out = !u->neg;
  }
  return out;
}

/* ---- writing ------------------------------------------------------------
 */

struct packer {
  struct tw_buf *out;
  uint64_t max_bytes;
  size_t start;
  struct rules rules;
  bool sky; /* .skyignore at the top: each directory's .skyignore is read,
               no .gitignore */
  char *err;
  size_t cap;
};

static int name_split(const char *s, char *name, char *prefix) {
  size_t n = strlen(s);
  if (n <= 100) {
    memcpy(name, s, n);
    prefix[0] = '\0';
    return 0;
  }
  for (size_t i = n - 1; i > 0; i--) {
    if (s[i] != '/' || i > 155 || n - i - 1 > 100 || n - i - 1 == 0)
      continue;
    memcpy(prefix, s, i);
    prefix[i] = '\0';
    memcpy(name, s + i + 1, n - i - 1);
    return 0;
  }
  return -1;
}

static int header(struct packer *k, const char *rel, char type, unsigned mode,
                  uint64_t size, const char *link) {
  unsigned char h[BLOCK];
  memset(h, 0, sizeof h);
  char stored[TW_TAR_PATH_MAX + 2], name[101] = {0}, prefix[156] = {0};
  snprintf(stored, sizeof stored, "%s%s", rel, type == '5' ? "/" : "");
  if (strlen(rel) > TW_TAR_PATH_MAX || name_split(stored, name, prefix)) {
    snprintf(k->err, k->cap,
             "%.256s: the path is too long for the archive (at most 100 "
             "bytes after a '/' within its first 155)",
             rel);
    return -1;
  }
  memcpy(h, name, strlen(name));
  snprintf((char *)h + 100, 8, "%07o", mode & 07777);
  memcpy(h + 108, "0000000", 8);
  memcpy(h + 116, "0000000", 8);
  snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
  memcpy(h + 136, "00000000000", 12);
  h[156] = (unsigned char)type;
  if (link)
    memcpy(h + 157, link, strlen(link));
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memcpy(h + 345, prefix, strlen(prefix));
  unsigned long sum = 0;
  memset(h + 148, ' ', 8);
  for (int i = 0; i < BLOCK; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06lo", sum);
  h[155] = ' ';
  tw_buf_add(k->out, h, BLOCK);
  return 0;
}

static int too_big(struct packer *k, uint64_t more) {
  if (k->out->len - k->start + more + 2 * BLOCK > k->max_bytes) {
    snprintf(k->err, k->cap, "the archive would be over %llu bytes",
             (unsigned long long)k->max_bytes);
    return -1;
  }
  return 0;
}

static int add_file(struct packer *k, const char *path, const char *rel,
                    const struct stat *st) {
  uint64_t size = (uint64_t)st->st_size;
  if (too_big(k, BLOCK + size))
    return -1;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    snprintf(k->err, k->cap, "%.256s: cannot read: %s", rel, strerror(errno));
    return -1;
  }
  if (header(k, rel, '0', (st->st_mode & S_IXUSR) ? 0755 : 0644, size, NULL)) {
    close(fd);
    return -1;
  }
  uint64_t left = size;
  char chunk[65536];
  while (left) {
    ssize_t n = read(fd, chunk, left < sizeof chunk ? left : sizeof chunk);
    if (n <= 0) {
      snprintf(k->err, k->cap, "%.256s: %s while reading", rel,
               n < 0 ? strerror(errno) : "it shrank");
      close(fd);
      return -1;
    }
    tw_buf_add(k->out, chunk, (size_t)n);
    left -= (uint64_t)n;
  }
  close(fd);
  static const unsigned char pad[BLOCK];
  if (size % BLOCK)
    tw_buf_add(k->out, pad, BLOCK - size % BLOCK);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int pack_dir(struct packer *k, const char *path, const char *rel) {
  size_t mark = k->rules.n;
  if (*rel || !k->sky) { /* the top's .skyignore is read already */
    char gi[4200];
    snprintf(gi, sizeof gi, "%s/%s", path,
             k->sky ? ".skyignore" : ".gitignore");
    rules_read(&k->rules, gi, rel);
  }
  DIR *dir = opendir(path);
  if (!dir) {
    snprintf(k->err, k->cap, "%.256s: cannot read the directory: %s",
             *rel ? rel : ".", strerror(errno));
    rules_truncate(&k->rules, mark);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      names = tw_realloc(names, cap * sizeof *names);
    }
    names[n++] = tw_strdup(de->d_name);
  }
  closedir(dir);
  if (n)
    qsort(names, n, sizeof *names, cmp_str);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    char sub[TW_TAR_PATH_MAX * 2 + 8], full[4400];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
    snprintf(full, sizeof full, "%s/%s", path, names[i]);
    struct stat st;
    if (lstat(full, &st)) {
      snprintf(k->err, k->cap, "%.256s: %s", sub, strerror(errno));
      rc = -1;
      break;
    }
    if (ignored(&k->rules, sub, S_ISDIR(st.st_mode)))
      continue;
    if (S_ISDIR(st.st_mode)) {
      if (too_big(k, BLOCK) || header(k, sub, '5', 0755, 0, NULL))
        rc = -1;
      else
        rc = pack_dir(k, full, sub);
    } else if (S_ISREG(st.st_mode)) {
      rc = add_file(k, full, sub, &st);
    } else if (S_ISLNK(st.st_mode)) {
      char target[TW_TAR_LINK_MAX + 2];
      ssize_t tl = readlink(full, target, sizeof target - 1);
      if (tl < 0 || tl > TW_TAR_LINK_MAX) {
        snprintf(k->err, k->cap, "%.256s: %s", sub,
                 tl < 0 ? strerror(errno)
                        : "a link whose target is over 100 bytes");
        rc = -1;
        break;
      }
      target[tl] = '\0';
      if (!link_inside(sub, target)) {
        snprintf(k->err, k->cap,
                 "%.256s: a link to %.100s, outside the directory (copy "
                 "what it points to into the directory, or ignore it in "
                 ".skyignore)",
                 sub, target);
        rc = -1;
        break;
      }
      if (too_big(k, BLOCK) || header(k, sub, '2', 0777, 0, target))
        rc = -1;
    } else {
      snprintf(k->err, k->cap,
               "%.256s: neither a file, a directory nor a link (ignore it "
               "in .skyignore)",
               sub);
      rc = -1;
    }
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  rules_truncate(&k->rules, mark);
  return rc;
}

int tw_tar_pack(const char *dir, uint64_t max_bytes, struct tw_buf *out,
                char *err, size_t cap) {
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(err, cap, "%.256s: %s", dir,
             errno && !S_ISDIR(st.st_mode) ? "not a directory"
                                           : strerror(errno));
    return -1;
  }
  struct packer k = {.out = out,
                     .max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES,
                     .start = out->len,
                     .err = err,
                     .cap = cap};
  char sky[4200];
  snprintf(sky, sizeof sky, "%s/.skyignore", dir);
  if (access(sky, F_OK) == 0) {
    k.sky = true;
    rules_read(&k.rules, sky, "");
  } else {
    /* the repository's own excludes, as for the top's .gitignore */
    char ex[4200];
    snprintf(ex, sizeof ex, "%s/.git/info/exclude", dir);
    rules_read(&k.rules, ex, "");
  }
  int rc = pack_dir(&k, dir, "");
  rules_truncate(&k.rules, 0);
  free(k.rules.v);
  if (!rc) {
    static const unsigned char end[2 * BLOCK];
    tw_buf_add(out, end, sizeof end);
  }
  return rc;
}

/* ---- unpacking ----------------------------------------------------------
 */

struct unpacker {
  int root;
  int uid, gid;
};

static int on_entry(void *ctx, const struct tw_tar_entry *e, char *err,
                    size_t cap) {
  struct unpacker *u = ctx;
  char path[TW_TAR_PATH_MAX + 1];
  snprintf(path, sizeof path, "%s", e->path);
  int fd = dup(u->root);
  if (fd < 0) {
    snprintf(err, cap, "%.256s: %s", e->path, strerror(errno));
    return -1;
  }
  char *s = path;
  char *slash;
  while ((slash = strchr(s, '/'))) {
    *slash = '\0';
    int next = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(fd, s, 0700) == 0) {
        if (u->uid != -1 &&
            fchownat(fd, s, (uid_t)u->uid, (gid_t)u->gid, AT_SYMLINK_NOFOLLOW))
          goto fail;
        fchmodat(fd, s, 0755, 0);
      }
      next = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      snprintf(err, cap, "%.256s: %s is %s", e->path, path,
               errno == ELOOP || errno == ENOTDIR ? "not a directory"
                                                  : strerror(errno));
      close(fd);
      return -1;
    }
    close(fd);
    fd = next;
    *slash = '/';
    s = slash + 1;
  }
  const char *base = s;
  if (e->type == TW_TAR_DIR) {
    if (mkdirat(fd, base, 0700) && errno != EEXIST)
      goto fail;
    struct stat st;
    if (fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode)) {
      snprintf(err, cap, "%.256s: named twice", e->path);
      close(fd);
      return -1;
    }
    if (u->uid != -1 &&
        fchownat(fd, base, (uid_t)u->uid, (gid_t)u->gid, AT_SYMLINK_NOFOLLOW))
      goto fail;
    if (fchmodat(fd, base, (e->mode & 0777) | 0700, 0))
      goto fail;
  } else if (e->type == TW_TAR_LINK) {
    if (symlinkat(e->link, fd, base)) {
      if (errno == EEXIST) {
        snprintf(err, cap, "%.256s: named twice", e->path);
        close(fd);
        return -1;
      }
      goto fail;
    }
    if (u->uid != -1 &&
        fchownat(fd, base, (uid_t)u->uid, (gid_t)u->gid, AT_SYMLINK_NOFOLLOW))
      goto fail;
  } else {
    int f = openat(fd, base,
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0) {
      if (errno == EEXIST) {
        snprintf(err, cap, "%.256s: named twice", e->path);
        close(fd);
        return -1;
      }
      goto fail;
    }
    size_t off = 0;
    while (off < e->size) {
      ssize_t n = write(f, e->data + off, e->size - off);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        close(f);
        goto fail;
      }
      off += (size_t)n;
    }
    if ((u->uid != -1 && fchown(f, (uid_t)u->uid, (gid_t)u->gid)) ||
        fchmod(f, e->mode & 0777)) {
      close(f);
      goto fail;
    }
    if (close(f))
      goto fail;
  }
  close(fd);
  return 0;
fail:
  snprintf(err, cap, "%.256s: %s", e->path, strerror(errno));
  close(fd);
  return -1;
}

int tw_tar_unpack(const void *data, size_t len, const struct tw_tar_limits *lim,
                  const char *dir, int uid, int gid, char *err, size_t cap) {
  /* checked whole first: a bad archive leaves nothing behind */
  if (tw_tar_walk(data, len, lim, NULL, NULL, err, cap))
    return -1;
  if (mkdir(dir, 0700)) {
    snprintf(err, cap, "%.256s: %s", dir, strerror(errno));
    return -1;
  }
  struct unpacker u = {.uid = uid, .gid = gid};
  u.root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (u.root < 0) {
    snprintf(err, cap, "%.256s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = tw_tar_walk(data, len, lim, on_entry, &u, err, cap);
  if (!rc && uid != -1 &&
      (fchown(u.root, (uid_t)uid, (gid_t)gid) || fchmod(u.root, 0755))) {
    snprintf(err, cap, "%.256s: %s", dir, strerror(errno));
    rc = -1;
  }
  close(u.root);
  return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int tw_tar_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st))
    return errno == ENOENT ? 0 : -1;
  return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
