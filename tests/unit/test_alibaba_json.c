/* test_alibaba_json.c - the ECS response parsers (providers/alibaba/
 * ecs_json.c).
 *
 *   test_alibaba_json             money, errors and malformed input
 *   test_alibaba_json --fixtures  the official ECS examples recorded in
 *                                 shared/data/fixtures/aliyun-ecs-docs
 *                                 (SKIPPED when the data is absent) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/alibaba/ecs_json.h"

static void money(void **state) {
  int64_t v;
  TW_CHECK(tw_ecs_decimal_nano("0.036", &v) && v == 36000000);
  TW_CHECK(tw_ecs_decimal_nano("12", &v) && v == 12000000000LL);
  TW_CHECK(tw_ecs_decimal_nano("3712.8", &v) && v == 3712800000000LL);
  TW_CHECK(tw_ecs_decimal_nano("1.5e-05", &v) && v == 15000);
  TW_CHECK(tw_ecs_decimal_nano("0.0000000005", &v) && v == 1); /* half up */
  TW_CHECK(tw_ecs_decimal_nano("0.0000000004", &v) && v == 0);
  TW_CHECK(tw_ecs_decimal_nano("007.5", &v) && v == 7500000000LL);
  TW_CHECK(!tw_ecs_decimal_nano("-1", &v));
  TW_CHECK(!tw_ecs_decimal_nano("1.2.3", &v));
  TW_CHECK(!tw_ecs_decimal_nano("", &v));
  TW_CHECK(!tw_ecs_decimal_nano(".", &v));
  TW_CHECK(!tw_ecs_decimal_nano("1e99", &v));
  TW_CHECK(!tw_ecs_decimal_nano("2000000000", &v)); /* above 1e9 units */
  TW_CHECK(!tw_ecs_decimal_nano("0x10", &v));

  /* 0.693 CNY at 0.138 USD/CNY = 0.095634 USD = 95634 micro-USD. */
  TW_CHECK(tw_ecs_to_uusd(693000000, 138000000, &v, NULL) == TW_OK &&
           v == 95634);
  /* rounding half up: 0.0000005 USD -> 1 micro-USD */
  TW_CHECK(tw_ecs_to_uusd(5, 100000000, &v, NULL) == TW_OK && v == 0);
  TW_CHECK(tw_ecs_to_uusd(5000, 100000000, &v, NULL) == TW_OK && v == 1);
  TW_CHECK(tw_ecs_to_uusd(-1, 1, &v, NULL) == TW_E_INVALID);
  TW_CHECK(tw_ecs_to_uusd(1000000000LL * TW_ECS_NANO, 1000000000LL * 1000, &v,
                          NULL) == TW_E_INVALID);
  /* 0.05 USD at 0.138: 0.362 CNY (0.3623... rounded down) */
  TW_CHECK(tw_ecs_uusd_to_milli(50000, 138000000) == 362);
  TW_CHECK(tw_ecs_uusd_to_milli(0, 138000000) == 0);

  /* A JSON number arrives as a double: its text is recovered exactly. */
  const char doc[] = "{\"PriceInfo\": {\"Price\": {\"Currency\": \"CNY\", "
                     "\"OriginalPrice\": 0.1, \"TradePrice\": 0.7}}}";
  struct tw_ecs_price pr;
  TW_CHECK(tw_ecs_parse_price(doc, strlen(doc), &pr, NULL) == TW_OK);
  TW_CHECK(pr.trade_nano == 700000000 && pr.original_nano == 100000000);
  TW_CHECK(!strcmp(pr.currency, "CNY"));
}

static void errors(void **state) {
  struct tw_ecs_error e;
  const char nostock[] = "{\"RequestId\": \"R\", \"HostId\": \"ecs\", "
                         "\"Code\": \"OperationDenied.NoStock\", "
                         "\"Message\": \"sold out\"}";
  TW_CHECK(tw_ecs_parse_error(nostock, strlen(nostock), &e));
  TW_CHECK(!strcmp(e.code, "OperationDenied.NoStock") &&
           !strcmp(e.message, "sold out") && !strcmp(e.request_id, "R"));
  const char cms_ok[] = "{\"Code\": \"200\", \"Success\": true}";
  TW_CHECK(!tw_ecs_parse_error(cms_ok, strlen(cms_ok), &e));
  const char cms_bad[] = "{\"Code\": \"403\", \"Success\": false, "
                         "\"Message\": \"no\"}";
  TW_CHECK(tw_ecs_parse_error(cms_bad, strlen(cms_bad), &e));
  TW_CHECK(!tw_ecs_parse_error("{\"RequestId\": \"x\"}", 17, &e));
  TW_CHECK(!tw_ecs_parse_error("<Error/>", 8, &e));

  static const struct {
    const char *code;
    long status;
    enum tw_rc rc;
  } table[] = {
      {"OperationDenied.NoStock", 403, TW_E_CAPACITY},
      {"Zone.NotOnSale", 400, TW_E_CAPACITY},
      {"Throttling", 400, TW_E_RETRYABLE},
      {"Throttling.User", 400, TW_E_RETRYABLE},
      {"QuotaExceed.AfterpayInstance", 400, TW_E_QUOTA},
      {"QuotaExceed.BuyImage", 403, TW_E_QUOTA},
      {"QuotaExceedSomething", 400, TW_E_INVALID}, /* not the prefix */
      {"InvalidAccessKeyId.NotFound", 404, TW_E_AUTH},
      {"SignatureDoesNotMatch", 400, TW_E_AUTH},
      {"InvalidInstanceId.NotFound", 404, TW_E_NOTFOUND},
      {"IdempotentParameterMismatch", 400, TW_E_CONFLICT},
      {"InternalError", 500, TW_E_RETRYABLE},
      {"SomethingNew", 503, TW_E_RETRYABLE},
      {"SomethingNew", 403, TW_E_FORBIDDEN},
      {"SomethingNew", 400, TW_E_INVALID},
      {NULL, 401, TW_E_AUTH},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    enum tw_rc rc = tw_ecs_error_class(table[i].code, table[i].status);
    if (rc != table[i].rc)
      fprintf(stderr, "class of %s/%ld: %s\n",
              table[i].code ? table[i].code : "(none)", table[i].status,
              tw_rc_str(rc));
    TW_CHECK(rc == table[i].rc);
  }
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(tw_ecs_response_error("RunInstances", 403, nostock, strlen(nostock),
                                 &err) == TW_E_CAPACITY);
  TW_CHECK(!strcmp(err.detail, "OperationDenied.NoStock"));
  TW_CHECK(strstr(err.msg, "RunInstances: OperationDenied.NoStock: sold out"));
  tw_err_clear(&err);
  TW_CHECK(tw_ecs_response_error("X", 502, "<html>", 6, &err) ==
           TW_E_RETRYABLE);
  TW_CHECK(!strcmp(err.detail, "HTTP 502"));
}

static void malformed(void **state) {
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  struct tw_err err;
  static const char *const bad[] = {
      "",
      "[]",
      "{",
      "{\"Instances\": 3}",
      "{\"Instances\": {\"Instance\": 7}}",
      "{\"Instances\": {\"Instance\": [{\"InstanceId\": 5.5}]}}",
      "{\"Instances\": {\"Instance\": [{\"Status\": \"Running\"}]}}",
      "{\"Instances\": {\"Instance\": [3]}}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tw_err_clear(&err);
    TW_CHECK(tw_ecs_parse_instances(bad[i], strlen(bad[i]), &l, NULL, &err) ==
             TW_E_INVALID);
    TW_CHECK(l.n == 0);
  }
  /* One instance as an object, not a list (as an XML gateway may send). */
  const char one[] = "{\"Instances\": {\"Instance\": {\"InstanceId\": "
                     "\"i-1\", \"Status\": \"Stopped\", \"SpotStrategy\": "
                     "\"SpotAsPriceGo\", \"OperationLocks\": {\"LockReason\":"
                     " [{\"LockReason\": \"Recycling\"}]}}}}";
  TW_CHECK(tw_ecs_parse_instances(one, strlen(one), &l, NULL, NULL) == TW_OK);
  TW_CHECK(l.n == 1 && l.items[0].state == TW_INST_STOPPED &&
           l.items[0].market == TW_MARKET_SPOT &&
           !strcmp(l.items[0].state_reason, "Recycling"));
  tw_instance_list_release(&l);
  TW_CHECK(tw_ecs_parse_time("2017-12-10T04:04Z") == 1512878640000LL);
  TW_CHECK(tw_ecs_parse_time("2019-11-19T06:00:00Z") == 1574143200000LL);
  TW_CHECK(tw_ecs_parse_time("2019-11-19") == -1);
  TW_CHECK(tw_ecs_parse_time("2019-13-19T06:00Z") == -1);
  char name[32];
  tw_ecs_accel_name("NVIDIA A100", 80 * 1024, name, sizeof name);
  TW_CHECK(!strcmp(name, "A100-80GB"));
  tw_ecs_accel_name("NVIDIA V100", 16 * 1024, name, sizeof name);
  TW_CHECK(!strcmp(name, "V100"));
  tw_ecs_accel_name("NVIDIA A10", 24 * 1024, name, sizeof name);
  TW_CHECK(!strcmp(name, "A10"));

  /* CloudMonitor's reclaim event: the instance from Content. */
  const char ev[] =
      "{\"Code\": \"200\", \"Success\": true, \"SystemEvents\": "
      "{\"SystemEvent\": [{\"Name\": "
      "\"Instance:PreemptibleInstanceInterruption\", \"Time\": "
      "1574064244000, \"ResourceId\": \"acs:ecs:cn-hangzhou:1:instance/"
      "i-bp19w6o2tqa9jvoh8xxx\", \"Content\": \"{\\\"action\\\":"
      "\\\"delete\\\",\\\"instanceId\\\":\\\"i-bp19w6o2tqa9jvoh8xxx\\\"}\"},"
      "{\"Name\": \"Instance:SystemFailure.Reboot:Executing\", \"Time\": 1}]}}";
  struct tw_ecs_notice_list nl;
  tw_ecs_notice_list_init(&nl);
  TW_CHECK(tw_ecs_parse_reclaim_events(ev, strlen(ev), &nl, NULL) == TW_OK);
  TW_CHECK(nl.n == 1 &&
           !strcmp(nl.items[0].instance_id, "i-bp19w6o2tqa9jvoh8xxx") &&
           nl.items[0].time_ms == 1574064244000LL &&
           !strcmp(nl.items[0].action, "delete"));
  tw_ecs_notice_list_release(&nl);
}

/* ---- recorded examples -------------------------------------------------- */

static char *slurp(const char *dir, const char *name, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/fixtures/aliyun-ecs-docs/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return tw_buf_detach(&b);
}

static char data_dir[2048];

static void fixtures(void **state) {
  const char *dir = data_dir;
  size_t len;
  char *body = slurp(data_dir, "DescribeInstances.response.json", &len);
  TW_CHECK(body != NULL, "DescribeInstances.response.json");
  struct tw_err err;
  tw_err_clear(&err);
  struct tw_instance_list l;
  struct tw_ecs_page pg;
  tw_instance_list_init(&l);
  TW_CHECK(tw_ecs_parse_instances(body, len, &l, &pg, &err) == TW_OK);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    const struct tw_instance *in = &l.items[0];
    TW_CHECK(!strcmp(in->id, "i-bp67acfmxazb4p****"));
    TW_CHECK(in->state == TW_INST_RUNNING &&
             !strcmp(in->provider_state, "Running"));
    TW_CHECK(!strcmp(in->zone, "cn-hangzhou-g") &&
             !strcmp(in->region, "cn-hangzhou"));
    TW_CHECK(!strcmp(in->instance_type, "ecs.g5.large"));
    TW_CHECK(in->market == TW_MARKET_ON_DEMAND); /* SpotStrategy NoSpot */
    TW_CHECK(!strcmp(in->private_ip, "172.17.**.**"));
    TW_CHECK(!strcmp(in->public_ip, "121.40.**.**"));
    TW_CHECK(in->launched_ms == 1512878640000LL);
    TW_CHECK(!in->job_id[0]); /* TestKey is not one of ours */
  }
  TW_CHECK(pg.total_count == 1 && pg.page_number == 1 && pg.page_size == 10);
  TW_CHECK(!strcmp(pg.next_token, "caeba0bbb2be03f84eb48b699f0a4883"));
  tw_instance_list_release(&l);
  free(body);

  /* RunInstances, saved with its status line and headers. */
  body = slurp(dir, "RunInstances.response.json.http", &len);
  TW_CHECK(body != NULL);
  if (body) {
    char *json = strstr(body, "\r\n\r\n");
    json = json ? json + 4 : strstr(body, "\n\n");
    TW_CHECK(json != NULL);
    char **ids = NULL;
    size_t n = 0;
    int64_t trade = 0;
    if (json) {
      while (*json == '\n')
        json++;
      TW_CHECK(tw_ecs_parse_run(json, strlen(json), &ids, &n, &trade, &err) ==
               TW_OK);
    }
    TW_CHECK(n == 3 && ids && !strcmp(ids[0], "i-bp67acfmxazb4pd2****"));
    TW_CHECK(trade == 165000000); /* "0.165", a string in this example */
    for (size_t i = 0; i < n; i++)
      free(ids[i]);
    free(ids);
    free(body);
  }

  body = slurp(dir, "DescribeSpotPriceHistory.response.json", &len);
  TW_CHECK(body != NULL);
  if (body) {
    struct tw_ecs_spot_price_list sl;
    tw_ecs_spot_price_list_init(&sl);
    int64_t next = -1;
    char cur[8];
    TW_CHECK(tw_ecs_parse_spot_prices(body, len, &sl, &next, cur, &err) ==
             TW_OK);
    TW_CHECK(sl.n == 2 && next == 0 && !strcmp(cur, "CNY"));
    if (sl.n == 2) {
      TW_CHECK(sl.items[0].price_nano == 36000000);
      TW_CHECK(sl.items[0].origin_nano == 354000000);
      TW_CHECK(!strcmp(sl.items[0].zone, "cn-hangzhou-g"));
      TW_CHECK(sl.items[1].timestamp_ms == 1574146800000LL); /* 07:00 */
    }
    tw_ecs_spot_price_list_release(&sl);
    free(body);
  }

  body = slurp(dir, "DescribePrice.response.json", &len);
  TW_CHECK(body != NULL);
  if (body) {
    struct tw_ecs_price pr;
    TW_CHECK(tw_ecs_parse_price(body, len, &pr, &err) == TW_OK);
    TW_CHECK(pr.trade_nano == 3712800000000LL &&
             pr.original_nano == 4368000000000LL &&
             pr.discount_nano == 655200000000LL && !strcmp(pr.currency, "CNY"));
    free(body);
  }

  body = slurp(dir, "DescribeAvailableResource.response.json", &len);
  TW_CHECK(body != NULL);
  if (body) {
    struct tw_ecs_stock_list st;
    tw_ecs_stock_list_init(&st);
    TW_CHECK(tw_ecs_parse_available(body, len, "InstanceType", &st, &err) ==
             TW_OK);
    TW_CHECK(st.n == 1 && st.items[0].available &&
             !strcmp(st.items[0].zone, "cn-hangzhou-i") &&
             !strcmp(st.items[0].value, "ecs.g5.large") &&
             !strcmp(st.items[0].category, "WithStock"));
    tw_ecs_stock_list_release(&st);
    free(body);
  }

  body = slurp(dir, "DescribeInstanceTypes.response.json", &len);
  TW_CHECK(body != NULL);
  if (body) {
    struct tw_ecs_itype_list tl;
    tw_ecs_itype_list_init(&tl);
    char next[256];
    TW_CHECK(tw_ecs_parse_instance_types(body, len, &tl, next, &err) == TW_OK);
    TW_CHECK(tl.n == 1 && !strcmp(tl.items[0].name, "ecs.g6.large") &&
             tl.items[0].vcpus == 2 && tl.items[0].memory_mib == 8192 &&
             tl.items[0].accel_count == 0 && !next[0]);
    tw_ecs_itype_list_release(&tl);
    free(body);
  }

  /* Every success example that is JSON is no error document. */
  static const char *const oks[] = {
      "DeleteInstance.response.json", "StartInstance.response.json",
      "StopInstance.response.json",   "CreateInstance.response.json",
      "DescribeZones.response.json",  "DescribeRegions.response.json"};
  for (size_t i = 0; i < sizeof oks / sizeof oks[0]; i++) {
    body = slurp(dir, oks[i], &len);
    struct tw_ecs_error e;
    TW_CHECK(body && !tw_ecs_parse_error(body, len, &e));
    free(body);
  }

  /* The documented error codes: every QuotaExceed.* is provider quota,
   * every NoStock capacity, whatever status it came with. */
  static const char *const csvs[] = {
      "RunInstances.errors.csv", "CreateInstance.errors.csv",
      "DeleteInstance.errors.csv", "DescribeInstances.errors.csv"};
  int rows = 0;
  for (size_t i = 0; i < sizeof csvs / sizeof csvs[0]; i++) {
    body = slurp(dir, csvs[i], &len);
    TW_CHECK(body != NULL);
    for (char *line = body ? strtok(body, "\n") : NULL; line;
         line = strtok(NULL, "\n")) {
      long status = strtol(line, NULL, 10);
      char *c = strchr(line, ',');
      if (!c || status < 100)
        continue;
      char code[128];
      size_t n = strcspn(c + 1, ",");
      if (n >= sizeof code)
        continue;
      memcpy(code, c + 1, n);
      code[n] = '\0';
      enum tw_rc rc = tw_ecs_error_class(code, status);
      rows++;
      if (!strncmp(code, "QuotaExceed.", 12))
        TW_CHECK(rc == TW_E_QUOTA);
      if (!strcmp(code, "OperationDenied.NoStock") ||
          !strcmp(code, "Zone.NotOnSale"))
        TW_CHECK(rc == TW_E_CAPACITY);
      if (!strcmp(code, "InvalidInstanceId.NotFound"))
        TW_CHECK(rc == TW_E_NOTFOUND);
      if (!strcmp(code, "Throttling"))
        TW_CHECK(rc == TW_E_RETRYABLE);
    }
    free(body);
  }
  TW_CHECK(rows > 100);
  printf("recorded responses parsed; %d documented error rows classed\n", rows);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--fixtures")) {
    tw_testdata_dir(data_dir, sizeof data_dir);
    size_t len;
    char *probe = slurp(data_dir, "DescribeInstances.response.json", &len);
    if (!probe) {
      printf("SKIPPED: no recorded ECS responses under %s/fixtures\n",
             data_dir);
      return TW_SKIP;
    }
    free(probe);
    const struct CMUnitTest tests[] = {cmocka_unit_test(fixtures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(money),
      cmocka_unit_test(errors),
      cmocka_unit_test(malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
