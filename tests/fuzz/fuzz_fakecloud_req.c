/* fuzz_fakecloud_req.c - the fake cloud's request decoding on arbitrary
 * bytes: form/query decoding (params.c), then every EC2 extractor and
 * validator (ec2_req.c) over the result.  Nothing may crash, leak or read
 * out of bounds, whatever the input; errors must carry an EC2 code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fakecloud/ec2_req.h"
#include "tests/fakecloud/params.h"

static void check_err(const struct tw_err *err) {
  if (err->rc != TW_OK && !err->detail[0]) {
    fprintf(stderr, "error without an EC2 code: %s\n", err->msg);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fc_params p;
  struct tw_err err;
  fc_params_init(&p);
  tw_err_clear(&err);
  fc_params_parse(&p, (const char *)data, size, &err);
  check_err(&err);

  struct ec2_run run;
  tw_err_clear(&err);
  ec2_parse_run(&p, &run, &err);
  check_err(&err);

  static const char *const filters[] = {"tag:", "instance-type",
                                        "availability-zone", NULL};
  struct ec2_filters fs = {.n = 0};
  tw_err_clear(&err);
  if (!ec2_filters_parse(&p, filters, &fs, &err))
    for (size_t i = 0; i < fs.n; i++)
      ec2_filter_any(&fs.v[i], "m5.large");
  check_err(&err);
  ec2_filters_release(&fs);

  const char **ids = NULL;
  size_t n = 0;
  tw_err_clear(&err);
  if (!ec2_list(&p, "InstanceId", EC2_MAX_LIST, &ids, &n, &err))
    for (size_t i = 0; i < n; i++)
      ec2_instance_id_valid(ids[i]);
  check_err(&err);
  free(ids);

  long v;
  bool present;
  int64_t ms;
  tw_err_clear(&err);
  ec2_int(&p, "MaxResults", 5, 1000, &v, &present, &err);
  ec2_time(&p, "StartTime", &ms, &present, &err);
  ec2_check_known(&p, ec2_describe_instances_params, &err);
  check_err(&err);
  ec2_params_hash(&p, NULL);

  /* Glob patterns from the input itself: the matcher must stay linear. */
  for (size_t i = 0; i + 1 < p.n && i < 8; i++)
    ec2_glob(p.v[i].value, p.v[i + 1].value);
  fc_params_release(&p);
  return 0;
}
