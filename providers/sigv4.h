/* sigv4.h - AWS Signature Version 4 (HMAC-SHA256 through OpenSSL).
 *
 * One implementation serves both sides: the EC2 adapter signs with
 * tw_sigv4_sign(), and the fake cloud checks requests with
 * tw_sigv4_verify() exactly as AWS does.  Conformance: every case of the
 * AWS SigV4 test suites in shared/data/sigv4 and a differential test
 * against botocore (tests/unit/test_sigv4.c, tests/providers-sigv4.cmake).
 *
 * Canonical form, as botocore builds it:
 *   - path: dot segments and empty segments removed when normalize_path,
 *     then URI-encoded once ('/' kept).  Given a wire path ("/a%20b") this
 *     yields the double encoding AWS expects from every service but S3
 *     ("/a%2520b"); given a raw path as in the test suites ("/a b") it
 *     yields "/a%20b".
 *   - query: split on '&' and '=', each key and value percent-decoded then
 *     URI-encoded (so raw UTF-8 and already encoded input agree), sorted by
 *     key then value; "k" becomes "k=".
 *   - headers: names lower-cased, values trimmed with inner whitespace runs
 *     made one space, repeated names joined with ',' in the order sent.
 *   - payload: the value of an x-amz-content-sha256 header when present,
 *     else the hex SHA-256 of the body.
 * All functions are reentrant; none keeps state but a caller's
 * tw_sigv4_key_cache. */
#ifndef TW_PROVIDERS_SIGV4_H
#define TW_PROVIDERS_SIGV4_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_sigv4_header {
  const char *name; /* as sent; canonicalized (lower case, trimmed) inside */
  const char *value;
};

struct tw_sigv4_request {
  const char *method; /* "GET", "POST" */
  const char *path;   /* raw path as on the wire, "/" if empty */
  const char *query;  /* raw query string without '?', or NULL */
  const struct tw_sigv4_header *headers;
  size_t n_headers; /* must include host and x-amz-date (or date) */
  const void *body;
  size_t body_len;
};

/* The signing key (kSigning) depends only on the secret, the day, the
 * region and the service: a signer that keeps one of these derives it
 * once a day per region and service, not with four HMACs on every
 * request.  A few scopes are kept (a signer may alternate regions); the
 * least recently derived is replaced.  Threads may share one (a mutex).
 * Keys for a secret longer than TW_SIGV4_KEY_SECRET_MAX bytes are not
 * kept.  tw_sigv4_key_cache_release() wipes the keys and the secrets. */
#define TW_SIGV4_KEY_CACHE_N 4
#define TW_SIGV4_KEY_SECRET_MAX 127

struct tw_sigv4_key_cache {
  pthread_mutex_t mu;
  unsigned next; /* the entry replaced next */
  struct {
    bool used;
    char secret[TW_SIGV4_KEY_SECRET_MAX + 1]; /* zero-padded */
    char scope[128]; /* "20150830/us-east-1/ec2" */
    unsigned char key[32];
  } e[TW_SIGV4_KEY_CACHE_N];
};

void tw_sigv4_key_cache_init(struct tw_sigv4_key_cache *c);
void tw_sigv4_key_cache_release(struct tw_sigv4_key_cache *c);

struct tw_sigv4_params {
  const char *access_key;
  const char *secret_key;
  const char *session_token; /* NULL unless temporary credentials */
  const char *region;        /* "us-east-1" */
  const char *service;       /* "ec2" */
  const char *amz_date;      /* "20150830T123600Z" */
  int normalize_path;        /* 1 for every service but S3 */
  /* NULL: the signing key is derived for this request alone */
  struct tw_sigv4_key_cache *key_cache;
};

/* Outputs of signing; all owned by the struct, released by
 * tw_sigv4_result_release(). */
struct tw_sigv4_result {
  char *canonical_request;
  char *string_to_sign;
  char signature[65];    /* lower-case hex */
  char *authorization;   /* full Authorization header value */
  char *signed_headers;  /* "host;x-amz-date" */
  char payload_hash[65]; /* hex SHA-256 of the body */
};

/* Signs req.  The headers signed are all of req's headers (as the AWS test
 * suite does) except those botocore never signs because proxies rewrite
 * them: connection, expect, keep-alive, proxy-authenticate,
 * proxy-authorization, te, trailer, transfer-encoding, upgrade, user-agent,
 * x-amzn-trace-id.  The caller adds x-amz-date, host and, for a session
 * token, x-amz-security-token before calling; params->session_token is not
 * added by the signer.  On success out holds the results (release with
 * tw_sigv4_result_release()); on failure out is empty.
 * Errors: TW_E_INVALID for a missing method, credentials, region, service,
 * or an amz_date not of the form YYYYMMDDTHHMMSSZ. */
enum tw_rc tw_sigv4_sign(const struct tw_sigv4_request *req,
                         const struct tw_sigv4_params *params,
                         struct tw_sigv4_result *out, struct tw_err *err);
void tw_sigv4_result_release(struct tw_sigv4_result *r);

/* Formats ms since the epoch as an x-amz-date value, "20150830T123600Z". */
void tw_sigv4_amz_date(int64_t ms, char out[17]);

/* Looks up the secret of an access key; returns NULL when unknown. */
typedef const char *(*tw_sigv4_secret_fn)(void *ctx, const char *access_key);

/* Verifies a signed request as AWS does, given the server's current time
 * (ms since epoch) and the allowed clock skew (AWS: 5 minutes for
 * x-amz-date).  Errors, with err->detail set to AWS's error code:
 *   TW_E_AUTH "MissingAuthenticationToken" no Authorization header
 *   TW_E_AUTH "IncompleteSignature"       malformed header
 *   TW_E_AUTH "AuthFailure"               unknown access key
 *   TW_E_AUTH "SignatureDoesNotMatch"     wrong secret or altered request
 *   TW_E_AUTH "RequestExpired"            date outside the skew window
 * On success, *access_key_out (if non-NULL) receives a copy (free()).
 * The request is req as received: wire path and query, every header.  The
 * time is x-amz-date, else an HTTP Date header; the Credential scope date
 * must equal its day and the scope's service expect_service (when
 * non-NULL; the region is not checked).  Only the headers named in
 * SignedHeaders are used, and each must be present; host must be among
 * them.  An x-amz-content-sha256 header must equal the SHA-256 of the body
 * (SignatureDoesNotMatch otherwise), since the signature covers the header
 * and not the body.  Paths are normalized unless the service is "s3".
 * Signatures are compared in constant time.  TW_E_INVALID when req or
 * secret is NULL.  The secret callback is called at most once, from the
 * calling thread. */
enum tw_rc tw_sigv4_verify(const struct tw_sigv4_request *req,
                           tw_sigv4_secret_fn secret, void *ctx, int64_t now_ms,
                           int64_t skew_ms, const char *expect_service,
                           char **access_key_out, struct tw_err *err);

/* Lower-case hex SHA-256 of data into out[65]. */
void tw_sha256_hex(const void *data, size_t len, char out[65]);

/* AWS's URI encoding (RFC 3986 unreserved kept; '/' kept when keep_slash). */
void tw_sigv4_uri_encode(const char *s, size_t len, int keep_slash, char **out);

#endif
