/* main.c - tradewind-fakecloud: the command line over fakecloud.h. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "tests/fakecloud/fakecloud.h"

static const char usage[] =
    "usage: tradewind-fakecloud --listen HOST:PORT [options]\n"
    "\n"
    "A loopback fake of cloud compute APIs for Tradewind's tests.  It speaks\n"
    "the EC2 Query API (version 2016-11-15) as the AWS SDKs do, verifies\n"
    "SigV4 signatures, keeps instances in memory and injects faults from a\n"
    "seeded schedule.  Not a security boundary: bind it to loopback only.\n"
    "\n"
    "Options:\n"
    "  --listen HOST:PORT   IPv4 address and port (default 127.0.0.1:0).\n"
    "                       Port 0 picks a free port; the first line on\n"
    "                       stdout is always `listening http://HOST:PORT`.\n"
    "  --seed N             seed of every random choice: ids, zones, fault\n"
    "                       probabilities, spot prices (default 1).\n"
    "  --catalog FILE       regions, zones, instance types and prices (JSON;\n"
    "                       default: the built-in "
    "tests/fakecloud/catalog.json).\n"
    "  --clock-speed X      fake seconds per real second (default 1; 0\n"
    "                       freezes the clock, which then moves only\n"
    "                       through POST /_fake/clock).\n"
    "  --start-time T       fake clock at start, RFC 3339 (default: now).\n"
    "  --pending-ms N       fake ms from pending to running (default 5000).\n"
    "  --faults FILE        fault schedule (JSON, see docs/fakecloud.md).\n"
    "  --credentials AK:SK  accept another access key (repeatable, up to %d).\n"
    "  --max-body BYTES     largest request body (default %u; above: 413).\n"
    "  --tls-cert FILE      serve HTTPS with this PEM certificate (and\n"
    "  --tls-key FILE       this PEM key); the first line then says https.\n"
    "  --boot               boot instances for real: a launch with user\n"
    "                       data runs it with sh in a sandbox of its own\n"
    "                       and is served its metadata on a second, plain\n"
    "                       HTTP port (second line: `metadata http://...`).\n"
    "  --boot-dir DIR       where the sandboxes go (default: a temporary\n"
    "                       directory, removed at stop).\n"
    "  --verbose            log each request to stderr.\n"
    "  --help               this text.\n"
    "\n"
    "Credentials: access key " FC_DEFAULT_ACCESS_KEY ", secret key\n"
    "  " FC_DEFAULT_SECRET_KEY ".  Any region of the catalog (us-east-1,\n"
    "  us-west-2, eu-west-1 built in) is served; the region is taken from\n"
    "  the credential scope, service name ec2.\n"
    "\n"
    "Endpoints:\n"
    "  POST /  (form body) or GET /?Action=...   EC2 Query API:\n"
    "      RunInstances, DescribeInstances, TerminateInstances,\n"
    "      DescribeSpotPriceHistory, DescribeInstanceTypes,\n"
    "      DescribeAvailabilityZones.  Errors use EC2's codes, statuses and\n"
    "      <Response><Errors><Error> envelope.\n"
    "\n"
    "Control API (JSON, unauthenticated):\n"
    "  GET  /_fake/health                       {\"ok\":true}\n"
    "  GET  /_fake/clock                        fake time and speed\n"
    "  POST /_fake/clock   {\"advance_ms\":N | \"set\":\"RFC3339\" | "
    "\"speed\":X}\n"
    "  GET  /_fake/faults                       rules with their firings\n"
    "  POST /_fake/faults  {rule} or {\"faults\":[rule...]}   add rules\n"
    "  DELETE /_fake/faults[/ID]                remove all or one rule\n"
    "  POST /_fake/reset                        forget instances, counters,\n"
    "                                           rules; reload --faults\n"
    "  GET  /_fake/state                        every module's state\n"
    "  GET  /_fake/ec2/state                    instances, tags, per-action\n"
    "                                           call and error counters\n"
    "  GET  /_fake/ec2/calls                    the counters alone\n"
    "  GET/POST /_fake/ec2/config               {pending_ms, shutdown_ms,\n"
    "                                           vcpu_limit_on_demand,\n"
    "                                           vcpu_limit_spot}\n"
    "  POST /_fake/ec2/spot-price {instance_type, zone, price}\n"
    "  GET  /_fake/ec2/instances/ID             one instance\n"
    "  POST /_fake/ec2/instances/ID/interrupt   {lead_ms:120000, delay_ms:0,\n"
    "                                           action:terminate|stop|...}\n"
    "  POST /_fake/ec2/instances/ID/rebalance   {delay_ms:0}\n"
    "  GET  /_fake/ec2/instances/ID/spot/instance-action\n"
    "                    {\"action\":\"terminate\",\"time\":\"...\"} or 404\n"
    "  GET  /_fake/ec2/instances/ID/events/recommendations/rebalance\n"
    "                    {\"noticeTime\":\"...\"} or 404\n"
    "\n"
    "Azure (service \"azure\"; serve it with --tls-cert/--tls-key):\n"
    "  /{tenant}/oauth2/v2.0/token, /{tenant}/v2.0/.well-known/...\n"
    "  /subscriptions/...  ARM: Microsoft.Compute VMs, operations, SKUs,\n"
    "                      resources; /api/retail/prices;\n"
    "  /metadata/scheduledevents; control under /_fake/azure/.\n"
    "\n"
    "Fault rule kinds: throttle, error, slow, capacity, quota,\n"
    "spot_interruption, rebalance, region_down; see docs/fakecloud.md.\n";

static int bad(const char *what, const char *val) {
  fprintf(stderr, "tradewind-fakecloud: %s: \"%s\" (see --help)\n", what,
          val ? val : "");
  return 2;
}

int main(int argc, char **argv) {
  struct fc_opts o;
  fc_opts_init(&o);
  char host[64] = "127.0.0.1";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf(usage, FC_MAX_CREDS, FC_MAX_BODY_BYTES);
      return 0;
    }
    if (!strcmp(a, "--verbose")) {
      o.verbose = 1;
      continue;
    }
    if (!strcmp(a, "--boot")) {
      o.boot = true;
      continue;
    }
    if (!v)
      return bad("missing value for", a);
    i++;
    if (!strcmp(a, "--listen")) {
      const char *colon = strrchr(v, ':');
      if (!colon || (size_t)(colon - v) >= sizeof host || colon == v)
        return bad("--listen expects HOST:PORT", v);
      unsigned long port = strtoul(colon + 1, &end, 10);
      if (*end || !colon[1] || port > 65535)
        return bad("--listen: bad port", v);
      memcpy(host, v, (size_t)(colon - v));
      host[colon - v] = '\0';
      if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
      o.port = (unsigned)port;
    } else if (!strcmp(a, "--seed")) {
      o.seed = strtoull(v, &end, 10);
      if (*end || !*v)
        return bad("--seed expects a number", v);
    } else if (!strcmp(a, "--catalog")) {
      o.catalog_path = v;
    } else if (!strcmp(a, "--faults")) {
      o.faults_path = v;
    } else if (!strcmp(a, "--boot-dir")) {
      o.boot_dir = v;
    } else if (!strcmp(a, "--tls-cert")) {
      o.tls_cert_path = v;
    } else if (!strcmp(a, "--tls-key")) {
      o.tls_key_path = v;
    } else if (!strcmp(a, "--clock-speed")) {
      o.clock_speed = strtod(v, &end);
      if (*end || !*v || !(o.clock_speed >= 0) || o.clock_speed > 1e6)
        return bad("--clock-speed expects a number in 0..1e6", v);
    } else if (!strcmp(a, "--start-time")) {
      if (tw_time_parse_rfc3339(v, &o.start_ms) || o.start_ms < 0)
        return bad("--start-time expects RFC 3339", v);
    } else if (!strcmp(a, "--pending-ms")) {
      o.pending_ms = strtoll(v, &end, 10);
      if (*end || !*v || o.pending_ms < 0)
        return bad("--pending-ms expects a number >= 0", v);
    } else if (!strcmp(a, "--max-body")) {
      unsigned long long n = strtoull(v, &end, 10);
      if (*end || !*v || n < 1024 || n > (64ull << 20))
        return bad("--max-body expects 1024..67108864", v);
      o.max_body_bytes = (size_t)n;
    } else if (!strcmp(a, "--credentials")) {
      const char *colon = strchr(v, ':');
      if (!colon || colon == v || !colon[1] || o.n_creds >= FC_MAX_CREDS)
        return bad("--credentials expects ACCESS_KEY:SECRET", "(hidden)");
      o.creds[o.n_creds].access_key = strndup(v, (size_t)(colon - v));
      o.creds[o.n_creds].secret_key = colon + 1;
      o.n_creds++;
    } else {
      return bad("unknown option", a);
    }
  }
  o.listen_host = host;
  if (!o.tls_cert_path != !o.tls_key_path)
    return bad("--tls-cert and --tls-key go together",
               o.tls_cert_path ? o.tls_cert_path : o.tls_key_path);

  /* Block the stop signals before the server's threads start, so they
   * inherit the mask and only sigwait() below sees them. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct fc_server *s = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  if (fc_server_start(&o, &s, &err)) {
    fprintf(stderr, "tradewind-fakecloud: %s\n", err.msg);
    return 1;
  }
  printf("listening %s://%s:%u\n", fc_tls(s) ? "https" : "http", host,
         fc_server_port(s));
  if (o.boot)
    printf("metadata http://%s:%u\n", host, fc_server_meta_port(s));
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  fc_server_stop(s);
  for (size_t i = 0; i < o.n_creds; i++)
    free((char *)o.creds[i].access_key);
  return 0;
}
