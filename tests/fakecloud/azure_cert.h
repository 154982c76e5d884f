/* azure_cert.h - a throwaway TLS identity for tests: a P-256 key and a
 * self-signed certificate for 127.0.0.1 and localhost, made at test time
 * so no key ever sits in the tree.  The fake serves it (--tls-cert,
 * --tls-key) and clients trust it as their only CA (curl's CAINFO, the
 * adapter's ca_file, Node's NODE_EXTRA_CA_CERTS). */
#ifndef TW_TESTS_FAKECLOUD_AZURE_CERT_H
#define TW_TESTS_FAKECLOUD_AZURE_CERT_H

#include <stddef.h>

#include "broker/base/err.h"

/* Writes cert.pem and key.pem into dir (which must exist), valid from an
 * hour ago for days days (at least 1).  cert_path and key_path receive
 * the file names (cert_size/key_size bytes each).  Errors: TW_E_IO when a
 * file cannot be written, TW_E_INTERNAL when OpenSSL fails. */
enum tw_rc fc_az_make_cert(const char *dir, int days, char *cert_path,
                           size_t cert_size, char *key_path, size_t key_size,
                           struct tw_err *err);

#endif
