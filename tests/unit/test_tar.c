/* test_tar.c - a job's working directory as an archive (broker/base/tar.h):
 * packing is deterministic and honours .skyignore / .gitignore, what is
 * packed unpacks to the same tree, and the reader refuses absolute paths,
 * "..", links out, other entry types, bad checksums, truncation and the
 * limits, while the unpacker never writes through a link. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/tar.h"

static char tmp[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmp, sizeof tmp, "/tmp/tw-test-tar-XXXXXX");
  return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return tw_tar_remove_tree(tmp);
}

static void put(const char *rel, const char *text, mode_t mode) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", tmp, rel);
  /* parents */
  for (char *s = p + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
    *s = '\0';
    mkdir(p, 0755);
    *s = '/';
  }
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  chmod(p, mode);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *b = calloc(1, 4096);
  size_t n = fread(b, 1, 4095, f);
  b[n] = '\0';
  fclose(f);
  return b;
}

static int list_one(void *ctx, const struct tw_tar_entry *e, char *err,
                    size_t cap) {
  (void)err;
  (void)cap;
  struct tw_buf *b = ctx;
  tw_buf_printf(b, "%c %s%s%s\n",
                e->type == TW_TAR_DIR    ? 'd'
                : e->type == TW_TAR_LINK ? 'l'
                                         : 'f',
                e->path, e->type == TW_TAR_LINK ? " -> " : "",
                e->type == TW_TAR_LINK ? e->link : "");
  return 0;
}

static char *listing(const struct tw_buf *tar) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "");
  char err[512] = "";
  TW_CHECK(tw_tar_walk(tar->data, tar->len, NULL, list_one, &b, err,
                       sizeof err) == 0,
           "%s", err);
  return tw_buf_detach(&b);
}

static void pack_ok(const char *dir, struct tw_buf *out) {
  char err[512] = "";
  tw_buf_init(out);
  TW_CHECK(tw_tar_pack(dir, 0, out, err, sizeof err) == 0, "%s", err);
}

static void a_tree_packs_the_same_bytes_and_unpacks_to_itself(void **state) {
  (void)state;
  char src[300];
  snprintf(src, sizeof src, "%s/src", tmp);
  put("src/train.py", "print('hi')\n", 0644);
  put("src/run.sh", "#!/bin/sh\necho run\n", 0755);
  put("src/data/b.txt", "bee\n", 0600);
  put("src/data/a.txt", "ay\n", 0644);
  char link[320];
  snprintf(link, sizeof link, "%s/latest", src);
  assert_int_equal(symlink("data/a.txt", link), 0);

  struct tw_buf one, two;
  pack_ok(src, &one);
  /* a file touched again (a new mtime, the same bytes) packs the same */
  char p[320];
  snprintf(p, sizeof p, "%s/data/a.txt", src);
  sleep(1);
  put("src/data/a.txt", "ay\n", 0644);
  pack_ok(src, &two);
  assert_int_equal(one.len, two.len);
  assert_memory_equal(one.data, two.data, one.len);
  assert_int_equal(one.len % 512, 0);

  char *l = listing(&one);
  TW_CHECK_STR(l, "d data\nf data/a.txt\nf data/b.txt\nl latest -> "
                  "data/a.txt\nf run.sh\nf train.py\n");
  free(l);

  char dst[300], err[512] = "";
  snprintf(dst, sizeof dst, "%s/out", tmp);
  TW_CHECK(
      tw_tar_unpack(one.data, one.len, NULL, dst, -1, -1, err, sizeof err) == 0,
      "%s", err);
  snprintf(p, sizeof p, "%s/run.sh", dst);
  char *t = read_text(p);
  TW_CHECK_STR(t, "#!/bin/sh\necho run\n");
  free(t);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  TW_CHECK_INT(st.st_mode & 0777, 0755);
  snprintf(p, sizeof p, "%s/data/b.txt", dst);
  assert_int_equal(stat(p, &st), 0);
  TW_CHECK_INT(st.st_mode & 0777, 0644); /* modes are normalised */
  snprintf(p, sizeof p, "%s/latest", dst);
  t = read_text(p);
  TW_CHECK_STR(t, "ay\n");
  free(t);
  /* unpacking into a directory that exists is refused */
  TW_CHECK(tw_tar_unpack(one.data, one.len, NULL, dst, -1, -1, err,
                         sizeof err) != 0);
  tw_buf_release(&one);
  tw_buf_release(&two);
}

static void gitignore_and_skyignore_exclude(void **state) {
  (void)state;
  char src[300];
  snprintf(src, sizeof src, "%s/ign", tmp);
  put("ign/.gitignore", "# build output\n*.o\n/out/\ncache/\n!keep.o\n", 0644);
  put("ign/main.c", "int main;\n", 0644);
  put("ign/main.o", "obj", 0644);
  put("ign/keep.o", "kept", 0644);
  put("ign/out/x", "x", 0644);
  put("ign/lib/out/y", "y", 0644); /* /out/ is anchored to the top */
  put("ign/lib/cache/z", "z", 0644);
  put("ign/lib/.gitignore", "*.tmp\n", 0644);
  put("ign/lib/a.tmp", "t", 0644);
  put("ign/b.tmp", "t", 0644); /* lib's .gitignore is lib's alone */
  put("ign/docs/deep/n/x.log", "l", 0644);
  put("ign/.git/info/exclude", "# the repository's own\n/.git/\nlocal.env\n",
      0644);
  put("ign/local.env", "K=v", 0644);
  struct tw_buf t;
  pack_ok(src, &t);
  char *l = listing(&t);
  TW_CHECK_STR(l, "f .gitignore\nf b.tmp\nd docs\nd docs/deep\nd "
                  "docs/deep/n\nf docs/deep/n/x.log\nf keep.o\nd lib\nf "
                  "lib/.gitignore\nd lib/out\nf lib/out/y\nf main.c\n");
  free(l);
  tw_buf_release(&t);
  /* .skyignore at the top replaces every .gitignore (and the
   * repository's excludes); a deeper .skyignore counts too */
  put("ign/.skyignore", "docs/**/*.log\nlib/\n.git/\n", 0644);
  put("ign/out/.skyignore", "x\n", 0644);
  pack_ok(src, &t);
  l = listing(&t);
  TW_CHECK_STR(l, "f .gitignore\nf .skyignore\nf b.tmp\nd docs\nd "
                  "docs/deep\nd docs/deep/n\nf keep.o\nf local.env\nf "
                  "main.c\nf main.o\nd out\nf out/.skyignore\n");
  free(l);
  tw_buf_release(&t);
}

static void a_link_out_of_the_tree_is_not_packed(void **state) {
  (void)state;
  char src[300], link[320], err[512] = "";
  snprintf(src, sizeof src, "%s/lnk", tmp);
  put("lnk/a", "a", 0644);
  snprintf(link, sizeof link, "%s/escape", src);
  assert_int_equal(symlink("../../etc", link), 0);
  struct tw_buf t;
  tw_buf_init(&t);
  TW_CHECK(tw_tar_pack(src, 0, &t, err, sizeof err) != 0);
  TW_CHECK(strstr(err, "escape: a link to ../../etc, outside") != NULL, "%s",
           err);
  tw_buf_release(&t);
  /* and the bound on the archive's size */
  unlink(link);
  tw_buf_init(&t);
  TW_CHECK(tw_tar_pack(src, 1024, &t, err, sizeof err) != 0);
  TW_CHECK(strstr(err, "over 1024 bytes") != NULL, "%s", err);
  tw_buf_release(&t);
}

/* One ustar header for name (type, size, link) followed by content. */
static void raw(struct tw_buf *b, const char *name, char type,
                const char *content, const char *link) {
  unsigned char h[512];
  memset(h, 0, sizeof h);
  size_t size = content ? strlen(content) : 0;
  memcpy(h, name, strlen(name) < 100 ? strlen(name) : 100);
  snprintf((char *)h + 100, 8, "%07o", 0644);
  snprintf((char *)h + 108, 8, "%07o", 0);
  snprintf((char *)h + 116, 8, "%07o", 0);
  char sz[32];
  snprintf(sz, sizeof sz, "%011o", (unsigned)size);
  memcpy(h + 124, sz, 12);
  snprintf((char *)h + 136, 12, "%011o", 0);
  h[156] = (unsigned char)type;
  if (link)
    memcpy(h + 157, link, strlen(link));
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned long sum = 0;
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06lo", sum);
  h[155] = ' ';
  tw_buf_add(b, h, 512);
  if (size) {
    unsigned char pad[512] = {0};
    tw_buf_add(b, content, size);
    if (size % 512)
      tw_buf_add(b, pad, 512 - size % 512);
  }
}

static void refused(struct tw_buf *b, const char *want) {
  char err[512] = "";
  unsigned char end[1024] = {0};
  tw_buf_add(b, end, sizeof end);
  TW_CHECK(tw_tar_walk(b->data, b->len, NULL, NULL, NULL, err, sizeof err) != 0,
           "accepted, wanted %s", want);
  TW_CHECK(strstr(err, want) != NULL, "got \"%s\", wanted \"%s\"", err, want);
  char dst[300];
  snprintf(dst, sizeof dst, "%s/refused", tmp);
  TW_CHECK(tw_tar_unpack(b->data, b->len, NULL, dst, -1, -1, err, sizeof err) !=
           0);
  struct stat st;
  TW_CHECK(lstat(dst, &st) != 0, "a refused archive left %s behind", dst);
  tw_buf_release(b);
  tw_buf_init(b);
}

static void the_reader_refuses_what_could_escape(void **state) {
  (void)state;
  struct tw_buf b;
  tw_buf_init(&b);
  raw(&b, "/etc/passwd", '0', "x", NULL);
  refused(&b, "/etc/passwd: an absolute path");
  raw(&b, "a/../../x", '0', "x", NULL);
  refused(&b, "a/../../x: a '.' or '..' path component");
  raw(&b, "l", '2', NULL, "/etc");
  refused(&b, "l: a link to /etc, outside the directory");
  raw(&b, "d/l", '2', NULL, "../../x");
  refused(&b, "d/l: a link to ../../x, outside");
  raw(&b, "h", '1', NULL, "x");
  refused(&b, "h: a hard link is not taken");
  raw(&b, "dev", '3', NULL, NULL);
  refused(&b, "dev: a device is not taken");
  raw(&b, "././@PaxHeader", 'x', "30 path=x\n", NULL);
  refused(&b, "an extended header");
  raw(&b, "ok", '0', "content", NULL);
  b.data[0] = 'O'; /* the checksum no longer holds */
  refused(&b, "bad checksum");
  raw(&b, "big", '0', "0123456789", NULL);
  b.len = 512 + 5; /* cut inside the content */
  {
    char err[512];
    TW_CHECK(tw_tar_walk(b.data, b.len, NULL, NULL, NULL, err, sizeof err) !=
             0);
    TW_CHECK(strstr(err, "past the archive's end") != NULL, "%s", err);
    tw_buf_release(&b);
    tw_buf_init(&b);
  }
  /* limits */
  raw(&b, "a", '0', "0123456789", NULL);
  raw(&b, "b", '0', "0123456789", NULL);
  {
    char err[512];
    struct tw_tar_limits lim = {.max_bytes = 15};
    TW_CHECK(tw_tar_walk(b.data, b.len, &lim, NULL, NULL, err, sizeof err) !=
             0);
    TW_CHECK(strstr(err, "more than 15 bytes") != NULL, "%s", err);
    struct tw_tar_limits lim2 = {.max_entries = 1};
    TW_CHECK(tw_tar_walk(b.data, b.len, &lim2, NULL, NULL, err, sizeof err) !=
             0);
    TW_CHECK(strstr(err, "more than 1 entries") != NULL, "%s", err);
    tw_buf_release(&b);
  }
}

static void the_unpacker_never_writes_through_a_link(void **state) {
  (void)state;
  /* an inside link to a directory, then a file under the link's name:
   * written through, it would land elsewhere; refused instead */
  struct tw_buf b;
  tw_buf_init(&b);
  raw(&b, "real/", '5', NULL, NULL);
  raw(&b, "via", '2', NULL, "real");
  raw(&b, "via/f", '0', "x", NULL);
  unsigned char end[1024] = {0};
  tw_buf_add(&b, end, sizeof end);
  char dst[300], err[512] = "";
  snprintf(dst, sizeof dst, "%s/nofollow", tmp);
  TW_CHECK(tw_tar_unpack(b.data, b.len, NULL, dst, -1, -1, err, sizeof err) !=
           0);
  TW_CHECK(strstr(err, "via/f: via is not a directory") != NULL, "%s", err);
  char p[400];
  snprintf(p, sizeof p, "%s/real/f", dst);
  struct stat st;
  TW_CHECK(lstat(p, &st) != 0, "written through the link");
  tw_buf_release(&b);
  /* a file named twice */
  tw_buf_init(&b);
  raw(&b, "twice", '0', "1", NULL);
  raw(&b, "twice", '0', "2", NULL);
  tw_buf_add(&b, end, sizeof end);
  snprintf(dst, sizeof dst, "%s/twice", tmp);
  TW_CHECK(tw_tar_unpack(b.data, b.len, NULL, dst, -1, -1, err, sizeof err) !=
           0);
  TW_CHECK(strstr(err, "twice: named twice") != NULL, "%s", err);
  tw_buf_release(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_tree_packs_the_same_bytes_and_unpacks_to_itself),
      cmocka_unit_test(gitignore_and_skyignore_exclude),
      cmocka_unit_test(a_link_out_of_the_tree_is_not_packed),
      cmocka_unit_test(the_reader_refuses_what_could_escape),
      cmocka_unit_test(the_unpacker_never_writes_through_a_link),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
