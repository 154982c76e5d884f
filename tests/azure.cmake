# The Azure adapter (providers/azure/) and the Azure module of
# tradewind-fakecloud (tests/fakecloud/azure*.c): parser tests on written
# and recorded answers, fuzz targets, the adapter against the fake over
# TLS, and conformance with the official Azure SDK for JavaScript.  See
# docs/azure.md.
#
# tw_add_test() keeps only the first of several LABELS, so each test sets
# its full label list again.
function(tw_azure_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_azure_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_azure_json.c
  LIBS tw_providers LABELS unit)
tw_azure_labels(test_azure_json unit providers azure)

tw_add_test(test_azure_fixtures
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_azure_fixtures.c
  LIBS tw_providers LABELS unit)
tw_azure_labels(test_azure_fixtures unit providers azure)

tw_add_fuzz(fuzz_azure_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_azure_json.c
  LIBS tw_providers
  LABELS providers azure
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/azure_json)

# The Azure module of the fake needs tw_fakecloud, which
# tests/fakecloud.cmake defines after this fragment is read (fragments go
# in name order): these parts run deferred, once the directory is read.
function(tw_azure_fakecloud_parts)
  set(dir ${CMAKE_SOURCE_DIR}/tests/fakecloud)
  set(cat_c ${CMAKE_BINARY_DIR}/tests/fakecloud_azure_catalog.c)
  add_custom_command(
    OUTPUT ${cat_c}
    COMMAND ${CMAKE_COMMAND} -DIN=${dir}/azure_catalog.json -DOUT=${cat_c}
            -DNAME=fc_azure_catalog_json -P ${dir}/embed.cmake
    DEPENDS ${dir}/azure_catalog.json ${dir}/embed.cmake
    COMMENT "Embedding the fake Azure catalog")
  # Listed in server.c's module table.
  target_sources(tw_fakecloud PRIVATE ${dir}/azure.c ${dir}/azure_req.c
    ${dir}/azure_catalog.c ${dir}/azure_cert.c ${cat_c})
endfunction()
cmake_language(DEFER CALL tw_azure_fakecloud_parts)

# The adapter against the tradewind-fakecloud binary (a subprocess serving
# HTTPS with a certificate made by the test).
function(tw_azure_integration)
  tw_add_test(test_azure_fake
    SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_azure_fake.c
    LIBS twtest_fakecloud tw_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
    LABELS integration TIMEOUT 60)
  tw_azure_labels(test_azure_fake integration providers azure launch)
  target_compile_definitions(test_azure_fake PRIVATE
    TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
  add_dependencies(test_azure_fake tradewind-fakecloud)
endfunction()
cmake_language(DEFER CALL tw_azure_integration)

# Conformance with the official Azure SDK for JavaScript: a fixture
# installs the pinned @azure/arm-compute and @azure/identity
# (package-lock.json) into the build tree with npm ci; the test runs
# node:test against the real binary over HTTPS.  Both skip (77) without
# node (20 or newer), npm or openssl.
set(TW_AZURE_CONF_DIR ${CMAKE_BINARY_DIR}/conformance-azure)
add_test(NAME azure_conformance_setup
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/conformance/azure/run.sh setup
          ${TW_AZURE_CONF_DIR})
set_tests_properties(azure_conformance_setup PROPERTIES
  LABELS "conformance;providers;fakecloud;azure"
  FIXTURES_SETUP azure_npm SKIP_RETURN_CODE 77 TIMEOUT 600)
function(tw_azure_conformance)
  add_test(NAME azure_conformance_sdk
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/conformance/azure/run.sh test
            ${TW_AZURE_CONF_DIR} azure.test.mjs)
  set_tests_properties(azure_conformance_sdk PROPERTIES
    LABELS "conformance;providers;fakecloud;azure"
    FIXTURES_REQUIRED azure_npm SKIP_RETURN_CODE 77 TIMEOUT 60
    ENVIRONMENT "TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>")
endfunction()
cmake_language(DEFER CALL tw_azure_conformance)

# The fake's request parsers (paths, VM bodies, OData, token forms):
# unit tests and a fuzz target.
function(tw_azure_fuzz_fake)
  tw_add_test(test_azure_fake_req
    SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_azure_fake_req.c
    LIBS tw_fakecloud LABELS unit TIMEOUT 30)
  tw_azure_labels(test_azure_fake_req unit providers fakecloud azure launch)
  tw_add_fuzz(fuzz_azure_fake_req
    SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_azure_fake_req.c
    LIBS tw_fakecloud
    LABELS providers fakecloud azure
    CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/azure_fake)
endfunction()
cmake_language(DEFER CALL tw_azure_fuzz_fake)
