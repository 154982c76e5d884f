/* h_ui.h - the web console at /ui: files from api/ui/, compiled into the
 * binary by api/ui/embed.cmake, served with a strict
 * Content-Security-Policy (no inline script or style, nothing from
 * elsewhere).  The console calls the public API with the user's own
 * token: RBAC is the API's (docs/console.md). */
#ifndef TW_API_H_UI_H
#define TW_API_H_UI_H

#include <stddef.h>

struct tw_req;

struct tw_ui_asset {
  const char *name; /* "app.js" */
  const char *type; /* Content-Type */
  const unsigned char *data;
  size_t len;
};
extern const struct tw_ui_asset tw_ui_assets[]; /* generated */
extern const size_t tw_ui_n_assets;

void tw_h_ui_index(struct tw_req *r);
void tw_h_ui_asset(struct tw_req *r);

#define TW_UI_ROUTES                                                           \
  {"GET", "/ui", tw_h_ui_index, "ui"},                                         \
      {"GET", "/ui/{asset}", tw_h_ui_asset, "ui_asset"},

#endif
