/* auth_oidc.c - the answers of a sign-in through an identity provider, for
 * api/auth.c (see tw_auth_oidc() in oidc.h). */
#include <stdio.h>

#include "api/api_int.h"
#include "api/oidc.h"
#include "broker/base/log.h"

bool tw_auth_oidc(struct tw_req *r, struct tw_oidc *o, const char *jwt,
                  struct tw_principal *who) {
  char why[200], hdr[300];
  switch (tw_oidc_authenticate(o, jwt, tw_req_header(r, "X-Tradewind-Tenant"),
                               r->request_id, who, why, sizeof why)) {
  case TW_OIDC_OK:
    return true;
  case TW_OIDC_NO_ROLE:
    tw_problem(r, 403, "forbidden", NULL, "%s", why);
    return false;
  case TW_OIDC_UNAVAILABLE:
    tw_req_add_header(r, "Retry-After", "30");
    tw_problem(r, 503, "unavailable", NULL, "%s", why);
    return false;
  case TW_OIDC_REFUSED:
    break;
  }
  unsigned dropped;
  if (tw_oidc_log_ok(o, &dropped))
    tw_log_info("auth",
                "request=%s identity-provider token refused: %s (%u refusals "
                "not logged before)",
                r->request_id, why, dropped);
  snprintf(hdr, sizeof hdr,
           "Bearer realm=\"tradewind\", error=\"invalid_token\", "
           "error_description=\"%s\"",
           why);
  tw_req_add_header(r, "WWW-Authenticate", hdr);
  tw_problem(r, 401, "unauthenticated", NULL, "%s", why);
  return false;
}
