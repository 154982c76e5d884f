/* bench_pg.c - see bench_pg.h. */
#define _GNU_SOURCE
#include "bench/bench_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* KEY=value (or KEY='value') of the env file's text into out. */
static void env_value(const char *text, const char *key, char *out,
                      size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s=", key);
  out[0] = '\0';
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
    if (strncmp(p, pat, strlen(pat)))
      continue;
    p += strlen(pat);
    size_t n = strcspn(p, "\n");
    if (n && p[0] == '\'' && p[n - 1] == '\'') {
      p++;
      n -= 2;
    }
    if (n >= size)
      n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return;
  }
}

int bench_pg_up(struct bench_pg *pg, const char *dir, char *why,
                size_t whysz) {
  memset(pg, 0, sizeof *pg);
  const char *d = dir ? dir : getenv("TW_PG_DIR");
  if (d && *d)
    snprintf(pg->dir, sizeof pg->dir, "%s", d);
  else if (!getcwd(pg->dir, sizeof pg->dir - 20)) {
    snprintf(why, whysz, "no working directory");
    return -1;
  } else
    strcat(pg->dir, "/.state/postgres");
  const char *src = getenv("TW_SOURCE_DIR");
  if (access("scripts/postgres.sh", R_OK) == 0)
    snprintf(pg->script, sizeof pg->script, "scripts/postgres.sh");
  else if (src && *src)
    snprintf(pg->script, sizeof pg->script, "%s/scripts/postgres.sh", src);
  char cmd[1400];
  if (pg->script[0]) {
    snprintf(cmd, sizeof cmd, "bash '%s' status '%s' >/dev/null 2>&1",
             pg->script, pg->dir);
    bool was_up = system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "bash '%s' start '%s' >/dev/null 2>&1",
             pg->script, pg->dir);
    int rc = system(cmd);
    if (rc != 0) {
      snprintf(why, whysz,
               "%s start %s exited %d (PostgreSQL cannot start here)",
               pg->script, pg->dir, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
      return -1;
    }
    pg->started = !was_up;
  }
  char path[600], text[4096] = "";
  snprintf(path, sizeof path, "%s/pg.env", pg->dir);
  FILE *f = fopen(path, "r");
  if (f) {
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
  }
  env_value(text, "TW_PG_DSN", pg->dsn, sizeof pg->dsn);
  env_value(text, "TW_PG_PASSWORD_FILE", pg->password_file,
            sizeof pg->password_file);
  if ((f = fopen(pg->password_file, "r"))) {
    if (!fgets(pg->password, sizeof pg->password, f))
      pg->password[0] = '\0';
    fclose(f);
    pg->password[strcspn(pg->password, "\r\n")] = '\0';
  }
  if (!pg->dsn[0]) {
    snprintf(why, whysz, "no PostgreSQL in %s (scripts/postgres.sh start)",
             pg->dir);
    return -1;
  }
  const char *keys[] = {"dbname", "password", NULL};
  const char *vals[] = {pg->dsn, pg->password, NULL};
  pg->c = PQconnectdbParams(keys, vals, 1);
  if (PQstatus(pg->c) != CONNECTION_OK) {
    snprintf(why, whysz, "cannot connect to PostgreSQL: %s",
             PQerrorMessage(pg->c));
    why[strcspn(why, "\n")] = '\0';
    PQfinish(pg->c);
    pg->c = NULL;
    return -1;
  }
  PQclear(PQexec(pg->c, "SET client_min_messages = warning"));
  return 0;
}

bool bench_pg_down(struct bench_pg *pg, bool keep) {
  PQfinish(pg->c);
  pg->c = NULL;
  bool ok = true;
  if (pg->started && !keep) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "bash '%s' stop '%s' >/dev/null 2>&1",
             pg->script, pg->dir);
    ok = system(cmd) == 0;
    pg->started = false;
  }
  return ok;
}
