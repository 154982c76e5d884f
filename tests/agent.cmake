# tradewind-agent (docs/agent.md): its parsers, the agent against a test
# broker, its notice pollers against the fake clouds' metadata servers,
# and the fuzz target of its parsers.

# twtest_agent_broker: the test broker and the agent as a child process.
add_library(twtest_agent_broker STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/twtest_agent_broker.c)
target_link_libraries(twtest_agent_broker PUBLIC PkgConfig::MHD
  PkgConfig::JANSSON Threads::Threads)
add_dependencies(twtest_agent_broker tradewind-agent)

tw_add_test(test_agent
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_agent.c
  LIBS twtest_agent_broker
  LABELS integration agent TIMEOUT 240)
set_tests_properties(test_agent PROPERTIES LABELS "integration;agent")

tw_add_test(test_agent_parse
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_agent_parse.c
  LIBS tw_agent
  LABELS unit agent)
set_tests_properties(test_agent_parse PROPERTIES LABELS "unit;agent")

tw_add_fuzz(fuzz_agent_parse
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_agent_parse.c
  LIBS tw_agent
  LABELS agent
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/agent)

# The fake EC2 boots instances (--boot) and serves them IMDSv2; the
# agent's AWS poller against it.
tw_add_test(test_fakecloud_boot
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_fakecloud_boot.c
  LIBS tw_fakecloud twtest_agent_broker PkgConfig::CURL
  LABELS integration agent TIMEOUT 120)
set_tests_properties(test_fakecloud_boot PROPERTIES
  LABELS "integration;agent;fakecloud")

# What the fake clouds read from a booted instance and a launch's user data.
tw_add_fuzz(fuzz_fakecloud_meta
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_fakecloud_meta.c
  LIBS tw_fakecloud
  LABELS agent fakecloud
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/fakecloud_meta)

# The local provider: jobs on the broker's own host.
tw_add_test(test_local_provider
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_local_provider.c
  LIBS tw_adapters tw_providers
  LABELS integration agent TIMEOUT 60)
set_tests_properties(test_local_provider PROPERTIES
  LABELS "integration;agent;providers")

# The whole path: tradewindd with agent: true, the fake EC2 booting the
# bootstrap for real, then the local provider.
tw_add_test(test_agent_boot_e2e
  SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_agent_boot_e2e.c
  LIBS twtest_daemon twtest_fakecloud tw_base PkgConfig::CURL
       PkgConfig::JANSSON
  LABELS e2e agent TIMEOUT 180)
set_tests_properties(test_agent_boot_e2e PROPERTIES LABELS "e2e;agent")
add_dependencies(test_agent_boot_e2e tradewindd tradewind-agent
  tradewind-fakecloud)
