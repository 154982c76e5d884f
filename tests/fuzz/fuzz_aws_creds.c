/* fuzz_aws_creds.c - the parsers of the AWS credential chain
 * (providers/aws/aws_creds.h) over the same bytes: the shared files' INI,
 * STS's XML answers, the container endpoint's and IMDS's JSON.  None may
 * crash, leak or read out of bounds; a failed parse leaves no key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "providers/aws/aws_creds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  struct tw_err err = {0};
  struct tw_aws_key k;

  char v[64];
  const char *secs[] = {"default", "profile A", "", "x]"};
  for (size_t i = 0; i < 4; i++) {
    tw_aws_ini_has(s, secs[i]);
    if (tw_aws_ini_get(s, secs[i], "aws_access_key_id", v, sizeof v) &&
        strlen(v) >= sizeof v)
      abort();
  }
  if (tw_aws_parse_sts((const char *)data, size, 200, &k, &err) != TW_OK &&
      (k.access_key[0] || k.secret_key[0]))
    abort();
  tw_aws_parse_sts((const char *)data, size, 403, &k, &err);
  if (tw_aws_parse_cred_json((const char *)data, size, &k, &err) != TW_OK &&
      (k.access_key[0] || k.secret_key[0]))
    abort();
  free(s);
  return 0;
}
