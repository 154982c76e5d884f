/* bench_pg.h - the PostgreSQL cluster of scripts/postgres.sh for the
 * benchmarks that measure on it (bench-submit --pg, bench-scale): found or
 * started, its DSN and password read from the state dir, one connection
 * of the bench's own, and stopped again only when this run started it. */
#ifndef TW_BENCH_BENCH_PG_H
#define TW_BENCH_BENCH_PG_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

struct bench_pg {
  char dir[512], script[600];
  char dsn[1024], password_file[700], password[256];
  bool started; /* this run started the cluster: it stops it */
  PGconn *c;    /* the bench's own connection */
};

/* Finds or starts the cluster of dir (NULL: $TW_PG_DIR, else
 * ./.state/postgres) and connects; 0, or -1 with why filled (it cannot
 * start here, it has no DSN, the connection failed). */
int bench_pg_up(struct bench_pg *pg, const char *dir, char *why,
                size_t whysz);
/* Closes the connection; stops the cluster when this run started it and
 * keep is false.  false when stopping failed. */
bool bench_pg_down(struct bench_pg *pg, bool keep);

#endif
