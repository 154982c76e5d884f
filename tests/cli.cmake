# The tradewind client (cli/): unit tests against a scripted fake server in
# the test itself, and integration tests against the real daemon.

tw_add_test(test_cli_format
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_format.c
  LIBS tw_cli PkgConfig::CMOCKA
  LABELS unit cli
  TIMEOUT 30)

tw_add_test(test_cli_commands
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_commands.c
          ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_fake.c
  LIBS tw_cli PkgConfig::CMOCKA PkgConfig::MHD Threads::Threads
  LABELS unit cli
  TIMEOUT 60)

# --cacert and TRADEWIND_CACERT: parsing, help, and the file reaching libcurl.
tw_add_test(test_cli_cacert
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_cacert.c
          ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_fake.c
  LIBS tw_cli PkgConfig::CMOCKA PkgConfig::MHD Threads::Threads
  LABELS unit cli
  TIMEOUT 60)

# Problem lines, indented JSON and tables from arbitrary server answers.
tw_add_fuzz(fuzz_cli_output
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_fuzz.c
  LIBS tw_cli
  LABELS cli)

# The event stream reader `jobs wait` follows (cli/sse.c).
tw_add_fuzz(fuzz_cli_sse
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_cli_sse.c
  LIBS tw_cli
  LABELS cli ui
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/cli_sse)

# The real daemon and the real binary, end to end; both paths are passed in.
# tests/*.cmake are included after the program directories, so tradewindd
# exists here whenever it is built at all.
tw_add_test(test_cli_daemon
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_cli_daemon.c
  LIBS PkgConfig::JANSSON
  LABELS integration cli
  TIMEOUT 180
  ARGS $<TARGET_FILE:tradewindd> $<TARGET_FILE:tradewind>)
add_dependencies(test_cli_daemon tradewindd tradewind)

# -o yaml|jsonpath=...|name, --sort-by and "-o=json": the pure parts.
tw_add_test(test_cli_output_formats
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_cli_output_formats.c
  LIBS tw_cli PkgConfig::CMOCKA PkgConfig::JANSSON
  LABELS unit cli ux
  TIMEOUT 30)
