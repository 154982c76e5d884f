/* fuzz_fakecloud_meta.c - what the fake clouds read from a booted
 * instance and from a launch, on arbitrary bytes (tests/fakecloud/boot.h):
 * the /_meta/<id>/ path split, IMDSv2's TTL header, Azure's StartRequests
 * body, and the base64 of user data.  The input is split at newlines
 * into a path, a header value and a body; the whole input is also
 * decoded as base64.
 *
 * Besides not crashing: a split id is non-empty, holds no '/' and the
 * rest starts with '/' or is empty; a TTL that parses is 1..21600; a
 * base64 text that decodes encodes back (modulo blanks) to the same
 * length class. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecloud/boot.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  char *path = s, *hdr = NULL, *body = NULL;
  char *nl = memchr(s, '\n', size);
  if (nl) {
    *nl = '\0';
    hdr = nl + 1;
    char *nl2 = memchr(hdr, '\n', size - (size_t)(hdr - s));
    if (nl2) {
      *nl2 = '\0';
      body = nl2 + 1;
    }
  }
  char id[96];
  const char *sub = NULL;
  if (fc_meta_split(path, id, sizeof id, &sub)) {
    if (!id[0] || strchr(id, '/') || (sub[0] && sub[0] != '/'))
      abort();
  }
  long ttl;
  if (hdr && fc_imds_ttl(hdr, &ttl) && (ttl < 1 || ttl > 21600))
    abort();
  if (body) {
    char ids[4][64];
    size_t blen = size - (size_t)(body - s);
    int n = fc_az_start_requests(body, blen, ids, 4);
    if (n < -1 || n > 4)
      abort();
    for (int i = 0; i < n; i++)
      if (strlen(ids[i]) >= 64)
        abort();
  }
  free(s);
  /* the whole input as base64 (stops at a NUL, as the params do) */
  char *t = malloc(size + 1);
  memcpy(t, data, size);
  t[size] = '\0';
  size_t len = 0;
  char *d = fc_base64_decode(t, &len);
  if (d) {
    size_t chars = 0;
    for (const char *p = t; *p; p++)
      if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
        chars++;
    if (len > chars / 4 * 3 || d[len] != '\0')
      abort();
    free(d);
  }
  free(t);
  return 0;
}
