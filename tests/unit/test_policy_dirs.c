/* Nothing loadable from the API (issue 16, finding 4): score plugins and
 * network files come only from policies.plugin_dir / network_dir of the
 * config file, and a name that is a path, or that leads outside through a
 * link, is refused before dlopen() or open().  The plugin offered has a
 * constructor that leaves a mark (test_policy_plugin_ctor.c): a refusal
 * that came after dlopen() would leave it. */
#include "tests/twtest.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policies/place/policy.h"

static char dir[64], plugins[128], nets[128], mark[128];

static bool marked(void) { return access(mark, F_OK) == 0; }

static void copy(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  TW_CHECK(in >= 0 && out >= 0, "copy %s", from);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    TW_CHECK(write(out, buf, (size_t)n) == n);
  close(in);
  close(out);
}

/* Builds a config-file section and expects it refused on field. */
static void refused_config(const char *section, const char *field,
                           const char *why) {
  struct tw_policy_set *s = NULL;
  struct tw_err err = {0};
  enum tw_rc rc = tw_policy_set_parse(section, strlen(section), dir, &s, &err);
  TW_CHECK(rc == TW_E_INVALID, "accepted: %s", section);
  TW_CHECK_STR(err.field, field);
  TW_CHECK(strstr(err.msg, why), "%s: \"%s\" lacks \"%s\"", section, err.msg,
           why);
  TW_CHECK(!marked(), "%s: the plugin's constructor ran", section);
}

static void
a_plugin_outside_the_directory_is_refused_before_dlopen(void **state) {
  (void)state;
  char cfg[1024];
  /* the absolute path of the very file */
  snprintf(cfg, sizeof cfg,
           "plugin_dir: plugins\nscores: [{name: x, path: %s}]",
           TW_PLUGIN_CTOR);
  refused_config(cfg, "policies.scores[0]", "expected a file name inside");
  /* climbing out */
  refused_config("plugin_dir: plugins\nscores: [{name: x, path: ../evil.so}]",
                 "policies.scores[0]", "expected a file name inside");
  refused_config("plugin_dir: plugins\nscores: [{name: x, path: ..}]",
                 "policies.scores[0]", "expected a file name inside");
  /* a control byte in the name */
  refused_config("plugin_dir: plugins\nscores: [{name: x, path: \"a\\tb.so\"}]",
                 "policies.scores[0]", "control bytes");
  /* a link inside the directory that leads outside */
  char link[256];
  snprintf(link, sizeof link, "%s/link.so", plugins);
  TW_CHECK(symlink(TW_PLUGIN_CTOR, link) == 0);
  refused_config("plugin_dir: plugins\nscores: [{name: x, path: link.so}]",
                 "policies.scores[0]", "leads outside policies.plugin_dir");
  unlink(link);
  /* no plugin_dir: no plugin at all */
  snprintf(cfg, sizeof cfg, "scores: [{name: x, path: %s}]", TW_PLUGIN_CTOR);
  refused_config(cfg, "policies.scores[0]", "sets no policies.plugin_dir");

  /* what a request says: its own directory is refused, and the names are
   * read in the directories of the set in force */
  struct tw_policy_set *cur = NULL, *s = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_policy_set_parse("plugin_dir: plugins", 19, dir, &cur, &err),
              TW_OK, err);
  snprintf(cfg, sizeof cfg, "plugin_dir: /\nscores: [{name: x, path: %s}]",
           TW_PLUGIN_CTOR + 1);
  TW_CHECK(tw_policy_set_parse_request(cfg, strlen(cfg), cur, &s, &err) ==
           TW_E_INVALID);
  TW_CHECK_STR(err.field, "policies.plugin_dir");
  TW_CHECK(!marked(), "a request's plugin_dir reached dlopen");
  tw_err_clear(&err);
  snprintf(cfg, sizeof cfg, "scores: [{name: x, path: %s}]", TW_PLUGIN_CTOR);
  TW_CHECK(tw_policy_set_parse_request(cfg, strlen(cfg), cur, &s, &err) ==
           TW_E_INVALID);
  TW_CHECK(!marked(), "a request's path reached dlopen");
  tw_err_clear(&err);

  /* the control: the same file inside the directory is loaded (its
   * constructor runs; it has no tw_policy_plugin, so it is refused after) */
  char inside[256];
  snprintf(inside, sizeof inside, "%s/ctor.so", plugins);
  copy(TW_PLUGIN_CTOR, inside);
  TW_CHECK(tw_policy_set_parse_request("scores: [{name: x, path: ctor.so}]", 34,
                                       cur, &s, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "no symbol tw_policy_plugin"), "%s", err.msg);
  TW_CHECK(marked(),
           "the mark does not show a dlopen: the test proves nothing");
  unlink(inside);
  tw_policy_set_unref(cur);
}

static void network_files_only_by_name_inside_their_directory(void **state) {
  (void)state;
  char path[256];
  snprintf(path, sizeof path, "%s/lab.net", nets);
  FILE *f = fopen(path, "w");
  fputs("tradewind-network 1\nregion aws:lab-1 lat=1 lon=1\n", f);
  fclose(f);
  struct tw_policy_set *cur = NULL, *s = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_policy_set_parse("network_dir: nets\nnetwork: lab.net", 34,
                                  dir, &cur, &err),
              TW_OK, err);
  /* a request names another file of the same directory */
  TW_CHECK_RC(
      tw_policy_set_parse_request("network: lab.net", 16, cur, &s, &err), TW_OK,
      err);
  tw_policy_set_unref(s);
  /* but no path: an oracle for which files exist elsewhere is gone, the
   * answer the same whether the file exists or not */
  static const char *const paths[] = {"network: /etc/passwd",
                                      "network: /no/such/file",
                                      "network: ../nets/lab.net"};
  for (size_t i = 0; i < 3; i++) {
    tw_err_clear(&err);
    TW_CHECK(tw_policy_set_parse_request(paths[i], strlen(paths[i]), cur, &s,
                                         &err) == TW_E_INVALID,
             "%s accepted", paths[i]);
    TW_CHECK_STR(err.field, "policies.network");
    TW_CHECK(strstr(err.msg, "expected a file name inside"), "%s", err.msg);
  }
  tw_err_clear(&err);
  static const char own[] = "network_dir: /etc\nnetwork: passwd";
  TW_CHECK(tw_policy_set_parse_request(own, strlen(own), cur, &s, &err) ==
           TW_E_INVALID);
  TW_CHECK_STR(err.field, "policies.network_dir");
  tw_policy_set_unref(cur);
  unlink(path);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-pdirs-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(plugins, sizeof plugins, "%s/plugins", dir);
  snprintf(nets, sizeof nets, "%s/nets", dir);
  snprintf(mark, sizeof mark, "%s/mark", dir);
  if (mkdir(plugins, 0700) || mkdir(nets, 0700))
    return -1;
  setenv("TW_PLUGIN_CTOR_MARK", mark, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(mark);
  rmdir(plugins);
  rmdir(nets);
  rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_plugin_outside_the_directory_is_refused_before_dlopen),
      cmocka_unit_test(network_files_only_by_name_inside_their_directory),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
