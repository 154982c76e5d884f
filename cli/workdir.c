/* workdir.c - a SkyPilot task's local `workdir:` (docs/skypilot.md): packed
 * here (broker/base/tar.h), uploaded with PUT /v1/workdirs/{sha256} before
 * the job is submitted, and named in the document by its hash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "broker/base/node.h"
#include "broker/base/tar.h"
#include "broker/core/spec.h"
#include "cli/cli_int.h"

/* What the CLI packs at most; the broker's own bound (api.max_workdir_bytes)
 * answers 413 below it. */
#define WORKDIR_PACK_MAX ((uint64_t)1 << 30)

static void zero_buf(struct tw_buf *b) {
  for (volatile char *q = b->data, *e = b->data + b->len; q && q < e; q++)
    *q = 0;
}

int tw_cli_workdir(struct tw_cli *c, struct tw_buf *doc, bool is_json,
                   bool upload, bool *changed) {
  *changed = false;
  struct tw_node *root = NULL;
  struct tw_err perr = {0};
  if ((is_json ? tw_node_parse_json : tw_node_parse_yaml)(doc->data, doc->len,
                                                          &root, &perr) ||
      !root || root->kind != TW_NODE_MAP) {
    tw_node_free(root); /* the server says what is wrong with it */
    return TW_EXIT_OK;
  }
  struct tw_node *w = tw_node_get(root, "workdir");
  if (!w || w->kind != TW_NODE_SCALAR || !w->str || !*w->str ||
      tw_spec_workdir_ref(w->str)) {
    tw_node_free(root);
    return TW_EXIT_OK;
  }
  /* SkyPilot reads ~ as the home directory and a relative path from
   * where the command runs */
  char dir[4096];
  const char *home = getenv("HOME");
  if (!strncmp(w->str, "~/", 2) && home)
    snprintf(dir, sizeof dir, "%s/%s", home, w->str + 2);
  else if (!strcmp(w->str, "~") && home)
    snprintf(dir, sizeof dir, "%s", home);
  else
    snprintf(dir, sizeof dir, "%s", w->str);
  struct stat st;
  int sr = stat(dir, &st);
  if (sr || !S_ISDIR(st.st_mode)) {
    tw_cli_errorf(c, "workdir: %.1024s: %s", w->str,
                  sr ? strerror(errno) : "not a directory");
    tw_node_free(root);
    return TW_EXIT_USAGE;
  }
  struct tw_buf tar;
  tw_buf_init(&tar);
  char err[1024] = "";
  if (tw_tar_pack(dir, WORKDIR_PACK_MAX, &tar, err, sizeof err)) {
    tw_cli_errorf(c, "workdir: %.1024s: %s", w->str, err);
    tw_buf_release(&tar);
    tw_node_free(root);
    return TW_EXIT_USAGE;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  char hex[65] = "";
  EVP_Digest(tar.data, tar.len, md, &mdlen, EVP_sha256(), NULL);
  for (unsigned i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  int code = TW_EXIT_OK;
  if (upload) {
    const struct tw_node *t = tw_node_get(root, "tenant");
    const char *tenant = t && t->kind == TW_NODE_SCALAR && t->str && *t->str
                             ? t->str
                             : "default";
    struct tw_buf path;
    tw_buf_init(&path);
    tw_buf_printf(&path, "/v1/workdirs/%s?tenant=", hex);
    for (const unsigned char *q = (const unsigned char *)tenant; *q; q++)
      if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
          (*q >= '0' && *q <= '9') || *q == '-' || *q == '_' || *q == '.')
        tw_buf_addc(&path, (char)*q);
      else
        tw_buf_printf(&path, "%%%02X", *q);
    struct tw_cli_http_resp resp;
    tw_cli_http_resp_init(&resp);
    json_t *ans = NULL;
    code = tw_cli_request(c, "PUT", path.data, "application/x-tar", tar.data,
                          tar.len, NULL, &resp, &ans);
    json_decref(ans);
    tw_cli_http_resp_release(&resp);
    tw_buf_release(&path);
  }
  tw_buf_release(&tar);
  if (code == TW_EXIT_OK) {
    free(w->str);
    w->str = tw_malloc(7 + 64 + 1);
    snprintf(w->str, 7 + 64 + 1, "sha256:%s", hex);
    w->quoted = true;
    zero_buf(doc); /* it may hold secret values */
    tw_buf_reset(doc);
    tw_node_to_json(root, doc);
    *changed = true;
  }
  tw_node_free(root);
  return code;
}
