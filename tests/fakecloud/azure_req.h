/* azure_req.h - request parsing and validation for the Azure module of
 * tradewind-fakecloud: ARM paths, virtual machine PUT bodies, identity
 * token requests and OData $filter expressions.
 *
 * Pure functions, no server state, so tests/fuzz/fuzz_azure_fake_req.c
 * runs them on arbitrary input.  A refusal is reported as Azure reports
 * it: an HTTP status, an error code and a message worded as the real
 * service words it (struct fc_az_error). */
#ifndef TW_TESTS_FAKECLOUD_AZURE_REQ_H
#define TW_TESTS_FAKECLOUD_AZURE_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fakecloud/params.h"

/* The identity the fake knows (more through /_fake/azure/config). */
#define FC_AZ_TENANT "tradewind-fake-tenant"
#define FC_AZ_CLIENT_ID "tradewind-fake-client"
#define FC_AZ_CLIENT_SECRET "tradewind-fake-azure-secret"
#define FC_AZ_SUBSCRIPTION "00000000-0000-0000-0000-00000000a2e0"
#define FC_AZ_RESOURCE_GROUP "tradewind"

#define FC_AZ_MAX_TAGS 50
#define FC_AZ_NAME_MAX 96

struct fc_az_error {
  int status;
  char code[64];
  char message[512];
  char target[64];
};

/* Fills e and returns false, so validators can `return fc_az_fail(...)`. */
bool fc_az_fail(struct fc_az_error *e, int status, const char *code,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- paths --------------------------------------------------------------- */

enum fc_az_route {
  FC_AZ_NONE = 0,
  FC_AZ_OPENID,      /* GET /{tenant}/v2.0/.well-known/openid-configuration */
  FC_AZ_TOKEN,       /* POST /{tenant}/oauth2/v2.0/token */
  FC_AZ_EVENTS,      /* /metadata/scheduledevents */
  FC_AZ_PRICES,      /* GET /api/retail/prices */
  FC_AZ_RG,          /* /subscriptions/{s}/resourcegroups/{rg} */
  FC_AZ_RESOURCES,   /* .../resourceGroups/{rg}/resources */
  FC_AZ_VM_LIST,     /* .../resourceGroups/{rg}/providers/
                        Microsoft.Compute/virtualMachines */
  FC_AZ_VM_LIST_ALL, /* /subscriptions/{s}/providers/Microsoft.Compute/
                        virtualMachines */
  FC_AZ_VM,          /* .../virtualMachines/{name} */
  FC_AZ_VM_VIEW,     /* .../virtualMachines/{name}/instanceView */
  FC_AZ_SKUS,        /* /subscriptions/{s}/providers/Microsoft.Compute/skus */
  FC_AZ_OPERATION,   /* /subscriptions/{s}/providers/Microsoft.Compute/
                        locations/{loc}/operations/{id} */
  FC_AZ_TOKEN_V1,    /* POST /{tenant}/oauth2/token (v1: resource=) */
  FC_AZ_SUB_LIST,    /* GET /subscriptions */
  FC_AZ_SUB_GET,     /* GET /subscriptions/{s} */
  FC_AZ_LOCATIONS,   /* GET /subscriptions/{s}/locations */
  FC_AZ_RG_LIST,     /* GET /subscriptions/{s}/resourcegroups */
  FC_AZ_VM_SIZES,    /* /subscriptions/{s}/providers/Microsoft.Compute/
                        locations/{loc}/vmSizes */
  FC_AZ_VM_ACTION,   /* POST .../virtualMachines/{name}/{action}:
                        deallocate, start, powerOff, restart */
  FC_AZ_ARM_OTHER,   /* under /subscriptions/, not modelled */
  FC_AZ_MSI          /* GET /metadata/identity/oauth2/token (IMDS) */
};

struct fc_az_path {
  enum fc_az_route route;
  char tenant[FC_AZ_NAME_MAX];
  char subscription[FC_AZ_NAME_MAX];
  char resource_group[FC_AZ_NAME_MAX];
  char name[FC_AZ_NAME_MAX];     /* VM name */
  char location[FC_AZ_NAME_MAX]; /* operations, vmSizes */
  char op_id[FC_AZ_NAME_MAX];
  char vm_action[16]; /* FC_AZ_VM_ACTION, as ARM spells it: "powerOff" */
};

/* Routes a raw path (percent-encoded, without the query).  Fixed segments
 * compare case-insensitively (ARM accepts resourcegroups and
 * resourceGroups); variable ones are percent-decoded.  False (route
 * FC_AZ_NONE) for a path outside the Azure module; a malformed escape or
 * an over-long segment gives FC_AZ_ARM_OTHER under /subscriptions/. */
bool fc_az_route_path(const char *raw_path, struct fc_az_path *out);

/* Virtual machine names: 1..64 letters, digits, '_', '.', '-', starting
 * with a letter or digit and ending with a letter, digit or '_'. */
bool fc_az_valid_vm_name(const char *name);

/* Resource group names: 1..90 letters, digits, '_', '.', '-', '(' or
 * ')', not ending with '.'. */
bool fc_az_valid_rg_name(const char *name);

/* ---- virtual machine PUT bodies ------------------------------------------ */

struct fc_az_vm_req {
  char location[64]; /* normalized: "East US" -> "eastus" */
  char vm_size[64];
  char zone[8];             /* "" regional */
  char priority[16];        /* "Regular", "Spot" or "Low" */
  char eviction_policy[16]; /* "Deallocate" or "Delete"; "" Regular */
  bool has_max_price;
  int64_t max_price_uusd; /* -1: capped at pay-as-you-go */
  char computer_name[72];
  char admin_user[72];
  json_t *tags;            /* owned; an object, maybe empty */
  json_t *storage_profile; /* owned, as sent */
  json_t *os_profile;      /* owned, as sent minus adminPassword and
                              customData (never returned by ARM) */
  json_t *network_profile; /* owned, as sent */
  char *custom_data;       /* owned: osProfile.customData (base64), or NULL */
  json_t *identity;        /* owned: the VM's identity as sent, or NULL */
};

/* Validates a VM body as the Compute resource provider does (required
 * members, enumerations, tag rules, Spot settings) and extracts it into
 * out (release with fc_az_vm_req_release, also after a failure).
 * vm_name defaults osProfile.computerName. */
bool fc_az_parse_vm_put(const char *body, size_t len, const char *vm_name,
                        struct fc_az_vm_req *out, struct fc_az_error *e);
void fc_az_vm_req_release(struct fc_az_vm_req *r);

/* Azure's tag rules on an object of tags: at most 50, names 1..512
 * characters without < > % & \ ? / and not starting with microsoft,
 * azure or windows, values strings of at most 256. */
bool fc_az_valid_tags(const json_t *tags, struct fc_az_error *e);

/* "East US" / "eastus" / "EASTUS" -> "eastus" into out. */
void fc_az_norm_location(const char *in, char *out, size_t size);

/* ---- identity token requests --------------------------------------------- */

struct fc_az_client {
  const char *client_id;
  const char *secret;
};

/* Validates a client-credentials token request (decoded form p) for
 * tenant against the known clients, as the identity platform answers:
 * invalid_request (AADSTS900144), unsupported_grant_type (AADSTS70003),
 * unauthorized_client (AADSTS700016), invalid_client (AADSTS7000215,
 * 401), invalid_scope (AADSTS1002012). */
bool fc_az_check_token_req(const struct fc_params *p, const char *tenant,
                           const struct fc_az_client *clients, size_t n_clients,
                           struct fc_az_error *e);
/* The same for the v1 endpoint (/{tenant}/oauth2/token): a `resource`
 * (the API's URI, no /.default) instead of `scope`. */
bool fc_az_check_token_req_v1(const struct fc_params *p, const char *tenant,
                              const struct fc_az_client *clients,
                              size_t n_clients, struct fc_az_error *e);

/* ---- OData $filter --------------------------------------------------------
 */

/* The subset of OData the Retail Prices and Resources APIs need: field
 * eq|ne 'literal' (quotes doubled inside), true/false literals,
 * contains(field, 'x'), startswith(field, 'x'), and, or, not and
 * parentheses.  Field names compare case-insensitively; values as
 * given. */
struct fc_odata;

bool fc_odata_parse(const char *text, struct fc_odata **out,
                    struct fc_az_error *e);
/* get returns the field's value as text ("true"/"false" for booleans), or
 * NULL when the item has no such field (every comparison is then
 * false). */
bool fc_odata_eval(const struct fc_odata *f,
                   const char *(*get)(void *ctx, const char *field), void *ctx);
void fc_odata_free(struct fc_odata *f);

#endif
