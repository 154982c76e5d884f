/* test_alibaba_sign.c - Alibaba Cloud signatures (providers/alibaba/
 * ali_sign.c).
 *
 *   test_alibaba_sign            encoding, canonical query, ACS3 against
 *                                what the official SDK computes for the
 *                                same fixed inputs, Authorization parsing
 *   test_alibaba_sign --vectors  the published legacy HMAC-SHA1 vectors of
 *                                shared/data/signatures/aliyun (SKIPPED
 *                                when the data is absent)
 *
 * The ACS3 expectations were computed by @alicloud/openapi-core's
 * getAuthorization (the pinned SDK of tests/conformance/alibaba) with the
 * inputs written here; an independent implementation is the only source
 * of truth a signature test can have. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/alibaba/ali_sign.h"

static void encoding(void **state) {
  struct tw_buf b;
  tw_buf_init(&b);
  const char raw[] = "a b*c~d-_.e/f+g=h&\xe4\xb8\xad";
  tw_ali_encode(&b, raw, strlen(raw));
  /* space %20 (not '+'), '*' %2A, '~' kept, UTF-8 bytes one by one */
  TW_CHECK_STR(b.data, "a%20b%2Ac~d-_.e%2Ff%2Bg%3Dh%26%E4%B8%AD");
  tw_buf_reset(&b);
  const struct tw_ali_pair p[] = {
      {"b", "2"}, {"a", "z"}, {"Signature", "x"}, {"a", "y"}, {"B", "1"}};
  tw_ali_canonical_query(&b, p, 5, "Signature");
  /* byte order: upper case before lower; equal names by value */
  TW_CHECK_STR(b.data, "B=1&a=y&a=z&b=2");
  tw_buf_release(&b);
}

static void rpc_sign_basics(void **state) {
  const struct tw_ali_pair p[] = {{"Action", "DescribeRegions"},
                                  {"Signature", "ignored"}};
  char sig[32], *sts = NULL;
  TW_CHECK(tw_ali_rpc_sign("GET", p, 2, "s", sig, &sts, NULL) == TW_OK);
  TW_CHECK_STR(sts, "GET&%2F&Action%3DDescribeRegions");
  TW_CHECK(strlen(sig) == 28);
  char sig2[32];
  /* a different secret or method changes the signature */
  TW_CHECK(tw_ali_rpc_sign("GET", p, 2, "t", sig2, NULL, NULL) == TW_OK);
  TW_CHECK(strcmp(sig, sig2) != 0);
  TW_CHECK(tw_ali_rpc_sign("POST", p, 2, "s", sig2, NULL, NULL) == TW_OK);
  TW_CHECK(strcmp(sig, sig2) != 0);
  TW_CHECK(tw_ali_rpc_sign(NULL, p, 2, "s", sig2, NULL, NULL) == TW_E_INVALID);
  free(sts);
}

/* The SDK's default for every call: ACS3 with the parameters in the
 * query and an empty body. */
static void acs3_matches_sdk(void **state) {
  char hash[65];
  tw_ali_sha256_hex("", 0, hash);
  TW_CHECK_STR(
      hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const struct tw_ali_pair q1[] = {{"RegionId", "cn-hangzhou"},
                                   {"SpotStrategy", "SpotAsPriceGo"},
                                   {"InstanceType", "ecs.g7.large"}};
  const struct tw_ali_pair h1[] = {
      {"host", "ecs.cn-hangzhou.aliyuncs.com"},
      {"x-acs-action", "RunInstances"},
      {"x-acs-version", "2014-05-26"},
      {"x-acs-date", "2024-05-01T12:00:00Z"},
      {"x-acs-signature-nonce", "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf"},
      {"x-acs-content-sha256", hash},
      {"User-Agent", "not signed"}};
  struct tw_ali_acs3_request r = {.method = "POST",
                                  .path = "/",
                                  .query = q1,
                                  .n_query = 3,
                                  .headers = h1,
                                  .n_headers = 7,
                                  .payload_hash = hash};
  struct tw_ali_acs3_result res;
  TW_CHECK(tw_ali_acs3_sign(&r, "testsecret", &res, NULL) == TW_OK);
  TW_CHECK_STR(
      res.signature,
      "030661cd5b43ca194acf9c3a21ed0224739ded21dd698c60b49820f2d223a767");
  TW_CHECK_STR(res.signed_headers, "host;x-acs-action;x-acs-content-sha256;"
                                   "x-acs-date;x-acs-signature-nonce;"
                                   "x-acs-version");
  TW_CHECK(!strncmp(res.string_to_sign, "ACS3-HMAC-SHA256\n", 17));
  tw_ali_acs3_result_release(&res);

  /* Values that need encoding: a space, '*', '~', a ':' in a tag key. */
  const struct tw_ali_pair q2[] = {
      {"RegionId", "cn-hangzhou"}, {"SpotStrategy", "SpotWithPriceLimit"},
      {"SpotPriceLimit", "0.5"},   {"Tag.1.Key", "tradewind:job"},
      {"Tag.1.Value", "job 42*~"}, {"InstanceType", "ecs.g7.large"}};
  const struct tw_ali_pair h2[] = {
      {"Host", "127.0.0.1:8080"},
      {"X-Acs-Action", "RunInstances"},
      {"x-acs-version", "2014-05-26"},
      {"x-acs-date", "2024-05-01T12:00:00Z"},
      {"x-acs-signature-nonce", "0123456789abcdef0123456789abcdef"},
      {"x-acs-content-sha256", hash}};
  r.query = q2;
  r.n_query = 6;
  r.headers = h2;
  r.n_headers = 6;
  TW_CHECK(tw_ali_acs3_sign(&r, "testsecret", &res, NULL) == TW_OK);
  TW_CHECK_STR(
      res.signature,
      "94ea4ac46cbda330c6176f982661381d42607821e02fc347b05d4bd6200a692e");
  tw_ali_acs3_result_release(&res);

  /* The verifier's view: the names come from the Authorization header, and
   * one that is not among the headers is an incomplete signature. */
  r.signed_headers = "host;x-acs-action;x-acs-content-sha256;x-acs-date;"
                     "x-acs-signature-nonce;x-acs-version";
  TW_CHECK(tw_ali_acs3_sign(&r, "testsecret", &res, NULL) == TW_OK);
  TW_CHECK_STR(
      res.signature,
      "94ea4ac46cbda330c6176f982661381d42607821e02fc347b05d4bd6200a692e");
  tw_ali_acs3_result_release(&res);
  r.signed_headers = "host;x-acs-missing";
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(tw_ali_acs3_sign(&r, "testsecret", &res, &err) == TW_E_AUTH);
  TW_CHECK_STR(err.detail, "IncompleteSignature");
  tw_ali_acs3_result_release(&res);
  /* a wrong secret gives another signature */
  r.signed_headers = NULL;
  TW_CHECK(tw_ali_acs3_sign(&r, "testsecreT", &res, NULL) == TW_OK);
  TW_CHECK(strcmp(res.signature,
                  "94ea4ac46cbda330c6176f982661381d42607821e02fc3"
                  "47b05d4bd6200a692e") != 0);
  tw_ali_acs3_result_release(&res);
}

static void authz(void **state) {
  struct tw_ali_acs3_authz a;
  TW_CHECK(tw_ali_acs3_parse_authz(
               "ACS3-HMAC-SHA256 Credential=testid,SignedHeaders=host;"
               "x-acs-date,Signature=abc123",
               &a, NULL) == TW_OK);
  TW_CHECK_STR(a.access_key, "testid");
  TW_CHECK_STR(a.signed_headers, "host;x-acs-date");
  TW_CHECK_STR(a.signature, "abc123");
  TW_CHECK(tw_ali_acs3_parse_authz("ACS3-HMAC-SHA256 Credential=a, "
                                   "SignedHeaders=host, Signature=ff",
                                   &a, NULL) == TW_OK);
  TW_CHECK_STR(a.signature, "ff");
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(tw_ali_acs3_parse_authz("AWS4-HMAC-SHA256 Credential=a", &a, &err) ==
           TW_E_AUTH);
  TW_CHECK_STR(err.detail, "IncompleteSignature");
  TW_CHECK(tw_ali_acs3_parse_authz("ACS3-HMAC-SHA256 Credential=a,Signature=f",
                                   &a, NULL) == TW_E_AUTH);
  TW_CHECK(tw_ali_acs3_parse_authz(NULL, &a, NULL) == TW_E_AUTH);
  TW_CHECK(tw_ali_equal("abc", "abc"));
  TW_CHECK(!tw_ali_equal("abc", "abd"));
  TW_CHECK(!tw_ali_equal("abc", "abcd"));
}

/* shared/data/signatures/aliyun/rpc-signature-v1-vectors.json */
static char vectors_path[2200];

static void vectors(void **state) {
  json_error_t je;
  json_t *root = json_load_file(vectors_path, 0, &je);
  TW_CHECK(root != NULL, "%s: %s", vectors_path, je.text);
  json_t *vs = json_object_get(root, "vectors");
  size_t i, n = 0;
  json_t *v;
  json_array_foreach(vs, i, v) {
    json_t *params = json_object_get(v, "params");
    struct tw_ali_pair p[64];
    size_t np = 0;
    const char *k;
    json_t *val;
    json_object_foreach(params, k, val) {
      if (np < 64) {
        p[np].name = k;
        p[np].value = json_string_value(val);
        np++;
      }
    }
    char sig[32], *sts = NULL;
    const char *id = json_string_value(json_object_get(v, "id"));
    TW_CHECK(tw_ali_rpc_sign(
                 json_string_value(json_object_get(v, "method")), p, np,
                 json_string_value(json_object_get(v, "access_key_secret")),
                 sig, &sts, NULL) == TW_OK);
    if (sts) {
      TW_CHECK_STR(sts,
                   json_string_value(json_object_get(v, "string_to_sign")));
      TW_CHECK_STR(sig,
                   json_string_value(json_object_get(v, "expected_signature")));
      const char *want_enc = json_string_value(
          json_object_get(v, "expected_signature_urlencoded"));
      if (want_enc) {
        struct tw_buf b;
        tw_buf_init(&b);
        tw_ali_encode(&b, sig, strlen(sig));
        TW_CHECK_STR(b.data, want_enc);
        tw_buf_release(&b);
      }
    }
    printf("vector %s: %s\n", id ? id : "?", sig);
    free(sts);
    n++;
  }
  TW_CHECK(n >= 3);
  /* The documented negative case: the same values under "Timestamp"
   * rather than the legacy "TimeStamp" sign differently. */
  const struct tw_ali_pair legacy[] = {
      {"AccessKeyId", "testid"},
      {"Action", "DescribeRegions"},
      {"Format", "XML"},
      {"SignatureMethod", "HMAC-SHA1"},
      {"SignatureNonce", "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf"},
      {"SignatureVersion", "1.0"},
      {"Timestamp", "2016-02-23T12:46:24Z"},
      {"Version", "2014-05-26"}};
  char sig[32];
  TW_CHECK(tw_ali_rpc_sign("GET", legacy, 8, "testsecret", sig, NULL, NULL) ==
           TW_OK);
  TW_CHECK(strcmp(sig, "CT9X0VtwR86fNWSnsc6v8YGOjuE=") != 0);
  json_decref(root);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--vectors")) {
    char dir[2048];
    tw_testdata_dir(dir, sizeof dir);
    snprintf(vectors_path, sizeof vectors_path,
             "%s/signatures/aliyun/rpc-signature-v1-vectors.json", dir);
    if (access(vectors_path, R_OK)) {
      printf("SKIPPED: no Alibaba signature vectors at %s\n", vectors_path);
      return TW_SKIP;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(vectors)};
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encoding),
      cmocka_unit_test(rpc_sign_basics),
      cmocka_unit_test(acs3_matches_sdk),
      cmocka_unit_test(authz),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
