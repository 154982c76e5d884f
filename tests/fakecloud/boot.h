/* boot.h - instances that boot for real (docs/fakecloud.md "Booting").
 *
 * With --boot, a launch that carries user data runs it: base64-decoded,
 * with `sh`, as a local process in a sandbox of its own: a new session
 * (so its own process group), its own working directory
 * <boot dir>/<instance id>, TRADEWIND_AGENT_DIR set to it,
 * TRADEWIND_INSTANCE_ID to the instance's id and TRADEWIND_METADATA_URL
 * to http://HOST:META_PORT/_meta/<instance id>, where the fake serves that
 * instance its metadata documents (IMDSv2, Scheduled Events, the Alibaba
 * meta-server) over plain HTTP on a port of its own.  Killing an instance
 * kills every process of its session.
 *
 * Call with the server's mutex held, as every module callback is. */
#ifndef TW_TESTS_FAKECLOUD_BOOT_H
#define TW_TESTS_FAKECLOUD_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fc_server;

struct fc_boot {
  pid_t sid; /* the instance's session (and process group); 0: none */
  bool killed;
};

/* Whether the server boots instances (--boot). */
bool fc_boot_enabled(const struct fc_server *s);

/* Decodes base64 text (blanks ignored) into a new NUL-terminated buffer;
 * NULL when it is not base64.  *len gets the decoded size. */
char *fc_base64_decode(const char *text, size_t *len);

/* Runs the (decoded) user data of instance id.  Returns 0, or -1 when
 * the sandbox cannot be made or the process not started (logged). */
int fc_boot_start(struct fc_server *s, const char *id, const char *script,
                  size_t len, struct fc_boot *b);

/* SIGKILLs every process of the instance's session; idempotent. */
void fc_boot_kill(struct fc_boot *b);

/* Whether any process of the instance's session is still alive. */
bool fc_boot_alive(const struct fc_boot *b);

/* The instance's sandbox directory into out (cap bytes). */
void fc_boot_dir_of(const struct fc_server *s, const char *id, char *out,
                    size_t cap);

/* The parsers of the metadata requests (fuzz_fakecloud_meta):
 *
 * fc_meta_split: "/_meta/<id>/<path>" -> id (1..cap-1 bytes of
 * [A-Za-z0-9._-]) and *sub pointing at "/<path>" (or "").  false when
 * the path is not of that form.
 * fc_imds_ttl: X-aws-ec2-metadata-token-ttl-seconds, a decimal 1..21600.
 * fc_az_start_requests: the EventIds of {"StartRequests": [{"EventId"}]}
 * into ids (at most max, each < 64 bytes); returns how many, -1 when the
 * body is not of that form. */
bool fc_meta_split(const char *path, char *id, size_t cap, const char **sub);
bool fc_imds_ttl(const char *header, long *ttl);
int fc_az_start_requests(const char *body, size_t len, char (*ids)[64],
                         int max);

/* Removes a directory tree (no symlinks followed). */
void fc_rm_tree(const char *path);

/* Server side (server.c). */
const char *fc_boot_root(const struct fc_server *s);
unsigned fc_meta_port(const struct fc_server *s);

#endif
