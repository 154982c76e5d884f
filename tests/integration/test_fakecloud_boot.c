/* test_fakecloud_boot.c - the fake clouds boot instances for real
 * (--boot, docs/fakecloud.md "Booting"), serve them their metadata, and
 * tradewind-agent's pollers read their notices there:
 *
 * - a launch with user data runs it in its sandbox, with the
 *   environment the bootstrap is promised;
 * - IMDSv2: PUT for a token (TTL header required), 401 without one;
 * - terminate kills the instance's whole session at once;
 * - a spot interruption serves the notice, then kills at the deadline;
 * - the agent's AWS poller: notice -> forwarded, SIGTERM to a job that
 *   traps it and saves a checkpoint -> exit report with after_notice;
 * - the same on Azure (customData, Scheduled Events, the Preempt
 *   acknowledged with StartRequests, which evicts at once) and Alibaba
 *   (UserData, the meta-server's spot/termination-time). */
#include "tests/twtest.h"

#include <curl/curl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/alibaba/ali_sign.h"
#include "providers/sigv4.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/fakecloud/boot.h"
#include "tests/fakecloud/fakecloud.h"
#include "tests/integration/twtest_agent_broker.h"

static struct fc_server *srv;
static char base[64], meta[64], root[128];

struct reply {
  long status;
  struct tw_buf body;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct reply *)ud)->body, p, sz * n);
  return sz * n;
}

static void http(const char *method, const char *url, const char *body,
                 struct curl_slist *h, struct reply *r) {
  memset(r, 0, sizeof *r);
  tw_buf_init(&r->body);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(c);
  tw_buf_adds(&r->body, ""); /* NUL-terminated */
}

static long ctl(const char *method, const char *path, const char *json,
                struct reply *r) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", base, path);
  struct curl_slist *h =
      curl_slist_append(NULL, "Content-Type: application/json");
  http(method, url, json, h, r);
  curl_slist_free_all(h);
  return r->status;
}

static int64_t fake_now(void) {
  struct reply r;
  ctl("GET", "/_fake/clock", NULL, &r);
  const char *p = strstr(r.body.data, "\"now_ms\":");
  int64_t v = p ? strtoll(p + 9, NULL, 10) : 0;
  tw_buf_release(&r.body);
  return v;
}

/* A signed EC2 call (form body). */
static void ec2(const char *params, struct reply *r) {
  char date[17], host[64];
  tw_sigv4_amz_date(fake_now(), date);
  snprintf(host, sizeof host, "%s", base + 7);
  struct tw_sigv4_header hs[3] = {
      {"host", host},
      {"x-amz-date", date},
      {"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  struct tw_sigv4_request req = {.method = "POST",
                                 .path = "/",
                                 .headers = hs,
                                 .n_headers = 3,
                                 .body = params,
                                 .body_len = strlen(params)};
  struct tw_sigv4_params sp = {.access_key = FC_DEFAULT_ACCESS_KEY,
                               .secret_key = FC_DEFAULT_SECRET_KEY,
                               .region = "us-east-1",
                               .service = "ec2",
                               .amz_date = date,
                               .normalize_path = 1};
  struct tw_sigv4_result res;
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(tw_sigv4_sign(&req, &sp, &res, &err) == TW_OK, "%s", err.msg);
  char line[1024];
  struct curl_slist *h = NULL;
  snprintf(line, sizeof line, "x-amz-date: %s", date);
  h = curl_slist_append(h, line);
  h = curl_slist_append(
      h, "Content-Type: application/x-www-form-urlencoded; charset=utf-8");
  snprintf(line, sizeof line, "Authorization: %s", res.authorization);
  h = curl_slist_append(h, line);
  h = curl_slist_append(h, "Expect:");
  char url[128];
  snprintf(url, sizeof url, "%s/", base);
  http("POST", url, params, h, r);
  curl_slist_free_all(h);
  tw_sigv4_result_release(&res);
}

/* Base64 of s, percent-encoded for a form body. */
static char *b64_form(const char *s) {
  static const char t[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(s);
  struct tw_buf b;
  tw_buf_init(&b);
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned char)s[i] << 16;
    if (i + 1 < n)
      v |= (unsigned char)s[i + 1] << 8;
    if (i + 2 < n)
      v |= (unsigned char)s[i + 2];
    char q[4] = {t[(v >> 18) & 63], t[(v >> 12) & 63],
                 i + 1 < n ? t[(v >> 6) & 63] : '=',
                 i + 2 < n ? t[v & 63] : '='};
    for (int k = 0; k < 4; k++) {
      if (q[k] == '+')
        tw_buf_adds(&b, "%2B");
      else if (q[k] == '/')
        tw_buf_adds(&b, "%2F");
      else if (q[k] == '=')
        tw_buf_adds(&b, "%3D");
      else
        tw_buf_add(&b, &q[k], 1);
    }
  }
  tw_buf_adds(&b, "");
  return tw_buf_detach(&b);
}

/* Launches one instance (spot when asked) with user data (may be NULL);
 * returns its id (owned). */
static char *launch(const char *user_data, bool spot) {
  char *ud = user_data ? b64_form(user_data) : NULL;
  char *params =
      tw_asprintf("Action=RunInstances&Version=2016-11-15&ImageId=ami-12345678"
                  "&InstanceType=m5.large&MinCount=1&MaxCount=1%s%s%s",
                  spot ? "&InstanceMarketOptions.MarketType=spot" : "",
                  ud ? "&UserData=" : "", ud ? ud : "");
  struct reply r;
  ec2(params, &r);
  free(params);
  free(ud);
  TW_CHECK_INT(r.status, 200);
  const char *p = strstr(r.body.data, "<instanceId>");
  char *id = NULL;
  if (p)
    id = tw_strndup(p + 12, strcspn(p + 12, "<"));
  tw_buf_release(&r.body);
  TW_CHECK(id != NULL);
  return id;
}

static bool file_has(const char *path, const char *want, int timeout_ms) {
  int64_t until = tb_now_ms() + timeout_ms;
  for (;;) {
    FILE *f = fopen(path, "r");
    if (f) {
      char buf[4096] = "";
      size_t n = fread(buf, 1, sizeof buf - 1, f);
      buf[n] = '\0';
      fclose(f);
      if (strstr(buf, want))
        return true;
    }
    if (tb_now_ms() > until)
      return false;
    usleep(50000);
  }
}

/* The pids a script wrote, one a line, into path. */
static int read_pids(const char *path, pid_t *out, int max) {
  FILE *f = fopen(path, "r");
  int n = 0;
  long v;
  while (f && n < max && fscanf(f, "%ld", &v) == 1)
    out[n++] = (pid_t)v;
  if (f)
    fclose(f);
  return n;
}

static bool all_dead(const pid_t *p, int n, int timeout_ms) {
  int64_t until = tb_now_ms() + timeout_ms;
  for (;;) {
    bool any = false;
    for (int i = 0; i < n; i++)
      if (kill(p[i], 0) == 0) {
        /* a zombie of someone else's counts as dead */
        char st[64], buf[256];
        snprintf(st, sizeof st, "/proc/%d/stat", (int)p[i]);
        FILE *f = fopen(st, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
          fclose(f);
        buf[len] = '\0';
        const char *q = strrchr(buf, ')');
        if (!q || q[2] != 'Z')
          any = true;
      }
    if (!any)
      return true;
    if (tb_now_ms() > until)
      return false;
    usleep(50000);
  }
}

/* A script that leaves background processes in its session: one in a
 * process group of its own, as the agent's job is. */
#define SPAWN                                                                  \
  "#!/bin/sh\n"                                                                \
  "echo \"$TRADEWIND_AGENT_DIR|$TRADEWIND_METADATA_URL|"                       \
  "$TRADEWIND_INSTANCE_ID\" > env.txt\n"                                       \
  "sleep 300 & echo $! >> pids\n"                                              \
  "set -m; (trap '' TERM HUP; sleep 300) & echo $! >> pids; set +m\n"          \
  "echo $$ >> pids\n"                                                          \
  "echo ready > ready\n"                                                       \
  "wait\n"

static void a_launch_with_user_data_runs_it(void **state) {
  char *id = launch(SPAWN, false);
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", root, id);
  snprintf(path, sizeof path, "%s/ready", dir);
  TW_CHECK(file_has(path, "ready", 10000), "the user data never ran");
  snprintf(path, sizeof path, "%s/env.txt", dir);
  char *want = tw_asprintf("%s|%s/_meta/%s|%s", dir, meta, id, id);
  TW_CHECK(file_has(path, want, 1000), "want %s", want);
  free(want);
  snprintf(path, sizeof path, "%s/user-data", dir);
  TW_CHECK(file_has(path, "trap '' TERM HUP", 100));

  /* IMDSv2 of that instance */
  struct reply r;
  char url[256];
  snprintf(url, sizeof url, "%s/_meta/%s/latest/meta-data/instance-id", meta,
           id);
  http("GET", url, NULL, NULL, &r);
  TW_CHECK_INT(r.status, 401);
  tw_buf_release(&r.body);
  snprintf(url, sizeof url, "%s/_meta/%s/latest/api/token", meta, id);
  http("PUT", url, NULL, NULL, &r);
  TW_CHECK_INT(r.status, 400); /* no TTL header */
  tw_buf_release(&r.body);
  struct curl_slist *h =
      curl_slist_append(NULL, "X-aws-ec2-metadata-token-ttl-seconds: 60");
  http("PUT", url, NULL, h, &r);
  curl_slist_free_all(h);
  TW_CHECK_INT(r.status, 200);
  char hdr[160];
  snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", r.body.data);
  tw_buf_release(&r.body);
  h = curl_slist_append(NULL, hdr);
  snprintf(url, sizeof url, "%s/_meta/%s/latest/meta-data/instance-id", meta,
           id);
  http("GET", url, NULL, h, &r);
  TW_CHECK_INT(r.status, 200);
  TW_CHECK_STR(r.body.data, id);
  tw_buf_release(&r.body);
  snprintf(url, sizeof url, "%s/_meta/%s/latest/meta-data/spot/instance-action",
           meta, id);
  http("GET", url, NULL, h, &r);
  TW_CHECK_INT(r.status, 404);
  tw_buf_release(&r.body);
  curl_slist_free_all(h);
  h = curl_slist_append(NULL, "X-aws-ec2-metadata-token: forged");
  http("GET", url, NULL, h, &r);
  TW_CHECK_INT(r.status, 401);
  tw_buf_release(&r.body);
  curl_slist_free_all(h);

  /* terminate: every process of the instance goes at once */
  pid_t pids[8];
  snprintf(path, sizeof path, "%s/pids", dir);
  int n = read_pids(path, pids, 8);
  TW_CHECK_INT(n, 3);
  for (int i = 0; i < n; i++)
    TW_CHECK(kill(pids[i], 0) == 0, "pid %d not running", (int)pids[i]);
  char *params = tw_asprintf(
      "Action=TerminateInstances&Version=2016-11-15&InstanceId.1=%s", id);
  ec2(params, &r);
  free(params);
  TW_CHECK_INT(r.status, 200);
  tw_buf_release(&r.body);
  TW_CHECK(all_dead(pids, n, 2000), "terminate left processes");
  free(id);
}

static void bad_user_data_is_refused(void **state) {
  struct reply r;
  ec2("Action=RunInstances&Version=2016-11-15&ImageId=ami-12345678"
      "&InstanceType=m5.large&MinCount=1&MaxCount=1&UserData=echo%20hi",
      &r);
  TW_CHECK_INT(r.status, 400);
  TW_CHECK(strstr(r.body.data, "Invalid BASE64 encoding of user data"), "%s",
           r.body.data);
  tw_buf_release(&r.body);
}

static void an_interruption_kills_at_the_deadline(void **state) {
  char *id = launch(SPAWN, true);
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", root, id);
  snprintf(path, sizeof path, "%s/ready", dir);
  TW_CHECK(file_has(path, "ready", 10000));
  pid_t pids[8];
  snprintf(path, sizeof path, "%s/pids", dir);
  int n = read_pids(path, pids, 8);
  TW_CHECK_INT(n, 3);
  char p[128];
  snprintf(p, sizeof p, "/_fake/ec2/instances/%s/interrupt", id);
  struct reply r;
  int64_t t0 = tb_now_ms();
  TW_CHECK_INT(ctl("POST", p, "{\"lead_ms\":3000}", &r), 200);
  tw_buf_release(&r.body);
  /* before the deadline they live; after it they are gone, with nobody
   * calling the API in between */
  usleep(1500 * 1000);
  for (int i = 0; i < n; i++)
    TW_CHECK(kill(pids[i], 0) == 0, "killed before the deadline");
  TW_CHECK(all_dead(pids, n, 4000), "still alive after the deadline");
  int64_t took = tb_now_ms() - t0;
  TW_CHECK(took >= 2900, "killed after %lld ms", (long long)took);
  free(id);
}

/* The agent's AWS poller against the instance's IMDSv2 (no boot needed:
 * the test starts the agent itself with the instance's metadata URL). */
static bool noticed(struct tb *b) { return b->notice_body != NULL; }
static bool in_run(struct tb *b) { return !strcmp(b->last_phase, "run"); }

static void aws_poller_forwards_and_stops_the_job(void **state) {
  char *id = launch(NULL, true);
  char dir[300], ck[400];
  snprintf(dir, sizeof dir, "%s/agent-aws", root);
  snprintf(ck, sizeof ck, "%s/saved", dir);
  char *ans = tw_asprintf(
      "{\"job_id\":\"j-aws\",\"attempt\":1,\"run\":\"trap 'echo 42 > "
      "\\\"$TRADEWIND_CHECKPOINT_SAVED\\\"; echo saved > %s; exit 0' TERM; "
      "while :; do sleep 0.1; done\",\"heartbeat_s\":1,\"grace_s\":30}",
      ck);
  struct tb b;
  TW_CHECK_INT(tb_start(&b, 0, "j-aws-1", "twa_aws", ans), 0);
  free(ans);
  char murl[200];
  snprintf(murl, sizeof murl, "%s/_meta/%s", meta, id);
  pid_t a = tb_agent_start(&b, dir, "aws", murl, NULL);
  TW_CHECK(tb_wait(&b, in_run, 10000));
  char p[128];
  snprintf(p, sizeof p, "/_fake/ec2/instances/%s/interrupt", id);
  struct reply r;
  TW_CHECK_INT(ctl("POST", p, "{\"lead_ms\":120000}", &r), 200);
  tw_buf_release(&r.body);
  int64_t now = fake_now();
  TW_CHECK(tb_wait(&b, noticed, 10000), "no notice forwarded");
  TW_CHECK_INT(tb_agent_wait(&b, a, 20000), 0);
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "source")),
               "imds");
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "kind")),
               "interruption");
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "action")),
               "terminate");
  int64_t dl =
      json_integer_value(json_object_get(b.notice_body, "deadline_ms"));
  TW_CHECK(dl > now + 110000 && dl < now + 125000, "deadline %lld now %lld",
           (long long)dl, (long long)now);
  TW_CHECK(file_has(ck, "saved", 100), "the job's TERM trap did not run");
  TW_CHECK(json_is_true(json_object_get(b.exit_body, "after_notice")));
  TW_CHECK_INT(json_integer_value(json_object_get(b.exit_body, "exit_code")),
               0);
  TW_CHECK_INT(b.checkpoints, 1);
  TW_CHECK_INT(b.notices, 1);
  if (tw_failures())
    tb_agent_log(dir);
  tb_free(&b);
  free(id);
}

/* ---- Azure ------------------------------------------------------------ */

static char *b64_raw(const char *s) {
  char *f = b64_form(s); /* undo the form encoding */
  struct tw_buf b;
  tw_buf_init(&b);
  for (const char *p = f; *p; p++) {
    if (*p == '%') {
      tw_buf_adds(&b, p[2] == 'B' ? "+" : p[2] == 'F' ? "/" : "=");
      p += 2;
    } else {
      tw_buf_add(&b, p, 1);
    }
  }
  tw_buf_adds(&b, "");
  free(f);
  return tw_buf_detach(&b);
}

static char *arm_token(void) {
  struct reply r;
  char url[256];
  snprintf(url, sizeof url, "%s/" FC_AZ_TENANT "/oauth2/token", base);
  http("POST", url,
       "grant_type=client_credentials&client_id=" FC_AZ_CLIENT_ID
       "&client_secret=" FC_AZ_CLIENT_SECRET
       "&resource=https%3A%2F%2Fmanagement.azure.com%2F",
       NULL, &r);
  json_t *j = json_loads(r.body.data, 0, NULL);
  char *t =
      tw_strdup(json_string_value(json_object_get(j, "access_token"))
                    ? json_string_value(json_object_get(j, "access_token"))
                    : "");
  json_decref(j);
  tw_buf_release(&r.body);
  return t;
}

#define SUBP "/subscriptions/" FC_AZ_SUBSCRIPTION

/* Creates Spot VM name with customData (may be NULL). */
static void azure_vm(const char *name, const char *custom) {
  char *tok = arm_token();
  char *cd = custom ? b64_raw(custom) : NULL;
  char *body = tw_asprintf(
      "{\"location\":\"eastus\",\"properties\":{\"priority\":\"Spot\","
      "\"evictionPolicy\":\"Delete\",\"billingProfile\":{\"maxPrice\":-1},"
      "\"hardwareProfile\":{\"vmSize\":\"Standard_D2s_v5\"},"
      "\"storageProfile\":{\"imageReference\":{\"publisher\":\"Canonical\","
      "\"offer\":\"ubuntu-24_04-lts\",\"sku\":\"server\",\"version\":"
      "\"latest\"}},\"osProfile\":{\"computerName\":\"%s\","
      "\"adminUsername\":\"tradewind\",%s%s%s\"linuxConfiguration\":"
      "{\"disablePasswordAuthentication\":true,\"ssh\":{\"publicKeys\":[{"
      "\"path\":\"/home/tradewind/.ssh/authorized_keys\",\"keyData\":"
      "\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake\"}]}}},"
      "\"networkProfile\":{\"networkInterfaces\":[{\"id\":\"" SUBP
      "/resourceGroups/tradewind/providers/Microsoft.Network/"
      "networkInterfaces/nic1\"}]}}}",
      name, cd ? "\"customData\":\"" : "", cd ? cd : "", cd ? "\"," : "");
  char url[512], auth[256];
  snprintf(url, sizeof url,
           "%s" SUBP "/resourceGroups/" FC_AZ_RESOURCE_GROUP
           "/providers/Microsoft.Compute/virtualMachines/%s"
           "?api-version=2024-07-01",
           base, name);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
  struct curl_slist *h = curl_slist_append(NULL, auth);
  h = curl_slist_append(h, "Content-Type: application/json");
  struct reply r;
  http("PUT", url, body, h, &r);
  curl_slist_free_all(h);
  TW_CHECK(r.status == 201 || r.status == 200, "PUT vm: %ld %s", r.status,
           r.body.data);
  tw_buf_release(&r.body);
  free(body);
  free(cd);
  free(tok);
}

#define SPAWN_SHORT                                                            \
  "#!/bin/sh\n"                                                                \
  "echo \"$TRADEWIND_METADATA_URL\" > env.txt\n"                               \
  "sleep 300 & echo $! >> pids\n"                                              \
  "echo ready > ready\n"                                                       \
  "wait\n"

/* The job of the poller tests: saves a checkpoint when TERM comes. */
static char *saving_job(const char *job, const char *ck) {
  return tw_asprintf(
      "{\"job_id\":\"%s\",\"attempt\":1,\"run\":\"trap 'echo 7 > "
      "\\\"$TRADEWIND_CHECKPOINT_SAVED\\\"; echo saved > %s; exit 0' TERM; "
      "while :; do sleep 0.1; done\",\"heartbeat_s\":1,\"grace_s\":30}",
      job, ck);
}

static void azure_boots_and_its_poller_acks_the_preempt(void **state) {
  azure_vm("twvm1", SPAWN_SHORT);
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/twvm1", root);
  snprintf(path, sizeof path, "%s/ready", dir);
  TW_CHECK(file_has(path, "ready", 10000), "customData never ran");
  snprintf(path, sizeof path, "%s/env.txt", dir);
  char want[200];
  snprintf(want, sizeof want, "%s/_meta/twvm1", meta);
  TW_CHECK(file_has(path, want, 100));
  pid_t pids[4];
  snprintf(path, sizeof path, "%s/pids", dir);
  int n = read_pids(path, pids, 4);
  TW_CHECK_INT(n, 1);

  /* Scheduled Events of the VM: Metadata: true is required */
  struct reply r;
  char url[300];
  snprintf(url, sizeof url,
           "%s/_meta/twvm1/metadata/scheduledevents?api-version=2020-07-01",
           meta);
  http("GET", url, NULL, NULL, &r);
  TW_CHECK_INT(r.status, 400);
  tw_buf_release(&r.body);

  /* the agent, on this VM's metadata */
  char adir[300], ck[400];
  snprintf(adir, sizeof adir, "%s/agent-azure", root);
  snprintf(ck, sizeof ck, "%s/saved", adir);
  char *ans = saving_job("j-az", ck);
  struct tb b;
  TW_CHECK_INT(tb_start(&b, 0, "j-az-1", "twa_az", ans), 0);
  free(ans);
  char murl[200];
  snprintf(murl, sizeof murl, "%s/_meta/twvm1", meta);
  pid_t a = tb_agent_start(&b, adir, "azure", murl, NULL);
  TW_CHECK(tb_wait(&b, in_run, 10000));
  TW_CHECK_INT(
      ctl("POST", "/_fake/azure/vms/twvm1/evict", "{\"lead_ms\":60000}", &r),
      200);
  json_t *ev = json_loads(r.body.data, 0, NULL);
  char event_id[64];
  snprintf(event_id, sizeof event_id, "%s",
           json_string_value(json_object_get(ev, "event_id"))
               ? json_string_value(json_object_get(ev, "event_id"))
               : "?");
  json_decref(ev);
  tw_buf_release(&r.body);
  TW_CHECK_INT(tb_agent_wait(&b, a, 20000), 0);
  TW_CHECK(b.notice_body != NULL);
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "source")),
               "scheduled-events");
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "event_id")),
               event_id);
  TW_CHECK(json_integer_value(json_object_get(b.notice_body, "deadline_ms")) >
           tb_now_ms() + 30000);
  TW_CHECK(file_has(ck, "saved", 100));
  TW_CHECK(json_is_true(json_object_get(b.exit_body, "after_notice")));
  /* the acknowledgement (StartRequests) evicts at once, a minute early:
   * the VM's processes are gone */
  TW_CHECK(all_dead(pids, n, 3000), "the acknowledged Preempt did not evict");
  if (tw_failures())
    tb_agent_log(adir);
  tb_free(&b);
}

/* ---- Alibaba ---------------------------------------------------------- */

/* A signed ECS call; returns the answer's JSON. */
static json_t *ecs(const char *action, const char *const *kv, long *status) {
  static int nonce;
  char ts[32], nn[48];
  tw_time_fmt_rfc3339(fake_now(), ts, sizeof ts);
  snprintf(ts + 19, sizeof ts - 19, "Z");
  snprintf(nn, sizeof nn, "tw-boot-%d-%d", (int)getpid(), ++nonce);
  struct tw_ali_pair p[32] = {{"Action", action},
                              {"Version", "2014-05-26"},
                              {"Format", "JSON"},
                              {"AccessKeyId", "testid"},
                              {"SignatureMethod", "HMAC-SHA1"},
                              {"SignatureVersion", "1.0"},
                              {"SignatureNonce", nn},
                              {"Timestamp", ts}};
  size_t n = 8;
  for (size_t i = 0; kv && kv[i] && n < 31; i += 2)
    p[n++] = (struct tw_ali_pair){kv[i], kv[i + 1]};
  char sig[32];
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK_RC(tw_ali_rpc_sign("GET", p, n, "testsecret", sig, NULL, &err),
              TW_OK, err);
  struct tw_buf url;
  tw_buf_init(&url);
  tw_buf_printf(&url, "%s/?", base);
  tw_ali_canonical_query(&url, p, n, NULL);
  tw_buf_adds(&url, "&Signature=");
  tw_ali_encode(&url, sig, strlen(sig));
  struct reply r;
  http("GET", url.data, NULL, NULL, &r);
  tw_buf_release(&url);
  *status = r.status;
  json_t *j = json_loads(r.body.data, 0, NULL);
  if (!j)
    fprintf(stderr, "ecs %s: %ld %s\n", action, r.status, r.body.data);
  tw_buf_release(&r.body);
  return j;
}

static void alibaba_boots_and_its_poller_reads_the_reclaim(void **state) {
  char *ud = b64_raw(SPAWN_SHORT);
  long st = 0;
  json_t *j =
      ecs("RunInstances",
          (const char *[]){
              "RegionId", "cn-hangzhou", "ZoneId", "cn-hangzhou-h", "ImageId",
              "ubuntu_24_04_x64_20G_alibase_20250722.vhd", "InstanceType",
              "ecs.g7.large", "SpotStrategy", "SpotAsPriceGo", "SpotDuration",
              "0", "Amount", "1", "UserData", ud, NULL},
          &st);
  free(ud);
  TW_CHECK_INT(st, 200);
  json_t *ids =
      json_object_get(json_object_get(j, "InstanceIdSets"), "InstanceIdSet");
  char id[64];
  snprintf(id, sizeof id, "%s",
           json_string_value(json_array_get(ids, 0))
               ? json_string_value(json_array_get(ids, 0))
               : "?");
  json_decref(j);
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", root, id);
  snprintf(path, sizeof path, "%s/ready", dir);
  TW_CHECK(file_has(path, "ready", 10000), "UserData never ran");
  pid_t pids[4];
  snprintf(path, sizeof path, "%s/pids", dir);
  int n = read_pids(path, pids, 4);
  TW_CHECK_INT(n, 1);
  struct reply r;
  char url[300];
  snprintf(url, sizeof url, "%s/_meta/%s/latest/meta-data/instance-id", meta,
           id);
  http("GET", url, NULL, NULL, &r);
  TW_CHECK_INT(r.status, 200);
  TW_CHECK_STR(r.body.data, id);
  tw_buf_release(&r.body);

  char adir[300], ck[400];
  snprintf(adir, sizeof adir, "%s/agent-ali", root);
  snprintf(ck, sizeof ck, "%s/saved", adir);
  char *ans = saving_job("j-ali", ck);
  struct tb b;
  TW_CHECK_INT(tb_start(&b, 0, "j-ali-1", "twa_ali", ans), 0);
  free(ans);
  char murl[200];
  snprintf(murl, sizeof murl, "%s/_meta/%s", meta, id);
  pid_t a = tb_agent_start(&b, adir, "alibaba", murl, NULL);
  TW_CHECK(tb_wait(&b, in_run, 10000));
  char cp[160];
  snprintf(cp, sizeof cp, "/_fake/alibaba/instances/%s/interrupt", id);
  TW_CHECK_INT(ctl("POST", cp, "{}", &r), 200);
  tw_buf_release(&r.body);
  TW_CHECK_INT(tb_agent_wait(&b, a, 20000), 0);
  TW_CHECK(b.notice_body != NULL);
  TW_CHECK_STR(json_string_value(json_object_get(b.notice_body, "source")),
               "meta-server");
  int64_t dl =
      json_integer_value(json_object_get(b.notice_body, "deadline_ms"));
  TW_CHECK(dl > tb_now_ms() + 200000, "deadline %lld", (long long)dl);
  TW_CHECK(file_has(ck, "saved", 100));
  TW_CHECK(json_is_true(json_object_get(b.exit_body, "after_notice")));
  TW_CHECK_INT(b.checkpoints, 1);
  if (tw_failures())
    tb_agent_log(adir);
  tb_free(&b);
  /* released: its processes go */
  j = ecs("DeleteInstance",
          (const char *[]){"InstanceId", id, "Force", "true", NULL}, &st);
  json_decref(j);
  TW_CHECK_INT(st, 200);
  TW_CHECK(all_dead(pids, n, 3000), "a released instance kept running");
}

static int setup(void **state) {
  snprintf(root, sizeof root, "/tmp/tw-fc-boot-XXXXXX");
  if (!mkdtemp(root))
    return -1;
  struct fc_opts o;
  fc_opts_init(&o);
  o.pending_ms = 0;
  o.boot = true;
  o.boot_dir = root;
  static const char ak[] = "testid";
  o.creds[0].access_key = ak;
  o.creds[0].secret_key = "testsecret";
  o.n_creds = 1;
  struct tw_err err;
  tw_err_clear(&err);
  if (fc_server_start(&o, &srv, &err)) {
    fprintf(stderr, "fakecloud: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  snprintf(meta, sizeof meta, "http://127.0.0.1:%u", fc_server_meta_port(srv));
  return 0;
}

static int teardown(void **state) {
  fc_server_stop(srv);
  if (!tw_failures())
    fc_rm_tree(root);
  return 0;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_launch_with_user_data_runs_it),
      cmocka_unit_test(bad_user_data_is_refused),
      cmocka_unit_test(an_interruption_kills_at_the_deadline),
      cmocka_unit_test(aws_poller_forwards_and_stops_the_job),
      cmocka_unit_test(azure_boots_and_its_poller_acks_the_preempt),
      cmocka_unit_test(alibaba_boots_and_its_poller_reads_the_reclaim),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
