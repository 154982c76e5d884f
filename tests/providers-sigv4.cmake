# SigV4 signer/verifier and the shared outbound HTTP helper (providers/).

# tw_add_test() flattens a multi-value LABELS list into its property list
# (set(props LABELS "${T_LABELS}" ...)), so only the first label sticks;
# set the full list again until that is fixed in the top CMakeLists.txt.
function(tw_sigv4_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(sigv4_matches_aws_test_suites
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --suites LABELS unit providers aws)
tw_sigv4_labels(sigv4_matches_aws_test_suites unit providers aws)
tw_add_test(sigv4_verify_rejects_each_aws_error
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --verify LABELS unit providers aws)
tw_sigv4_labels(sigv4_verify_rejects_each_aws_error unit providers aws)
tw_add_test(sigv4_matches_botocore_on_random_requests
  SOURCES unit/test_sigv4.c LIBS tw_providers
  ARGS --botocore 1000 LABELS unit providers aws TIMEOUT 120)
tw_sigv4_labels(sigv4_matches_botocore_on_random_requests unit providers aws)

tw_add_fuzz(fuzz_sigv4_authz
  SOURCES fuzz/fuzz_sigv4_authz.c LIBS tw_providers
  LABELS providers aws
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/sigv4)

tw_add_test(http_retries_backoff_limits_and_reuse
  SOURCES unit/test_http.c LIBS tw_providers PkgConfig::MHD
  LABELS unit providers TIMEOUT 60)
tw_sigv4_labels(http_retries_backoff_limits_and_reuse unit providers)
