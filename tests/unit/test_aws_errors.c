/* test_aws_errors.c - EC2 error codes map to the right classes.
 *
 * The table below is the contract of docs/providers.md, checked entry by
 * entry, plus the fallbacks on the HTTP status.  Each code is also carried
 * in a real EC2 error envelope (libcloud's run_instances_idem_mismatch.xml
 * when the fixtures are present, with the code substituted, as the
 * fixtures' README suggests), so the envelope parser and the mapping are
 * tested together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/aws/ec2_xml.h"

static void expect(const char *code, long status, enum tw_rc want) {
  enum tw_rc got = tw_ec2_error_class(code, status);
  if (got != want) {
    TW_FAIL("code %s status %ld: %s, want %s", code ? code : "(none)", status,
            tw_rc_str(got), tw_rc_str(want));
  }
}

static const char envelope_fallback[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
    "<Code>@CODE@</Code><Message>a message</Message></Error></Errors>"
    "<RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>";

static char *envelope_template(void) {
  const char *env = getenv("TRADEWIND_TESTDATA");
  const char *src = getenv("TW_SOURCE_DIR");
  char path[2048];
  if (env && *env)
    snprintf(path, sizeof path,
             "%s/fixtures/libcloud/ec2/run_instances_idem_mismatch.xml", env);
  else
    snprintf(path, sizeof path,
             "%s/../shared/data/fixtures/libcloud/ec2/"
             "run_instances_idem_mismatch.xml",
             src ? src : ".");
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_strdup(envelope_fallback);
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  char *s = tw_buf_detach(&b);
  char *at = strstr(s, "IdempotentParameterMismatch");
  if (!at) {
    free(s);
    return tw_strdup(envelope_fallback);
  }
  char *t = tw_asprintf("%.*s@CODE@%s", (int)(at - s), s,
                        at + strlen("IdempotentParameterMismatch"));
  free(s);
  return t;
}

static void through_envelope(const char *tmpl, const char *code, long status,
                             enum tw_rc want) {
  const char *at = strstr(tmpl, "@CODE@");
  char *doc = tw_asprintf("%.*s%s%s", (int)(at - tmpl), tmpl, code, at + 6);
  struct tw_err err = {0};
  enum tw_rc rc =
      tw_ec2_response_error("RunInstances", status, doc, strlen(doc), &err);
  if (rc != want || err.rc != want || strcmp(err.detail, code) ||
      !strstr(err.msg, "RunInstances") || !strstr(err.msg, code)) {
    TW_FAIL("envelope %s/%ld: rc %s detail %s msg %s", code, status,
            tw_rc_str(rc), err.detail, err.msg);
  }
  free(doc);
}

/* Every code of the table, with and without a status, and through an
 * envelope; the status fallbacks; answers without an envelope. */
static void error_table(void **state) {
  static const struct {
    const char *code;
    long status; /* as EC2 sends it */
    enum tw_rc rc;
  } table[] = {
      {"InsufficientInstanceCapacity", 500, TW_E_CAPACITY},
      {"InsufficientCapacity", 500, TW_E_CAPACITY},
      {"InsufficientHostCapacity", 500, TW_E_CAPACITY},
      {"InsufficientReservedInstanceCapacity", 500, TW_E_CAPACITY},
      {"SpotMaxPriceTooLow", 400, TW_E_CAPACITY},
      {"Unsupported", 400, TW_E_CAPACITY},
      {"RequestLimitExceeded", 503, TW_E_RETRYABLE},
      {"InternalError", 500, TW_E_RETRYABLE},
      {"ServiceUnavailable", 503, TW_E_RETRYABLE},
      {"Unavailable", 503, TW_E_RETRYABLE},
      {"VcpuLimitExceeded", 400, TW_E_QUOTA},
      {"InstanceLimitExceeded", 400, TW_E_QUOTA},
      {"MaxSpotInstanceCountExceeded", 400, TW_E_QUOTA},
      {"AuthFailure", 401, TW_E_AUTH},
      {"SignatureDoesNotMatch", 403, TW_E_AUTH},
      {"MissingAuthenticationToken", 401, TW_E_AUTH},
      {"IncompleteSignature", 400, TW_E_AUTH},
      {"RequestExpired", 400, TW_E_AUTH},
      {"UnauthorizedOperation", 403, TW_E_AUTH},
      {"InvalidInstanceID.NotFound", 400, TW_E_NOTFOUND},
      {"IdempotentParameterMismatch", 400, TW_E_CONFLICT},
      {"InvalidParameterValue", 400, TW_E_INVALID},
      {"InvalidAMIID.NotFound", 400, TW_E_INVALID},
      {"InvalidInstanceID.Malformed", 400, TW_E_INVALID},
      {"MissingParameter", 400, TW_E_INVALID},
      {"DryRunOperation", 412, TW_E_INVALID},
  };
  char *tmpl = envelope_template();
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    expect(table[i].code, table[i].status, table[i].rc);
    /* The code decides whatever the status... */
    if (table[i].rc != TW_E_INVALID) {
      expect(table[i].code, 200, table[i].rc);
      expect(table[i].code, 0, table[i].rc);
    }
    through_envelope(tmpl, table[i].code, table[i].status, table[i].rc);
  }
  /* ...and an unknown code falls back on it. */
  expect("SomethingNew", 500, TW_E_RETRYABLE);
  expect("SomethingNew", 502, TW_E_RETRYABLE);
  expect("SomethingNew", 429, TW_E_RETRYABLE);
  expect("SomethingNew", 401, TW_E_AUTH);
  expect("SomethingNew", 403, TW_E_AUTH);
  expect("SomethingNew", 400, TW_E_INVALID);
  expect(NULL, 503, TW_E_RETRYABLE);
  expect(NULL, 404, TW_E_INVALID);
  /* Codes are case-sensitive, as EC2's are. */
  expect("insufficientinstancecapacity", 400, TW_E_INVALID);

  /* No envelope at all: a proxy's 502 page, an empty 403. */
  struct tw_err err = {0};
  const char *html = "<html><body>Bad Gateway</body></html>";
  enum tw_rc rc =
      tw_ec2_response_error("DescribeInstances", 502, html, strlen(html), &err);
  if (rc != TW_E_RETRYABLE || strcmp(err.detail, "HTTP 502")) {
    TW_FAIL("502 page: %s %s", tw_rc_str(rc), err.detail);
  }
  memset(&err, 0, sizeof err);
  rc = tw_ec2_response_error("DescribeInstances", 403, "", 0, &err);
  if (rc != TW_E_AUTH || strcmp(err.detail, "HTTP 403")) {
    TW_FAIL("empty 403: %s %s", tw_rc_str(rc), err.detail);
  }
  free(tmpl);
  printf("%zu codes checked\n", sizeof table / sizeof *table);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(error_table)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
