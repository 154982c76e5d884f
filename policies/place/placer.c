/* placer.c - the shared placement state (placer.h). */
#include "policies/place/placer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

struct tw_placer {
  pthread_mutex_t mu; /* guards the two pointers; held only to swap or ref */
  struct tw_policy_set *set;
  struct tw_offer_index *ix;
  uint64_t reloads;
};

struct tw_placer *tw_placer_new(struct tw_policy_set *set) {
  struct tw_placer *p = tw_calloc(1, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  p->set = set ? set : tw_policy_set_default();
  return p;
}

void tw_placer_free(struct tw_placer *p) {
  if (!p)
    return;
  tw_policy_set_unref(p->set);
  tw_offer_index_unref(p->ix);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void tw_placer_set_policies(struct tw_placer *p, struct tw_policy_set *set) {
  if (!set)
    return;
  pthread_mutex_lock(&p->mu);
  struct tw_policy_set *old = p->set;
  p->set = set;
  p->reloads++;
  pthread_mutex_unlock(&p->mu);
  tw_policy_set_unref(old);
}

void tw_placer_set_index(struct tw_placer *p, struct tw_offer_index *ix) {
  tw_offer_index_ref(ix);
  pthread_mutex_lock(&p->mu);
  struct tw_offer_index *old = p->ix;
  p->ix = ix;
  pthread_mutex_unlock(&p->mu);
  tw_offer_index_unref(old);
}

void tw_placer_acquire(struct tw_placer *p, struct tw_policy_set **set,
                       struct tw_offer_index **ix) {
  pthread_mutex_lock(&p->mu);
  *set = tw_policy_set_ref(p->set);
  *ix = tw_offer_index_ref(p->ix);
  pthread_mutex_unlock(&p->mu);
}

void tw_placer_release(struct tw_policy_set *set, struct tw_offer_index *ix) {
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix);
}

uint64_t tw_placer_reloads(struct tw_placer *p) {
  pthread_mutex_lock(&p->mu);
  uint64_t r = p->reloads;
  pthread_mutex_unlock(&p->mu);
  return r;
}
