/* plugin.c - score plugins from shared objects (policy.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "policies/place/policy.h"

enum tw_rc tw_policy_plugin_open(const char *path,
                                 const struct tw_policy_ops **ops,
                                 void **handle, struct tw_err *err) {
  *ops = NULL;
  *handle = NULL;
  /* RTLD_LOCAL: two plugins may use the same static names; RTLD_NOW: a
   * missing symbol fails here, at load, not in the middle of a plan. */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return tw_err_set(err, TW_E_IO, "cannot load %s: %s", path,
                      e ? e : "unknown error");
  }
  const struct tw_policy_ops *p = dlsym(h, TW_POLICY_PLUGIN_SYMBOL);
  enum tw_rc rc = TW_OK;
  if (!p)
    rc = tw_err_set(err, TW_E_INVALID, "%s: no symbol %s", path,
                    TW_POLICY_PLUGIN_SYMBOL);
  else if (p->version != TW_POLICY_ABI_VERSION)
    rc = tw_err_set(
        err, TW_E_INVALID,
        "%s: built against policy interface version %u, this broker speaks %u",
        path, p->version, TW_POLICY_ABI_VERSION);
  else if (!p->name || !p->name[0] || strlen(p->name) >= TW_POLICY_NAME_MAX)
    rc = tw_err_set(err, TW_E_INVALID,
                    "%s: the plugin has no name (or one over %d bytes)", path,
                    TW_POLICY_NAME_MAX - 1);
  else if (!p->score)
    rc = tw_err_set(err, TW_E_INVALID, "%s: plugin %s has no score function",
                    path, p->name);
  else if (p->filter)
    rc = tw_err_set(err, TW_E_INVALID,
                    "%s: plugin %s has a filter; shared objects may only score",
                    path, p->name);
  if (rc) {
    dlclose(h);
    return rc;
  }
  *ops = p;
  *handle = h;
  return TW_OK;
}

void tw_policy_plugin_close(void *handle) {
  if (handle)
    dlclose(handle);
}
