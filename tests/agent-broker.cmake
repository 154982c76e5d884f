# The broker's side of tradewind-agent (docs/agent.md): tokens, the key,
# bootstraps, report bodies, logs, and the state machine over the
# scheduler and the in-process fake provider with `agent: true`.
tw_add_test(test_agent_broker
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_agent_broker.c
            LIBS tw_sched tw_tenancy tw_fake_provider PkgConfig::CMOCKA
            LABELS unit agent)
# The agent routes over HTTP, played by the test as the agent would: the
# REST server, the scheduler and the fake provider with `agent: true`.
tw_add_test(test_agent_daemon
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_agent_daemon.c
            LIBS tw_api tw_sched tw_fake_provider PkgConfig::CMOCKA
                 PkgConfig::CURL PkgConfig::JANSSON
            LABELS integration agent)
# Every parser of the agent's reports, and the token's shape.
tw_add_fuzz(fuzz_agent_msg
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_agent_msg.c
  LIBS tw_sched
  LABELS agent
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/agent_msg)
# The daemon's wiring: the binary required and served, the gate a boolean.
tw_add_test(test_agent_wiring
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_agent_wiring.c
            LIBS tw_daemon tw_adapters_test twtest_daemon PkgConfig::CMOCKA
                 PkgConfig::CURL PkgConfig::OPENSSL
            LABELS integration agent TIMEOUT 60)
# The broker with the real tradewind-agent (when the build has it): each
# launch's bootstrap run as a process; exit 3 fails with its output, exit 0
# succeeds.
tw_add_test(test_agent_e2e
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_agent_e2e.c
            LIBS tw_api tw_sched tw_fake_provider PkgConfig::CMOCKA
                 PkgConfig::CURL PkgConfig::JANSSON
            LABELS integration agent TIMEOUT 120)
# Each node of a gang its rank, the node list and the head address.
tw_add_test(test_agent_gang
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_agent_gang.c
            LIBS tw_sched tw_tenancy PkgConfig::CMOCKA
            LABELS unit ux)
