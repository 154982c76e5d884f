# The Alibaba Cloud ECS adapter (providers/alibaba/), its fake
# (tests/fakecloud/alibaba*.c) and the conformance tests against the
# official SDK.  See docs/alibaba.md.
#
# tw_add_test() keeps only the first of several LABELS, so each test sets
# its full label list again.
function(ali_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_alibaba_sign
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_alibaba_sign.c
  LIBS tw_providers LABELS unit TIMEOUT 30)
ali_labels(test_alibaba_sign unit providers alibaba)
# The same binary on the published vectors of shared/data (skipped when
# absent).
add_test(NAME test_alibaba_sign_vectors COMMAND test_alibaba_sign --vectors)
set_tests_properties(test_alibaba_sign_vectors PROPERTIES TIMEOUT 30
  ENVIRONMENT "TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")
ali_labels(test_alibaba_sign_vectors unit providers alibaba)

tw_add_test(test_alibaba_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_alibaba_json.c
  LIBS tw_providers LABELS unit TIMEOUT 30)
ali_labels(test_alibaba_json unit providers alibaba)
# The same binary on the recorded ECS examples of shared/data (skipped when
# absent).
add_test(NAME test_alibaba_json_fixtures
  COMMAND test_alibaba_json --fixtures)
set_tests_properties(test_alibaba_json_fixtures PROPERTIES TIMEOUT 30
  ENVIRONMENT "TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")
ali_labels(test_alibaba_json_fixtures unit providers alibaba)

tw_add_fuzz(fuzz_alibaba_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_alibaba_json.c
  LIBS tw_providers
  LABELS providers alibaba
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/alibaba_json)

# Everything below needs tw_fakecloud, which tests/fakecloud.cmake defines;
# that fragment is included after this one (fragments go in name order),
# so these parts run deferred, once the directory is read.
function(ali_fakecloud_parts)
  # The ECS module of the fake (listed in server.c's module table).
  target_sources(tw_fakecloud PRIVATE
    ${CMAKE_SOURCE_DIR}/tests/fakecloud/alibaba.c
    ${CMAKE_SOURCE_DIR}/tests/fakecloud/alibaba_req.c)
  tw_add_fuzz(fuzz_alibaba_req
    SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_alibaba_req.c
    LIBS tw_fakecloud
    LABELS providers fakecloud alibaba
    CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/alibaba_req)

  # Conformance with the official Alibaba Cloud SDK: a fixture installs the
  # pinned packages into the build tree with npm ci, then node:test runs
  # against the real binary.  Both skip (77) without node or npm.
  set(ali_conf ${CMAKE_BINARY_DIR}/conformance-alibaba)
  set(ali_run ${CMAKE_SOURCE_DIR}/tests/conformance/alibaba/run.sh)
  add_test(NAME alibaba_conformance_setup
    COMMAND sh ${ali_run} setup ${ali_conf})
  set_tests_properties(alibaba_conformance_setup PROPERTIES
    LABELS "conformance;providers;fakecloud;alibaba"
    FIXTURES_SETUP alibaba_npm SKIP_RETURN_CODE 77 TIMEOUT 600)
  add_test(NAME alibaba_conformance_ecs
    COMMAND sh ${ali_run} test ${ali_conf} ecs.test.mjs)
  set_tests_properties(alibaba_conformance_ecs PROPERTIES
    LABELS "conformance;providers;fakecloud;alibaba"
    FIXTURES_REQUIRED alibaba_npm SKIP_RETURN_CODE 77 TIMEOUT 60
    ENVIRONMENT "TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>")
endfunction()
cmake_language(DEFER CALL ali_fakecloud_parts)

# The adapter against the tradewind-fakecloud binary (a subprocess).
function(ali_integration)
  tw_add_test(test_alibaba_fake
    SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_alibaba_fake.c
    LIBS twtest_fakecloud tw_adapters tw_billing tw_providers PkgConfig::CURL
         PkgConfig::JANSSON
    LABELS integration TIMEOUT 60)
  ali_labels(test_alibaba_fake integration providers alibaba launch)
  target_compile_definitions(test_alibaba_fake PRIVATE
    TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
  add_dependencies(test_alibaba_fake tradewind-fakecloud)
endfunction()
cmake_language(DEFER CALL ali_integration)
