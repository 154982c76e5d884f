/* fuzz_alibaba_req.c - the fake's Alibaba request handling on arbitrary
 * bytes (tests/fakecloud/alibaba_req.c): claiming, decoding both
 * signature shapes, verifying, RunInstances validation, InstanceIds and
 * the XML writer.  The input is
 *   QUERY \n HEADER: VALUE \n ... \n \n BODY
 * Nothing may crash, leak or read out of bounds; errors must carry an
 * ECS code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fakecloud/alibaba_req.h"

static void check_err(const struct tw_err *err) {
  if (err->rc != TW_OK && !err->detail[0]) {
    fprintf(stderr, "error without an ECS code: %s\n", err->msg);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  memcpy(buf, data, size);
  buf[size] = '\0';
  /* Split: the query line, header lines, an empty line, the body. */
  char *query = buf, *rest = memchr(buf, '\n', size);
  struct fc_header h[16];
  size_t nh = 0;
  const char *body = "";
  size_t body_len = 0;
  if (rest) {
    *rest++ = '\0';
    while (*rest && *rest != '\n' && nh < 16) {
      char *eol = strchr(rest, '\n');
      if (eol)
        *eol = '\0';
      char *colon = strchr(rest, ':');
      if (colon) {
        *colon = '\0';
        h[nh].name = rest;
        h[nh].value = colon[1] == ' ' ? colon + 2 : colon + 1;
        nh++;
      }
      if (!eol)
        break;
      rest = eol + 1;
    }
    if (*rest == '\n') {
      body = rest + 1;
      body_len = size - (size_t)(body - buf);
    }
  }
  struct fc_request req = {.method = "POST",
                           .raw_path = "/",
                           .raw_query = *query ? query : NULL,
                           .headers = h,
                           .n_headers = nh,
                           .body = body,
                           .body_len = body_len};
  fc_ali_claims(&req);
  struct fc_ali_call c;
  struct tw_err err;
  fc_ali_call_init(&c);
  tw_err_clear(&err);
  if (!fc_ali_decode(&req, &c, &err)) {
    tw_err_clear(&err);
    fc_ali_verify(&req, &c, "testsecret", c.time_ms, &err);
  }
  check_err(&err);

  struct fc_ali_run run;
  tw_err_clear(&err);
  fc_ali_parse_run(&c.p, &run, &err);
  check_err(&err);

  char **ids = NULL;
  size_t n = 0;
  tw_err_clear(&err);
  if (!fc_ali_id_array(fc_params_get(&c.p, "InstanceIds"), 100, &ids, &n, &err))
    fc_ali_strv_free(ids, n);
  check_err(&err);
  int64_t milli;
  fc_ali_milli_parse(fc_params_get(&c.p, "SpotPriceLimit"), &milli);
  fc_ali_call_release(&c);

  json_t *j = json_loadb(body, body_len, JSON_DECODE_ANY, NULL);
  if (j) {
    struct tw_buf x;
    tw_buf_init(&x);
    fc_ali_json_to_xml(&x, "FuzzResponse", j);
    tw_buf_release(&x);
    json_decref(j);
  }
  free(buf);
  return 0;
}
