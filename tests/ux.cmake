# At home for operators and clients (label ux): the OpenAPI document checked
# by real tools, a generated client against the real daemon.

# api/openapi.yaml under @redocly/cli and a client generated from it
# (openapi-typescript + openapi-fetch, compiled by tsc --strict); a fixture
# installs the pinned packages of tests/openapi/ with npm ci into the build
# tree.  All skip (77) without node 20.19+ or npm.
function(ux_openapi)
  set(oa_work ${CMAKE_BINARY_DIR}/openapi-npm)
  set(oa_run ${CMAKE_SOURCE_DIR}/tests/openapi/run.sh)
  add_test(NAME ux_openapi_setup COMMAND sh ${oa_run} setup ${oa_work})
  set_tests_properties(ux_openapi_setup PROPERTIES
    LABELS "conformance;ux" FIXTURES_SETUP openapi_npm
    SKIP_RETURN_CODE 77 TIMEOUT 600)
  add_test(NAME ux_openapi_lint COMMAND sh ${oa_run} lint ${oa_work})
  set_tests_properties(ux_openapi_lint PROPERTIES
    LABELS "conformance;ux" FIXTURES_REQUIRED openapi_npm
    SKIP_RETURN_CODE 77 TIMEOUT 120)
  add_test(NAME ux_openapi_client COMMAND sh ${oa_run} client ${oa_work})
  set_tests_properties(ux_openapi_client PROPERTIES
    LABELS "conformance;ux" FIXTURES_REQUIRED openapi_npm
    SKIP_RETURN_CODE 77 TIMEOUT 240
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
endfunction()
cmake_language(DEFER CALL ux_openapi)

# The CLI's kubectl habits against a real tradewindd on a booting fake EC2
# (the jobs run under tradewind-agent).
function(ux_cli)
  add_test(NAME ux_cli_habits
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/cli.sh ${CMAKE_BINARY_DIR}/ux-cli)
  set_tests_properties(ux_cli_habits PROPERTIES
    LABELS "integration;ux;cli" SKIP_RETURN_CODE 77 TIMEOUT 180
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>;TW_CLI=$<TARGET_FILE:tradewind>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
  # docs/cli.md lists every command `tradewind --help` lists.
  add_test(NAME ux_cli_docs
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/cli_docs.sh
            $<TARGET_FILE:tradewind> ${CMAKE_SOURCE_DIR}/docs/cli.md)
  set_tests_properties(ux_cli_docs PROPERTIES
    LABELS "unit;ux;cli" TIMEOUT 30)
endfunction()
cmake_language(DEFER CALL ux_cli)

# Operating the daemon: --check-config, the database lock, sd_notify, the
# online backup, cmake --install with the systemd unit verified.
function(ux_ops)
  add_test(NAME ux_ops
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/ops.sh ${CMAKE_BINARY_DIR}/ux-ops
            ${CMAKE_BINARY_DIR})
  set_tests_properties(ux_ops PROPERTIES
    LABELS "integration;ux;daemon" SKIP_RETURN_CODE 77 TIMEOUT 120
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_CLI=$<TARGET_FILE:tradewind>")
endfunction()
cmake_language(DEFER CALL ux_ops)

# The first hour: no-provider warnings, configs/demo.yaml, the example specs.
function(ux_first_hour)
  add_test(NAME ux_first_hour
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/first_hour.sh
            ${CMAKE_BINARY_DIR}/ux-first-hour ${CMAKE_SOURCE_DIR})
  set_tests_properties(ux_first_hour PROPERTIES
    LABELS "integration;ux;config" SKIP_RETURN_CODE 77 TIMEOUT 120
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>;TW_CLI=$<TARGET_FILE:tradewind>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
endfunction()
cmake_language(DEFER CALL ux_first_hour)

# SkyPilot task files as they are: run on a booting fake EC2 and on the
# local provider, every error of a bad file at once, convert's round trip.
function(ux_skypilot)
  add_test(NAME ux_skypilot
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/skypilot.sh
            ${CMAKE_BINARY_DIR}/ux-skypilot ${CMAKE_SOURCE_DIR})
  set_tests_properties(ux_skypilot PROPERTIES
    LABELS "e2e;ux;agent" SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>;TW_CLI=$<TARGET_FILE:tradewind>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
endfunction()
cmake_language(DEFER CALL ux_skypilot)
