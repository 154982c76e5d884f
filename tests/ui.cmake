# The web console and its live feed (label ui): the event stream's
# contract and bounds in-process, then the console itself in a real
# browser (Debian's chromium, driven by puppeteer-core from npm, pinned in
# tests/ui/package-lock.json and installed into the build tree).
tw_add_test(test_events_stream
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_events_stream.c
            LIBS tw_api LABELS integration ui TIMEOUT 120)
