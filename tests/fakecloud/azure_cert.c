/* azure_cert.c - see azure_cert.h. */
#include "tests/fakecloud/azure_cert.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

static bool add_ext(X509 *x, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
  X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  bool ok = e && X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
  return ok;
}

enum tw_rc fc_az_make_cert(const char *dir, int days, char *cert_path,
                           size_t cert_size, char *key_path, size_t key_size,
                           struct tw_err *err) {
  enum tw_rc rc = TW_OK;
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  FILE *f;
  snprintf(cert_path, cert_size, "%s/cert.pem", dir);
  snprintf(key_path, key_size, "%s/key.pem", dir);
  if (!key || !x) {
    rc = tw_err_set(err, TW_E_INTERNAL, "cert: cannot make a P-256 key");
    goto out;
  }
  X509_NAME *name = X509_get_subject_name(x);
  /* The serial only has to differ between runs that a client might mix. */
  ASN1_INTEGER_set(X509_get_serialNumber(x), (long)time(NULL));
  if (!X509_set_version(x, 2) ||
      !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(x),
                       (long)(days < 1 ? 1 : days) * 86400) ||
      !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                  (const unsigned char *)"127.0.0.1", -1, -1,
                                  0) ||
      !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, key) ||
      /* Its own CA, so clients can trust it directly; the names are what
       * clients check against the URL. */
      !add_ext(x, NID_basic_constraints, "critical,CA:TRUE") ||
      !add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !add_ext(x, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost") ||
      !add_ext(x, NID_subject_key_identifier, "hash") ||
      !X509_sign(x, key, EVP_sha256())) {
    rc = tw_err_set(err, TW_E_INTERNAL, "cert: OpenSSL refused to sign");
    goto out;
  }
  bool ok = (f = fopen(key_path, "wb")) != NULL;
  ok = ok && !chmod(key_path, 0600) &&
       PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
  if (f && fclose(f))
    ok = false;
  f = NULL;
  if (!ok) {
    rc = tw_err_set(err, TW_E_IO, "cert: cannot write %s", key_path);
    goto out;
  }
  ok = (f = fopen(cert_path, "wb")) != NULL && PEM_write_X509(f, x);
  if (f && fclose(f))
    ok = false;
  f = NULL;
  if (!ok)
    rc = tw_err_set(err, TW_E_IO, "cert: cannot write %s", cert_path);
out:
  X509_free(x);
  EVP_PKEY_free(key);
  return rc;
}
