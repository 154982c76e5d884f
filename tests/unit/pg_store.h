/* pg_store.h - a store test's second backend: PostgreSQL.
 *
 * A store test binary runs its whole suite on sqlite, or, given
 * --backend=postgres, on PostgreSQL: the same cases, each in a schema of
 * its own (created before, dropped after), so one suite covers both
 * backends.  The server comes from TW_TEST_PG_DSN (with
 * TW_TEST_PG_PASSWORD_FILE), else from the pg.env that
 * scripts/postgres.sh wrote in TW_TEST_PG_DIR (the ctest fixture
 * tests/ha.cmake starts it there).  Without either, or when the server
 * does not answer, tw_test_pg_init() says why and the binary exits 77:
 * ctest shows the test SKIPPED. */
#ifndef TW_TESTS_UNIT_PG_STORE_H
#define TW_TESTS_UNIT_PG_STORE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/core/db.h"
#include "broker/core/store.h"

struct tw_test_pg {
  bool on;
  char base_dsn[1024];
  char password[256];
  char schema[48];
  char dsn[1200];/* base_dsn with this case's search_path */
};

static inline void tw_test_pg_chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
    s[--n] = 0;
}

static inline bool tw_test_pg_read(const char *path, char *out, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  bool ok = fgets(out, (int)n, f) != NULL;
  fclose(f);
  tw_test_pg_chomp(out);
  return ok;
}

/* Whether argv asks for PostgreSQL. */
static inline bool tw_test_pg_wanted(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--backend=postgres"))
      return true;
  return false;
}

/* 0, or 77 after printing why PostgreSQL cannot be used. */
static inline int tw_test_pg_init(struct tw_test_pg *pg) {
  memset(pg, 0, sizeof *pg);
  const char *dsn = getenv("TW_TEST_PG_DSN");
  const char *pwf = getenv("TW_TEST_PG_PASSWORD_FILE");
  char envf_pw[1000] = "";
  if (dsn && *dsn) {
    snprintf(pg->base_dsn, sizeof pg->base_dsn, "%s", dsn);
  } else {
    const char *dir = getenv("TW_TEST_PG_DIR");
    if (!dir || !*dir) {
      fprintf(stderr, "SKIPPED: PostgreSQL: neither TW_TEST_PG_DSN nor "
                      "TW_TEST_PG_DIR is set\n");
      return 77;
    }
    char p[600], line[1000];
    snprintf(p, sizeof p, "%s/pg.env", dir);
    FILE *f = fopen(p, "r");
    if (!f) {
      fprintf(stderr,
              "SKIPPED: PostgreSQL did not start (no %s; see "
              "scripts/postgres.sh start)\n",
              p);
      return 77;
    }
    while (fgets(line, sizeof line, f)) {
      tw_test_pg_chomp(line);
      if (!strncmp(line, "TW_PG_DSN='", 11)) {
        snprintf(pg->base_dsn, sizeof pg->base_dsn, "%s", line + 11);
        char *q = strrchr(pg->base_dsn, '\'');
        if (q)
          *q = 0;
      } else if (!strncmp(line, "TW_PG_PASSWORD_FILE=", 20)) {
        snprintf(envf_pw, sizeof envf_pw, "%s", line + 20);
      }
    }
    fclose(f);
    pwf = envf_pw;
  }
  if (pwf && *pwf && !tw_test_pg_read(pwf, pg->password, sizeof pg->password)) {
    fprintf(stderr, "SKIPPED: PostgreSQL: cannot read the password file\n");
    return 77;
  }
  struct tw_db *db = NULL;
  struct tw_err err = {0};
  struct tw_db_opts o = {.backend = TW_DB_POSTGRES,
                         .dsn = pg->base_dsn,
                         .password = pg->password[0] ? pg->password : NULL};
  if (tw_db_open(&o, &db, &err) != TW_OK) {
    fprintf(stderr, "SKIPPED: PostgreSQL does not answer: %s\n", err.msg);
    return 77;
  }
  tw_db_close(db);
  pg->on = true;
  return 0;
}

static inline int tw_test_pg_exec(struct tw_test_pg *pg, const char *sql) {
  struct tw_db *db = NULL;
  struct tw_err err = {0};
  struct tw_db_opts o = {.backend = TW_DB_POSTGRES,
                         .dsn = pg->base_dsn,
                         .password = pg->password[0] ? pg->password : NULL};
  if (tw_db_open(&o, &db, &err) != TW_OK) {
    fprintf(stderr, "postgres: %s\n", err.msg);
    return -1;
  }
  char *msg = NULL;
  int r = tw_db_exec(db, sql, &msg);
  if (r != TW_DB_OK)
    fprintf(stderr, "postgres: %s: %s\n", sql, msg ? msg : "?");
  tw_db_free(msg);
  tw_db_close(db);
  return r == TW_DB_OK ? 0 : -1;
}

/* Runs sql in this case's schema; TW_DB_OK or the error, its message in
 * msg. */
static inline int tw_test_pg_try(struct tw_test_pg *pg, const char *sql,
                                 char *msg, size_t n) {
  struct tw_db *db = NULL;
  struct tw_err err = {0};
  struct tw_db_opts o = {.backend = TW_DB_POSTGRES,
                         .dsn = pg->dsn,
                         .password = pg->password[0] ? pg->password : NULL};
  msg[0] = 0;
  if (tw_db_open(&o, &db, &err) != TW_OK) {
    snprintf(msg, n, "%s", err.msg);
    return TW_DB_ERROR;
  }
  char *m = NULL;
  int r = tw_db_exec(db, sql, &m);
  snprintf(msg, n, "%s", m ? m : "");
  tw_db_free(m);
  tw_db_close(db);
  return r;
}

/* A new, empty schema for one case; pg->dsn points at it. */
static inline int tw_test_pg_schema_new(struct tw_test_pg *pg) {
  static unsigned n; /* test-only: distinct names within the process */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(pg->schema, sizeof pg->schema, "t%ld_%ld_%u", (long)getpid(),
           (long)(ts.tv_nsec % 1000000), n++);
  char sql[128];
  snprintf(sql, sizeof sql, "CREATE SCHEMA %s", pg->schema);
  if (tw_test_pg_exec(pg, sql))
    return -1;
  snprintf(pg->dsn, sizeof pg->dsn, "%s options='-csearch_path=%s'",
           pg->base_dsn, pg->schema);
  return 0;
}

static inline void tw_test_pg_schema_drop(struct tw_test_pg *pg) {
  if (!pg->schema[0])
    return;
  char sql[128];
  snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", pg->schema);
  tw_test_pg_exec(pg, sql);
  pg->schema[0] = 0;
}

/* A connection of the test's own to the suite's database: the sqlite file
 * at path, or this case's schema on PostgreSQL; for cases that edit rows
 * directly, as an intruder with access to the database would.  NULL after
 * printing why it cannot open. */
static inline struct tw_db *tw_test_db_raw(struct tw_test_pg *pg,
                                           const char *path) {
  struct tw_db *db = NULL;
  struct tw_err err = {0};
  struct tw_db_opts o = {.backend = TW_DB_SQLITE, .path = path};
  if (pg->on) {
    o.backend = TW_DB_POSTGRES;
    o.dsn = pg->dsn;
    o.password = pg->password[0] ? pg->password : NULL;
  }
  if (tw_db_open(&o, &db, &err) != TW_OK) {
    fprintf(stderr, "raw connection: %s\n", err.msg);
    return NULL;
  }
  return db;
}

/* Points o at this case's schema when the suite runs on PostgreSQL. */
static inline void tw_test_pg_opts(struct tw_test_pg *pg,
                                   struct tw_store_opts *o) {
  if (!pg->on)
    return;
  o->backend = TW_DB_POSTGRES;
  o->dsn = pg->dsn;
  o->password = pg->password[0] ? pg->password : NULL;
}

#endif
