/* h_ui.c - GET /ui and /ui/{asset} (h_ui.h). */
#include "api/h_ui.h"

#include <string.h>

#include "api/api_int.h"

/* Everything from this origin, nothing inline, no frames, no forms
 * posting elsewhere: a script injected into a page cannot run, and the
 * token in sessionStorage can only travel to this API. */
static const char CSP[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

static void serve(struct tw_req *r, const char *name) {
  for (size_t i = 0; i < tw_ui_n_assets; i++) {
    const struct tw_ui_asset *a = &tw_ui_assets[i];
    if (strcmp(a->name, name))
      continue;
    tw_buf_add(&r->out, a->data, a->len);
    r->status = 200;
    r->content_type = a->type;
    tw_req_add_header(r, "Content-Security-Policy", CSP);
    tw_req_add_header(r, "X-Content-Type-Options", "nosniff");
    tw_req_add_header(r, "Referrer-Policy", "no-referrer");
    tw_req_add_header(r, "X-Frame-Options", "DENY");
    tw_req_add_header(r, "Cache-Control", "no-cache");
    return;
  }
  tw_problem(r, 404, "not-found", NULL, "no console file %.64s", name);
}

void tw_h_ui_index(struct tw_req *r) { serve(r, "index.html"); }

void tw_h_ui_asset(struct tw_req *r) { serve(r, r->params[0]); }
