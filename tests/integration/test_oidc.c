/* Sign-in through an identity provider, written as the attacks on it.
 *
 * Two issuers run on loopback (tests/integration/twtest_oidc.h), with keys
 * made at start: "corp", found by discovery, whose people map to ml and
 * vision by their groups; and "gha", tokens shaped as GitHub Actions
 * issues them (repository, ref, repository_owner, workflow), whose rule
 * maps one repository's main branch to a ci principal of ml.  The broker
 * runs on an injected clock.  Checked:
 *   - RS256 and ES256 tokens sign in as the principal and role the first
 *     matching rule grants; X-Tradewind-Tenant picks among tenants; the
 *     sign-in is audited once (issuer, subject, rule), never the token;
 *   - wrong iss or aud, expired (beyond the skew) or not yet valid, iat in
 *     the future, a flipped signature byte, alg none, HS256 keyed with the
 *     RSA public key, an RSA signature labelled ES256: 401 invalid_token;
 *   - a session ends with its token's exp;
 *   - an unknown kid refetches the JWK Set once; a flood of made-up kids
 *     costs nothing more until the refetch interval passed;
 *   - a group no rule names: 403 everywhere, the denial audited;
 *   - the GitHub Actions token: a ci principal that submits and may not
 *     list the tenant's jobs; another ref or repository: no role;
 *   - config errors name the key. */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "api/oidc.h"
#include "broker/base/node.h"
#include "broker/core/config.h"
#include "broker/core/store.h"
#include "broker/tenancy/audit.h"
#include "broker/tenancy/tenancy.h"
#include "tests/integration/twtest_oidc.h"
#include "tests/twtest.h"

#define T0_MS 1764460800000LL /* 2025-11-30T00:00:00Z */

static char dir[64], path[128];
static struct tw_store *store;
static struct tw_tenancy *ten;
static struct tw_api *api;
static struct tw_oidc_cfg *cfg;
static struct tw_clock clk;
static struct twtest_issuer *corp, *gha;
static char base[64];

/* ---- HTTP ------------------------------------------------------------------ */

struct resp {
  long status;
  char body[16384];
  size_t len;
  char www_auth[512];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t k = sz * n, room = sizeof r->body - 1 - r->len;
  memcpy(r->body + r->len, p, k < room ? k : room);
  r->len += k < room ? k : room;
  r->body[r->len] = '\0';
  return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t l = sz * n;
  if (l > 17 && !strncasecmp(p, "WWW-Authenticate:", 17))
    snprintf(r->www_auth, sizeof r->www_auth, "%.*s", (int)(l - 17), p + 17);
  return l;
}

static struct resp req(const char *token, const char *method, const char *pth,
                       const char *body, const char *tenant) {
  struct resp r;
  memset(&r, 0, sizeof r);
  CURL *c = curl_easy_init();
  char url[512];
  snprintf(url, sizeof url, "%s%s", base, pth);
  struct curl_slist *h = NULL;
  char *auth = token ? tw_asprintf("Authorization: Bearer %s", token) : NULL;
  if (auth)
    h = curl_slist_append(h, auth);
  char th[128];
  if (tenant) {
    snprintf(th, sizeof th, "X-Tradewind-Tenant: %s", tenant);
    h = curl_slist_append(h, th);
  }
  if (body)
    h = curl_slist_append(h, "Content-Type: application/yaml");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  free(auth);
  return r;
}

static int64_t now_s(void) { return tw_clock_now_ms(&clk) / 1000; }

/* Claims of a corp person: email, groups (a JSON array text), times
 * relative to the broker's clock. */
static char *person(const char *email, const char *groups, int64_t exp_in,
                    const char *extra) {
  return tw_asprintf("{\"iss\":\"%s\",\"aud\":[\"other\",\"tradewind\"],"
                     "\"sub\":\"u-%s\",\"email\":\"%s\",\"groups\":%s,"
                     "\"iat\":%" PRId64 ",\"exp\":%" PRId64 "%s%s}",
                     twtest_issuer_url(corp), email, email, groups, now_s(),
                     now_s() + exp_in, extra ? "," : "", extra ? extra : "");
}

/* Claims as GitHub Actions issues them, for repo at ref. */
static char *actions(const char *repo, const char *ref) {
  const char *slash = strchr(repo, '/');
  return tw_asprintf(
      "{\"iss\":\"%s\",\"aud\":\"https://github.com/acme\","
      "\"sub\":\"repo:%s:ref:%s\",\"repository\":\"%s\","
      "\"repository_owner\":\"%.*s\",\"ref\":\"%s\",\"ref_type\":\"branch\","
      "\"workflow\":\"train\",\"event_name\":\"push\",\"run_id\":\"42\","
      "\"jti\":\"jti-%s\",\"nbf\":%" PRId64 ",\"iat\":%" PRId64
      ",\"exp\":%" PRId64 "}",
      twtest_issuer_url(gha), repo, ref, repo, (int)(slash - repo), repo, ref,
      ref, now_s() - 5, now_s() - 5, now_s() + 300);
}

/* Audit entries of action "oidc sign-in" whose detail holds needle. */
static size_t signins(const char *needle, const char *outcome,
                      struct tw_audit_entry *copy) {
  struct tw_audit_filter f = {.limit = 10000, .action = "oidc sign-in"};
  struct tw_audit_entry *e = NULL;
  size_t n = 0, hits = 0;
  int64_t next;
  if (tw_audit_list(tw_tenancy_audit(ten), &f, &e, &n, &next, NULL))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (strstr(e[i].detail, needle) &&
        (!outcome || !strcmp(e[i].outcome, outcome))) {
      if (copy && !hits) {
        memset(copy, 0, sizeof *copy);
        copy->principal = tw_strdup(e[i].principal);
        copy->tenant = tw_strdup(e[i].tenant);
        copy->detail = tw_strdup(e[i].detail);
        copy->outcome = tw_strdup(e[i].outcome);
      }
      hits++;
    }
  tw_audit_entries_free(e, n);
  return hits;
}

/* ---- valid tokens ------------------------------------------------------------ */

static void rs256_person_signs_in_as_member(void **state) {
  char *claims = person("alice@example.com", "[\"ml-users\"]", 600, NULL);
  char *jwt = twtest_jwt(corp, TWT_RSA, NULL, claims);
  struct resp r = req(jwt, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200 &&
               strstr(r.body, "\"name\":\"corp:alice@example.com\"") &&
               strstr(r.body, "\"tenant\":\"ml\"") &&
               strstr(r.body, "\"role\":\"member\""),
           "whoami: %ld %s", r.status, r.body);
  r = req(jwt, "POST", "/v1/jobs", "name: from-sso\n", NULL);
  TW_CHECK(r.status == 201 && strstr(r.body, "\"tenant\":\"ml\""),
           "submit: %ld %.300s", r.status, r.body);
  /* a second request is the same session: one sign-in entry */
  r = req(jwt, "GET", "/v1/jobs", NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "from-sso"), "list: %ld",
           r.status);
  struct tw_audit_entry e;
  size_t n = signins("sub=u-alice@example.com", "ok", &e);
  TW_CHECK(n == 1, "sign-ins audited: %zu", n);
  TW_CHECK(strstr(e.detail, "rule=ml-people role=member") &&
               strstr(e.detail, "iss=http://127.0.0.1:") &&
               !strcmp(e.principal, "corp:alice@example.com") &&
               !strcmp(e.tenant, "ml"),
           "audit entry: %s %s %s", e.principal, e.tenant, e.detail);
  /* never the token, nor its signature */
  TW_CHECK(!strstr(e.detail, strrchr(jwt, '.') + 1) &&
               !strstr(e.detail, "eyJ"),
           "the token is in the audit: %s", e.detail);
  free(e.principal);
  free(e.tenant);
  free(e.detail);
  free(e.outcome);
  TW_CHECK(twtest_issuer_discovery_hits(corp) == 1,
           "discovery read %u times", twtest_issuer_discovery_hits(corp));
  free(jwt);
  free(claims);
}

static void es256_admin_group_is_tenant_admin(void **state) {
  char *claims =
      person("bob@example.com", "[\"ml-users\",\"ml-admins\"]", 600, NULL);
  char *jwt = twtest_jwt(corp, TWT_EC, NULL, claims);
  struct resp r = req(jwt, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"role\":\"tenant-admin\"") &&
               strstr(r.body, "corp:bob@example.com"),
           "whoami: %ld %s", r.status, r.body);
  /* tenant-admin reads ml's quota, not vision's */
  r = req(jwt, "GET", "/v1/tenants/ml/quota", NULL, NULL);
  TW_CHECK(r.status == 200, "own quota: %ld", r.status);
  r = req(jwt, "GET", "/v1/tenants/vision/quota", NULL, NULL);
  TW_CHECK(r.status == 404, "other tenant's quota: %ld", r.status);
  TW_CHECK(signins("sub=u-bob@example.com", "ok", NULL) == 1 &&
               signins("rule=ml-admins role=tenant-admin", "ok", NULL) >= 1,
           "bob's sign-in audit");
  free(jwt);
  free(claims);
}

static void tenant_header_picks_among_rules(void **state) {
  char *claims =
      person("carol@example.com", "[\"ml-users\",\"vision\"]", 600, NULL);
  char *jwt = twtest_jwt(corp, TWT_RSA, NULL, claims);
  struct resp r = req(jwt, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"tenant\":\"ml\"") &&
               strstr(r.body, "\"role\":\"member\""),
           "first match: %s", r.body);
  r = req(jwt, "GET", "/v1/whoami", NULL, "vision");
  TW_CHECK(r.status == 200 && strstr(r.body, "\"tenant\":\"vision\"") &&
               strstr(r.body, "\"role\":\"viewer\""),
           "vision asked: %ld %s", r.status, r.body);
  r = req(jwt, "GET", "/v1/whoami", NULL, "finance");
  TW_CHECK(r.status == 403 && strstr(r.body, "in tenant finance"),
           "a tenant no rule grants: %ld %s", r.status, r.body);
  r = req(jwt, "GET", "/v1/whoami", NULL, "ml\x1b[2J");
  TW_CHECK(r.status == 403 && strstr(r.body, "not a tenant name"),
           "a tenant header with escapes: %ld %s", r.status, r.body);
  free(jwt);
  free(claims);
}

/* ---- refusals ------------------------------------------------------------------ */

static void expect_401(const char *jwt, const char *reason, const char *what) {
  struct resp r = req(jwt, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 401 && strstr(r.www_auth, "invalid_token") &&
               strstr(r.body, reason),
           "%s: %ld %s (WWW-Authenticate %s), expected \"%s\"", what,
           r.status, r.body, r.www_auth, reason);
}

static void bad_tokens_are_refused(void **state) {
  char *c, *t;
  /* the wrong issuer: a token of gha's keys claiming to be from elsewhere */
  c = tw_asprintf("{\"iss\":\"https://evil.example\",\"aud\":\"tradewind\","
                  "\"sub\":\"x\",\"exp\":%" PRId64 "}",
                  now_s() + 600);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  expect_401(t, "iss is not a configured issuer", "wrong iss");
  free(t);
  free(c);
  /* gha's key signing a token that claims corp: the kid is not corp's */
  c = person("mallory@example.com", "[\"ml-admins\"]", 600, NULL);
  t = twtest_jwt(gha, TWT_RSA, "gha-key", c);
  expect_401(t, "has no RSA key with kid gha-key", "another issuer's key");
  free(t);
  free(c);
  /* wrong audience */
  c = tw_asprintf("{\"iss\":\"%s\",\"aud\":\"another-service\",\"sub\":\"x\","
                  "\"groups\":[\"ml-admins\"],\"email\":\"x@y\",\"exp\":%" PRId64
                  "}",
                  twtest_issuer_url(corp), now_s() + 600);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  expect_401(t, "aud holds no audience", "wrong aud");
  free(t);
  free(c);
  /* expired beyond the 60 s skew; within it still good */
  c = person("dave@example.com", "[\"ml-users\"]", -61, NULL);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  expect_401(t, "token expired", "expired");
  free(t);
  free(c);
  c = person("dave@example.com", "[\"ml-users\"]", -30, NULL);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  struct resp r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200, "expired 30 s ago, within the skew: %ld %s",
           r.status, r.body);
  free(t);
  free(c);
  /* not yet valid, issued in the future */
  char extra[64];
  snprintf(extra, sizeof extra, "\"nbf\":%" PRId64, now_s() + 300);
  c = person("erin@example.com", "[\"ml-users\"]", 600, extra);
  t = twtest_jwt(corp, TWT_EC, NULL, c);
  expect_401(t, "not yet valid", "nbf in 5 minutes");
  free(t);
  free(c);
  c = tw_asprintf("{\"iss\":\"%s\",\"aud\":\"tradewind\",\"sub\":\"x\","
                  "\"iat\":%" PRId64 ",\"exp\":%" PRId64 "}",
                  twtest_issuer_url(corp), now_s() + 3600, now_s() + 7200);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  expect_401(t, "issued in the future", "iat in an hour");
  free(t);
  free(c);
  /* a flipped byte of the signature, RSA and EC */
  c = person("frank@example.com", "[\"ml-admins\"]", 600, NULL);
  for (int k = TWT_RSA; k <= TWT_EC; k++) {
    t = twtest_jwt(corp, (enum twtest_key)k, NULL, c);
    char *s = strrchr(t, '.') + 5;
    *s = *s == 'A' ? 'B' : 'A';
    expect_401(t, "signature does not verify", "bad signature");
    free(t);
  }
  /* a changed claim under the original signature */
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  char *c2 = person("frank@example.com", "[\"ml-admins\"]", 6000, NULL);
  char *t2 = twtest_jwt(corp, TWT_RSA, NULL, c2);
  char *forged = tw_asprintf("%.*s%s", (int)(strchr(t2, '.') - t2 + 1), t2,
                             strchr(t, '.') + 1);
  /* header of t2 (same as t's) + claims and signature of t: still valid;
   * now claims of t2 with the signature of t */
  free(forged);
  size_t hl = (size_t)(strrchr(t2, '.') - t2);
  forged = tw_asprintf("%.*s%s", (int)hl, t2, strrchr(t, '.'));
  expect_401(forged, "signature does not verify", "claims swapped");
  free(forged);
  free(t);
  free(t2);
  free(c2);
  /* alg none, with and without a signature part */
  t = twtest_jwt_raw("{\"alg\":\"none\",\"typ\":\"JWT\"}", c, NULL, 0);
  r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 401, "alg none: %ld %s", r.status, r.body);
  free(t);
  t = twtest_jwt_raw("{\"alg\":\"none\"}", c, (const unsigned char *)"x", 1);
  expect_401(t, "alg none is not accepted", "alg none");
  free(t);
  /* HS256 keyed with the RSA public key (the classic confusion) */
  t = twtest_jwt_hs256_confused(corp, TWT_RSA, c);
  expect_401(t, "alg HS256 is not accepted", "HS256 confusion");
  free(t);
  /* an RSA signature labelled ES256 under the RSA key's kid */
  t = twtest_jwt_alg(corp, TWT_RSA, "ES256", NULL, c);
  expect_401(t, "has no EC P-256 key with kid rsa-1", "key type mismatch");
  free(t);
  /* crit extensions */
  t = twtest_jwt_raw("{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"crit\":[\"b64\"],"
                     "\"b64\":false}",
                     c, (const unsigned char *)"xxxx", 4);
  expect_401(t, "crit", "crit");
  free(t);
  free(c);
  TW_CHECK(signins("frank@example.com", NULL, NULL) == 0 &&
               signins("mallory", NULL, NULL) == 0,
           "a refused token signed nobody in");
}

static void sessions_end_with_the_token(void **state) {
  char *c = person("gina@example.com", "[\"ml-users\"]", 120, NULL);
  char *t = twtest_jwt(corp, TWT_RSA, NULL, c);
  struct resp r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200, "fresh: %ld", r.status);
  tw_clock_advance(&clk, 170 * 1000); /* exp + skew not yet passed */
  r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200, "within the skew: %ld", r.status);
  tw_clock_advance(&clk, 20 * 1000);
  r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 401 && strstr(r.body, "token expired"),
           "the session outlived its token: %ld %s", r.status, r.body);
  free(t);
  free(c);
}

/* ---- keys ---------------------------------------------------------------- */

static void unknown_kid_refetches_once(void **state) {
  /* the issuer rotates in a new key; a token signed with it arrives */
  tw_clock_advance(&clk, 60 * 1000); /* past any earlier fetch's interval */
  twtest_issuer_publish(corp, 1u << TWT_RSA | 1u << TWT_EC | 1u << TWT_RSA2);
  unsigned before = twtest_issuer_jwks_hits(corp);
  char *c = person("hal@example.com", "[\"ml-users\"]", 600, NULL);
  char *t = twtest_jwt(corp, TWT_RSA2, NULL, c);
  struct resp r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "corp:hal@example.com"),
           "the rotated key: %ld %s", r.status, r.body);
  TW_CHECK(twtest_issuer_jwks_hits(corp) == before + 1,
           "JWKS fetched %u times for one unknown kid",
           twtest_issuer_jwks_hits(corp) - before);
  /* a flood of made-up kids: no more fetches within the interval */
  for (int i = 0; i < 50; i++) {
    char kid[32];
    snprintf(kid, sizeof kid, "made-up-%d", i);
    char *f = twtest_jwt(corp, TWT_RSA, kid, c);
    r = req(f, "GET", "/v1/whoami", NULL, NULL);
    TW_CHECK(r.status == 401 && strstr(r.body, "has no RSA key with kid"),
             "made-up kid %d: %ld %s", i, r.status, r.body);
    free(f);
  }
  TW_CHECK(twtest_issuer_jwks_hits(corp) == before + 1,
           "50 made-up kids fetched the JWKS %u more times",
           twtest_issuer_jwks_hits(corp) - before - 1);
  /* after the interval (30 s here) one more fetch is allowed */
  tw_clock_advance(&clk, 31 * 1000);
  char *f = twtest_jwt(corp, TWT_RSA, "made-up-again", c);
  req(f, "GET", "/v1/whoami", NULL, NULL);
  req(f, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(twtest_issuer_jwks_hits(corp) == before + 2,
           "after the interval: %u fetches, expected 2",
           twtest_issuer_jwks_hits(corp) - before);
  free(f);
  free(t);
  free(c);
  twtest_issuer_publish(corp, 1u << TWT_RSA | 1u << TWT_EC);
}

/* ---- the mapping ------------------------------------------------------------- */

static void no_rule_no_role(void **state) {
  char *c = person("ivan@example.com", "[\"marketing\"]", 600, NULL);
  char *t = twtest_jwt(corp, TWT_EC, NULL, c);
  const char *routes[][2] = {{"GET", "/v1/jobs"},
                             {"GET", "/v1/whoami"},
                             {"GET", "/v1/tenants/ml/quota"},
                             {"GET", "/v1/offers"}};
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    struct resp r = req(t, routes[i][0], routes[i][1], NULL, NULL);
    TW_CHECK(r.status == 403 && strstr(r.body, "no rule of issuer corp"),
             "%s %s without a role: %ld %s", routes[i][0], routes[i][1],
             r.status, r.body);
  }
  struct resp r = req(t, "POST", "/v1/jobs", "name: nope\n", NULL);
  TW_CHECK(r.status == 403, "submit without a role: %ld", r.status);
  struct tw_audit_entry e;
  size_t n = signins("sub=u-ivan@example.com", "denied", &e);
  TW_CHECK(n == 1 && strstr(e.detail, "rule=- role=-"),
           "the denial is audited once: %zu %s", n, n ? e.detail : "");
  if (n) {
    free(e.principal);
    free(e.tenant);
    free(e.detail);
    free(e.outcome);
  }
  free(t);
  free(c);
  /* a rule whose tenant does not exist grants nothing */
  c = person("judy@example.com", "[\"ghost\"]", 600, NULL);
  t = twtest_jwt(corp, TWT_RSA, NULL, c);
  r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 403 &&
               strstr(r.body, "rule ghosts grants in tenant ghost, which does "
                              "not exist"),
           "a rule of a missing tenant: %ld %s", r.status, r.body);
  free(t);
  free(c);
}

static void github_actions_token_is_ci(void **state) {
  char *c = actions("acme/train", "refs/heads/main");
  char *t = twtest_jwt(gha, TWT_EC, NULL, c);
  struct resp r = req(t, "GET", "/v1/whoami", NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"name\":\"gha:acme/train\"") &&
               strstr(r.body, "\"role\":\"ci\"") &&
               strstr(r.body, "\"service\":true"),
           "whoami: %ld %s", r.status, r.body);
  r = req(t, "POST", "/v1/jobs", "name: nightly\n", NULL);
  TW_CHECK(r.status == 201 && strstr(r.body, "\"tenant\":\"ml\""),
           "ci submits: %ld %.300s", r.status, r.body);
  /* its own job it reads; the tenant's list it may not */
  char id[64] = "";
  const char *p = strstr(r.body, "\"id\":\"");
  if (p)
    snprintf(id, sizeof id, "/v1/jobs/%.*s", (int)strcspn(p + 6, "\""), p + 6);
  r = req(t, "GET", id, NULL, NULL);
  TW_CHECK(r.status == 200, "own job: %ld", r.status);
  r = req(t, "GET", "/v1/jobs", NULL, NULL);
  TW_CHECK(r.status == 403, "ci lists the tenant's jobs: %ld", r.status);
  TW_CHECK(signins("rule=train-main role=ci", "ok", NULL) == 1 &&
               signins("jti=jti-refs/heads/main", "ok", NULL) == 1,
           "the ci sign-in audit");
  free(t);
  free(c);
  /* another branch, another repository: no rule */
  const char *other[][2] = {{"acme/train", "refs/heads/feature"},
                            {"acme/other", "refs/heads/main"},
                            {"evil/train", "refs/heads/main"}};
  for (int i = 0; i < 3; i++) {
    c = actions(other[i][0], other[i][1]);
    t = twtest_jwt(gha, TWT_RSA, NULL, c);
    r = req(t, "POST", "/v1/jobs", "name: sneaky\n", NULL);
    TW_CHECK(r.status == 403 && strstr(r.body, "no rule of issuer gha"),
             "%s at %s: %ld %s", other[i][0], other[i][1], r.status, r.body);
    free(t);
    free(c);
  }
}

/* ---- the config ----------------------------------------------------------- */

static void config_errors_name_the_key(void **state) {
  static const char *const CASES[][2] = {
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x], rules: "
       "[{name: r, match: {sub: '*'}, tenant: ml, role: admin}]}]",
       "auth.oidc.issuers[0].rules[0].tenant: role admin is granted only in "
       "tenant \"*\""},
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x], rules: "
       "[{name: r, match: {}, tenant: ml, role: member}]}]",
       "auth.oidc.issuers[0].rules[0].match: a mapping of claims"},
      {"issuers: [{name: a, issuer: 'http://idp.example', audiences: [x]}]",
       "auth.oidc.issuers[0].issuer: \"http://idp.example\" must be an https"},
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x], "
       "clock_skew: 5}]",
       "auth.oidc.issuers[0].clock_skew: unknown key; did you mean "
       "\"clock_skew_s\"?"},
      {"issuers: [{name: a, issuer: 'https://a'}]",
       "auth.oidc.issuers[0].audiences: required"},
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x], rules: "
       "[{name: r, match: {sub: '*'}, tenant: ml, role: root}]}]",
       "auth.oidc.issuers[0].rules[0].role: unknown role \"root\""},
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x], rules: "
       "[{name: r, match: {sub: '*'}, tenant: ml, role: ci, principal: "
       "'{repository} x'}]}]",
       "auth.oidc.issuers[0].rules[0].principal: ' ' cannot be part"},
      {"issuers: [{name: a, issuer: 'https://a', audiences: [x]}, {name: a, "
       "issuer: 'https://b', audiences: [x]}]",
       "auth.oidc.issuers[1]: repeats the name or issuer"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    struct tw_node *n = NULL;
    struct tw_err err = {0};
    TW_CHECK_RC(tw_node_parse_yaml(CASES[i][0], strlen(CASES[i][0]), &n, &err),
                TW_OK, err);
    struct tw_oidc_cfg *c = NULL;
    enum tw_rc rc = tw_oidc_cfg_parse(n, &c, &err);
    TW_CHECK(rc == TW_E_INVALID && !c && strstr(err.msg, CASES[i][1]),
             "case %zu: %s", i, err.msg);
    tw_node_free(n);
  }
}

/* The daemon's config carries auth.oidc to the parser whole. */
static void daemon_config_carries_the_section(void **state) {
  const char *text = "auth:\n"
                     "  oidc:\n"
                     "    issuers:\n"
                     "      - name: corp\n"
                     "        issuer: https://login.example.com\n"
                     "        audiences: tradewind\n"
                     "        rules:\n"
                     "          - {name: all, match: {sub: '*'}, tenant: ml,\n"
                     "             role: viewer}\n";
  struct tw_cfg *c = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_cfg_load_text(text, strlen(text), &c, &err), TW_OK, err);
  struct tw_oidc_cfg *oc = NULL;
  TW_CHECK_RC(tw_oidc_cfg_parse(c->auth_oidc, &oc, &err), TW_OK, err);
  TW_CHECK(oc != NULL, "no issuers parsed");
  tw_oidc_cfg_free(oc);
  tw_cfg_free(c);
  const char *bad_text = "auth:\n  oidc: [1]\n";
  TW_CHECK(tw_cfg_load_text(bad_text, strlen(bad_text), &c, &err) ==
                   TW_E_INVALID &&
               strstr(err.msg, "auth.oidc: expected a mapping"),
           "auth.oidc as a list: %s", err.msg);
}

/* ---- fixture --------------------------------------------------------------------- */

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-oidc-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/o.db", dir);
  curl_global_init(CURL_GLOBAL_ALL);
  tw_clock_fake_init(&clk, T0_MS);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .sync_full = false};
  struct tw_tenancy_opts to = {.clock = &clk};
  if (tw_store_open(&so, &store, &err) ||
      (to.store = store, tw_tenancy_open(&to, &ten, &err))) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return -1;
  }
  tw_tenancy_tenant_create(ten, "ml", NULL);
  tw_tenancy_tenant_create(ten, "vision", NULL);
  if (!(corp = twtest_issuer_start()) || !(gha = twtest_issuer_start()))
    return -1;
  char *yaml = tw_asprintf(
      "issuers:\n"
      "  - name: corp\n"
      "    issuer: %s\n"
      "    audiences: [tradewind]\n"
      "    jwks_min_refetch_s: 30\n"
      "    principal_claim: email\n"
      "    rules:\n"
      "      - {name: ml-admins, match: {groups: ml-admins}, tenant: ml,\n"
      "         role: tenant-admin}\n"
      "      - {name: ml-people, match: {groups: 'ml-*'}, tenant: ml,\n"
      "         role: member}\n"
      "      - {name: vision-viewers, match: {groups: vision},\n"
      "         tenant: vision, role: viewer}\n"
      "      - {name: ghosts, match: {groups: ghost}, tenant: ghost,\n"
      "         role: member}\n"
      "  - name: gha\n"
      "    issuer: %s\n"
      "    audiences: 'https://github.com/acme'\n"
      "    jwks_uri: %s/keys\n"
      "    rules:\n"
      "      - name: train-main\n"
      "        match:\n"
      "          repository: acme/train\n"
      "          repository_owner: acme\n"
      "          ref: [refs/heads/main, 'refs/tags/v*']\n"
      "        tenant: ml\n"
      "        role: ci\n"
      "        principal: '{repository}'\n",
      twtest_issuer_url(corp), twtest_issuer_url(gha), twtest_issuer_url(gha));
  struct tw_node *n = NULL;
  enum tw_rc rc = tw_node_parse_yaml(yaml, strlen(yaml), &n, &err);
  free(yaml);
  if (rc || tw_oidc_cfg_parse(n, &cfg, &err) || !cfg) {
    fprintf(stderr, "oidc config: %s\n", err.msg);
    return -1;
  }
  tw_node_free(n);
  struct tw_api_opts ao = {
      .listen = "127.0.0.1:0",
      .store = store,
      .clock = &clk,
      .auth = {.tenancy = ten, .rate_per_s = -1, .oidc = cfg}};
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "api: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(api));
  return 0;
}

static int teardown(void **state) {
  tw_api_stop(api);
  tw_oidc_cfg_free(cfg);
  twtest_issuer_stop(corp);
  twtest_issuer_stop(gha);
  tw_tenancy_free(ten);
  tw_store_close(store);
  curl_global_cleanup();
  char p[200];
  const char *sfx[] = {"/o.db", "/o.db-wal", "/o.db-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", dir, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rs256_person_signs_in_as_member),
      cmocka_unit_test(es256_admin_group_is_tenant_admin),
      cmocka_unit_test(tenant_header_picks_among_rules),
      cmocka_unit_test(bad_tokens_are_refused),
      cmocka_unit_test(sessions_end_with_the_token),
      cmocka_unit_test(unknown_kid_refetches_once),
      cmocka_unit_test(no_rule_no_role),
      cmocka_unit_test(github_actions_token_is_ci),
      cmocka_unit_test(config_errors_name_the_key),
      cmocka_unit_test(daemon_config_carries_the_section),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
