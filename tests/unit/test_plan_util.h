/* test_plan_util.h - offers, specs and random catalogs for the placement
 * tests (header only; each test binary includes it once). */
#ifndef TW_TESTS_TEST_PLAN_UTIL_H
#define TW_TESTS_TEST_PLAN_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"

static inline struct tw_offer
tp_offer(const char *prov, const char *region, const char *zone,
         const char *type, enum tw_market m, int64_t price, int vcpus,
         int64_t mem_gib, const char *accel, int accels, const char *juris) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "%s", prov);
  snprintf(o.account, sizeof o.account, "%s-main", prov);
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.market = m;
  o.price_uusd_per_hour = price;
  o.vcpus = vcpus;
  o.memory_mib = mem_gib * 1024;
  o.arch = TW_ARCH_X86_64;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.billing_granularity_s = 1;
  o.min_charge_s = 60;
  if (juris)
    tw_offer_set_label(&o, "jurisdiction", juris);
  tw_offer_make_id(&o);
  return o;
}

static inline int tp_spec(const char *yaml, struct tw_job_spec *spec) {
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, spec, &err)) {
    fprintf(stderr, "spec: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* xorshift64*, seeded: every random test prints its seed. */
static inline uint64_t tp_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* A random catalog of n offers over a few providers, regions, zones and
 * shapes, with ties in price on purpose. */
static inline struct tw_offer *tp_catalog(uint64_t seed, size_t n) {
  static const char *const provs[] = {"aws", "azure", "gcp", "alibaba"};
  static const char *const regs[] = {"us-east-1",    "us-west-2",  "eu-west-1",
                                     "eu-central-1", "ap-south-1", "westeurope",
                                     "cn-hangzhou"};
  static const char *const jur[] = {"US", "US", "EU", "EU", "IN", "EU", "CN"};
  static const char *const accs[] = {NULL,        NULL,   NULL, "A100-80GB",
                                     "A100-40GB", "H100", "T4", "V100"};
  struct tw_offer *o = calloc(n ? n : 1, sizeof *o);
  uint64_t s = seed ? seed : 1;
  for (size_t i = 0; i < n; i++) {
    int p = (int)(tp_rand(&s) % 4), r = (int)(tp_rand(&s) % 7),
        z = (int)(tp_rand(&s) % 4);
    int a = (int)(tp_rand(&s) % 8), t = (int)(tp_rand(&s) % 40);
    int vcpus = 2 << (t % 7);
    char zone[64], type[64];
    snprintf(zone, sizeof zone, "%s%c", regs[r], 'a' + z);
    snprintf(type, sizeof type, "t%d.%s", t, accs[a] ? accs[a] : "cpu");
    /* prices from a coarse grid so equal costs happen */
    int64_t price =
        (int64_t)(1 + tp_rand(&s) % 200) * 50000 * (accs[a] ? 10 : 1);
    o[i] = tp_offer(provs[p], regs[r], z == 3 ? "" : zone, type,
                    tp_rand(&s) % 2 ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND,
                    price, vcpus, vcpus * 4, accs[a],
                    accs[a] ? 1 + (int)(tp_rand(&s) % 8) : 0, jur[r]);
    o[i].interruption_pct =
        o[i].market == TW_MARKET_SPOT ? (int)(tp_rand(&s) % 25) : -1;
    /* ids must be unique: a serial suffix on the type */
    snprintf(o[i].instance_type, sizeof o[i].instance_type, "%.40s-%zu", type,
             i % 97);
    tw_offer_make_id(&o[i]);
    if (tp_rand(&s) % 50 == 0)
      o[i].capacity = (int64_t)(tp_rand(&s) % 6);
  }
  return o;
}

#endif
