# SigV4 signer/verifier and the shared outbound HTTP helper (providers/).

tw_add_test(sigv4_matches_aws_test_suites
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --suites LABELS unit providers aws)
tw_add_test(sigv4_verify_rejects_each_aws_error
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --verify LABELS unit providers aws)
tw_add_test(sigv4_matches_botocore_on_random_requests
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --botocore 1000 LABELS unit providers aws TIMEOUT 120)

tw_add_fuzz(fuzz_sigv4_authz
  SOURCES fuzz/fuzz_sigv4_authz.c LIBS tw_providers
  LABELS providers aws
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/sigv4)

tw_add_test(http_retries_backoff_limits_and_reuse
  SOURCES unit/test_http.c LIBS tw_providers PkgConfig::MHD
  LABELS unit providers TIMEOUT 60)
