/* bench_providers.c - bench-providers: the provider layer's costs.
 *
 *   bench-providers [--quick | --smoke] [--list] [--fakecloud PATH]
 *
 * Figures, one `key value unit` line each:
 *   sigv4_signatures_per_s        SigV4 signatures of a RunInstances body
 *   sigv4_signatures_cached_key_per_s  the same with a key cache, as the
 *                                 adapter signs (one derivation a day)
 *   ec2_xml_describe_pages_per_s  DescribeInstances pages of 100 parsed
 *   ec2_xml_run_answers_per_s     RunInstances answers (one instance) parsed
 *   launch_round_trips_per_s      tw_provider_launch through the AWS
 *                                 adapter against tradewind-fakecloud
 *                                 (signed, over loopback HTTP, parsed)
 *   launch_latency_p50_ms, launch_latency_p99_ms
 *   describe_round_trips_per_s    tw_provider_describe, same path
 * and, when the Alibaba adapter is built in, the same for ECS:
 *   ali_rpc_signatures_per_s      legacy HMAC-SHA1 signatures of a
 *                                 RunInstances request
 *   ali_acs3_signatures_per_s     ACS3-HMAC-SHA256 signatures of it
 *   ecs_json_describe_pages_per_s DescribeInstances pages of 100 parsed
 *   ali_launch_round_trips_per_s, ali_launch_latency_p50_ms,
 *   ali_launch_latency_p99_ms, ali_describe_round_trips_per_s
 *                                 through the ECS adapter and the fake
 * and, when the Azure adapter is built in:
 *   arm_json_vm_pages_per_s       ARM VM list pages of 100 (instance views
 *                                 expanded) parsed
 *   az_launch_round_trips_per_s, az_launch_latency_p50_ms,
 *   az_launch_latency_p99_ms      through the Azure adapter and the fake:
 *                                 PUT, one operation poll, the final GET
 *   az_describe_round_trips_per_s GET with the instance view
 *
 * --list measures only the cost of one listing against the history a
 * cloud keeps (EC2 shows terminated instances for about an hour):
 *   list_managed_ms_<S>       one tw_provider_list_managed (median of runs)
 *   list_managed_requests_<S> DescribeInstances calls it made
 *   list_managed_listed_<S>   instances it returned
 *   rss_growth_kb_<S>         this process's VmRSS after the runs, their
 *                             lists released, minus before them
 * for S = 0_terminated (100 live instances), 10000_terminated (the same
 * beside 10,000 terminated ones) and 10100_live (10,000 more live
 * beside those); 200 instead of 10,000 with --smoke.
 *
 * The fake is emptied every 1000 launches, outside the timed window, so
 * it never holds more than 1000 instances.
 *
 * The fake is started as a subprocess on a free port.  --quick runs each
 * measurement about 2 s (under a minute in all), the default about 10 s;
 * --smoke runs a fraction of a second and only checks that every call
 * succeeded (ctest runs it so the benchmark cannot rot). */
#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/aws/ec2_xml.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "providers/sigv4.h"

#if __has_include("providers/alibaba/alibaba.h")
#include "providers/alibaba/ali_sign.h"
#include "providers/alibaba/ecs_json.h"
#define BENCH_ALIBABA 1
#endif

#if __has_include("providers/azure/azure.h")
#include "providers/azure/arm_json.h"
#define BENCH_AZURE 1
#endif

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

static double seconds_per_figure = 10.0;
static int failed;

static double now_s(void) { return (double)tw_mono_us() / 1e6; }

static void figure(const char *key, double v, const char *unit) {
  printf("%s %.1f %s\n", key, v, unit);
  fflush(stdout);
}

/* ---- SigV4 -------------------------------------------------------------- */

static void bench_sigv4(void) {
  const char *body =
      "Action=RunInstances&Version=2016-11-15&ImageId=ami-0abcdef1234567890"
      "&InstanceType=p4d.24xlarge&MinCount=1&MaxCount=1&ClientToken=tw-att-"
      "0123456789abcdef&Placement.AvailabilityZone=us-east-1a"
      "&InstanceMarketOptions.MarketType=spot&TagSpecification.1."
      "ResourceType=instance&TagSpecification.1.Tag.1.Key=tradewind%3Ajob"
      "&TagSpecification.1.Tag.1.Value=job-0001";
  struct tw_sigv4_header h[] = {
      {"host", "ec2.us-east-1.amazonaws.com"},
      {"content-type", "application/x-www-form-urlencoded; charset=utf-8"},
      {"x-amz-date", "20260105T100000Z"}};
  struct tw_sigv4_request req = {"POST", "/", NULL, h, 3, body, strlen(body)};
  struct tw_sigv4_params sp = {"AKIDEXAMPLE",
                               "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                               NULL,
                               "us-east-1",
                               "ec2",
                               "20260105T100000Z",
                               1,
                               NULL};
  /* without a key cache, then with one as the adapter signs */
  struct tw_sigv4_key_cache keys;
  tw_sigv4_key_cache_init(&keys);
  for (int cached = 0; cached < 2; cached++) {
    sp.key_cache = cached ? &keys : NULL;
    long n = 0;
    double t0 = now_s(), t;
    do {
      for (int i = 0; i < 256; i++) {
        struct tw_sigv4_result r;
        memset(&r, 0, sizeof r);
        struct tw_err err = {0};
        if (tw_sigv4_sign(&req, &sp, &r, &err)) {
          fprintf(stderr, "sign: %s\n", err.msg);
          failed++;
          tw_sigv4_key_cache_release(&keys);
          return;
        }
        tw_sigv4_result_release(&r);
        n++;
      }
      t = now_s() - t0;
    } while (t < seconds_per_figure);
    figure(cached ? "sigv4_signatures_cached_key_per_s"
                  : "sigv4_signatures_per_s",
           n / t, "1/s");
  }
  tw_sigv4_key_cache_release(&keys);
}

/* ---- XML ---------------------------------------------------------------- */

static void bench_xml(void) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws."
                  "com/doc/2016-11-15/\"><requestId>r</requestId>"
                  "<reservationSet>");
  for (int i = 0; i < 100; i++)
    tw_buf_printf(
        &b,
        "<item><reservationId>r-%017x</reservationId><instancesSet><item>"
        "<instanceId>i-%017x</instanceId><imageId>ami-0abc</imageId>"
        "<instanceState><code>16</code><name>running</name></instanceState>"
        "<instanceType>m5.large</instanceType><launchTime>2026-01-05T10:00:"
        "00.000Z</launchTime><placement><availabilityZone>us-east-1a"
        "</availabilityZone></placement><privateIpAddress>10.0.0.%d"
        "</privateIpAddress><clientToken>tok-%d</clientToken><tagSet><item>"
        "<key>tradewind:job</key><value>job-%d</value></item><item><key>"
        "tradewind:attempt</key><value>att-%d</value></item><item><key>"
        "tradewind:tenant</key><value>physics</value></item></tagSet>"
        "</item></instancesSet></item>",
        i, i, i, i, i, i);
  tw_buf_adds(&b, "</reservationSet></DescribeInstancesResponse>");
  long n = 0;
  double t0 = now_s(), t;
  do {
    for (int i = 0; i < 16; i++) {
      struct tw_instance_list l;
      struct tw_err err = {0};
      tw_instance_list_init(&l);
      if (tw_ec2_parse_instances(b.data, b.len, &l, NULL, &err) || l.n != 100) {
        fprintf(stderr, "parse: %s\n", err.msg);
        failed++;
      }
      tw_instance_list_release(&l);
      n++;
    }
    t = now_s() - t0;
  } while (t < seconds_per_figure);
  figure("ec2_xml_describe_pages_per_s", n / t, "1/s");

  /* RunInstances' answer: one instance, as the launch path reads it */
  tw_buf_reset(&b);
  tw_buf_adds(&b, "<RunInstancesResponse xmlns=\"http://ec2.amazonaws.com/"
                  "doc/2016-11-15/\"><requestId>r</requestId><reservationId>"
                  "r-1</reservationId><ownerId>1</ownerId><groupSet/>"
                  "<instancesSet><item><instanceId>i-0123456789abcdef0"
                  "</instanceId><imageId>ami-0abc</imageId><instanceState>"
                  "<code>0</code><name>pending</name></instanceState>"
                  "<instanceType>m5.large</instanceType><launchTime>"
                  "2026-01-05T10:00:00.000Z</launchTime><placement>"
                  "<availabilityZone>us-east-1a</availabilityZone></placement>"
                  "<privateIpAddress>10.0.0.1</privateIpAddress><clientToken>"
                  "tok-1</clientToken><instanceLifecycle>spot"
                  "</instanceLifecycle><tagSet><item><key>tradewind:job</key>"
                  "<value>job-1</value></item><item><key>tradewind:attempt"
                  "</key><value>att-1</value></item><item><key>"
                  "tradewind:tenant</key><value>physics</value></item>"
                  "</tagSet></item></instancesSet></RunInstancesResponse>");
  n = 0;
  t0 = now_s();
  do {
    for (int i = 0; i < 256; i++) {
      struct tw_instance_list l;
      struct tw_err err = {0};
      tw_instance_list_init(&l);
      if (tw_ec2_parse_instances(b.data, b.len, &l, NULL, &err) || l.n != 1) {
        fprintf(stderr, "parse: %s\n", err.msg);
        failed++;
      }
      tw_instance_list_release(&l);
      n++;
    }
    t = now_s() - t0;
  } while (t < seconds_per_figure);
  figure("ec2_xml_run_answers_per_s", n / t, "1/s");
  tw_buf_release(&b);
}

/* ---- through the fake --------------------------------------------------- */

static pid_t fake_pid;
static char base_url[64];

static bool start_fake(const char *path) {
  int fds[2];
  if (pipe(fds))
    return false;
  fake_pid = fork();
  if (fake_pid < 0)
    return false;
  if (fake_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(path, "tradewind-fakecloud", "--listen", "127.0.0.1:0", "--seed", "3",
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[256] = "";
  if (!f || !fgets(line, sizeof line, f) ||
      sscanf(line, "listening %63s", base_url) != 1) {
    fprintf(stderr, "bench-providers: %s did not start\n", path);
    return false;
  }
  return true;
}

static void stop_fake(void) {
  if (fake_pid > 0) {
    kill(fake_pid, SIGTERM);
    waitpid(fake_pid, NULL, 0);
  }
}

static bool post(const char *path, const char *body) {
  CURL *c = curl_easy_init();
  char url[128];
  snprintf(url, sizeof url, "%s%s", base_url, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  FILE *null = fopen("/dev/null", "w");
  curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
  long status = 0;
  CURLcode cc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  fclose(null);
  return cc == CURLE_OK && status == 200;
}

/* Empties the fake and lifts its vCPU limits, so the launch loop never
 * meets a quota.  The fake walks all its instances on every call, so
 * without a reset the figure would measure the fake's growing state
 * rather than a round trip; the reset runs outside the timed window. */
static bool reset_fake(void) {
  return post("/_fake/reset", "{}") &&
         post("/_fake/ec2/config", "{\"vcpu_limit_on_demand\": 1000000000, "
                                   "\"vcpu_limit_spot\": 1000000000}")
#ifdef BENCH_ALIBABA
         &&
         post("/_fake/alibaba/config", "{\"vcpu_limit_on_demand\": 1000000000, "
                                       "\"vcpu_limit_spot\": 1000000000}")
#endif
#ifdef BENCH_AZURE
         /* Operations end at once and are polled without waiting, so a
          * launch is three round trips: PUT, operation, final GET. */
         && post("/_fake/azure/config",
                 "{\"create_ms\": 0, \"retry_after_s\": 0, "
                 "\"vcpu_limit\": 1000000, \"spot_vcpu_limit\": 1000000}")
#endif
      ;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The launch and describe loops through the adapter of cloud ("aws" or
 * "alibaba"); keys prefixed with prefix. */
struct bench_cloud {
  const char *prefix; /* "" or "ali_" */
  const char *config; /* the provider's YAML, "%s" the fake's URL */
  const char *region, *zone, *type;
};

static void bench_fake_cloud(const char *path, const struct bench_cloud *bc);

static void bench_fake(const char *path) {
  static const struct bench_cloud aws = {
      "",
      "type: aws\nname: bench\nendpoint: %s\n"
      "region: us-east-1\n"
      "access_key_env: TW_BENCH_AWS_AK\n"
      "secret_key_env: TW_BENCH_AWS_SK\n"
      "image: ami-0abcdef1234567890\n",
      "us-east-1", "us-east-1a", "m5.large"};
  bench_fake_cloud(path, &aws);
}

static void bench_fake_cloud(const char *path, const struct bench_cloud *bc) {
  if (access(path, X_OK)) {
    fprintf(stderr, "bench-providers: %s not found; skipping the fake\n", path);
    return;
  }
  if (!start_fake(path) || !reset_fake()) {
    failed++;
    stop_fake();
    return;
  }
  setenv("TW_BENCH_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_BENCH_AWS_SK", "tradewind-fake-secret", 1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  char *doc = tw_asprintf(bc->config, base_url);
#pragma GCC diagnostic pop
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  if (tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err)) {
    fprintf(stderr, "bench-providers: %s\n", err.msg);
    failed++;
    goto out;
  }
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.region, bc->region);
  TW_SET(o.zone, bc->zone);
  TW_SET(o.instance_type, bc->type);
  o.market = TW_MARKET_ON_DEMAND;

  size_t cap = 1 << 16, n = 0;
  int64_t *lat = tw_malloc(cap * sizeof *lat);
  char last_id[TW_MODEL_ID_MAX] = "";
  double t = 0, t0 = now_s();
  do {
    if (n && n % 1000 == 0) {
      t += now_s() - t0;
      if (!reset_fake()) {
        failed++;
        break;
      }
      t0 = now_s();
    }
    char tok[40];
    snprintf(tok, sizeof tok, "bench-%zu", n);
    struct tw_launch req = {.offer = &o,
                            .client_token = tok,
                            .job_id = "job-bench",
                            .attempt_id = tok,
                            .tenant = "bench"};
    struct tw_instance inst;
    int64_t s = tw_mono_us();
    memset(&err, 0, sizeof err);
    if (tw_provider_launch(p, &req, &inst, &err)) {
      fprintf(stderr, "launch: %s\n", err.msg);
      failed++;
      break;
    }
    if (n < cap)
      lat[n] = tw_mono_us() - s;
    snprintf(last_id, sizeof last_id, "%s", inst.id);
    n++;
  } while (t + (now_s() - t0) < seconds_per_figure);
  t += now_s() - t0;
  char key[64];
  if (n && !failed) {
    snprintf(key, sizeof key, "%slaunch_round_trips_per_s", bc->prefix);
    figure(key, n / t, "1/s");
    size_t m = n < cap ? n : cap;
    qsort(lat, m, sizeof *lat, cmp_i64);
    snprintf(key, sizeof key, "%slaunch_latency_p50_ms", bc->prefix);
    figure(key, lat[m / 2] / 1000.0, "ms");
    snprintf(key, sizeof key, "%slaunch_latency_p99_ms", bc->prefix);
    figure(key, lat[(m * 99) / 100] / 1000.0, "ms");
  }
  free(lat);

  n = 0;
  t0 = now_s();
  do {
    struct tw_instance inst;
    memset(&err, 0, sizeof err);
    if (tw_provider_describe(p, last_id, &inst, &err)) {
      fprintf(stderr, "describe: %s\n", err.msg);
      failed++;
      break;
    }
    n++;
    t = now_s() - t0;
  } while (t < seconds_per_figure);
  snprintf(key, sizeof key, "%sdescribe_round_trips_per_s", bc->prefix);
  if (n && !failed)
    figure(key, n / t, "1/s");
out:
  tw_provider_free(p);
  tw_node_free(cfg);
  free(doc);
  stop_fake();
}

#ifdef BENCH_ALIBABA
/* ---- list_managed against history --------------------------------------- */

/* This process's resident set, in KiB (0 when /proc cannot say). */
static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[128];
  long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

static size_t bench_write(char *data, size_t size, size_t n, void *arg) {
  tw_buf_add(arg, data, size * n);
  return size * n;
}

/* calls.<action> of /_fake/ec2/state, read without a JSON parser: the
 * counters are one flat object of "Name": n pairs. */
static long fake_calls(const char *action) {
  CURL *c = curl_easy_init();
  char url[128], key[96];
  snprintf(url, sizeof url, "%s/_fake/ec2/state", base_url);
  struct tw_buf b;
  tw_buf_init(&b);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bench_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  CURLcode cc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  long n = -1;
  snprintf(key, sizeof key, "\"%s\":", action);
  const char *calls = b.data ? strstr(b.data, "\"calls\":") : NULL;
  const char *at = calls ? strstr(calls, key) : NULL;
  if (cc == CURLE_OK && calls) /* absent: not called yet */
    n = at ? strtol(at + strlen(key), NULL, 10) : 0;
  tw_buf_release(&b);
  /* so that the RSS figures measure the listings, not this answer */
  tw_mem_trim(TW_MEM_TRIM_BYTES);
  return n;
}

/* Launches n instances (tokens prefix-0..n-1) and, when terminate, ends
 * them again.  false on the first failure (reported). */
static bool make_instances(struct tw_provider *p, const struct tw_offer *o,
                           const char *prefix, size_t n, bool terminate) {
  for (size_t i = 0; i < n; i++) {
    char tok[48];
    snprintf(tok, sizeof tok, "%s-%zu", prefix, i);
    struct tw_launch req = {.offer = o,
                            .client_token = tok,
                            .job_id = tok,
                            .attempt_id = tok,
                            .tenant = "bench"};
    struct tw_instance inst;
    struct tw_err err = {0};
    if (tw_provider_launch(p, &req, &inst, &err) ||
        (terminate && tw_provider_terminate(p, inst.id, &err))) {
      fprintf(stderr, "bench-providers: %s %zu: %s\n", prefix, i, err.msg);
      return false;
    }
  }
  return true;
}

/* One figure set, keys suffixed with label: the median time of runs
 * listings, their requests, what they returned and the RSS they left. */
static void list_figures(struct tw_provider *p, const char *label, int runs) {
  int64_t us[32];
  size_t listed = 0;
  /* The counters come with the fake's whole state (megabytes at 10,000
   * instances): RSS is read inside them. */
  long before = fake_calls("DescribeInstances");
  long rss_before = rss_kb();
  for (int r = 0; r < runs; r++) {
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    struct tw_err err = {0};
    int64_t s = tw_mono_us();
    enum tw_rc rc = tw_provider_list_managed(p, &l, &err);
    us[r] = tw_mono_us() - s;
    listed = l.n;
    tw_instance_list_release(&l);
    if (rc) {
      fprintf(stderr, "bench-providers: list_managed: %s\n", err.msg);
      failed++;
      return;
    }
  }
  long rss_after = rss_kb();
  long after = fake_calls("DescribeInstances");
  qsort(us, (size_t)runs, sizeof *us, cmp_i64);
  char key[80];
  snprintf(key, sizeof key, "list_managed_ms_%s", label);
  figure(key, us[runs / 2] / 1000.0, "ms");
  snprintf(key, sizeof key, "list_managed_requests_%s", label);
  figure(key, (double)(after - before) / runs, "1");
  snprintf(key, sizeof key, "list_managed_listed_%s", label);
  figure(key, (double)listed, "1");
  snprintf(key, sizeof key, "rss_growth_kb_%s", label);
  figure(key, (double)(rss_after - rss_before), "KiB");
}

static void bench_list(const char *path, bool smoke) {
  if (access(path, X_OK)) {
    fprintf(stderr, "bench-providers: %s not found; skipping the fake\n", path);
    return;
  }
  /* Instances start and end at once, so terminated ones are terminated
   * (not shutting-down) when the listing runs. */
  if (!start_fake(path) || !reset_fake() ||
      !post("/_fake/ec2/config", "{\"pending_ms\": 0, \"shutdown_ms\": 0}")) {
    failed++;
    stop_fake();
    return;
  }
  setenv("TW_BENCH_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_BENCH_AWS_SK", "tradewind-fake-secret", 1);
  char *doc = tw_asprintf("type: aws\nname: bench\nendpoint: %s\n"
                          "region: us-east-1\n"
                          "access_key_env: TW_BENCH_AWS_AK\n"
                          "secret_key_env: TW_BENCH_AWS_SK\n"
                          "image: ami-0abcdef1234567890\n",
                          base_url);
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  if (tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err)) {
    fprintf(stderr, "bench-providers: %s\n", err.msg);
    failed++;
    goto out;
  }
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.region, "us-east-1");
  TW_SET(o.zone, "us-east-1a");
  TW_SET(o.instance_type, "m5.large");
  o.market = TW_MARKET_ON_DEMAND;
  size_t history = smoke ? 200 : 10000;
  int runs = smoke ? 3 : 15;
  printf("# list_managed: 100 live instances, then %zu terminated beside "
         "them, then as many live; struct tw_instance is %zu bytes\n",
         history, sizeof(struct tw_instance));
  if (!make_instances(p, &o, "live", 100, false)) {
    failed++;
    goto out;
  }
  list_figures(p, "0_terminated", runs);
  if (!make_instances(p, &o, "gone", history, true)) {
    failed++;
    goto out;
  }
  char label[48];
  snprintf(label, sizeof label, "%zu_terminated", history);
  list_figures(p, label, runs);
  /* As many live: the listing is large now, and its memory must go back
   * when it is released. */
  if (!make_instances(p, &o, "more", history, false)) {
    failed++;
    goto out;
  }
  snprintf(label, sizeof label, "%zu_live", history + 100);
  list_figures(p, label, runs);
out:
  tw_provider_free(p);
  tw_node_free(cfg);
  free(doc);
  stop_fake();
}

/* ---- Alibaba ECS -------------------------------------------------------- */

static void bench_alibaba_sign(void) {
  const struct tw_ali_pair p[] = {
      {"Action", "RunInstances"},
      {"Version", "2014-05-26"},
      {"Format", "JSON"},
      {"AccessKeyId", "testid"},
      {"SignatureMethod", "HMAC-SHA1"},
      {"SignatureVersion", "1.0"},
      {"SignatureNonce", "0123456789abcdef0123456789abcdef"},
      {"Timestamp", "2024-05-01T12:00:00Z"},
      {"RegionId", "cn-hangzhou"},
      {"ZoneId", "cn-hangzhou-i"},
      {"ImageId", "ubuntu_22_04_x64_20G"},
      {"InstanceType", "ecs.gn7-c12g1.3xlarge"},
      {"SpotStrategy", "SpotWithPriceLimit"},
      {"SpotPriceLimit", "12.5"},
      {"ClientToken", "tw-att-0123456789abcdef"},
      {"Tag.1.Key", "tradewind:job"},
      {"Tag.1.Value", "job-0123"}};
  size_t n = sizeof p / sizeof p[0], k = 0;
  char sig[32];
  double t0 = now_s(), t;
  do {
    for (int i = 0; i < 1000; i++, k++)
      if (tw_ali_rpc_sign("POST", p, n, "testsecret", sig, NULL, NULL))
        failed++;
    t = now_s() - t0;
  } while (t < seconds_per_figure / 4);
  figure("ali_rpc_signatures_per_s", k / t, "1/s");

  char hash[65];
  tw_ali_sha256_hex("", 0, hash);
  const struct tw_ali_pair h[] = {{"host", "ecs.cn-hangzhou.aliyuncs.com"},
                                  {"x-acs-action", "RunInstances"},
                                  {"x-acs-version", "2014-05-26"},
                                  {"x-acs-date", "2024-05-01T12:00:00Z"},
                                  {"x-acs-signature-nonce", "0123456789abcdef"},
                                  {"x-acs-content-sha256", hash}};
  struct tw_ali_acs3_request r = {.method = "POST",
                                  .path = "/",
                                  .query = p + 8,
                                  .n_query = n - 8,
                                  .headers = h,
                                  .n_headers = 6,
                                  .payload_hash = hash};
  k = 0;
  t0 = now_s();
  do {
    for (int i = 0; i < 1000; i++, k++) {
      struct tw_ali_acs3_result res;
      if (tw_ali_acs3_sign(&r, "testsecret", &res, NULL))
        failed++;
      tw_ali_acs3_result_release(&res);
    }
    t = now_s() - t0;
  } while (t < seconds_per_figure / 4);
  figure("ali_acs3_signatures_per_s", k / t, "1/s");
}

static void bench_ecs_json(void) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "{\"RequestId\":\"R\",\"TotalCount\":100,\"NextToken\":"
                  "\"00ff\",\"Instances\":{\"Instance\":[");
  for (int i = 0; i < 100; i++)
    tw_buf_printf(
        &b,
        "%s{\"InstanceId\":\"i-bp%018d\",\"RegionId\":\"cn-hangzhou\","
        "\"ZoneId\":\"cn-hangzhou-i\",\"InstanceType\":\"ecs.g7.large\","
        "\"Status\":\"Running\",\"SpotStrategy\":\"SpotAsPriceGo\","
        "\"SpotPriceLimit\":0.5,\"CreationTime\":\"2024-05-01T12:00Z\","
        "\"VpcAttributes\":{\"PrivateIpAddress\":{\"IpAddress\":"
        "[\"172.16.0.%d\"]}},\"Tags\":{\"Tag\":[{\"TagKey\":"
        "\"tradewind:job\",\"TagValue\":\"job-%d\"},{\"TagKey\":"
        "\"tradewind:attempt\",\"TagValue\":\"att-%d\"}]},"
        "\"OperationLocks\":{\"LockReason\":[]}}",
        i ? "," : "", i, i % 250, i, i);
  tw_buf_adds(&b, "]}}");
  size_t k = 0;
  double t0 = now_s(), t;
  do {
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    if (tw_ecs_parse_instances(b.data, b.len, &l, NULL, NULL) || l.n != 100)
      failed++;
    tw_instance_list_release(&l);
    k++;
    t = now_s() - t0;
  } while (t < seconds_per_figure / 4);
  figure("ecs_json_describe_pages_per_s", k / t, "1/s");
  tw_buf_release(&b);
}

static void bench_alibaba_fake(const char *path) {
  static const struct bench_cloud ali = {
      "ali_",
      "type: alibaba\nname: bench\nendpoint: %s\n"
      "region: cn-hangzhou\n"
      "access_key_env: TW_BENCH_AWS_AK\n"
      "secret_key_env: TW_BENCH_AWS_SK\n"
      "image: ubuntu_22_04_x64_20G_alibase_20240101.vhd\n",
      "cn-hangzhou", "cn-hangzhou-i", "ecs.g7.large"};
  bench_fake_cloud(path, &ali);
}
#endif

#ifdef BENCH_AZURE
/* ---- Azure ----------------------------------------------------------------
 */

static void bench_arm_json(void) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "{\"value\":[");
  for (int i = 0; i < 100; i++)
    tw_buf_printf(
        &b,
        "%s{\"name\":\"tw-%024d\",\"id\":\"/subscriptions/00000000-0000-"
        "0000-0000-00000000a2e0/resourceGroups/tradewind/providers/"
        "Microsoft.Compute/virtualMachines/tw-%024d\",\"type\":"
        "\"Microsoft.Compute/virtualMachines\",\"location\":\"eastus\","
        "\"zones\":[\"1\"],\"tags\":{\"tradewind:job\":\"job-%d\","
        "\"tradewind:attempt\":\"att-%d\",\"tradewind:tenant\":\"acme\","
        "\"tradewind:token\":\"tok-%d\"},\"properties\":{\"vmId\":"
        "\"6f1c2d3e-0000-4000-8000-%012d\",\"hardwareProfile\":{\"vmSize\":"
        "\"Standard_D2s_v5\"},\"priority\":\"Spot\",\"evictionPolicy\":"
        "\"Delete\",\"billingProfile\":{\"maxPrice\":-1},"
        "\"provisioningState\":\"Succeeded\",\"timeCreated\":"
        "\"2024-05-01T12:00:00Z\",\"instanceView\":{\"statuses\":[{\"code\":"
        "\"ProvisioningState/succeeded\",\"level\":\"Info\"},{\"code\":"
        "\"PowerState/running\",\"level\":\"Info\"}]}}}",
        i ? "," : "", i, i, i, i, i, i);
  tw_buf_adds(
      &b, "],\"nextLink\":\"https://management.azure.com/x?$skiptoken=1\"}");
  size_t k = 0;
  double t0 = now_s(), t;
  do {
    struct tw_arm_vm_list l;
    char *next = NULL;
    tw_arm_vm_list_init(&l);
    if (tw_arm_parse_vm_list(b.data, b.len, &l, &next, NULL) || l.n != 100)
      failed++;
    free(next);
    tw_arm_vm_list_release(&l);
    k++;
    t = now_s() - t0;
  } while (t < seconds_per_figure / 4);
  figure("arm_json_vm_pages_per_s", k / t, "1/s");
  tw_buf_release(&b);
}

static void bench_azure_fake(const char *path) {
  /* Over plain http: the adapter takes an http authority for a local
   * fake, which spares the benchmark a certificate. */
  static const struct bench_cloud az = {
      "az_",
      "type: azure\nname: bench\n"
      "tenant_id: tradewind-fake-tenant\n"
      "client_id: tradewind-fake-client\n"
      "client_secret_env: TW_BENCH_AZ_SECRET\n"
      "subscription_id: 00000000-0000-0000-0000-00000000a2e0\n"
      "resource_group: tradewind\n"
      "region: eastus\n"
      "authority: %1$s\nmanagement_endpoint: %1$s\n"
      "prices_url: %1$s/api/retail/prices\n"
      "image: Canonical:ubuntu-24_04-lts:server:latest\n"
      "ssh_public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBench\n"
      "subnet_id: /subscriptions/00000000-0000-0000-0000-00000000a2e0/"
      "resourceGroups/tradewind/providers/Microsoft.Network/"
      "virtualNetworks/vnet/subnets/default\n"
      "operation_poll_ms: 0\n",
      "eastus", "", "Standard_D2s_v5"};
  setenv("TW_BENCH_AZ_SECRET", "tradewind-fake-azure-secret", 1);
  bench_fake_cloud(path, &az);
}
#endif

int main(int argc, char **argv) {
  const char *fake = TW_FAKECLOUD_PATH;
  bool list = false, smoke = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) {
      list = true;
    } else if (!strcmp(argv[i], "--quick")) {
      seconds_per_figure = 2.0;
    } else if (!strcmp(argv[i], "--smoke")) {
      seconds_per_figure = 0.2;
      smoke = true;
    } else if (!strcmp(argv[i], "--fakecloud") && i + 1 < argc) {
      fake = argv[++i];
    } else {
      fprintf(stderr, "usage: bench-providers [--quick | --smoke] [--list] "
                      "[--fakecloud PATH]\n");
      return 2;
    }
  }
  tw_log_set_level(TW_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  tw_ec2_xml_init();
  if (list) {
    bench_list(fake, smoke);
    curl_global_cleanup();
    return failed ? 1 : 0;
  }
  bench_sigv4();
  bench_xml();
  bench_fake(fake);
#ifdef BENCH_ALIBABA
  bench_alibaba_sign();
  bench_ecs_json();
  bench_alibaba_fake(fake);
#endif
#ifdef BENCH_AZURE
  bench_arm_json();
  bench_azure_fake(fake);
#endif
  curl_global_cleanup();
  return failed ? 1 : 0;
}
