/* webhook_guard.c - where a budget webhook may go (tenancy_int.h).
 *
 * A webhook is a request the daemon sends from its own host to a URL a
 * tenant chose: pointed at loopback, link-local (cloud metadata at
 * 169.254.169.254) or a private network, it is a blind request forgery.
 * Those ranges are refused unless tenancy.webhook_allow lists them (CIDR
 * blocks).  The URL's host is checked when the budget is set if it is an
 * address literal (or `localhost`), and every address the request is
 * about to connect to is checked again when it is sent, after name
 * resolution: a name resolving to 127.0.0.1 is refused then. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "broker/tenancy/tenancy_int.h"

struct tn_cidr {
  int family; /* AF_INET, AF_INET6 */
  unsigned char addr[16];
  int bits;
};

static bool in_block(int family, const unsigned char *a,
                     const unsigned char *net, int bits) {
  (void)family;
  int full = bits / 8, rest = bits % 8;
  if (memcmp(a, net, (size_t)full))
    return false;
  if (!rest)
    return true;
  unsigned char mask = (unsigned char)(0xff << (8 - rest));
  return (a[full] & mask) == (net[full] & mask);
}

static bool parse_cidr(const char *s, struct tn_cidr *out) {
  char buf[64];
  if (strlen(s) >= sizeof buf)
    return false;
  snprintf(buf, sizeof buf, "%s", s);
  char *slash = strchr(buf, '/');
  if (slash)
    *slash = '\0';
  memset(out, 0, sizeof *out);
  int max;
  if (inet_pton(AF_INET, buf, out->addr) == 1) {
    out->family = AF_INET;
    max = 32;
  } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
    out->family = AF_INET6;
    max = 128;
  } else {
    return false;
  }
  out->bits = max;
  if (slash) {
    char *end;
    long b = strtol(slash + 1, &end, 10);
    if (!slash[1] || *end || b < 0 || b > max)
      return false;
    out->bits = (int)b;
  }
  return true;
}

enum tw_rc tn_webhook_allow_set(struct tw_tenancy *t, const char *const *cidrs,
                                struct tw_err *err) {
  size_t n = 0;
  while (cidrs && cidrs[n])
    n++;
  t->hook_allow = n ? tw_calloc(n, sizeof *t->hook_allow) : NULL;
  t->n_hook_allow = 0;
  for (size_t i = 0; i < n; i++) {
    if (!parse_cidr(cidrs[i], &t->hook_allow[i])) {
      char field[48];
      snprintf(field, sizeof field, "tenancy.webhook_allow[%zu]", i);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: expected an address or CIDR block such as "
                          "10.1.0.0/16 or fd00::/8, got \"%.64s\"",
                          field, cidrs[i]);
    }
    t->n_hook_allow++;
  }
  return TW_OK;
}

/* What an address is, when it is one of the ranges refused by default;
 * NULL for a public address. */
static const char *special(int family, const unsigned char *a) {
  static const struct {
    unsigned char net[4];
    int bits;
    const char *what;
  } V4[] = {
      {{0, 0, 0, 0}, 8, "a \"this network\" address"},
      {{10, 0, 0, 0}, 8, "a private address"},
      {{100, 64, 0, 0}, 10, "a shared (carrier NAT) address"},
      {{127, 0, 0, 0}, 8, "a loopback address"},
      {{169, 254, 0, 0}, 16, "a link-local address"},
      {{172, 16, 0, 0}, 12, "a private address"},
      {{192, 0, 0, 0}, 24, "an IETF protocol address"},
      {{192, 168, 0, 0}, 16, "a private address"},
      {{198, 18, 0, 0}, 15, "a benchmarking address"},
      {{224, 0, 0, 0}, 4, "a multicast address"},
      {{240, 0, 0, 0}, 4, "a reserved address"},
  };
  if (family == AF_INET) {
    for (size_t i = 0; i < sizeof V4 / sizeof V4[0]; i++)
      if (in_block(AF_INET, a, V4[i].net, V4[i].bits))
        return V4[i].what;
    return NULL;
  }
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff};
  if (!memcmp(a, mapped, 12))
    return special(AF_INET, a + 12); /* ::ffff:a.b.c.d */
  static const unsigned char zero[16] = {0};
  if (!memcmp(a, zero, 15))
    return a[15] == 1 ? "a loopback address" : "the unspecified address";
  if ((a[0] & 0xfe) == 0xfc)
    return "a private (unique local) address";
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
    return "a link-local address";
  if (a[0] == 0xff)
    return "a multicast address";
  return NULL;
}

static const char *refused(const struct tw_tenancy *t, int family,
                           const unsigned char *a) {
  const char *what = special(family, a);
  if (!what)
    return NULL;
  for (size_t i = 0; i < t->n_hook_allow; i++) {
    const struct tn_cidr *c = &t->hook_allow[i];
    if (c->family == family && in_block(family, a, c->addr, c->bits))
      return NULL;
  }
  return what;
}

const char *tn_webhook_addr_refused(const struct tw_tenancy *t,
                                    const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return refused(
        t, AF_INET,
        (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr);
  if (sa->sa_family == AF_INET6)
    return refused(
        t, AF_INET6,
        (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr);
  return "not an internet address";
}

enum tw_rc tn_webhook_url_check(const struct tw_tenancy *t, const char *url,
                                struct tw_err *err) {
  const char *h = strstr(url, "://");
  if (!h)
    return TW_OK; /* the scheme check refused it already */
  h += 3;
  size_t auth_len = strcspn(h, "/?#");
  if (memchr(h, '@', auth_len))
    return tw_err_field(err, TW_E_INVALID, "webhook",
                        "webhook: user information in the URL is not "
                        "accepted");
  char host[256];
  size_t n;
  if (*h == '[') {
    n = strcspn(h + 1, "]");
    if (h[1 + n] != ']' || n >= sizeof host)
      return tw_err_field(err, TW_E_INVALID, "webhook",
                          "webhook: a malformed [address] in the URL");
    memcpy(host, h + 1, n);
  } else {
    n = strcspn(h, ":/?#");
    if (!n || n >= sizeof host)
      return tw_err_field(err, TW_E_INVALID, "webhook",
                          "webhook: the URL has no host");
    memcpy(host, h, n);
  }
  host[n] = '\0';
  unsigned char a[16];
  int family = 0;
  size_t hl = strlen(host);
  if (!strcasecmp(host, "localhost") ||
      (hl > 10 && !strcasecmp(host + hl - 10, ".localhost"))) {
    family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", a);
  } else if (inet_pton(AF_INET, host, a) == 1) {
    family = AF_INET;
  } else if (inet_pton(AF_INET6, host, a) == 1) {
    family = AF_INET6;
  }
  const char *why = family ? refused(t, family, a) : NULL;
  if (why)
    return tw_err_field(err, TW_E_INVALID, "webhook",
                        "webhook: %s is %s; the daemon sends webhooks there "
                        "only when tenancy.webhook_allow lists it",
                        host, why);
  return TW_OK;
}
