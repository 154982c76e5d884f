# tradewind-fakecloud: the loopback fake clouds (EC2 today), their unit and
# integration tests, the request-parsing fuzz target and the conformance
# tests against the official AWS SDK.  See docs/fakecloud.md.

set(FC_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fakecloud)
set(FC_CATALOG_C ${CMAKE_CURRENT_BINARY_DIR}/fakecloud_catalog.c)
add_custom_command(
  OUTPUT ${FC_CATALOG_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${FC_DIR}/catalog.json -DOUT=${FC_CATALOG_C}
          -DNAME=fc_catalog_json -P ${FC_DIR}/embed.cmake
  DEPENDS ${FC_DIR}/catalog.json ${FC_DIR}/embed.cmake
  COMMENT "Embedding the fake cloud catalog")

# tw_fakecloud: everything but main(), so tests run servers in-process.
add_library(tw_fakecloud STATIC
  ${FC_DIR}/server.c ${FC_DIR}/params.c ${FC_DIR}/xml.c ${FC_DIR}/clock.c
  ${FC_DIR}/fault.c ${FC_DIR}/catalog.c ${FC_DIR}/ec2_req.c ${FC_DIR}/ec2.c
  ${FC_DIR}/boot.c ${FC_DIR}/creds.c
  ${FC_CATALOG_C})
target_link_libraries(tw_fakecloud PUBLIC tw_providers tw_base
  PkgConfig::MHD PkgConfig::JANSSON Threads::Threads m)

add_executable(tradewind-fakecloud ${FC_DIR}/main.c)
target_link_libraries(tradewind-fakecloud PRIVATE tw_fakecloud)

# twtest_fakecloud: the binary as a subprocess and its control API, for
# the adapters' integration tests (test_*_fake.c).
add_library(twtest_fakecloud STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/twtest_fakecloud.c)
target_link_libraries(twtest_fakecloud PUBLIC tw_base PkgConfig::CURL
  PkgConfig::JANSSON PkgConfig::CMOCKA)
target_include_directories(twtest_fakecloud PUBLIC
  ${CMAKE_CURRENT_SOURCE_DIR}/integration)
target_compile_definitions(twtest_fakecloud PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
add_dependencies(twtest_fakecloud tradewind-fakecloud)

# tw_add_test splits a multi-entry LABELS list; register with one label and
# set the full list afterwards (as tests/cli.cmake does).
function(fc_test name)
  cmake_parse_arguments(F "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  tw_add_test(${name} SOURCES ${F_SOURCES} LIBS ${F_LIBS} LABELS fakecloud
              TIMEOUT ${F_TIMEOUT} ARGS ${F_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${F_LABELS}")
endfunction()

fc_test(test_fakecloud_ec2
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fakecloud_ec2.c
  LIBS tw_fakecloud tw_providers PkgConfig::CURL PkgConfig::LIBXML2
  LABELS integration providers fakecloud launch
  TIMEOUT 60)

tw_add_fuzz(fuzz_fakecloud_req
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_fakecloud_req.c
  LIBS tw_fakecloud
  LABELS providers fakecloud
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/fakecloud)

fc_test(test_fakecloud_parse
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fakecloud_parse.c
  LIBS tw_fakecloud
  LABELS unit providers fakecloud
  TIMEOUT 30)

# Conformance with the official AWS SDK for JavaScript.  A fixture installs
# the pinned packages (package-lock.json) into the build tree with npm ci;
# each conformance test then runs a node:test file against the real
# tradewind-fakecloud binary.  Both skip (77) when node or npm is missing.
set(FC_CONF_DIR ${CMAKE_BINARY_DIR}/conformance)
add_test(NAME fakecloud_conformance_setup
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh setup ${FC_CONF_DIR})
set_tests_properties(fakecloud_conformance_setup PROPERTIES
  LABELS "conformance;providers;fakecloud;aws"
  FIXTURES_SETUP fakecloud_npm SKIP_RETURN_CODE 77 TIMEOUT 600)
add_test(NAME fakecloud_conformance_ec2
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh test ${FC_CONF_DIR}
          ec2.test.mjs)
set_tests_properties(fakecloud_conformance_ec2 PROPERTIES
  LABELS "conformance;providers;fakecloud;aws"
  FIXTURES_REQUIRED fakecloud_npm SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>")

fc_test(test_fakecloud_cli
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fakecloud_cli.c
  LIBS tw_base PkgConfig::CURL
  LABELS integration providers fakecloud
  TIMEOUT 30
  ARGS $<TARGET_FILE:tradewind-fakecloud>)
