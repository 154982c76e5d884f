/* test_aws_xml.c - the EC2 XML parsers on real recorded responses.
 *
 * Fixtures come from $TRADEWIND_TESTDATA/fixtures (libcloud and jclouds
 * EC2 responses, amazon-ec2-instance-selector SDK JSON); the test is
 * skipped (77) when they are absent.  The SDK JSON files are turned into
 * the Query API's XML shape (lowerCamel element names, lists as <item>),
 * which is how EC2 serializes the same structures, so real instance-type,
 * zone and spot-price data exercise the parsers too. */
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/aws/ec2_xml.h"
#include "providers/provider.h"
#include "tests/fuzz/ec2_xml_tree.h"

static char data_dir[1024];

static char *slurp(const char *rel, size_t *len) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", data_dir, rel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    TW_FAIL("missing fixture %s", path);
    *len = 0;
    return NULL;
  }
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

#define EC2 "fixtures/libcloud/ec2/"
#define JC "fixtures/jclouds/ec2/"
#define JCA "fixtures/jclouds/aws-ec2/"
#define SEL "fixtures/amazon-ec2-instance-selector/"

static const struct tw_instance *find_inst(const struct tw_instance_list *l,
                                           const char *id) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].id, id))
      return &l->items[i];
  return NULL;
}

static void run_instances_on_demand_and_spot(void **state) {
  size_t len;
  char *x = slurp(EC2 "run_instances.xml", &len);
  struct tw_instance_list l;
  struct tw_err err = {0};
  char *next = (char *)"unset";
  tw_instance_list_init(&l);
  enum tw_rc rc = tw_ec2_parse_instances(x, len, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 1);
  TW_CHECK(next == NULL);
  if (l.n == 1) {
    const struct tw_instance *i = &l.items[0];
    TW_CHECK_STR(i->id, "i-2ba64342");
    TW_CHECK_STR(i->instance_type, "m1.small");
    TW_CHECK_STR(i->zone, "us-east-1b");
    TW_CHECK(i->state == TW_INST_PENDING);
    TW_CHECK_STR(i->provider_state, "pending");
    TW_CHECK(i->market == TW_MARKET_ON_DEMAND);
    /* 2007-08-07T11:51:50.000Z */
    TW_CHECK(i->launched_ms == 1186487510000LL);
    TW_CHECK_STR(i->region, ""); /* the adapter fills it */
  }
  free(x);
  tw_instance_list_release(&l);

  x = slurp(EC2 "run_instances_spot.xml", &len);
  rc = tw_ec2_parse_instances(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 1 && !strcmp(l.items[0].id, "i-2ba64344") &&
           l.items[0].market == TW_MARKET_SPOT);
  free(x);
  tw_instance_list_release(&l);

  /* Idempotent run: the client token comes back. */
  x = slurp(EC2 "run_instances_idem.xml", &len);
  rc = tw_ec2_parse_instances(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 1);
  if (l.n == 1)
    TW_CHECK(*l.items[0].client_token != '\0');
  free(x);
  tw_instance_list_release(&l);
}

static void describe_instances_fields(void **state) {
  size_t len;
  char *x = slurp(EC2 "describe_instances.xml", &len);
  struct tw_instance_list l;
  struct tw_err err = {0};
  tw_instance_list_init(&l);
  enum tw_rc rc = tw_ec2_parse_instances(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  /* Two reservations of one instance each; the nested groupSet, tagSet
   * and networkInterfaceSet items are not instances. */
  TW_CHECK(l.n == 2);
  const struct tw_instance *a = find_inst(&l, "i-4382922a");
  const struct tw_instance *b = find_inst(&l, "i-8474834a");
  TW_CHECK(a && b);
  if (a && b) {
    TW_CHECK(a->state == TW_INST_STOPPED);
    TW_CHECK_STR(a->instance_type, "m1.small");
    TW_CHECK_STR(a->zone, "us-east-1d");
    TW_CHECK_STR(a->client_token, "ifmxj1365530456668");
    TW_CHECK_STR(a->state_reason, "Client.UserInitiatedShutdown");
    TW_CHECK_STR(a->public_ip, "1.2.3.4");
    TW_CHECK_STR(a->private_ip, "10.211.11.211");
    TW_CHECK(a->arch == TW_ARCH_X86_64);
    TW_CHECK_STR(b->instance_type, "t1.micro");
    TW_CHECK_STR(b->private_ip, "172.16.9.139");
    TW_CHECK_STR(b->client_token, "");
    /* Tagged Name and Group, none of Tradewind's. */
    TW_CHECK_STR(b->job_id, "");
    TW_CHECK_STR(b->tenant, "");
  }
  free(x);
  tw_instance_list_release(&l);

  x = slurp(JCA "describe_instances_latest.xml", &len);
  rc = tw_ec2_parse_instances(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 2);
  a = find_inst(&l, "i-911444f0");
  b = find_inst(&l, "i-931444f2");
  TW_CHECK(a && b);
  if (a && b) {
    TW_CHECK(a->state == TW_INST_RUNNING && b->state == TW_INST_RUNNING);
    TW_CHECK_STR(a->zone, "us-east-1c");
    TW_CHECK_STR(a->public_ip, "174.129.173.155");
    TW_CHECK(a->launched_ms == 1313502050000LL); /* 2011-08-16T13:40:50Z */
  }
  free(x);
  tw_instance_list_release(&l);

  /* A reservation with an empty instancesSet. */
  x = slurp(JC "describe_instances_empty.xml", &len);
  rc = tw_ec2_parse_instances(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 0);
  free(x);
  tw_instance_list_release(&l);
}

/* Tradewind's tags and NextToken, on a real response with the tag set
 * and the token spliced in (EC2 writes both exactly so). */
static void tags_and_next_token(void **state) {
  size_t len;
  char *x = slurp(JCA "describe_instances_latest.xml", &len);
  if (!x)
    return;
  const char *tags = "<item><key>tradewind:job</key><value>job-42</value>"
                     "</item><item><key>tradewind:attempt</key><value>"
                     "att-7</value></item><item><key>tradewind:tenant</key>"
                     "<value>physics</value></item>";
  char *at = strstr(x, "<tagSet>");
  char *end = strstr(x, "</DescribeInstancesResponse>");
  TW_CHECK(at && end);
  if (!at || !end) {
    free(x);
    return;
  }
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_add(&b, x, (size_t)(at - x) + strlen("<tagSet>"));
  tw_buf_adds(&b, tags);
  tw_buf_add(&b, at + strlen("<tagSet>"),
             (size_t)(end - at) - strlen("<tagSet>"));
  tw_buf_adds(&b, "<nextToken>AAEAAQ==/page2</nextToken>");
  tw_buf_adds(&b, end);

  struct tw_instance_list l;
  struct tw_err err = {0};
  char *next = NULL;
  tw_instance_list_init(&l);
  enum tw_rc rc = tw_ec2_parse_instances(b.data, b.len, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  const struct tw_instance *a = find_inst(&l, "i-911444f0");
  TW_CHECK(a != NULL);
  if (a) {
    TW_CHECK_STR(a->job_id, "job-42");
    TW_CHECK_STR(a->attempt_id, "att-7");
    TW_CHECK_STR(a->tenant, "physics");
  }
  TW_CHECK(next && !strcmp(next, "AAEAAQ==/page2"));
  free(next);
  tw_instance_list_release(&l);
  tw_buf_release(&b);
  free(x);
}

static void state_changes(void **state) {
  size_t len;
  struct tw_ec2_state_change_list l;
  struct tw_err err = {0};
  tw_ec2_state_change_list_init(&l);
  char *x = slurp(EC2 "terminate_instances.xml", &len);
  enum tw_rc rc = tw_ec2_parse_state_changes(x, len, &l, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].id, "i-4382922a");
    TW_CHECK(l.items[0].current == TW_INST_SHUTTING_DOWN);
    TW_CHECK(l.items[0].previous == TW_INST_RUNNING);
  }
  free(x);
  tw_ec2_state_change_list_release(&l);

  const char *files[] = {JC "terminate_instances.xml", JC "start_instances.xml",
                         JC "stop_instances.xml", EC2 "start_instances.xml",
                         EC2 "stop_instances.xml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    x = slurp(files[i], &len);
    rc = tw_ec2_parse_state_changes(x, len, &l, &err);
    TW_CHECK_RC(rc, TW_OK, err);
    TW_CHECK(l.n >= 1);
    for (size_t j = 0; j < l.n; j++) {
      TW_CHECK(!strncmp(l.items[j].id, "i-", 2));
      TW_CHECK(l.items[j].current != TW_INST_UNKNOWN);
      TW_CHECK(l.items[j].previous != TW_INST_UNKNOWN);
    }
    free(x);
    tw_ec2_state_change_list_release(&l);
  }
}

static void zones(void **state) {
  size_t len;
  struct tw_ec2_zone_list l;
  struct tw_err err = {0};
  tw_ec2_zone_list_init(&l);
  char *x = slurp(EC2 "describe_availability_zones.xml", &len);
  enum tw_rc rc = tw_ec2_parse_zones(x, len, &l, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 2);
  if (l.n == 2) {
    TW_CHECK_STR(l.items[0].name, "eu-west-1a");
    TW_CHECK_STR(l.items[1].name, "eu-west-1b");
    TW_CHECK_STR(l.items[0].region, "eu-west-1");
    TW_CHECK_STR(l.items[0].state, "available");
    TW_CHECK_STR(l.items[0].zone_id, "");
  }
  free(x);
  tw_ec2_zone_list_release(&l);

  x = slurp(JC "availabilityZones-us-east-1.xml", &len);
  rc = tw_ec2_parse_zones(x, len, &l, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 5);
  for (size_t i = 0; i < l.n; i++) {
    TW_CHECK_STR(l.items[i].region, "us-east-1");
    TW_CHECK(l.items[i].name[9] == (char)('a' + i));
  }
  free(x);
  tw_ec2_zone_list_release(&l);
}

static void spot_prices(void **state) {
  size_t len;
  struct tw_ec2_spot_price_list l;
  struct tw_err err = {0};
  char *next = NULL;
  tw_ec2_spot_price_list_init(&l);
  char *x = slurp(JCA "describe_spot_price_history.xml", &len);
  enum tw_rc rc = tw_ec2_parse_spot_prices(x, len, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 3);
  TW_CHECK(next == NULL);
  if (l.n == 3) {
    TW_CHECK_STR(l.items[0].instance_type, "t1.micro");
    TW_CHECK_STR(l.items[0].product, "SUSE Linux");
    TW_CHECK(l.items[0].price_uusd_per_hour == 13000);
    TW_CHECK_STR(l.items[0].zone, "us-west-1a");
    TW_CHECK(l.items[0].timestamp_ms == 1299500239000LL);
    TW_CHECK_STR(l.items[1].instance_type, "m1.large");
    TW_CHECK(l.items[1].price_uusd_per_hour == 119000);
    TW_CHECK_STR(l.items[2].product, "Windows");
  }
  free(x);
  tw_ec2_spot_price_list_release(&l);
}

/* DescribeSpotInstanceRequests: jclouds' captures (2012-06-01: requests
 * without <status>, and one fulfilled with its status after the instance
 * id) and a marked request as EC2 answers it now (status before the
 * instance id, interruption behaviour, nextToken). */
static void spot_requests(void **state) {
  size_t len;
  struct tw_ec2_spot_request_list l;
  struct tw_err err = {0};
  char *next = NULL;
  tw_ec2_spot_request_list_init(&l);
  char *x = slurp(JCA "describe_spot_instance_requests.xml", &len);
  TW_CHECK_RC(tw_ec2_parse_spot_requests(x, len, &l, &next, &err), TW_OK, err);
  TW_CHECK(l.n == 18, "%zu requests", l.n);
  TW_CHECK(next == NULL);
  if (l.n) {
    TW_CHECK_STR(l.items[0].id, "sir-067a4805");
    TW_CHECK_STR(l.items[0].state, "cancelled");
    TW_CHECK_STR(l.items[0].code, "");
    TW_CHECK(l.items[0].updated_ms == 0);
  }
  free(x);
  l.n = 0;
  x = slurp(JCA "describe_spot_instance.xml", &len);
  TW_CHECK_RC(tw_ec2_parse_spot_requests(x, len, &l, &next, &err), TW_OK, err);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].id, "sir-1ede0012");
    TW_CHECK_STR(l.items[0].instance_id, "i-ef308e8e");
    TW_CHECK_STR(l.items[0].state, "active");
    TW_CHECK_STR(l.items[0].code, "fulfilled");
    TW_CHECK(l.items[0].updated_ms == 1311917259000LL);
  }
  free(x);
  l.n = 0;
  static const char marked[] =
      "<DescribeSpotInstanceRequestsResponse "
      "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
      "<requestId>r-1</requestId><spotInstanceRequestSet><item>"
      "<spotInstanceRequestId>sir-1a2b3c4d</spotInstanceRequestId>"
      "<state>active</state><status><code>marked-for-stop</code>"
      "<updateTime>2026-01-05T10:00:00.000Z</updateTime>"
      "<message>Spot Instance is marked for stop due to no available "
      "capacity.</message></status>"
      "<launchSpecification><imageId>ami-1</imageId><groupSet><item>"
      "<groupId>sg-1</groupId></item></groupSet></launchSpecification>"
      "<instanceId>i-0123456789abcdef0</instanceId>"
      "<instanceInterruptionBehavior>hibernate</instanceInterruptionBehavior>"
      "</item></spotInstanceRequestSet><nextToken>tok-2</nextToken>"
      "</DescribeSpotInstanceRequestsResponse>";
  TW_CHECK_RC(tw_ec2_parse_spot_requests(marked, sizeof marked - 1, &l, &next,
                                         &err),
              TW_OK, err);
  TW_CHECK(l.n == 1);
  TW_CHECK(next && !strcmp(next, "tok-2"));
  free(next);
  next = NULL;
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].instance_id, "i-0123456789abcdef0");
    TW_CHECK_STR(l.items[0].code, "marked-for-stop");
    TW_CHECK_STR(l.items[0].behavior, "hibernate");
    TW_CHECK(l.items[0].updated_ms == 1767607200000LL);
  }
  /* a request without its id, a time that is not one: errors, no items */
  static const char bad[] =
      "<DescribeSpotInstanceRequestsResponse><spotInstanceRequestSet><item>"
      "<state>active</state><status><updateTime>yesterday</updateTime>"
      "</status></item></spotInstanceRequestSet>"
      "</DescribeSpotInstanceRequestsResponse>";
  l.n = 0;
  TW_CHECK(tw_ec2_parse_spot_requests(bad, sizeof bad - 1, &l, &next, &err) ==
           TW_E_INVALID);
  TW_CHECK(l.n == 0 && next == NULL);
  tw_ec2_spot_request_list_release(&l);
}

static void instance_types_eucalyptus(void **state) {
  size_t len;
  struct tw_ec2_instance_type_list l;
  struct tw_err err = {0};
  tw_ec2_instance_type_list_init(&l);
  char *x = slurp(EC2 "describe_instance_types.xml", &len);
  enum tw_rc rc = tw_ec2_parse_instance_types(x, len, &l, NULL, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 18);
  if (l.n == 18) {
    TW_CHECK_STR(l.items[0].name, "m1.small");
    TW_CHECK(l.items[0].vcpus == 1 && l.items[0].memory_mib == 256);
    TW_CHECK_STR(l.items[17].name, "hs1.8xlarge");
    TW_CHECK(l.items[17].vcpus == 16 && l.items[17].memory_mib == 119808);
    TW_CHECK(!l.items[17].spot && l.items[17].on_demand);
  }
  free(x);
  tw_ec2_instance_type_list_release(&l);
}

static void errors(void **state) {
  struct {
    const char *file;
    const char *code;
    long status;
    enum tw_rc rc;
    const char *request_id;
  } cases[] = {
      {EC2 "run_instances_idem_mismatch.xml", "IdempotentParameterMismatch",
       400, TW_E_CONFLICT, "5dabd361-d2e0-4f79-937d-4b2852a3b719"},
      {EC2 "describe_key_pairs_doesnt_exist.xml", "InvalidKeyPair.NotFound",
       400, TW_E_INVALID, "31b97300-eb8e-405e-9567-b0f57b791fed"},
      {JCA "dry_run.xml", "DryRunOperation", 412, TW_E_INVALID,
       "344ef005-e34b-42fb-a334-1180fe317e7c"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t len;
    char *x = slurp(cases[i].file, &len);
    struct tw_ec2_error e;
    TW_CHECK(tw_ec2_parse_error(x, len, &e));
    TW_CHECK_STR(e.code, cases[i].code);
    TW_CHECK_STR(e.request_id, cases[i].request_id);
    TW_CHECK(*e.message && e.message[0] != ' ' && e.message[0] != '\n');
    struct tw_err err = {0};
    enum tw_rc rc =
        tw_ec2_response_error("RunInstances", cases[i].status, x, len, &err);
    TW_CHECK(rc == cases[i].rc && err.rc == cases[i].rc);
    TW_CHECK_STR(err.detail, cases[i].code);
    TW_CHECK(strstr(err.msg, cases[i].code) != NULL);
    /* An error envelope handed to a success parser is mapped the same. */
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    struct tw_err err2 = {0};
    rc = tw_ec2_parse_instances(x, len, &l, NULL, &err2);
    TW_CHECK(rc == tw_ec2_error_class(cases[i].code, 0));
    TW_CHECK_STR(err2.detail, cases[i].code);
    tw_instance_list_release(&l);
    free(x);
  }
  /* A success document is not an error envelope. */
  size_t len;
  char *x = slurp(EC2 "run_instances.xml", &len);
  struct tw_ec2_error e;
  TW_CHECK(!tw_ec2_parse_error(x, len, &e));
  free(x);
}

/* Every EC2 XML fixture: the parser for its root succeeds, the others
 * refuse it, and none crashes.  Roots no parser reads are refused by
 * all. */
static void every_fixture(const char *dir_rel, int *files) {
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/%s", data_dir, dir_rel);
  DIR *d = opendir(dir);
  TW_CHECK(d != NULL);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    if (nl < 5 || strcmp(de->d_name + nl - 4, ".xml"))
      continue;
    char rel[1024];
    snprintf(rel, sizeof rel, "%s%s", dir_rel, de->d_name);
    size_t len;
    char *x = slurp(rel, &len);
    if (!x)
      continue;
    (*files)++;
    /* the SAX2 parsers read what the tree-based ones read */
    tw_ec2_tree_compare(x, len);
    struct tw_err err = {0};
    struct tw_instance_list il;
    struct tw_ec2_state_change_list sl;
    struct tw_ec2_spot_price_list pl;
    struct tw_ec2_instance_type_list tl;
    struct tw_ec2_zone_list zl;
    tw_instance_list_init(&il);
    tw_ec2_state_change_list_init(&sl);
    tw_ec2_spot_price_list_init(&pl);
    tw_ec2_instance_type_list_init(&tl);
    tw_ec2_zone_list_init(&zl);
    bool is_err = strstr(x, "<Response>") != NULL;
    bool want_inst = strstr(x, "<DescribeInstancesResponse") ||
                     strstr(x, "<RunInstancesResponse");
    bool want_state = strstr(x, "<TerminateInstancesResponse") ||
                      strstr(x, "<StartInstancesResponse") ||
                      strstr(x, "<StopInstancesResponse");
    bool want_spot = strstr(x, "<DescribeSpotPriceHistoryResponse");
    bool want_types = strstr(x, "DescribeInstanceTypesResponse");
    bool want_zones = strstr(x, "<DescribeAvailabilityZonesResponse");
    char *next = NULL;
    enum tw_rc rc;
    rc = tw_ec2_parse_instances(x, len, &il, &next, &err);
    if (want_inst != (rc == TW_OK))
      fprintf(stderr, "%s: instances parser rc %s: %s\n", rel, tw_rc_str(rc),
              err.msg);
    TW_CHECK(want_inst == (rc == TW_OK));
    free(next);
    next = NULL;
    if (rc == TW_OK)
      for (size_t i = 0; i < il.n; i++) {
        TW_CHECK(!strncmp(il.items[i].id, "i-", 2));
        TW_CHECK(il.items[i].state != TW_INST_UNKNOWN);
        TW_CHECK(*il.items[i].instance_type);
      }
    memset(&err, 0, sizeof err);
    rc = tw_ec2_parse_state_changes(x, len, &sl, &err);
    TW_CHECK(want_state == (rc == TW_OK));
    memset(&err, 0, sizeof err);
    rc = tw_ec2_parse_spot_prices(x, len, &pl, &next, &err);
    TW_CHECK(want_spot == (rc == TW_OK));
    free(next);
    next = NULL;
    memset(&err, 0, sizeof err);
    rc = tw_ec2_parse_instance_types(x, len, &tl, &next, &err);
    TW_CHECK(want_types == (rc == TW_OK));
    free(next);
    memset(&err, 0, sizeof err);
    rc = tw_ec2_parse_zones(x, len, &zl, &err);
    TW_CHECK(want_zones == (rc == TW_OK));
    if (rc == TW_OK)
      TW_CHECK(zl.n >= 1);
    struct tw_ec2_error e;
    TW_CHECK(tw_ec2_parse_error(x, len, &e) == is_err);
    tw_instance_list_release(&il);
    tw_ec2_state_change_list_release(&sl);
    tw_ec2_spot_price_list_release(&pl);
    tw_ec2_instance_type_list_release(&tl);
    tw_ec2_zone_list_release(&zl);
    free(x);
  }
  closedir(d);
}

/* ---- SDK JSON -> Query XML ------------------------------------------- */

/* EC2's Query serializer writes member names lowerCamel and lists as
 * <item> children. */
static void json_to_xml(const char *name, json_t *v, struct tw_buf *b) {
  char lname[128];
  snprintf(lname, sizeof lname, "%s", name);
  if (lname[0] >= 'A' && lname[0] <= 'Z')
    lname[0] = (char)(lname[0] - 'A' + 'a');
  /* VCpuInfo -> vCpuInfo (EC2 lowers the first letter only) */
  tw_buf_printf(b, "<%s>", lname);
  if (json_is_object(v)) {
    const char *k;
    json_t *c;
    json_object_foreach(v, k, c) json_to_xml(k, c, b);
  } else if (json_is_array(v)) {
    size_t i;
    json_t *c;
    json_array_foreach(v, i, c) json_to_xml("item", c, b);
  } else if (json_is_string(v)) {
    tw_buf_adds(b, json_string_value(v));
  } else if (json_is_integer(v)) {
    tw_buf_printf(b, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    tw_buf_printf(b, "%g", json_real_value(v));
  } else if (json_is_boolean(v)) {
    tw_buf_adds(b, json_is_true(v) ? "true" : "false");
  }
  tw_buf_printf(b, "</%s>", lname);
}

static json_t *load_json(const char *rel) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", data_dir, rel);
  json_error_t je;
  json_t *j = json_load_file(path, 0, &je);
  if (!j) {
    TW_FAIL("%s: %s", path, je.text);
  }
  return j;
}

/* Wraps list (a JSON array) as <root><set>items</set>[<nextToken>]. */
static void xml_doc(const char *root, const char *set, json_t *list,
                    size_t from, size_t to, const char *next,
                    struct tw_buf *b) {
  tw_buf_reset(b);
  tw_buf_printf(b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns=\""
                "http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>"
                "59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId><%s>",
                root, set);
  for (size_t i = from; i < to && i < json_array_size(list); i++)
    json_to_xml("item", json_array_get(list, i), b);
  tw_buf_printf(b, "</%s>", set);
  if (next)
    tw_buf_printf(b, "<nextToken>%s</nextToken>", next);
  tw_buf_printf(b, "</%s>", root);
}

static void sdk_instance_types(void **state) {
  const char *files[] = {"25_instances.json", "c4_2xlarge.json",
                         "g2_2xlarge.json",   "g2_2xlarge_group.json",
                         "m4_xlarge.json",    "pv_instances.json",
                         "t3_micro.json",     "t3_micro_and_p3_16xl.json",
                         "empty.json",        "c4_large.json"};
  struct tw_buf b;
  tw_buf_init(&b);
  size_t total = 0;
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    char rel[256];
    snprintf(rel, sizeof rel, SEL "DescribeInstanceTypes/%s", files[f]);
    json_t *j = load_json(rel);
    if (!j)
      continue;
    json_t *types = json_object_get(j, "InstanceTypes");
    xml_doc("DescribeInstanceTypesResponse", "instanceTypeSet", types, 0,
            json_array_size(types), NULL, &b);
    struct tw_ec2_instance_type_list l;
    struct tw_err err = {0};
    tw_ec2_instance_type_list_init(&l);
    enum tw_rc rc = tw_ec2_parse_instance_types(b.data, b.len, &l, NULL, &err);
    TW_CHECK_RC(rc, TW_OK, err);
    TW_CHECK(l.n == json_array_size(types));
    for (size_t i = 0; i < l.n && i < json_array_size(types); i++) {
      json_t *t = json_array_get(types, i);
      const struct tw_ec2_instance_type *p = &l.items[i];
      total++;
      TW_CHECK_STR(p->name,
                   json_string_value(json_object_get(t, "InstanceType")));
      TW_CHECK(p->vcpus ==
               json_integer_value(json_object_get(
                   json_object_get(t, "VCpuInfo"), "DefaultVCpus")));
      TW_CHECK(p->memory_mib ==
               json_integer_value(json_object_get(
                   json_object_get(t, "MemoryInfo"), "SizeInMiB")));
      json_t *archs = json_object_get(json_object_get(t, "ProcessorInfo"),
                                      "SupportedArchitectures");
      bool x86 = false, arm = false;
      size_t k;
      json_t *a;
      json_array_foreach(archs, k, a) {
        x86 |= !strcmp(json_string_value(a), "x86_64");
        arm |= !strcmp(json_string_value(a), "arm64");
      }
      TW_CHECK(p->arch == (x86   ? TW_ARCH_X86_64
                           : arm ? TW_ARCH_ARM64
                                 : TW_ARCH_ANY));
      json_t *gpus = json_object_get(json_object_get(t, "GpuInfo"), "Gpus");
      json_t *g = json_array_get(gpus, 0);
      json_t *inf = json_array_get(
          json_object_get(json_object_get(t, "InferenceAcceleratorInfo"),
                          "Accelerators"),
          0);
      if (g) {
        TW_CHECK(p->accel_count ==
                 json_integer_value(json_object_get(g, "Count")));
        TW_CHECK(p->accel_memory_mib ==
                 json_integer_value(json_object_get(
                     json_object_get(g, "MemoryInfo"), "SizeInMiB")));
        TW_CHECK(*p->accel_name);
      } else if (inf) { /* inf1: AWS Inferentia, no memory given */
        TW_CHECK_STR(p->accel_name,
                     json_string_value(json_object_get(inf, "Name")));
        TW_CHECK(p->accel_count ==
                 json_integer_value(json_object_get(inf, "Count")));
      } else {
        TW_CHECK(p->accel_count == 0 && !*p->accel_name);
      }
      bool spot = false;
      json_t *uc = json_object_get(t, "SupportedUsageClasses");
      json_array_foreach(uc, k, a) spot |=
          !strcmp(json_string_value(a), "spot");
      TW_CHECK(p->spot == spot);
    }
    /* A spot check on known values. */
    for (size_t i = 0; i < l.n; i++) {
      if (!strcmp(l.items[i].name, "p3.16xlarge")) {
        TW_CHECK_STR(l.items[i].accel_name, "V100"); /* 16 GiB V100s */
        TW_CHECK(l.items[i].accel_count == 8 && l.items[i].vcpus == 64);
        TW_CHECK(l.items[i].memory_mib == 499712);
      }
      if (!strcmp(l.items[i].name, "a1.large"))
        TW_CHECK(l.items[i].arch == TW_ARCH_ARM64);
      if (!strcmp(l.items[i].name, "c1.medium")) /* i386 and x86_64 */
        TW_CHECK(l.items[i].arch == TW_ARCH_X86_64);
    }
    tw_ec2_instance_type_list_release(&l);
    json_decref(j);
  }
  TW_CHECK(total == 58);
  tw_buf_release(&b);
}

static void sdk_zones(void **state) {
  json_t *j = load_json(SEL "DescribeAvailabilityZones/us-east-2.json");
  if (!j)
    return;
  json_t *zs = json_object_get(j, "AvailabilityZones");
  struct tw_buf b;
  tw_buf_init(&b);
  xml_doc("DescribeAvailabilityZonesResponse", "availabilityZoneInfo", zs, 0,
          json_array_size(zs), NULL, &b);
  struct tw_ec2_zone_list l;
  struct tw_err err = {0};
  tw_ec2_zone_list_init(&l);
  enum tw_rc rc = tw_ec2_parse_zones(b.data, b.len, &l, &err);
  /* The SDK's members are ZoneName/State, EC2's XML says zoneName and
   * zoneState: check name, id and region, which match. */
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 3);
  for (size_t i = 0; i < l.n; i++) {
    json_t *z = json_array_get(zs, i);
    TW_CHECK_STR(l.items[i].name,
                 json_string_value(json_object_get(z, "ZoneName")));
    TW_CHECK_STR(l.items[i].zone_id,
                 json_string_value(json_object_get(z, "ZoneId")));
    TW_CHECK_STR(l.items[i].region, "us-east-2");
  }
  if (l.n == 3)
    TW_CHECK_STR(l.items[1].zone_id, "use2-az2");
  tw_ec2_zone_list_release(&l);
  tw_buf_release(&b);
  json_decref(j);
}

/* 250 real m5.large prices, served in pages of 100 with NextToken, as
 * DescribeSpotPriceHistory pages them: every price arrives exactly once
 * and converts exactly. */
static void sdk_spot_prices_paged(void **state) {
  json_t *j = load_json(SEL "DescribeSpotPriceHistory/m5_large.json");
  if (!j)
    return;
  json_t *ps = json_object_get(j, "SpotPriceHistory");
  size_t n = json_array_size(ps);
  TW_CHECK(n == 250);
  struct tw_buf b;
  tw_buf_init(&b);
  struct tw_ec2_spot_price_list l;
  tw_ec2_spot_price_list_init(&l);
  size_t from = 0;
  int pages = 0;
  char *next = NULL;
  do {
    char tok[32];
    snprintf(tok, sizeof tok, "page-%zu", from + 100);
    xml_doc("DescribeSpotPriceHistoryResponse", "spotPriceHistorySet", ps, from,
            from + 100, from + 100 < n ? tok : NULL, &b);
    struct tw_err err = {0};
    free(next);
    enum tw_rc rc = tw_ec2_parse_spot_prices(b.data, b.len, &l, &next, &err);
    TW_CHECK_RC(rc, TW_OK, err);
    if (rc)
      break;
    pages++;
    if (next)
      TW_CHECK_STR(next, tok);
    from += 100;
  } while (next && pages < 10);
  TW_CHECK(pages == 3);
  TW_CHECK(l.n == n);
  int64_t sum = 0, want = 0;
  for (size_t i = 0; i < l.n && i < n; i++) {
    json_t *p = json_array_get(ps, i);
    TW_CHECK_STR(l.items[i].zone,
                 json_string_value(json_object_get(p, "AvailabilityZone")));
    TW_CHECK_STR(l.items[i].instance_type, "m5.large");
    int64_t v;
    struct tw_err err = {0};
    TW_CHECK(tw_provider_usd_to_uusd(
                 json_string_value(json_object_get(p, "SpotPrice")), &v,
                 &err) == TW_OK);
    want += v;
    sum += l.items[i].price_uusd_per_hour;
    TW_CHECK(l.items[i].timestamp_ms > 1609459200000LL); /* after 2021-01-01 */
  }
  TW_CHECK(sum == want && sum > 0);
  if (l.n)
    TW_CHECK(l.items[0].price_uusd_per_hour == 43700); /* "0.043700" */
  tw_ec2_spot_price_list_release(&l);
  tw_buf_release(&b);
  json_decref(j);
}

/* Hostile and broken input: refused cleanly, never crashes. */
static void hostile_input(void **state) {
  struct {
    const char *xml;
    enum tw_rc rc;
  } cases[] = {
      {"", TW_E_INVALID},
      {"<DescribeInstancesResponse>", TW_E_INVALID},
      {"not xml at all", TW_E_INVALID},
      /* an entity that would read a local file must stay unexpanded */
      {"<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM "
       "\"file:///etc/passwd\">]><DescribeInstancesResponse><reservationSet>"
       "<item><instancesSet><item><instanceId>i-1&x;</instanceId>"
       "<instanceState><name>running</name></instanceState>"
       "</item></instancesSet></item></reservationSet>"
       "</DescribeInstancesResponse>",
       TW_OK},
      /* an id too long for the model is refused, not cut */
      {"<RunInstancesResponse><instancesSet><item><instanceId>i-"
       "0123456789012345678901234567890123456789012345678901234567890123456"
       "0123456789012345678901234567890123456789012345678901234567890123456"
       "78901234567890123456789012345678901234567890123456789</instanceId>"
       "</item></instancesSet></RunInstancesResponse>",
       TW_E_INVALID},
      {"<RunInstancesResponse><instancesSet><item><instanceType>m5.large"
       "</instanceType></item></instancesSet></RunInstancesResponse>",
       TW_E_INVALID},
      {"<RunInstancesResponse><instancesSet><item><instanceId>i-1"
       "</instanceId><launchTime>yesterday</launchTime></item>"
       "</instancesSet></RunInstancesResponse>",
       TW_E_INVALID},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct tw_instance_list l;
    struct tw_err err = {0};
    tw_instance_list_init(&l);
    enum tw_rc rc = tw_ec2_parse_instances(cases[i].xml, strlen(cases[i].xml),
                                           &l, NULL, &err);
    if (rc != cases[i].rc)
      fprintf(stderr, "hostile case %zu: %s (%s)\n", i, tw_rc_str(rc), err.msg);
    TW_CHECK(rc == cases[i].rc);
    if (rc == TW_OK) {
      TW_CHECK(l.n == 1);
      if (l.n == 1) {
        TW_CHECK_STR(l.items[0].id, "i-1");
        TW_CHECK(l.items[0].state == TW_INST_RUNNING);
      }
    } else {
      TW_CHECK(l.n == 0);
    }
    tw_instance_list_release(&l);
  }
  /* Too big. */
  struct tw_err err = {0};
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK(tw_ec2_parse_instances("<x/>", TW_EC2_XML_MAX_BYTES + 1, &l, NULL,
                                  &err) == TW_E_TOOBIG);
}

static void accel_names(void **state) {
  char out[32];
  tw_ec2_accel_name("A100", 40960, out, sizeof out);
  TW_CHECK_STR(out, "A100");
  tw_ec2_accel_name("A100", 81920, out, sizeof out);
  TW_CHECK_STR(out, "A100-80GB");
  tw_ec2_accel_name("V100", 32768, out, sizeof out);
  TW_CHECK_STR(out, "V100-32GB");
  tw_ec2_accel_name("V100", 16384, out, sizeof out);
  TW_CHECK_STR(out, "V100");
  tw_ec2_accel_name("Radeon Pro V520", 8192, out, sizeof out);
  TW_CHECK_STR(out, "RadeonProV520");
  tw_ec2_accel_name("H100", 81920, out, sizeof out);
  TW_CHECK_STR(out, "H100");
}

/* Shapes the recordings do not show, each read as libxml2's tree read it
 * (tw_ec2_tree_compare aborts on a difference) and checked for what
 * matters: prefixes, text split by comments, CDATA and child elements,
 * entities, nesting past libxml2's depth limit, and instance sets nested
 * in items. */
static void sax_shapes(void **state) {
  static const char *const docs[] = {
      /* a prefix, declared */
      "<e:RunInstancesResponse xmlns:e=\"http://ec2.amazonaws.com/doc/"
      "2016-11-15/\"><e:instancesSet><e:item><e:instanceId>i-1"
      "</e:instanceId><e:instanceState><e:name>running</e:name>"
      "</e:instanceState></e:item></e:instancesSet>"
      "</e:RunInstancesResponse>",
      /* a prefix never declared: the tree named it "x:RunInstances..." */
      "<x:RunInstancesResponse><instancesSet><item><instanceId>i-1"
      "</instanceId></item></instancesSet></x:RunInstancesResponse>",
      /* text in pieces: a comment, CDATA, a child element between them */
      "<RunInstancesResponse><instancesSet><item><instanceId> i-<!-- c -->1"
      "<![CDATA[2]]><b>x</b>3 </instanceId><instanceState><code>16</code>"
      "</instanceState><tagSet><item><key>tradewind:job</key><value>j"
      "<?pi x?>1</value></item></tagSet></item></instancesSet>"
      "</RunInstancesResponse>",
      /* an internal entity, declared: not expanded */
      "<!DOCTYPE r [<!ENTITY e \"<instanceId>i-9</instanceId>\">"
      "<!ENTITY t \"text\">]><RunInstancesResponse><instancesSet><item>"
      "<instanceId>i-1&t;</instanceId>&e;&t;<instanceType>m5&t;.large"
      "</instanceType></item></instancesSet></RunInstancesResponse>",
      /* an undeclared entity: not well-formed */
      "<RunInstancesResponse><instancesSet><item><instanceId>i-1&u;"
      "</instanceId></item></instancesSet></RunInstancesResponse>",
      /* predefined and character references are text */
      "<RunInstancesResponse><instancesSet><item><instanceId>i-&#49;&amp;"
      "</instanceId></item></instancesSet></RunInstancesResponse>",
      /* tagSet and groupSet items inside an instance item, and a
       * reservation's own groupSet */
      "<DescribeInstancesResponse><reservationSet><item><groupSet><item>"
      "<groupId>sg-1</groupId></item></groupSet><instancesSet><item>"
      "<instanceId>i-1</instanceId><groupSet><item><groupId>sg-2</groupId>"
      "</item></groupSet><tagSet><item><key>tradewind:attempt</key><value>"
      "a-1</value></item><item><key>other</key><value>v</value></item>"
      "</tagSet><instanceState><name>pending</name></instanceState></item>"
      "<item><instanceId>i-2</instanceId></item></instancesSet></item>"
      "<item><instancesSet><item><instanceId>i-3</instanceId></item>"
      "</instancesSet></item></reservationSet><nextToken> t1 </nextToken>"
      "</DescribeInstancesResponse>",
      /* an error envelope where an answer was expected */
      "<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code>"
      "<Message>none</Message></Error></Errors><RequestID>r-1</RequestID>"
      "</Response>",
      "<ErrorResponse><Error><Code>Throttling</Code></Error>"
      "<RequestId>r-2</RequestId></ErrorResponse>",
      /* an external entity: declared, never read */
      "<?xml version=\"1.0\"?><!DOCTYPE r SYSTEM \"http://127.0.0.1:1/x\">"
      "<RunInstancesResponse><instancesSet><item><instanceId>i-1"
      "</instanceId></item></instancesSet></RunInstancesResponse>",
      /* leftovers after the root */
      "<RunInstancesResponse/><x/>",
      "<RunInstancesResponse/><!-- c -->",
      "\xef\xbb\xbf<RunInstancesResponse/>",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
    tw_ec2_tree_compare(docs[i], strlen(docs[i]));

  struct tw_instance_list l;
  struct tw_err err = {0};
  char *next = NULL;
  tw_instance_list_init(&l);
  TW_CHECK(tw_ec2_parse_instances(docs[2], strlen(docs[2]), &l, NULL,
                                  &err) == TW_OK);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].id, "i-123");
    TW_CHECK_STR(l.items[0].job_id, "j1");
    TW_CHECK(l.items[0].state == TW_INST_RUNNING);
  }
  l.n = 0;
  TW_CHECK(tw_ec2_parse_instances(docs[3], strlen(docs[3]), &l, NULL,
                                  &err) == TW_OK);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].id, "i-1");
    TW_CHECK_STR(l.items[0].instance_type, "m5.large");
  }
  l.n = 0;
  TW_CHECK(tw_ec2_parse_instances(docs[6], strlen(docs[6]), &l, &next,
                                  &err) == TW_OK);
  TW_CHECK(l.n == 3);
  TW_CHECK_STR(next, "t1");
  if (l.n == 3) {
    TW_CHECK_STR(l.items[0].attempt_id, "a-1");
    TW_CHECK(l.items[0].state == TW_INST_PENDING);
    TW_CHECK_STR(l.items[2].id, "i-3");
  }
  free(next);
  l.n = 0;
  TW_CHECK(tw_ec2_parse_instances(docs[7], strlen(docs[7]), &l, NULL,
                                  &err) == TW_E_CAPACITY);
  TW_CHECK(l.n == 0);

  /* An element's text in many runs between children (joined once when
   * it ends, not moved at each run). */
  struct tw_buf m;
  tw_buf_init(&m);
  tw_buf_adds(&m, "<RunInstancesResponse><instancesSet><item><instanceId>i-");
  for (int i = 0; i < 2000; i++)
    tw_buf_printf(&m, "%d<b>x</b><!-- -->", i % 10);
  tw_buf_adds(&m, "</instanceId><instanceType>m5<c/>.large</instanceType>"
                  "</item></instancesSet></RunInstancesResponse>");
  tw_ec2_tree_compare(m.data, m.len);
  l.n = 0;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_ec2_parse_instances(m.data, m.len, &l, NULL, &err) ==
           TW_E_INVALID); /* 2,002 bytes: longer than an id may be */
  tw_buf_reset(&m);
  tw_buf_adds(&m, "<RunInstancesResponse><instancesSet><item><instanceId>"
                  "i-<b/>1<b/>2<b>3</b>4</instanceId><instanceType>m5<c/>"
                  ".large</instanceType></item></instancesSet>"
                  "</RunInstancesResponse>");
  tw_ec2_tree_compare(m.data, m.len);
  l.n = 0;
  TW_CHECK(tw_ec2_parse_instances(m.data, m.len, &l, NULL, &err) == TW_OK);
  TW_CHECK(l.n == 1);
  if (l.n == 1) {
    TW_CHECK_STR(l.items[0].id, "i-124");
    TW_CHECK_STR(l.items[0].instance_type, "m5.large");
  }
  tw_buf_release(&m);

  /* Many references to a long internal entity: its content is parsed
   * once, not again at each reference (which took seconds here, minutes
   * for a body near the limit). */
  tw_buf_init(&m);
  tw_buf_adds(&m, "<!DOCTYPE r [<!ENTITY t \"");
  for (int i = 0; i < 100000; i++)
    tw_buf_addc(&m, i % 50 ? 'x' : ' ');
  tw_buf_adds(&m, "\">]><RunInstancesResponse><instancesSet><item>"
                  "<instanceId>i-1</instanceId><reason>");
  for (int i = 0; i < 20000; i++)
    tw_buf_adds(&m, "&t;");
  tw_buf_adds(&m, "</reason></item></instancesSet></RunInstancesResponse>");
  tw_ec2_tree_compare(m.data, m.len);
  l.n = 0;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_ec2_parse_instances(m.data, m.len, &l, NULL, &err) == TW_OK);
  TW_CHECK(l.n == 1);
  tw_buf_release(&m);

  /* Nesting past libxml2's limit (256) is refused, as it was. */
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "<RunInstancesResponse>");
  for (int i = 0; i < 300; i++)
    tw_buf_adds(&b, "<a>");
  for (int i = 0; i < 300; i++)
    tw_buf_adds(&b, "</a>");
  tw_buf_adds(&b, "</RunInstancesResponse>");
  tw_ec2_tree_compare(b.data, b.len);
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_ec2_parse_instances(b.data, b.len, &l, NULL, &err) ==
           TW_E_INVALID);

  /* Many element names (the thread's parser context is dropped past a
   * bound on its dictionary), then an ordinary answer on the same
   * thread. */
  tw_buf_reset(&b);
  tw_buf_adds(&b, "<RunInstancesResponse>");
  for (int i = 0; i < 5000; i++)
    tw_buf_printf(&b, "<n%d/>", i);
  tw_buf_adds(&b, "<instancesSet><item><instanceId>i-7</instanceId></item>"
                  "</instancesSet></RunInstancesResponse>");
  tw_ec2_tree_compare(b.data, b.len);
  for (int round = 0; round < 2; round++) {
    l.n = 0;
    memset(&err, 0, sizeof err);
    const char *d = round ? docs[0] : b.data;
    size_t dl = round ? strlen(docs[0]) : b.len;
    TW_CHECK(tw_ec2_parse_instances(d, dl, &l, NULL, &err) == TW_OK);
    TW_CHECK(l.n == 1);
  }
  tw_buf_release(&b);
  tw_instance_list_release(&l);
}

/* Each thread parses with its own context and arrays (ec2_xml.c keeps
 * them per thread and frees them when the thread ends): threads parsing
 * at once, good and bad answers mixed, each get their own results. */
static const char thread_doc[] =
    "<DescribeInstancesResponse><reservationSet><item><instancesSet><item>"
    "<instanceId>i-1</instanceId><tagSet><item><key>tradewind:job</key>"
    "<value>j-1</value></item></tagSet></item><item><instanceId>i-2"
    "</instanceId></item></instancesSet></item></reservationSet>"
    "</DescribeInstancesResponse>";

static void *thread_parses(void *arg) {
  long bad = 0;
  (void)arg;
  for (int i = 0; i < 300; i++) {
    struct tw_instance_list l;
    struct tw_err err = {0};
    tw_instance_list_init(&l);
    size_t len = i % 3 == 2 ? sizeof thread_doc / 2 : sizeof thread_doc - 1;
    enum tw_rc rc = tw_ec2_parse_instances(thread_doc, len, &l, NULL, &err);
    if (i % 3 == 2)
      bad += rc != TW_E_INVALID || l.n;
    else
      bad += rc != TW_OK || l.n != 2 || strcmp(l.items[0].job_id, "j-1") ||
             strcmp(l.items[1].id, "i-2");
    tw_instance_list_release(&l);
  }
  return (void *)bad;
}

static void threads_parse(void **state) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    TW_CHECK(pthread_create(&t[i], NULL, thread_parses, NULL) == 0);
  for (int i = 0; i < 4; i++) {
    void *bad = NULL;
    pthread_join(t[i], &bad);
    TW_CHECK(bad == NULL, "thread %d: %ld wrong results", i, (long)bad);
  }
}

/* Every recorded EC2 answer parses (a count of files, not of checks). */
static void every_fixture_file(void **state) {
  int files = 0;
  every_fixture(EC2, &files);
  every_fixture(JC, &files);
  every_fixture(JCA, &files);
  TW_CHECK(files >= 100, "%d fixture files", files);
}

int main(void) {
  tw_testdata_dir(data_dir, sizeof data_dir);
  char probe[2048];
  snprintf(probe, sizeof probe, "%s/" EC2 "run_instances.xml", data_dir);
  FILE *f = fopen(probe, "rb");
  if (!f) {
    printf("SKIPPED: no EC2 fixtures under %s\n", data_dir);
    return TW_SKIP;
  }
  fclose(f);
  tw_ec2_xml_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(accel_names),
      cmocka_unit_test(run_instances_on_demand_and_spot),
      cmocka_unit_test(describe_instances_fields),
      cmocka_unit_test(tags_and_next_token),
      cmocka_unit_test(state_changes),
      cmocka_unit_test(zones),
      cmocka_unit_test(spot_prices),
      cmocka_unit_test(spot_requests),
      cmocka_unit_test(instance_types_eucalyptus),
      cmocka_unit_test(errors),
      cmocka_unit_test(every_fixture_file),
      cmocka_unit_test(sdk_instance_types),
      cmocka_unit_test(sdk_zones),
      cmocka_unit_test(sdk_spot_prices_paged),
      cmocka_unit_test(hostile_input),
      cmocka_unit_test(sax_shapes),
      cmocka_unit_test(threads_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
