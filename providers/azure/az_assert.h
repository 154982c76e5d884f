/* az_assert.h - the client assertion of Microsoft Entra ID's certificate
 * credential: a JWT (RS256) signed with the certificate's private key,
 * its header carrying the certificate's SHA-1 thumbprint (x5t), as
 * azure-identity's CertificateCredential sends it as client_assertion
 * (docs/providers.md#azure-credentials). */
#ifndef TW_PROVIDERS_AZURE_AZ_ASSERT_H
#define TW_PROVIDERS_AZURE_AZ_ASSERT_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_az_cert;

/* Loads a PEM file holding the RSA private key and its certificate (in
 * either order; the first certificate is the client's).  TW_E_AUTH naming
 * the file when either is missing or the key is not RSA. */
enum tw_rc tw_az_cert_load(const char *path, struct tw_az_cert **out,
                           struct tw_err *err);
void tw_az_cert_free(struct tw_az_cert *c);

/* The assertion for client_id at token endpoint aud, issued at now_ms,
 * valid 10 minutes, with jti as its id: "header.payload.signature"
 * (owned). */
enum tw_rc tw_az_client_assertion(const struct tw_az_cert *c,
                                  const char *client_id, const char *aud,
                                  int64_t now_ms, const char *jti, char **out,
                                  struct tw_err *err);

/* base64url without padding of n bytes into out (4 * n / 3 + 4 bytes). */
void tw_az_b64url(const unsigned char *in, size_t n, char *out);

#endif
