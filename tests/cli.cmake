# The tradewind client (cli/): unit tests against a scripted fake server in
# the test itself, and integration tests against the real daemon.

# tw_add_test expands a multi-entry LABELS list unquoted inside
# set_tests_properties, which splits it; register with one label and set the
# whole list afterwards (as tests/spec.cmake does).
function(tw_cli_test name)
  cmake_parse_arguments(C "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  tw_add_test(${name} SOURCES ${C_SOURCES} LIBS ${C_LIBS} LABELS cli
              TIMEOUT ${C_TIMEOUT} ARGS ${C_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${C_LABELS}")
endfunction()

if(TARGET tw_cli)
  tw_cli_test(test_cli_format
    SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_format.c
    LIBS tw_cli PkgConfig::CMOCKA
    LABELS unit cli
    TIMEOUT 30)

  tw_cli_test(test_cli_commands
    SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_commands.c
            ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_fake.c
    LIBS tw_cli PkgConfig::CMOCKA PkgConfig::MHD Threads::Threads
    LABELS unit cli
    TIMEOUT 60)
endif()
