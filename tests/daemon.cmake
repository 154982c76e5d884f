# Tests that run tradewindd itself as a subprocess (tests/integration/
# twtest_daemon.c starts it on port 0 with a private temp dir).
add_library(twtest_daemon STATIC
            ${CMAKE_SOURCE_DIR}/tests/integration/twtest_daemon.c)
target_link_libraries(twtest_daemon PUBLIC PkgConfig::CURL)
target_include_directories(twtest_daemon PUBLIC
                           ${CMAKE_SOURCE_DIR}/tests/integration)
# The fallback when neither $TRADEWINDD nor $TW_BINARY_DIR names the daemon.
target_compile_definitions(twtest_daemon PRIVATE
                           TW_TRADEWINDD_PATH="$<TARGET_FILE:tradewindd>")
add_dependencies(twtest_daemon tradewindd)

# SIGKILL in the middle of a burst of submissions, three times: every 2xx
# survives, no job is half-written.
tw_add_test(crash_keeps_every_acknowledged_job
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_crash.c
            LIBS twtest_daemon tw_tenancy PkgConfig::CURL PkgConfig::JANSSON
                 PkgConfig::SQLITE3 Threads::Threads
            LABELS integration store TIMEOUT 120)

# The same with tokens required: every stored job, acknowledged or cut by
# the kill, has exactly one audit entry and one owner row, and the chain
# verifies (the job, its owner and its entry are one transaction).
add_test(NAME crash_audits_every_stored_job
         COMMAND crash_keeps_every_acknowledged_job tokens)
set_tests_properties(crash_audits_every_stored_job PROPERTIES
  LABELS "integration;launch;store" SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")

# SIGHUP reloads (and refuses a bad file), a bad config stops the start
# with the key named.
tw_add_test(daemon_sighup_reload_and_bad_config
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_daemon_signals.c
            LIBS twtest_daemon PkgConfig::JANSSON PkgConfig::SQLITE3
                 Threads::Threads
            LABELS integration api TIMEOUT 120
            ARGS bad_config_at_start reloads)

# SIGTERM with requests in flight: each gets a complete answer, exit 0.
add_test(NAME daemon_sigterm_finishes_in_flight_requests
         COMMAND daemon_sighup_reload_and_bad_config sigterm)
set_tests_properties(daemon_sigterm_finishes_in_flight_requests PROPERTIES
  LABELS "integration;api" SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")

# One start-up step migrates every module: a database it cannot bring up to
# date (a module newer than the build, a broken module table) stops the
# daemon with the module and the step named.
tw_add_test(daemon_refuses_a_store_it_cannot_migrate
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_store_startup.c
            LIBS twtest_daemon PkgConfig::SQLITE3
            LABELS integration store TIMEOUT 60)

# The daemon's wiring (broker/daemon.c) in the test's own process: start on
# a temp dir and port 0, a job over HTTP, reloads, drain, a clean stop.
tw_add_test(daemon_runs_in_process
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_daemon_inprocess.c
            LIBS tw_daemon tw_adapters twtest_daemon PkgConfig::CMOCKA
                 PkgConfig::JANSSON
            LABELS integration api TIMEOUT 120)
