# The web console and its live feed (label ui): the event stream's
# contract and bounds in-process, then the console itself in a real
# browser (Debian's chromium, driven by puppeteer-core from npm, pinned in
# tests/ui/package-lock.json and installed into the build tree).
tw_add_test(test_events_stream
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_events_stream.c
            LIBS tw_api LABELS integration ui TIMEOUT 120)

# The console in headless chromium: a fixture installs the pinned
# puppeteer-core with npm ci into the build tree; the browser test starts
# a tradewindd with tokens and the local provider and keeps its
# screenshots in ui-npm/artifacts.  Both skip (77) without node, npm or
# chromium.
function(ui_browser)
  set(ui_work ${CMAKE_BINARY_DIR}/ui-npm)
  set(ui_run ${CMAKE_SOURCE_DIR}/tests/ui/run.sh)
  add_test(NAME ui_npm_setup COMMAND sh ${ui_run} setup ${ui_work})
  set_tests_properties(ui_npm_setup PROPERTIES
    LABELS "integration;ui" FIXTURES_SETUP ui_npm
    SKIP_RETURN_CODE 77 TIMEOUT 600)
  add_test(NAME ui_console_browser COMMAND sh ${ui_run} browser ${ui_work})
  set_tests_properties(ui_console_browser PROPERTIES
    LABELS "e2e;ui" FIXTURES_REQUIRED ui_npm
    SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>")
endfunction()
cmake_language(DEFER CALL ui_browser)
