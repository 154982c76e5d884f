/* azure_req.c - see azure_req.h. */
#include "tests/fakecloud/azure_req.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/mem.h"

bool fc_az_fail(struct fc_az_error *e, int status, const char *code,
                const char *fmt, ...) {
  if (!e)
    return false;
  e->status = status;
  snprintf(e->code, sizeof e->code, "%s", code);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  e->target[0] = '\0';
  return false;
}

static bool fail_target(struct fc_az_error *e, const char *target, int status,
                        const char *code, const char *msg) {
  fc_az_fail(e, status, code, "%s", msg);
  snprintf(e->target, sizeof e->target, "%s", target);
  return false;
}

/* ---- paths --------------------------------------------------------------- */

#define MAX_SEGS 12

static bool seg_is(const char *s, const char *want) {
  return !strcasecmp(s, want);
}

bool fc_az_route_path(const char *raw_path, struct fc_az_path *out) {
  memset(out, 0, sizeof *out);
  char seg[MAX_SEGS][FC_AZ_NAME_MAX];
  size_t n = 0;
  bool bad = false;
  const char *p = raw_path;
  if (!p || *p != '/')
    return false;
  while (*p == '/') {
    p++;
    size_t len = strcspn(p, "/");
    if (n == MAX_SEGS) {
      bad = true;
      break;
    }
    size_t dlen = 0;
    char *d = fc_url_decode(p, len, false, &dlen);
    if (!d || dlen >= FC_AZ_NAME_MAX || strlen(d) != dlen) {
      bad = true;
      seg[n++][0] = '\0';
    } else {
      memcpy(seg[n++], d, dlen + 1);
    }
    free(d);
    p += len;
  }
  bool arm = n >= 1 && seg_is(seg[0], "subscriptions");
  if (bad) {
    out->route = arm ? FC_AZ_ARM_OTHER : FC_AZ_NONE;
    return arm;
  }
  /* MSAL asks with a trailing slash, as IMDS allows */
  if ((n == 4 || (n == 5 && !*seg[4])) && !strcmp(seg[0], "metadata") &&
      !strcmp(seg[1], "identity") && !strcmp(seg[2], "oauth2") &&
      !strcmp(seg[3], "token")) {
    out->route = FC_AZ_MSI;
    return true;
  }
  if (n == 2 && !strcmp(seg[0], "metadata") &&
      !strcmp(seg[1], "scheduledevents")) {
    out->route = FC_AZ_EVENTS;
    return true;
  }
  if (n == 3 && !strcmp(seg[0], "api") && !strcmp(seg[1], "retail") &&
      !strcmp(seg[2], "prices")) {
    out->route = FC_AZ_PRICES;
    return true;
  }
  if (!arm && n == 4 && *seg[0] && strcmp(seg[0], "_fake")) {
    if (!strcmp(seg[1], "v2.0") && !strcmp(seg[2], ".well-known") &&
        !strcmp(seg[3], "openid-configuration"))
      out->route = FC_AZ_OPENID;
    else if (!strcmp(seg[1], "oauth2") && !strcmp(seg[2], "v2.0") &&
             !strcmp(seg[3], "token"))
      out->route = FC_AZ_TOKEN;
    if (out->route) {
      memcpy(out->tenant, seg[0], sizeof out->tenant);
      return true;
    }
    return false;
  }
  if (!arm && n == 3 && *seg[0] && strcmp(seg[0], "_fake") &&
      !strcmp(seg[1], "oauth2") && !strcmp(seg[2], "token")) {
    out->route = FC_AZ_TOKEN_V1;
    memcpy(out->tenant, seg[0], sizeof out->tenant);
    return true;
  }
  if (!arm)
    return false;
  out->route = FC_AZ_ARM_OTHER;
  if (n == 1 || (n == 2 && !*seg[1])) {
    out->route = FC_AZ_SUB_LIST;
    return true;
  }
  if (!*seg[1])
    return true;
  memcpy(out->subscription, seg[1], sizeof out->subscription);
  if (n == 2) {
    out->route = FC_AZ_SUB_GET;
    return true;
  }
  if (n == 3 && seg_is(seg[2], "locations")) {
    out->route = FC_AZ_LOCATIONS;
    return true;
  }
  if (n == 3 && seg_is(seg[2], "resourceGroups")) {
    out->route = FC_AZ_RG_LIST;
    return true;
  }
  if (n == 9 && seg_is(seg[2], "resourceGroups") && *seg[3] &&
      seg_is(seg[4], "providers") && seg_is(seg[5], "Microsoft.Compute") &&
      seg_is(seg[6], "virtualMachines") && *seg[7]) {
    static const char *const acts[] = {"deallocate", "start", "powerOff",
                                       "restart", NULL};
    for (const char *const *w = acts; *w; w++)
      if (seg_is(seg[8], *w)) {
        memcpy(out->resource_group, seg[3], sizeof out->resource_group);
        memcpy(out->name, seg[7], sizeof out->name);
        snprintf(out->vm_action, sizeof out->vm_action, "%s", *w);
        out->route = FC_AZ_VM_ACTION;
        return true;
      }
  }
  if (n == 7 && seg_is(seg[2], "providers") &&
      seg_is(seg[3], "Microsoft.Compute") && seg_is(seg[4], "locations") &&
      *seg[5] && seg_is(seg[6], "vmSizes")) {
    memcpy(out->location, seg[5], sizeof out->location);
    out->route = FC_AZ_VM_SIZES;
    return true;
  }
  if (n >= 4 && seg_is(seg[2], "resourceGroups") && *seg[3]) {
    memcpy(out->resource_group, seg[3], sizeof out->resource_group);
    if (n == 4)
      out->route = FC_AZ_RG;
    else if (n == 5 && seg_is(seg[4], "resources"))
      out->route = FC_AZ_RESOURCES;
    else if (n >= 7 && seg_is(seg[4], "providers") &&
             seg_is(seg[5], "Microsoft.Compute") &&
             seg_is(seg[6], "virtualMachines")) {
      if (n == 7)
        out->route = FC_AZ_VM_LIST;
      else if (*seg[7] &&
               (n == 8 || (n == 9 && seg_is(seg[8], "instanceView")))) {
        memcpy(out->name, seg[7], sizeof out->name);
        out->route = n == 8 ? FC_AZ_VM : FC_AZ_VM_VIEW;
      }
    }
    return true;
  }
  if (n >= 5 && seg_is(seg[2], "providers") &&
      seg_is(seg[3], "Microsoft.Compute")) {
    if (n == 5 && seg_is(seg[4], "virtualMachines"))
      out->route = FC_AZ_VM_LIST_ALL;
    else if (n == 5 && seg_is(seg[4], "skus"))
      out->route = FC_AZ_SKUS;
    else if (n == 8 && seg_is(seg[4], "locations") && *seg[5] &&
             seg_is(seg[6], "operations") && *seg[7]) {
      memcpy(out->location, seg[5], sizeof out->location);
      memcpy(out->op_id, seg[7], sizeof out->op_id);
      out->route = FC_AZ_OPERATION;
    }
  }
  return true;
}

static bool is_alnum(char c) { return isalnum((unsigned char)c) != 0; }

bool fc_az_valid_vm_name(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > 64 || !is_alnum(name[0]) ||
      !(is_alnum(name[n - 1]) || name[n - 1] == '_'))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!is_alnum(name[i]) && !strchr("_.-", name[i]))
      return false;
  return true;
}

bool fc_az_valid_rg_name(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > 90 || name[n - 1] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!is_alnum(name[i]) && !strchr("_.-()", name[i]))
      return false;
  return true;
}

void fc_az_norm_location(const char *in, char *out, size_t size) {
  size_t w = 0;
  for (; *in && w + 1 < size; in++)
    if (*in != ' ')
      out[w++] = (char)tolower((unsigned char)*in);
  out[w] = '\0';
}

/* ---- tags ---------------------------------------------------------------- */

bool fc_az_valid_tags(const json_t *tags, struct fc_az_error *e) {
  if (!json_is_object(tags))
    return fail_target(e, "tags", 400, "InvalidRequestContent",
                       "The request content was invalid and could not be "
                       "deserialized: 'tags' must be an object.");
  if (json_object_size(tags) > FC_AZ_MAX_TAGS)
    return fc_az_fail(e, 400, "InvalidTagCount",
                      "Resource has %zu tags; the limit is %d tags.",
                      json_object_size(tags), FC_AZ_MAX_TAGS);
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)tags, k, v) {
    size_t n = strlen(k);
    if (!n || n > 512 || strpbrk(k, "<>%&\\?/"))
      return fc_az_fail(e, 400, "InvalidTagNameCharacters",
                        "The tag names '%.64s' have reserved characters "
                        "'<,>,%%,&,\\,?,/' or control characters.",
                        k);
    if (!strncasecmp(k, "microsoft", 9) || !strncasecmp(k, "azure", 5) ||
        !strncasecmp(k, "windows", 7))
      return fc_az_fail(e, 400, "InvalidTagName",
                        "The tag name '%.64s' uses a reserved prefix: "
                        "'microsoft', 'azure' or 'windows'.",
                        k);
    if (!json_is_string(v))
      return fc_az_fail(e, 400, "InvalidRequestContent",
                        "The request content was invalid and could not be "
                        "deserialized: tag '%.64s' must be a string.",
                        k);
    if (json_string_length(v) > 256)
      return fc_az_fail(e, 400, "InvalidTagValueLength",
                        "The tag value of '%.64s' is %zu characters; the "
                        "limit is 256.",
                        k, json_string_length(v));
  }
  /* Tag names are case-insensitive: "Job" and "job" are one tag. */
  const char *k2;
  json_t *v2;
  json_object_foreach((json_t *)tags, k, v) {
    json_object_foreach((json_t *)tags, k2, v2) {
      if (k2 != k && !strcasecmp(k, k2))
        return fc_az_fail(e, 400, "InvalidTagName",
                          "The tag names '%.64s' and '%.64s' differ only by "
                          "case.",
                          k, k2);
    }
  }
  return true;
}

/* ---- VM bodies ------------------------------------------------------------
 */

void fc_az_vm_req_release(struct fc_az_vm_req *r) {
  json_decref(r->tags);
  json_decref(r->storage_profile);
  json_decref(r->os_profile);
  json_decref(r->network_profile);
  r->tags = r->storage_profile = r->os_profile = r->network_profile = NULL;
  free(r->custom_data);
  r->custom_data = NULL;
  json_decref(r->identity);
  r->identity = NULL;
}

static const char *jstr(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool missing(struct fc_az_error *e, const char *param) {
  fc_az_fail(e, 400, "InvalidParameter",
             "Required parameter '%s' is missing (null).", param);
  snprintf(e->target, sizeof e->target, "%s", param);
  return false;
}

static bool base64_ok(const char *s) {
  size_t n = strlen(s), pad = 0;
  if (n % 4)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '=') {
      pad++;
      continue;
    }
    if (pad || !(isalnum((unsigned char)c) || c == '+' || c == '/'))
      return false;
  }
  return pad <= 2;
}

static bool check_image(json_t *sp, struct fc_az_error *e) {
  json_t *img = json_object_get(sp, "imageReference");
  if (!json_is_object(img))
    return missing(e, "imageReference");
  if (jstr(img, "id") || jstr(img, "sharedGalleryImageId") ||
      jstr(img, "communityGalleryImageId"))
    return true;
  const char *parts[] = {"publisher", "offer", "sku", "version"};
  for (size_t i = 0; i < 4; i++) {
    const char *v = jstr(img, parts[i]);
    if (!v || !*v) {
      char p[48];
      snprintf(p, sizeof p, "imageReference.%s", parts[i]);
      return missing(e, p);
    }
  }
  json_t *os = json_object_get(sp, "osDisk");
  const char *co = os ? jstr(os, "createOption") : NULL;
  if (os && (!json_is_object(os) ||
             (co && strcasecmp(co, "FromImage") && strcasecmp(co, "Empty"))))
    return fail_target(e, "osDisk.createOption", 400, "InvalidParameter",
                       "The value of parameter osDisk.createOption is "
                       "invalid.");
  /* the OS disk: 1..4095 GiB, a storage account type of the enumeration */
  json_t *gb = json_object_get(os, "diskSizeGB");
  if (gb && (!json_is_integer(gb) || json_integer_value(gb) < 1 ||
             json_integer_value(gb) > 4095))
    return fail_target(e, "osDisk.diskSizeGB", 400, "InvalidParameter",
                       "The value of parameter osDisk.diskSizeGB is invalid: "
                       "expected 1 to 4095.");
  const char *sat =
      jstr(json_object_get(os, "managedDisk"), "storageAccountType");
  static const char *const types[] = {
      "Standard_LRS", "Premium_LRS",     "StandardSSD_LRS", "UltraSSD_LRS",
      "Premium_ZRS",  "StandardSSD_ZRS", "PremiumV2_LRS",   NULL};
  bool ok = !sat;
  for (const char *const *t = types; sat && *t && !ok; t++)
    ok = !strcasecmp(sat, *t);
  if (!ok)
    return fail_target(e, "managedDisk.storageAccountType", 400,
                       "InvalidParameter",
                       "The value of parameter storageAccountType is "
                       "invalid.");
  return true;
}

static bool check_os(json_t *os, const char *vm_name, struct fc_az_vm_req *r,
                     struct fc_az_error *e) {
  static const char *const reserved[] = {
      "admin",   "administrator", "root", "guest", "user", "test", "sys",
      "support", "adm",           "a",    "1",     "123",  NULL};
  if (!json_is_object(os))
    return missing(e, "osProfile");
  const char *user = jstr(os, "adminUsername");
  if (!user || !*user)
    return missing(e, "osProfile.adminUsername");
  for (const char *const *x = reserved; *x; x++)
    if (!strcasecmp(user, *x))
      return fail_target(e, "adminUsername", 400, "InvalidParameter",
                         "The Admin Username specified is not allowed.");
  if (strlen(user) > 64)
    return fail_target(e, "adminUsername", 400, "InvalidParameter",
                       "The value of parameter adminUsername is invalid.");
  snprintf(r->admin_user, sizeof r->admin_user, "%s", user);
  const char *cn = jstr(os, "computerName");
  if (cn && (strlen(cn) > 64 || !*cn))
    return fail_target(e, "computerName", 400, "InvalidParameter",
                       "The value of parameter computerName is invalid.");
  snprintf(r->computer_name, sizeof r->computer_name, "%s", cn ? cn : vm_name);
  json_t *lc = json_object_get(os, "linuxConfiguration");
  json_t *dpa =
      lc ? json_object_get(lc, "disablePasswordAuthentication") : NULL;
  if (json_is_true(dpa)) {
    json_t *keys = json_object_get(json_object_get(lc, "ssh"), "publicKeys");
    size_t i;
    json_t *k;
    if (!json_is_array(keys) || !json_array_size(keys))
      return fail_target(e, "linuxConfiguration.ssh.publicKeys", 400,
                         "InvalidParameter",
                         "Authentication using either SSH or by user name "
                         "and password must be enabled in Linux profile.");
    json_array_foreach(keys, i, k) {
      const char *kd = jstr(k, "keyData");
      if (!kd || (strncmp(kd, "ssh-", 4) && strncmp(kd, "ecdsa-", 6)))
        return fail_target(e, "linuxConfiguration.ssh.publicKeys.keyData", 400,
                           "InvalidParameter",
                           "The value of parameter "
                           "linuxConfiguration.ssh.publicKeys.keyData is "
                           "invalid.");
    }
  } else if (!jstr(os, "adminPassword")) {
    return missing(e, "adminPassword");
  }
  const char *cd = jstr(os, "customData");
  if (json_object_get(os, "customData") &&
      (!cd || !base64_ok(cd) || strlen(cd) > 87380))
    return fail_target(e, "customData", 400, "InvalidParameter",
                       "Custom data in OSProfile must be in Base64 encoding "
                       "and with a maximum length of 87380 characters.");
  r->os_profile = json_deep_copy(os);
  free(r->custom_data);
  r->custom_data = cd ? tw_strdup(cd) : NULL;
  json_object_del(r->os_profile, "adminPassword");
  json_object_del(r->os_profile, "customData");
  if (!cn)
    json_object_set_new(r->os_profile, "computerName", json_string(vm_name));
  return true;
}

static bool check_network(json_t *np, struct fc_az_error *e) {
  if (!json_is_object(np))
    return missing(e, "networkProfile");
  json_t *nics = json_object_get(np, "networkInterfaces");
  json_t *cfgs = json_object_get(np, "networkInterfaceConfigurations");
  size_t i;
  json_t *x;
  if (json_is_array(nics) && json_array_size(nics)) {
    json_array_foreach(nics, i, x) {
      const char *id = jstr(x, "id");
      if (!id || strncasecmp(id, "/subscriptions/", 15) ||
          !strstr(id, "/networkInterfaces/"))
        return fail_target(e, "networkInterfaces.id", 400, "InvalidParameter",
                           "The value of parameter networkInterfaces.id is "
                           "invalid.");
    }
    return true;
  }
  if (json_is_array(cfgs) && json_array_size(cfgs)) {
    if (!jstr(np, "networkApiVersion"))
      return missing(e, "networkProfile.networkApiVersion");
    json_array_foreach(cfgs, i, x) {
      if (!jstr(x, "name"))
        return missing(e, "networkInterfaceConfigurations.name");
      json_t *ipc =
          json_object_get(json_object_get(x, "properties"), "ipConfigurations");
      size_t j;
      json_t *ip;
      if (!json_is_array(ipc) || !json_array_size(ipc))
        return missing(e, "networkInterfaceConfigurations.ipConfigurations");
      json_array_foreach(ipc, j, ip) {
        const char *sub = jstr(
            json_object_get(json_object_get(ip, "properties"), "subnet"), "id");
        if (!jstr(ip, "name"))
          return missing(e, "ipConfigurations.name");
        if (!sub || strncasecmp(sub, "/subscriptions/", 15) ||
            !strstr(sub, "/subnets/"))
          return missing(e, "ipConfigurations.subnet.id");
      }
    }
    return true;
  }
  return missing(e, "networkProfile.networkInterfaces");
}

/* billingProfile.maxPrice: -1, or a positive price of at most five
 * decimals. */
static bool check_max_price(json_t *mp, struct fc_az_vm_req *r,
                            struct fc_az_error *e) {
  double d = json_is_number(mp) ? json_number_value(mp) : -2;
  double scaled = d * 100000.0;
  if (d == -1) {
    r->max_price_uusd = -1;
  } else if (!(d > 0) || d > 1e6 || fabs(scaled - round(scaled)) > 1e-6) {
    return fail_target(e, "billingProfile.maxPrice", 400, "InvalidParameter",
                       "The value of parameter billingProfile.maxPrice is "
                       "invalid. Use -1 or a price greater than 0 with at "
                       "most 5 decimal places.");
  } else {
    r->max_price_uusd = (int64_t)round(scaled) * 10;
  }
  r->has_max_price = true;
  return true;
}

bool fc_az_parse_vm_put(const char *body, size_t len, const char *vm_name,
                        struct fc_az_vm_req *r, struct fc_az_error *e) {
  memset(r, 0, sizeof *r);
  json_error_t je;
  json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
  bool ok = false;
  if (!json_is_object(root)) {
    fc_az_fail(e, 400, "InvalidRequestContent",
               "The request content was invalid and could not be "
               "deserialized: '%s'.",
               root ? "expected an object" : je.text);
    goto out;
  }
  const char *loc = jstr(root, "location");
  if (!loc || !*loc) {
    fc_az_fail(e, 400, "LocationRequired",
               "The location property is required for this definition.");
    goto out;
  }
  fc_az_norm_location(loc, r->location, sizeof r->location);
  json_t *tags = json_object_get(root, "tags");
  r->tags = tags ? json_deep_copy(tags) : json_object();
  if (!fc_az_valid_tags(r->tags, e))
    goto out;
  json_t *zones = json_object_get(root, "zones");
  if (zones) {
    const char *z = json_is_array(zones) && json_array_size(zones) == 1 &&
                            json_is_string(json_array_get(zones, 0))
                        ? json_string_value(json_array_get(zones, 0))
                        : NULL;
    if (!z || strlen(z) != 1 || z[0] < '1' || z[0] > '3') {
      if (!(json_is_array(zones) && !json_array_size(zones))) {
        fail_target(e, "zones", 400, "InvalidParameter",
                    "The value of parameter zones is invalid: give one "
                    "zone, \"1\", \"2\" or \"3\".");
        goto out;
      }
    } else {
      snprintf(r->zone, sizeof r->zone, "%s", z);
    }
  }
  json_t *props = json_object_get(root, "properties");
  if (!json_is_object(props)) {
    missing(e, "properties");
    goto out;
  }
  const char *size = jstr(json_object_get(props, "hardwareProfile"), "vmSize");
  if (!size || !*size || strlen(size) >= sizeof r->vm_size) {
    missing(e, "hardwareProfile.vmSize");
    goto out;
  }
  snprintf(r->vm_size, sizeof r->vm_size, "%s", size);
  json_t *sp = json_object_get(props, "storageProfile");
  if (!json_is_object(sp)) {
    missing(e, "storageProfile");
    goto out;
  }
  if (!check_image(sp, e) ||
      !check_os(json_object_get(props, "osProfile"), vm_name, r, e) ||
      !check_network(json_object_get(props, "networkProfile"), e))
    goto out;
  json_t *idn = json_object_get(root, "identity");
  if (idn) {
    const char *type = jstr(idn, "type");
    json_t *ua = json_object_get(idn, "userAssignedIdentities");
    bool user = type && strstr(type, "UserAssigned");
    bool known = type && (!strcmp(type, "SystemAssigned") ||
                          !strcmp(type, "UserAssigned") ||
                          !strcmp(type, "SystemAssigned, UserAssigned") ||
                          !strcmp(type, "None"));
    if (!known) {
      fail_target(e, "identity.type", 400, "InvalidParameter",
                  "The value of parameter identity.type is invalid.");
      goto out;
    }
    if (user != (json_is_object(ua) && json_object_size(ua) > 0)) {
      fail_target(e, "identity.userAssignedIdentities", 400, "InvalidParameter",
                  "userAssignedIdentities must be given with, and only "
                  "with, a UserAssigned identity type.");
      goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(ua, k, v) {
      if (strncasecmp(k, "/subscriptions/", 15) ||
          !strstr(k, "/providers/Microsoft.ManagedIdentity/"
                     "userAssignedIdentities/")) {
        fail_target(e, "identity.userAssignedIdentities", 400,
                    "InvalidIdentityValues",
                    "Invalid value for the identities "
                    "'userAssignedIdentities': the keys must be resource ids "
                    "of user-assigned identities.");
        goto out;
      }
    }
    r->identity = json_deep_copy(idn);
  }
  r->storage_profile = json_deep_copy(sp);
  r->network_profile = json_deep_copy(json_object_get(props, "networkProfile"));

  json_t *pri = json_object_get(props, "priority");
  const char *ps = json_is_string(pri) ? json_string_value(pri) : NULL;
  if (pri && !json_is_null(pri) &&
      (!ps || (strcasecmp(ps, "Regular") && strcasecmp(ps, "Spot") &&
               strcasecmp(ps, "Low")))) {
    fail_target(e, "priority", 400, "InvalidParameter",
                "The value of parameter priority is invalid. Allowed "
                "values: Regular, Low, Spot.");
    goto out;
  }
  snprintf(r->priority, sizeof r->priority, "%s",
           !ps || !strcasecmp(ps, "Regular") ? "Regular"
           : !strcasecmp(ps, "Spot")         ? "Spot"
                                             : "Low");
  bool spot = strcmp(r->priority, "Regular") != 0;
  json_t *ev = json_object_get(props, "evictionPolicy");
  if (ev && !json_is_null(ev)) {
    const char *es = json_is_string(ev) ? json_string_value(ev) : "";
    if (!spot) {
      fail_target(e, "evictionPolicy", 400, "InvalidParameter",
                  "Eviction policy can be set only on Azure Spot Virtual "
                  "Machines.");
      goto out;
    }
    if (strcasecmp(es, "Deallocate") && strcasecmp(es, "Delete")) {
      fail_target(e, "evictionPolicy", 400, "InvalidParameter",
                  "The value of parameter evictionPolicy is invalid. "
                  "Allowed values: Deallocate, Delete.");
      goto out;
    }
    snprintf(r->eviction_policy, sizeof r->eviction_policy, "%s",
             !strcasecmp(es, "Delete") ? "Delete" : "Deallocate");
  } else if (spot) {
    snprintf(r->eviction_policy, sizeof r->eviction_policy, "Deallocate");
  }
  json_t *bp = json_object_get(props, "billingProfile");
  if (bp && !json_is_null(bp)) {
    if (!spot) {
      fail_target(e, "billingProfile", 400, "InvalidParameter",
                  "Billing profile can be set only on Azure Spot Virtual "
                  "Machines.");
      goto out;
    }
    json_t *mp = json_object_get(bp, "maxPrice");
    if (mp && !json_is_null(mp) && !check_max_price(mp, r, e))
      goto out;
  }
  if (spot && !r->has_max_price) {
    r->has_max_price = true; /* Azure's default: -1 */
    r->max_price_uusd = -1;
  }
  ok = true;
out:
  json_decref(root);
  return ok;
}

/* ---- identity ------------------------------------------------------------ */

static bool check_token_req(const struct fc_params *p, const char *tenant,
                            const struct fc_az_client *clients,
                            size_t n_clients, bool v1, struct fc_az_error *e) {
  const char *gt = fc_params_get(p, "grant_type");
  const char *id = fc_params_get(p, "client_id");
  const char *secret = fc_params_get(p, "client_secret");
  const char *scope = fc_params_get(p, "scope");
  if (!gt)
    return fc_az_fail(e, 400, "invalid_request",
                      "AADSTS900144: The request body must contain the "
                      "following parameter: 'grant_type'.");
  if (strcmp(gt, "client_credentials"))
    return fc_az_fail(e, 400, "unsupported_grant_type",
                      "AADSTS70003: The app requested an unsupported grant "
                      "type '%.64s'.",
                      gt);
  if (!id)
    return fc_az_fail(e, 400, "invalid_request",
                      "AADSTS900144: The request body must contain the "
                      "following parameter: 'client_id'.");
  const struct fc_az_client *c = NULL;
  for (size_t i = 0; i < n_clients && !c; i++)
    if (!strcmp(clients[i].client_id, id))
      c = &clients[i];
  if (!c)
    return fc_az_fail(e, 400, "unauthorized_client",
                      "AADSTS700016: Application with identifier '%.64s' was "
                      "not found in the directory '%.64s'.",
                      id, tenant);
  if (!secret)
    return fc_az_fail(e, 401, "invalid_client",
                      "AADSTS7000218: The request body must contain the "
                      "following parameter: 'client_assertion' or "
                      "'client_secret'.");
  if (strcmp(secret, c->secret))
    return fc_az_fail(e, 401, "invalid_client",
                      "AADSTS7000215: Invalid client secret provided. Ensure "
                      "the secret being sent in the request is the client "
                      "secret value, not the client secret ID, for a secret "
                      "added to app '%.64s'.",
                      id);
  if (v1) {
    const char *res = fc_params_get(p, "resource");
    if (!res || !*res)
      return fc_az_fail(e, 400, "invalid_request",
                        "AADSTS900144: The request body must contain the "
                        "following parameter: 'resource'.");
    return true;
  }
  if (!scope)
    return fc_az_fail(e, 400, "invalid_request",
                      "AADSTS900144: The request body must contain the "
                      "following parameter: 'scope'.");
  size_t n = strlen(scope);
  if (n < 9 || strcmp(scope + n - 9, "/.default") || strchr(scope, ' '))
    return fc_az_fail(e, 400, "invalid_scope",
                      "AADSTS1002012: The provided value for scope %.128s is "
                      "not valid. Client credential flows must have a scope "
                      "value with /.default suffixed to the resource "
                      "identifier (application ID URI).",
                      scope);
  return true;
}

bool fc_az_check_token_req(const struct fc_params *p, const char *tenant,
                           const struct fc_az_client *clients, size_t n_clients,
                           struct fc_az_error *e) {
  return check_token_req(p, tenant, clients, n_clients, false, e);
}

bool fc_az_check_token_req_v1(const struct fc_params *p, const char *tenant,
                              const struct fc_az_client *clients,
                              size_t n_clients, struct fc_az_error *e) {
  return check_token_req(p, tenant, clients, n_clients, true, e);
}

/* ---- OData --------------------------------------------------------------- */

#define ODATA_MAX_TEXT 4096
#define ODATA_MAX_NODES 256
#define ODATA_MAX_DEPTH 32

enum od_kind { OD_OR, OD_AND, OD_NOT, OD_EQ, OD_NE, OD_CONTAINS, OD_STARTS };

struct od_operand {
  bool is_field;
  char *text; /* field name or literal value */
};

struct od_node {
  enum od_kind kind;
  struct od_node *a, *b;  /* OR, AND, NOT (a) */
  struct od_operand l, r; /* EQ, NE, functions (l: field, r: literal) */
};

struct fc_odata {
  struct od_node *root;
};

struct od_parser {
  const char *start;
  const char *s;
  size_t nodes;
  int depth;
  struct fc_az_error *e;
  bool failed;
};

static void od_free_node(struct od_node *n) {
  if (!n)
    return;
  od_free_node(n->a);
  od_free_node(n->b);
  free(n->l.text);
  free(n->r.text);
  free(n);
}

void fc_odata_free(struct fc_odata *f) {
  if (!f)
    return;
  od_free_node(f->root);
  free(f);
}

static bool od_err(struct od_parser *p, const char *what) {
  if (!p->failed)
    fc_az_fail(p->e, 400, "InvalidFilter",
               "Invalid $filter: %s at position %zu.", what,
               (size_t)(p->s - p->start));
  p->failed = true;
  return false;
}

static void od_ws(struct od_parser *p) {
  while (*p->s == ' ' || *p->s == '\t')
    p->s++;
}

/* A keyword (case-insensitive) followed by a non-identifier character. */
static bool od_kw(struct od_parser *p, const char *kw) {
  od_ws(p);
  size_t n = strlen(kw);
  if (strncasecmp(p->s, kw, n) || isalnum((unsigned char)p->s[n]) ||
      p->s[n] == '_' || p->s[n] == '.')
    return false;
  p->s += n;
  return true;
}

static bool od_ch(struct od_parser *p, char c) {
  od_ws(p);
  if (*p->s != c)
    return false;
  p->s++;
  return true;
}

static bool od_operand(struct od_parser *p, struct od_operand *o) {
  od_ws(p);
  if (*p->s == '\'') {
    struct tw_buf b;
    tw_buf_init(&b);
    p->s++;
    for (;;) {
      if (!*p->s) {
        tw_buf_release(&b);
        return od_err(p, "unterminated string");
      }
      if (*p->s == '\'') {
        if (p->s[1] != '\'')
          break;
        p->s++;
      }
      tw_buf_addc(&b, *p->s++);
    }
    p->s++;
    o->is_field = false;
    o->text = b.data ? tw_buf_detach(&b) : tw_strdup("");
    return true;
  }
  if (od_kw(p, "true")) {
    o->is_field = false;
    o->text = tw_strdup("true");
    return true;
  }
  if (od_kw(p, "false")) {
    o->is_field = false;
    o->text = tw_strdup("false");
    return true;
  }
  const char *start = p->s;
  while (isalnum((unsigned char)*p->s) || *p->s == '_' || *p->s == '.' ||
         *p->s == '/' || *p->s == '-')
    p->s++;
  if (p->s == start)
    return od_err(p, "expected a field or a literal");
  if (isdigit((unsigned char)*start)) {
    o->is_field = false; /* a number: compared as its text */
  } else {
    o->is_field = true;
  }
  o->text = tw_strndup(start, (size_t)(p->s - start));
  return true;
}

static struct od_node *od_new(struct od_parser *p, enum od_kind k) {
  if (++p->nodes > ODATA_MAX_NODES) {
    od_err(p, "expression too large");
    return NULL;
  }
  struct od_node *n = tw_calloc(1, sizeof *n);
  n->kind = k;
  return n;
}

static struct od_node *od_expr(struct od_parser *p);

static struct od_node *od_primary(struct od_parser *p) {
  struct od_node *n = NULL;
  if (od_ch(p, '(')) {
    n = od_expr(p);
    if (n && !od_ch(p, ')')) {
      od_free_node(n);
      od_err(p, "expected ')'");
      return NULL;
    }
    return n;
  }
  enum od_kind fk = OD_EQ;
  bool fn = false;
  if (od_kw(p, "contains")) {
    fk = OD_CONTAINS;
    fn = true;
  } else if (od_kw(p, "startswith")) {
    fk = OD_STARTS;
    fn = true;
  }
  if (fn) {
    if (!(n = od_new(p, fk)))
      return NULL;
    if (!od_ch(p, '(') || !od_operand(p, &n->l) || !od_ch(p, ',') ||
        !od_operand(p, &n->r) || !od_ch(p, ')') || !n->l.is_field ||
        n->r.is_field) {
      od_free_node(n);
      od_err(p, "expected function(field, 'text')");
      return NULL;
    }
    return n;
  }
  struct od_operand l = {0}, r = {0};
  if (!od_operand(p, &l))
    return NULL;
  enum od_kind k;
  if (od_kw(p, "eq"))
    k = OD_EQ;
  else if (od_kw(p, "ne"))
    k = OD_NE;
  else {
    free(l.text);
    od_err(p, "expected eq or ne");
    return NULL;
  }
  if (!od_operand(p, &r)) {
    free(l.text);
    return NULL;
  }
  if (!(n = od_new(p, k))) {
    free(l.text);
    free(r.text);
    return NULL;
  }
  n->l = l;
  n->r = r;
  return n;
}

static struct od_node *od_unary(struct od_parser *p) {
  if (++p->depth > ODATA_MAX_DEPTH) {
    od_err(p, "nested too deeply");
    return NULL;
  }
  struct od_node *n;
  if (od_kw(p, "not")) {
    struct od_node *a = od_unary(p);
    if (!a || !(n = od_new(p, OD_NOT))) {
      od_free_node(a);
      p->depth--;
      return NULL;
    }
    n->a = a;
  } else {
    n = od_primary(p);
  }
  p->depth--;
  return n;
}

static struct od_node *od_binary(struct od_parser *p, bool is_or) {
  struct od_node *l = is_or ? od_binary(p, false) : od_unary(p);
  while (l && od_kw(p, is_or ? "or" : "and")) {
    struct od_node *r = is_or ? od_binary(p, false) : od_unary(p);
    struct od_node *n = r ? od_new(p, is_or ? OD_OR : OD_AND) : NULL;
    if (!n) {
      od_free_node(l);
      od_free_node(r);
      return NULL;
    }
    n->a = l;
    n->b = r;
    l = n;
  }
  return l;
}

static struct od_node *od_expr(struct od_parser *p) {
  if (++p->depth > ODATA_MAX_DEPTH) {
    od_err(p, "nested too deeply");
    return NULL;
  }
  struct od_node *n = od_binary(p, true);
  p->depth--;
  return n;
}

bool fc_odata_parse(const char *text, struct fc_odata **out,
                    struct fc_az_error *e) {
  *out = NULL;
  if (!text || strlen(text) > ODATA_MAX_TEXT)
    return fc_az_fail(e, 400, "InvalidFilter",
                      "Invalid $filter: longer than %d characters.",
                      ODATA_MAX_TEXT);
  struct od_parser p = {.start = text, .s = text, .e = e};
  struct od_node *root = od_expr(&p);
  od_ws(&p);
  if (root && *p.s) {
    od_free_node(root);
    root = NULL;
    od_err(&p, "unexpected text after the expression");
  }
  if (!root) {
    if (!p.failed)
      od_err(&p, "empty expression");
    return false;
  }
  *out = tw_calloc(1, sizeof **out);
  (*out)->root = root;
  return true;
}

static const char *od_value(const struct od_operand *o,
                            const char *(*get)(void *, const char *),
                            void *ctx) {
  return o->is_field ? get(ctx, o->text) : o->text;
}

static bool od_eval(const struct od_node *n,
                    const char *(*get)(void *, const char *), void *ctx) {
  const char *l, *r;
  switch (n->kind) {
  case OD_OR:
    return od_eval(n->a, get, ctx) || od_eval(n->b, get, ctx);
  case OD_AND:
    return od_eval(n->a, get, ctx) && od_eval(n->b, get, ctx);
  case OD_NOT:
    return !od_eval(n->a, get, ctx);
  case OD_EQ:
  case OD_NE:
    l = od_value(&n->l, get, ctx);
    r = od_value(&n->r, get, ctx);
    if (!l || !r)
      return false;
    return (strcmp(l, r) == 0) == (n->kind == OD_EQ);
  case OD_CONTAINS:
    l = get(ctx, n->l.text);
    return l && strstr(l, n->r.text);
  case OD_STARTS:
    l = get(ctx, n->l.text);
    return l && !strncmp(l, n->r.text, strlen(n->r.text));
  }
  return false;
}

bool fc_odata_eval(const struct fc_odata *f,
                   const char *(*get)(void *ctx, const char *field),
                   void *ctx) {
  return f && f->root && od_eval(f->root, get, ctx);
}
