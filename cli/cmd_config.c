/* cmd_config.c - the client config file with contexts, and the commands
 * that read and write it: `tradewind config get-contexts|current-context|
 * use-context|set-context|delete-context`.
 *
 * The file (YAML; $TRADEWIND_CONFIG, else ~/.config/tradewind/config.yaml):
 *
 *   current-context: prod
 *   contexts:
 *     prod: {url: https://tw.example.com:8420, token_file: ~/.tw/prod.token,
 *            cacert: /etc/ssl/tw-ca.pem}
 *     dev:  {url: http://127.0.0.1:8420}
 *
 * The commands here rewrite the whole file (mode 0600): comments in it are
 * not kept. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "broker/base/node.h"
#include "cli/cli_int.h"

#define CONFIG_MAX_BYTES (1024 * 1024)

static const char *const ctx_keys[] = {"url", "token_file", "cacert", NULL};

static char *read_small(const char *path, int *err_out) {
  FILE *f = fopen(path, "r");
  if (!f) {
    *err_out = errno;
    return NULL;
  }
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "");
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b.len + n > CONFIG_MAX_BYTES) {
      fclose(f);
      tw_buf_release(&b);
      *err_out = EFBIG;
      return NULL;
    }
    tw_buf_add(&b, chunk, n);
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    tw_buf_release(&b);
    *err_out = EIO;
    return NULL;
  }
  return tw_buf_detach(&b);
}

/* Loads the config into *doc (a JSON object; an empty one when the file
 * does not exist).  Returns -1 on success, else an exit code after
 * printing the reason naming the file and the key. */
int tw_cli_config_load(struct tw_cli *c, json_t **doc) {
  *doc = NULL;
  if (!c->config_file) {
    *doc = json_object();
    return -1;
  }
  int e = 0;
  char *text = read_small(c->config_file, &e);
  if (!text) {
    if (e == ENOENT) {
      *doc = json_object();
      return -1;
    }
    return tw_cli_usage(c, "config %.200s: %s", c->config_file, strerror(e));
  }
  struct tw_node *root = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_node_parse_yaml(text, strlen(text), &root, &err) != TW_OK) {
    free(text);
    return tw_cli_usage(c, "config %.200s: %s", c->config_file, err.msg);
  }
  free(text);
  struct tw_buf js;
  tw_buf_init(&js);
  tw_buf_adds(&js, "");
  if (root && root->kind != TW_NODE_NULL)
    tw_node_to_json(root, &js);
  else
    tw_buf_adds(&js, "{}");
  tw_node_free(root);
  json_t *v = json_loads(js.data, 0, NULL);
  tw_buf_release(&js);
  if (!json_is_object(v)) {
    json_decref(v);
    return tw_cli_usage(c, "config %.200s: expected a mapping at the top",
                        c->config_file);
  }
  const char *k;
  json_t *x;
  json_object_foreach(v, k, x) {
    if (strcmp(k, "current-context") && strcmp(k, "contexts")) {
      json_decref(v);
      return tw_cli_usage(c,
                          "config %.200s: unknown key \"%.64s\" (expected "
                          "current-context, contexts)",
                          c->config_file, k);
    }
  }
  json_t *cur = json_object_get(v, "current-context");
  if (cur && !json_is_string(cur)) {
    json_decref(v);
    return tw_cli_usage(c, "config %.200s: current-context: expected a name",
                        c->config_file);
  }
  json_t *ctxs = json_object_get(v, "contexts");
  if (ctxs && !json_is_object(ctxs)) {
    json_decref(v);
    return tw_cli_usage(c,
                        "config %.200s: contexts: expected a mapping of "
                        "names to {url, token_file, cacert}",
                        c->config_file);
  }
  const char *name;
  json_t *ctx;
  json_object_foreach(ctxs, name, ctx) {
    if (!json_is_object(ctx)) {
      json_decref(v);
      return tw_cli_usage(c, "config %.200s: contexts.%.64s: expected a mapping",
                          c->config_file, name);
    }
    json_object_foreach(ctx, k, x) {
      bool known = false;
      for (size_t i = 0; ctx_keys[i]; i++)
        known |= strcmp(k, ctx_keys[i]) == 0;
      if (!known || !json_is_string(x)) {
        json_decref(v);
        return tw_cli_usage(c,
                            "config %.200s: contexts.%.64s.%.64s: %s",
                            c->config_file, name, k,
                            known ? "expected a string"
                                  : "unknown key (expected url, "
                                    "token_file, cacert)");
      }
    }
  }
  *doc = v;
  return -1;
}

static char *expand_home(struct tw_cli *c, const char *path) {
  if (path[0] == '~' && path[1] == '/' && c->io->env_home)
    return tw_asprintf("%s%s", c->io->env_home, path + 1);
  return tw_strdup(path);
}

int tw_cli_config_apply(struct tw_cli *c, const char **url, bool url_set,
                        char **token_owned, bool token_set,
                        char **cacert_owned, bool cacert_set) {
  json_t *doc = NULL;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  const char *name = c->context;
  if (!name)
    name = json_string_value(json_object_get(doc, "current-context"));
  json_t *ctx = name ? json_object_get(json_object_get(doc, "contexts"), name)
                     : NULL;
  if (name && !ctx) {
    /* an explicit --context that is not there is a mistake; a stale
     * current-context is too, but say which */
    code = tw_cli_usage(c, "%s \"%.64s\" is not in %.200s (see tradewind "
                           "config get-contexts)",
                        c->context ? "--context" : "current-context", name,
                        c->config_file ? c->config_file : "the config");
    json_decref(doc);
    return code;
  }
  if (ctx) {
    const char *u = json_string_value(json_object_get(ctx, "url"));
    const char *tf = json_string_value(json_object_get(ctx, "token_file"));
    const char *ca = json_string_value(json_object_get(ctx, "cacert"));
    if (u && !url_set) {
      c->ctx_url = tw_strdup(u);
      *url = c->ctx_url;
    }
    if (tf && !token_set) {
      char *path = expand_home(c, tf);
      int e = 0;
      char *t = read_small(path, &e);
      if (!t) {
        code = tw_cli_usage(c, "context %.64s: token_file %.200s: %s", name,
                            path, strerror(e));
        free(path);
        json_decref(doc);
        return code;
      }
      free(path);
      size_t n = strlen(t);
      while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
        t[--n] = '\0';
      *token_owned = t;
    }
    if (ca && !cacert_set)
      *cacert_owned = expand_home(c, ca);
  }
  json_decref(doc);
  return -1;
}

/* Writes doc to the config file: a temporary file, then rename. */
static int config_save(struct tw_cli *c, json_t *doc) {
  if (!c->config_file)
    return tw_cli_usage(c, "no config file: set TRADEWIND_CONFIG or HOME");
  /* the directory, one level: ~/.config/tradewind */
  char *dir = tw_strdup(c->config_file);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
      int e = errno;
      char *parent = tw_strdup(dir);
      char *s2 = strrchr(parent, '/');
      if (s2 && s2 != parent) {
        *s2 = '\0';
        (void)mkdir(parent, 0700);
      }
      free(parent);
      if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        tw_cli_errorf(c, "cannot create %.200s: %s", dir, strerror(e));
        free(dir);
        return TW_EXIT_USAGE;
      }
    }
  }
  free(dir);
  char *tmp = tw_asprintf("%s.tmp", c->config_file);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "# tradewind client config: contexts (docs/cli.md)\n");
  tw_cli_yaml(doc, &b);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && write(fd, b.data, b.len) == (ssize_t)b.len;
  ok = fd >= 0 && close(fd) == 0 && ok;
  if (ok)
    ok = rename(tmp, c->config_file) == 0;
  int e = errno;
  tw_buf_release(&b);
  if (!ok) {
    unlink(tmp);
    tw_cli_errorf(c, "cannot write %.200s: %s", c->config_file, strerror(e));
    free(tmp);
    return TW_EXIT_USAGE;
  }
  free(tmp);
  return TW_EXIT_OK;
}

static int cmd_get_contexts(struct tw_cli *c, const struct tw_cli_parsed *p) {
  (void)p;
  json_t *doc;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  json_t *ctxs = json_object_get(doc, "contexts");
  const char *cur = json_string_value(json_object_get(doc, "current-context"));
  json_t *items = json_array();
  const char *name;
  json_t *ctx;
  json_object_foreach(ctxs, name, ctx) {
    json_t *it = json_deep_copy(ctx);
    json_object_set_new(it, "name", json_string(name));
    json_object_set_new(it, "current",
                        json_boolean(cur && strcmp(cur, name) == 0));
    json_array_append_new(items, it);
  }
  if (tw_cli_structured(c)) {
    json_t *out = json_pack("{s:o}", "items", items);
    code = tw_cli_print_json(c, out);
    json_decref(out);
  } else {
    static const char *const headers[] = {"CURRENT", "NAME", "URL",
                                          "TOKEN_FILE", "CACERT"};
    struct tw_cli_table t;
    struct tw_buf b;
    tw_cli_table_init(&t, 5, headers);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
      const char *row[] = {
          json_is_true(json_object_get(it, "current")) ? "*" : "",
          json_string_value(json_object_get(it, "name")),
          json_string_value(json_object_get(it, "url")),
          json_string_value(json_object_get(it, "token_file")),
          json_string_value(json_object_get(it, "cacert"))};
      tw_cli_table_add(&t, row);
    }
    tw_buf_init(&b);
    tw_cli_table_render(&t, &b);
    fputs(b.data, c->io->out);
    tw_buf_release(&b);
    tw_cli_table_release(&t);
    json_decref(items);
    code = TW_EXIT_OK;
  }
  json_decref(doc);
  return code;
}

static int cmd_current_context(struct tw_cli *c,
                               const struct tw_cli_parsed *p) {
  (void)p;
  json_t *doc;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  const char *cur = json_string_value(json_object_get(doc, "current-context"));
  if (cur) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, cur);
    fprintf(c->io->out, "%s\n", b.data);
    tw_buf_release(&b);
    code = TW_EXIT_OK;
  } else {
    tw_cli_errorf(c, "no current context (tradewind config use-context NAME)");
    code = TW_EXIT_USAGE;
  }
  json_decref(doc);
  return code;
}

static int cmd_use_context(struct tw_cli *c, const struct tw_cli_parsed *p) {
  json_t *doc;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  const char *name = p->pos[0];
  if (!json_object_get(json_object_get(doc, "contexts"), name)) {
    json_decref(doc);
    return tw_cli_usage(c,
                        "use-context: no context \"%.64s\" (tradewind config "
                        "set-context %.64s --url URL)",
                        name, name);
  }
  json_object_set_new(doc, "current-context", json_string(name));
  code = config_save(c, doc);
  if (code == TW_EXIT_OK)
    fprintf(c->io->err, "tradewind: switched to context \"%s\"\n", name);
  json_decref(doc);
  return code;
}

enum { OPT_URL_C = 1, OPT_TOKEN_FILE, OPT_CACERT_C };

static const struct tw_cli_opt set_opts[] = {
    {"token-file", 0, true, OPT_TOKEN_FILE},
    {0},
};

static int cmd_set_context(struct tw_cli *c, const struct tw_cli_parsed *p) {
  json_t *doc;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  const char *name = p->pos[0];
  if (!*name || strpbrk(name, " \t\n:")) {
    json_decref(doc);
    return tw_cli_usage(c, "set-context: \"%.64s\" is no context name", name);
  }
  json_t *ctxs = json_object_get(doc, "contexts");
  if (!ctxs) {
    ctxs = json_object();
    json_object_set_new(doc, "contexts", ctxs);
  }
  json_t *ctx = json_object_get(ctxs, name);
  if (!ctx) {
    ctx = json_object();
    json_object_set_new(ctxs, name, ctx);
  }
  /* --url and --cacert are the global options, read back from argv */
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    const char *key = NULL;
    if (o->id == OPT_TOKEN_FILE)
      key = "token_file";
    else if (strcmp(o->name, "url") == 0)
      key = "url";
    else if (strcmp(o->name, "cacert") == 0)
      key = "cacert";
    if (key)
      json_object_set_new(ctx, key, json_string(o->value ? o->value : ""));
  }
  const char *u = json_string_value(json_object_get(ctx, "url"));
  if (u && strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
    json_decref(doc);
    return tw_cli_usage(c, "--url: expected http://HOST[:PORT] or https://...");
  }
  if (!json_object_get(doc, "current-context"))
    json_object_set_new(doc, "current-context", json_string(name));
  code = config_save(c, doc);
  json_decref(doc);
  return code;
}

static int cmd_delete_context(struct tw_cli *c,
                              const struct tw_cli_parsed *p) {
  json_t *doc;
  int code = tw_cli_config_load(c, &doc);
  if (code >= 0)
    return code;
  const char *name = p->pos[0];
  json_t *ctxs = json_object_get(doc, "contexts");
  if (!json_object_get(ctxs, name)) {
    json_decref(doc);
    return tw_cli_usage(c, "delete-context: no context \"%.64s\"", name);
  }
  json_object_del(ctxs, name);
  const char *cur = json_string_value(json_object_get(doc, "current-context"));
  if (cur && strcmp(cur, name) == 0)
    json_object_del(doc, "current-context");
  code = config_save(c, doc);
  json_decref(doc);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_config_get = {
    .name = "config get-contexts",
    .args = "",
    .summary = "list the contexts of the config file",
    .help = "The current one is marked *.  The file is $TRADEWIND_CONFIG,\n"
            "else ~/.config/tradewind/config.yaml.\n",
    .local = true,
    .run = cmd_get_contexts,
};

const struct tw_cli_cmd tw_cli_cmd_config_current = {
    .name = "config current-context",
    .args = "",
    .summary = "print the current context's name",
    .help = "",
    .local = true,
    .run = cmd_current_context,
};

const struct tw_cli_cmd tw_cli_cmd_config_use = {
    .name = "config use-context",
    .args = "NAME",
    .summary = "make NAME the current context",
    .help = "",
    .local = true,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_use_context,
};

const struct tw_cli_cmd tw_cli_cmd_config_set = {
    .name = "config set-context",
    .args = "NAME",
    .summary = "add or change a context (URL, token file, CA)",
    .help = "Options:\n"
            "  --url URL           the broker\n"
            "  --token-file FILE   a file holding the bearer token (read at\n"
            "                      each run; the token itself is never\n"
            "                      written to the config)\n"
            "  --cacert FILE       the CA bundle for an https:// URL\n"
            "The first context set becomes the current one.  The file is\n"
            "rewritten (mode 0600); comments in it are not kept.\n",
    .opts = set_opts,
    .local = true,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_set_context,
};

const struct tw_cli_cmd tw_cli_cmd_config_delete = {
    .name = "config delete-context",
    .args = "NAME",
    .summary = "remove a context",
    .help = "",
    .local = true,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_delete_context,
};
