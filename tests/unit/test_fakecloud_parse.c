/* test_fakecloud_parse.c - the fake cloud's pure parts, table-driven:
 * query/form decoding, EC2 list indexes and filters, RunInstances
 * validation, glob matching, prices, fault rules and the built-in
 * catalog. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/catalog.h"
#include "tests/fakecloud/clock.h"
#include "tests/fakecloud/ec2_req.h"
#include "tests/fakecloud/fault.h"
#include "tests/fakecloud/params.h"
#include "tests/fakecloud/xml.h"

static void decoding(void **state) {
  static const struct {
    const char *in;
    const char *key, *want; /* NULL want: key absent */
    const char *err;        /* expected EC2 code, or NULL */
  } cases[] = {
      {"a=1&b=x+y", "b", "x y", NULL},
      {"a=%41%42", "a", "AB", NULL},
      {"a=%e2%82%ac", "a", "\xe2\x82\xac", NULL},
      {"a", "a", "", NULL},
      {"a=1&&b=2", "b", "2", NULL},
      {"a=%4", NULL, NULL, "MalformedQueryString"},
      {"a=%zz", NULL, NULL, "MalformedQueryString"},
      {"a=%00", NULL, NULL, "MalformedQueryString"},
      {"=1", NULL, NULL, "MalformedQueryString"},
      {"a=%c3%28", NULL, NULL, "InvalidCharacter"},
      {"a=%ed%a0%80", NULL, NULL, "InvalidCharacter"}, /* surrogate */
      {"a=%c0%80", NULL, NULL, "InvalidCharacter"},    /* overlong NUL */
      {"a=%c1%bf", NULL, NULL, "InvalidCharacter"},    /* overlong */
      {"a=1&a=2", NULL, NULL, "InvalidParameterValue"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct fc_params p;
    struct tw_err err;
    fc_params_init(&p);
    tw_err_clear(&err);
    enum tw_rc rc = fc_params_parse(&p, cases[i].in, strlen(cases[i].in), &err);
    if (cases[i].err) {
      TW_CHECK(rc != TW_OK && !strcmp(err.detail, cases[i].err),
               "case %zu %s: rc %d detail %s", i, cases[i].in, rc, err.detail);
    } else {
      const char *v = fc_params_get(&p, cases[i].key);
      TW_CHECK(rc == TW_OK && v && !strcmp(v, cases[i].want), "case %zu %s: %s",
               i, cases[i].in, v ? v : "(null)");
    }
    fc_params_release(&p);
  }
  /* The pair limit. */
  struct tw_buf b;
  tw_buf_init(&b);
  for (int i = 0; i <= FC_PARAMS_MAX; i++)
    tw_buf_printf(&b, "k%d=v&", i);
  struct fc_params p;
  struct tw_err err;
  fc_params_init(&p);
  tw_err_clear(&err);
  TW_CHECK(fc_params_parse(&p, b.data, b.len, &err) == TW_E_TOOBIG,
           "too many pairs");
  fc_params_release(&p);
  tw_buf_release(&b);
}

static struct fc_params parse(const char *s) {
  struct fc_params p;
  fc_params_init(&p);
  if (fc_params_parse(&p, s, strlen(s), NULL))
    fprintf(stderr, "setup parse failed: %s\n", s);
  return p;
}

static void lists_and_filters(void **state) {
  struct fc_params p = parse("X.3=c&X.1=a&X.10=j&X.2.Sub=s&X.2=b&Y.1=z");
  const char **v;
  size_t n;
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(ec2_list(&p, "X", 100, &v, &n, &err) == TW_OK && n == 4, "n %zu", n);
  TW_CHECK(n == 4 && !strcmp(v[0], "a") && !strcmp(v[1], "b") &&
               !strcmp(v[2], "c") && !strcmp(v[3], "j"),
           "ordered by index, not text");
  free(v);
  tw_err_clear(&err);
  TW_CHECK(ec2_list(&p, "X", 3, &v, &n, &err) != TW_OK, "over max");
  fc_params_release(&p);
  p = parse("X.0=a");
  tw_err_clear(&err);
  TW_CHECK(ec2_list(&p, "X", 10, &v, &n, &err) != TW_OK &&
               !strcmp(err.detail, "InvalidParameterValue"),
           "index 0 refused");
  fc_params_release(&p);

  static const char *const allowed[] = {"tag:", "instance-type", NULL};
  p = parse("Filter.1.Name=tag%3Ateam&Filter.1.Value.1=a&Filter.1.Value.2=b"
            "&Filter.2.Name=instance-type&Filter.2.Value.1=m5.*");
  struct ec2_filters fs = {.n = 0};
  tw_err_clear(&err);
  TW_CHECK(ec2_filters_parse(&p, allowed, &fs, &err) == TW_OK && fs.n == 2,
           "filters %s", err.msg);
  TW_CHECK(fs.n == 2 && fs.v[0].n_values == 2 &&
               ec2_filter_any(&fs.v[1], "m5.large") &&
               !ec2_filter_any(&fs.v[1], "c5.xlarge"),
           "filter values");
  ec2_filters_release(&fs);
  fc_params_release(&p);
  static const char *const bad[] = {
      "Filter.1.Name=tag%3A&Filter.1.Value.1=a", /* empty tag key */
      "Filter.1.Name=colour&Filter.1.Value.1=a", /* unknown */
      "Filter.1.Name=instance-type",             /* no values */
      "Filter.1.Value.1=a",                      /* no name */
      "Filter.1.Name=instance-type&Filter.1.Value.1=a&Filter.1.Extra=1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = parse(bad[i]);
    tw_err_clear(&err);
    TW_CHECK(ec2_filters_parse(&p, allowed, &fs, &err) != TW_OK &&
                 err.detail[0],
             "bad filter %zu accepted", i);
    ec2_filters_release(&fs);
    fc_params_release(&p);
  }
}

static void globbing(void **state) {
  static const struct {
    const char *pat, *s;
    bool want;
  } cases[] = {
      {"*", "", true},
      {"*", "abc", true},
      {"a*c", "abbbc", true},
      {"a?c", "abc", true},
      {"a?c", "ac", false},
      {"job-*", "job-42", true},
      {"job-*", "jo", false},
      {"\\*", "*", true},
      {"\\*", "a", false},
      {"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
      {"exact", "exact", true},
      {"exact", "exactly", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    TW_CHECK(ec2_glob(cases[i].pat, cases[i].s) == cases[i].want, "%s ~ %s",
             cases[i].pat, cases[i].s);
}

static void run_validation(void **state) {
#define BASE "ImageId=ami-12345678&InstanceType=m5.large&MinCount=1&MaxCount=1"
  static const struct {
    const char *in;
    const char *err; /* NULL: valid */
  } cases[] = {
      {BASE, NULL},
      {BASE "&InstanceMarketOptions.MarketType=spot"
            "&InstanceMarketOptions.SpotOptions.MaxPrice=0.05",
       NULL},
      {"InstanceType=m5.large&MinCount=1&MaxCount=1", "MissingParameter"},
      {"ImageId=ami-1&InstanceType=m5.large&MinCount=1&MaxCount=1",
       "InvalidAMIID.Malformed"},
      {"ImageId=ami-12345678&InstanceType=m5.large&MinCount=x&MaxCount=1",
       "InvalidParameterValue"},
      {"ImageId=ami-12345678&InstanceType=m5.large&MinCount=0&MaxCount=1",
       "InvalidParameterValue"},
      {BASE "&Bogus=1", "UnknownParameter"},
      {BASE "&InstanceMarketOptions.MarketType=ondemand",
       "InvalidParameterValue"},
      {BASE "&InstanceMarketOptions.SpotOptions.MaxPrice=1",
       "MissingParameter"},
      {BASE "&InstanceMarketOptions.MarketType=spot"
            "&InstanceMarketOptions.SpotOptions.MaxPrice=-1",
       "InvalidParameterValue"},
      {BASE "&InstanceMarketOptions.MarketType=spot"
            "&InstanceMarketOptions.SpotOptions.Colour=red",
       "UnknownParameter"},
      {BASE "&TagSpecification.1.ResourceType=instance"
            "&TagSpecification.1.Tag.1.Key=aws%3Aname"
            "&TagSpecification.1.Tag.1.Value=x",
       "InvalidParameterValue"},
      {BASE "&TagSpecification.1.ResourceType=instance"
            "&TagSpecification.1.Tag.1.Key=a&TagSpecification.1.Tag.2.Key=a",
       "InvalidParameterValue"},
      {BASE "&TagSpecification.1.ResourceType=bucket"
            "&TagSpecification.1.Tag.1.Key=a",
       "InvalidParameterValue"},
      {BASE "&ClientToken=0123456789012345678901234567890123456789012345678"
            "901234567890123456789",
       "InvalidParameterValue"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct fc_params p = parse(cases[i].in);
    struct ec2_run r;
    struct tw_err err;
    tw_err_clear(&err);
    enum tw_rc rc = ec2_parse_run(&p, &r, &err);
    if (cases[i].err)
      TW_CHECK(rc != TW_OK && !strcmp(err.detail, cases[i].err),
               "case %zu: got %s (%s)", i, err.detail, err.msg);
    else
      TW_CHECK(rc == TW_OK, "case %zu: %s %s", i, err.detail, err.msg);
    if (i == 1)
      TW_CHECK(r.spot && r.max_price_uusd == 50000 &&
                   !strcmp(r.spot_type, "one-time") &&
                   !strcmp(r.interruption, "terminate"),
               "spot defaults");
    fc_params_release(&p);
  }
  /* The idempotency hash ignores order, not values. */
  struct fc_params a = parse("A=1&B=2"), b = parse("B=2&A=1"),
                   c = parse("A=1&B=3");
  TW_CHECK(ec2_params_hash(&a, NULL) == ec2_params_hash(&b, NULL), "order");
  TW_CHECK(ec2_params_hash(&a, NULL) != ec2_params_hash(&c, NULL), "values");
  fc_params_release(&a);
  fc_params_release(&b);
  fc_params_release(&c);
}

static void prices_and_catalog(void **state) {
  int64_t v = 0;
  char out[32];
  TW_CHECK(fc_price_parse("0.0352", &v) && v == 35200, "0.0352 -> %lld",
           (long long)v);
  TW_CHECK(fc_price_parse("98.32", &v) && v == 98320000, "98.32");
  TW_CHECK(fc_price_parse("7", &v) && v == 7000000, "7");
  TW_CHECK(!fc_price_parse("0.0000001", &v), "7 decimals");
  TW_CHECK(!fc_price_parse("-1", &v) && !fc_price_parse("1e3", &v) &&
               !fc_price_parse("", &v) && !fc_price_parse(".5", &v) &&
               !fc_price_parse("5.", &v),
           "malformed");
  fc_price_fmt(35200, out);
  TW_CHECK(!strcmp(out, "0.035200"), "%s", out);

  struct fc_catalog *c = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(fc_catalog_builtin(&c, &err) == TW_OK, "builtin: %s", err.msg);
  if (!c)
    return;
  const char *regions[] = {"us-east-1", "us-west-2", "eu-west-1"};
  for (size_t i = 0; i < 3; i++)
    TW_CHECK(fc_catalog_region(c, regions[i]), "region %s", regions[i]);
  static const struct {
    const char *type, *gpu;
    int count;
    int64_t mib;
  } gpus[] = {{"p4d.24xlarge", "A100", 8, 40960},
              {"p4de.24xlarge", "A100", 8, 81920},
              {"p5.48xlarge", "H100", 8, 81920},
              {"g5.xlarge", "A10G", 1, 24576},
              {"g4dn.xlarge", "T4", 1, 16384}};
  for (size_t i = 0; i < 5; i++) {
    const struct fc_itype *it = fc_catalog_itype(c, gpus[i].type);
    TW_CHECK(it && it->has_gpu && !strcmp(it->gpu.name, gpus[i].gpu) &&
                 it->gpu.count == gpus[i].count &&
                 it->gpu.memory_mib == gpus[i].mib,
             "%s", gpus[i].type);
  }
  const struct fc_itype *m6g = fc_catalog_itype(c, "m6g.large");
  TW_CHECK(m6g && !strcmp(m6g->arch[0], "arm64") && !m6g->has_gpu, "m6g");
  /* Every spot price is below its on-demand price. */
  for (size_t i = 0; i < c->n_offers; i++)
    for (size_t z = 0; z < c->offers[i].n_zones; z++)
      TW_CHECK(c->offers[i].zones[z].spot_uusd <= c->offers[i].on_demand_uusd,
               "offer %zu zone %zu", i, z);
  fc_catalog_free(c);
  static const char *const bad[] = {
      "{}",
      "{\"aws\":{\"owner_id\":\"1\",\"regions\":[],"
      "\"instance_types\":[],\"offers\":[]}}",
      "{\"aws\":{\"owner_id\":\"1\",\"regions\":[{\"name\":\"r\",\"zones\":"
      "[{\"name\":\"z\",\"id\":\"i\"}]}],\"instance_types\":[],\"offers\":"
      "[{\"instance_type\":\"x\",\"region\":\"r\",\"on_demand\":\"1\","
      "\"spot\":{\"z\":\"1\"}}]}}",
      "not json"};
  for (size_t i = 0; i < 4; i++) {
    c = NULL;
    tw_err_clear(&err);
    TW_CHECK(fc_catalog_parse(bad[i], strlen(bad[i]), &c, &err) ==
                     TW_E_INVALID &&
                 !c,
             "bad catalog %zu", i);
  }
}

static void fault_rules(void **state) {
  static const struct {
    const char *json;
    bool ok;
  } cases[] = {
      {"{\"kind\":\"throttle\",\"count\":2}", true},
      {"{\"kind\":\"error\",\"status\":503}", true},
      {"{\"kind\":\"slow\",\"delay_ms\":50}", true},
      {"{\"kind\":\"slow\"}", false},
      {"{\"kind\":\"capacity\",\"market\":\"reserved\"}", false},
      {"{\"kind\":\"spot_interruption\"}", false},
      {"{\"kind\":\"spot_interruption\",\"rate_per_hour\":0.5}", true},
      {"{\"kind\":\"throttle\",\"probability\":1.5}", false},
      {"{\"kind\":\"throttle\",\"colour\":\"red\"}", false},
      {"{\"kind\":\"meteor\"}", false},
      {"{\"kind\":\"region_down\"}", false},
      {"{\"kind\":\"region_down\",\"region\":\"us-east-1\"}", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *j = json_loads(cases[i].json, 0, NULL);
    struct fc_fault f;
    struct tw_err err;
    tw_err_clear(&err);
    enum tw_rc rc = fc_fault_from_json(j, &f, &err);
    TW_CHECK((rc == TW_OK) == cases[i].ok, "case %zu %s: %s", i, cases[i].json,
             err.msg);
    if (i == 1)
      TW_CHECK(!strcmp(f.code, "Unavailable") && f.status == 503,
               "503 defaults to Unavailable");
    json_decref(j);
  }
  /* Firing: filters, counts and windows. */
  struct fc_faults fl;
  fc_faults_init(&fl);
  json_t *j = json_loads("{\"faults\":[{\"kind\":\"capacity\","
                         "\"instance_type\":\"p5.48xlarge\",\"count\":1,"
                         "\"from_ms\":1000}]}",
                         0, NULL);
  TW_CHECK(fc_faults_load_json(&fl, j, NULL) == TW_OK && fl.n == 1, "load");
  json_decref(j);
  struct fc_rng rng = {1};
  struct fc_fault_query q = {.service = "ec2", .instance_type = "p5.48xlarge"};
  struct fc_fault_query other = {.service = "ec2", .instance_type = "m5.large"};
  TW_CHECK(!fc_faults_fire(&fl, FC_FAULT_CAPACITY, &q, 999, &rng),
           "before window");
  TW_CHECK(!fc_faults_fire(&fl, FC_FAULT_CAPACITY, &other, 1000, &rng),
           "other type");
  TW_CHECK(fc_faults_fire(&fl, FC_FAULT_CAPACITY, &q, 1000, &rng), "fires");
  TW_CHECK(!fc_faults_fire(&fl, FC_FAULT_CAPACITY, &q, 1001, &rng), "spent");
  fc_faults_release(&fl);
}

static void scaled_clock(void **state) {
  struct fc_clock c;
  fc_clock_init(&c, 1000, 0.0);
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  TW_CHECK(fc_clock_now(&c) == 1000, "speed 0 is frozen");
  fc_clock_advance(&c, 500);
  TW_CHECK(fc_clock_now(&c) == 1500, "advance");
  fc_clock_set_speed(&c, 1000.0);
  nanosleep(&ts, NULL); /* 2 ms real = at least 2 s fake */
  int64_t now = fc_clock_now(&c);
  TW_CHECK(now >= 3500 && now < 1500 + 60000, "speed 1000: %lld",
           (long long)now);
  fc_clock_set(&c, 0);
  fc_clock_set_speed(&c, 0.0);
  TW_CHECK(fc_clock_now(&c) < 100, "set");
  char d[32];
  fc_http_date(1714564800000, d);
  TW_CHECK(!strcmp(d, "Wed, 01 May 2024 12:00:00 GMT"), "%s", d);
  fc_iso_seconds(1714564925000, d);
  TW_CHECK(!strcmp(d, "2024-05-01T12:02:05Z"), "%s", d);
}

/* The XML writer: references for the five, XML 1.0's forbidden control
 * characters dropped, empty elements self-closed. */
static void xml_writer(void **state) {
  struct tw_buf b;
  tw_buf_init(&b);
  fc_xml_open(&b, "r");
  fc_xml_elem(&b, "a", "x&y<z>\"q'\x01\tend");
  fc_xml_elem(&b, "e", "");
  fc_xml_elem(&b, "n", NULL);
  fc_xml_elem(&b, "p", "plain text");
  fc_xml_elem(&b, "s", "&");
  fc_xml_elem_i64(&b, "i", -42);
  fc_xml_elem_bool(&b, "t", 1);
  fc_xml_close(&b, "r");
  TW_CHECK(!strcmp(b.data, "<r><a>x&amp;y&lt;z&gt;&quot;q&apos;\tend</a>"
                           "<e/><n/><p>plain text</p><s>&amp;</s>"
                           "<i>-42</i><t>true</t></r>"),
           "%s", b.data);
  tw_buf_release(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(xml_writer),
      cmocka_unit_test(scaled_clock),      cmocka_unit_test(decoding),
      cmocka_unit_test(lists_and_filters), cmocka_unit_test(globbing),
      cmocka_unit_test(run_validation),    cmocka_unit_test(prices_and_catalog),
      cmocka_unit_test(fault_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
