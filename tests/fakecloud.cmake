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
  ${FC_CATALOG_C})
target_link_libraries(tw_fakecloud PUBLIC tw_providers tw_base
  PkgConfig::MHD PkgConfig::JANSSON Threads::Threads m)

add_executable(tradewind-fakecloud ${FC_DIR}/main.c)
target_link_libraries(tradewind-fakecloud PRIVATE tw_fakecloud)

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
  LABELS integration providers fakecloud
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
