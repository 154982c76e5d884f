/* A shared object whose constructor leaves a mark: the file named by
 * $TW_PLUGIN_CTOR_MARK.  test_policy_dirs offers it from outside
 * policies.plugin_dir and checks the mark is never made, so the refusal
 * came before dlopen() (which runs constructors before any symbol is
 * looked at). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void leave_a_mark(void) {
  const char *p = getenv("TW_PLUGIN_CTOR_MARK");
  if (p && *p) {
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
      close(fd);
  }
}
