# The README's demo, run against this build: the fake EC2, the broker and
# the CLI together.  The script checks its own story (placements, capacity
# fallback, interruption and re-placement, a job that fits nowhere, wait,
# cancel) and exits non-zero when it did not happen.
add_test(NAME demo_end_to_end
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/demo.sh --no-setup ${CMAKE_BINARY_DIR})
set_tests_properties(demo_end_to_end PROPERTIES LABELS "e2e;demo" TIMEOUT 180
  DEPENDS "tradewindd;tradewind;tradewind-agent;tradewind-fakecloud")
# README.md's "Running the broker yourself", run as written against a
# fresh directory: the local provider, the agent, the job's exit code.
add_test(NAME readme_quickstart
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/readme_quickstart.sh
                 ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(readme_quickstart PROPERTIES LABELS "e2e;agent" TIMEOUT 120)
