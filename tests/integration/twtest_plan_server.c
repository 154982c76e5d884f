/* twtest_plan_server.c - see twtest_plan_server.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/core/store.h"
#include "broker/sched/sched.h"
#include "cli/cli.h"
#include "policies/place/placer.h"
#include "tests/fakes/fake_provider.h"
#include "tests/integration/twtest_plan_server.h"

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct twtest_ps_resp *)ud)->body, p, sz * n);
  return sz * n;
}

struct twtest_ps_resp twtest_ps_call(struct twtest_ps *f, const char *method,
                                     const char *p, const char *ctype,
                                     const char *body) {
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", tw_api_port(f->api), p);
  struct twtest_ps_resp r = {0};
  tw_buf_init(&r.body);
  tw_buf_adds(&r.body, "");
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  if (ctype) {
    char line[128];
    snprintf(line, sizeof line, "Content-Type: %s", ctype);
    h = curl_slist_append(h, line);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

void twtest_ps_offer(struct twtest_ps *f, const char *region, const char *zone,
                     const char *type, enum tw_market m, int64_t price,
                     int vcpus, const char *accel, int accels,
                     const char *juris) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "aws");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = vcpus;
  o.memory_mib = vcpus * 4096LL;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.market = m;
  o.price_uusd_per_hour = price;
  o.billing_granularity_s = 1;
  tw_offer_set_label(&o, "jurisdiction", juris);
  tw_offer_make_id(&o);
  tw_fake_add_offer(tw_fake_of(f->prov), &o);
}

int twtest_ps_open(struct twtest_ps *f, const char *tag) {
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/tw-%s-XXXXXX", tag);
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->path, sizeof f->path, "%s/p.db", f->dir);
  tw_clock_fake_init(&f->clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = f->path, .clock = &f->clk};
  if (tw_store_open(&so, &f->store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", NULL, &f->clk, &f->prov,
                          &err))
    return -1;
  return 0;
}

int twtest_ps_start(struct twtest_ps *f, bool adapters) {
  struct tw_err err = {0};
  f->placer = tw_placer_new(NULL);
  struct tw_sched_opts sopt = {.store = f->store,
                               .clock = &f->clk,
                               .providers = &f->prov,
                               .n_providers = 1,
                               .placer = f->placer};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = f->store,
                             .clock = &f->clk,
                             .providers = &f->prov,
                             .n_providers = 1,
                             .adapters = adapters ? tw_adapters_test : NULL,
                             .auth = {.open = true},
                             .placer = f->placer};
  curl_global_init(CURL_GLOBAL_ALL);
  if (tw_sched_new(&sopt, &f->sched, &err) ||
      tw_api_start(&aopt, &f->api, &err))
    return -1;
  tw_sched_tick(
      f->sched); /* lists the offers, builds the index, publishes it */
  return 0;
}

void twtest_ps_close(struct twtest_ps *f) {
  tw_api_stop(f->api);
  tw_sched_free(f->sched);
  tw_placer_free(f->placer);
  tw_provider_free(f->prov);
  tw_store_close(f->store);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", f->path, sfx[i]);
    unlink(p);
  }
  rmdir(f->dir);
}

static void no_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  (void)ms;
}

int twtest_ps_cli(struct twtest_ps *f, const char *const *argv, int argc,
                  char **out) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", tw_api_port(f->api));
  size_t olen = 0, elen = 0;
  char *err = NULL;
  FILE *fo = open_memstream(out, &olen), *fe = open_memstream(&err, &elen);
  struct tw_cli_io io = {.out = fo,
                         .err = fe,
                         .in = stdin,
                         .env_url = url,
                         .clock = &f->clk,
                         .sleep_ms = no_sleep};
  int code = tw_cli_run(argc, (char **)argv, &io);
  fclose(fo);
  fclose(fe);
  if (code)
    fprintf(stderr, "cli: %s\n", err);
  free(err);
  return code;
}
