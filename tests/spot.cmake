# The spot lifecycle (issue 8): blocklist, fallback strategies, monitor,
# reconciler and checkpoints.  Every test carries the label `spot` and its
# kind.
tw_add_test(test_blocklist SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_blocklist.c
            LIBS tw_sched PkgConfig::CMOCKA LABELS unit spot)
tw_add_test(test_fallback SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fallback.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit spot)
tw_add_test(test_reconcile SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_reconcile.c
            LIBS tw_sched tw_fake_provider PkgConfig::CMOCKA LABELS unit spot)
tw_add_test(test_fallback_monitor
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fallback_monitor.c
            LIBS sched_fixture tw_sched tw_fake_provider PkgConfig::CMOCKA LABELS unit spot)
# A few hundred jobs against the fake EC2 with injected faults, the daemon
# SIGKILLed at random moments and restarted; seeded (TW_SEED replays).
# The fake boots every instance (--boot): tradewind-agent runs each job.
tw_add_test(test_chaos SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_chaos.c
            LIBS twtest_daemon tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
                 PkgConfig::SQLITE3
            LABELS e2e spot launch TIMEOUT 180)
target_compile_definitions(test_chaos PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>"
  TW_AGENT_PATH="$<TARGET_FILE:tradewind-agent>")
add_dependencies(test_chaos tradewindd tradewind-fakecloud tradewind-agent)
# The same run drained instead of killed: SIGTERM during launches and a
# restart, the fake stopped with SIGSTOP for 60 s while a second wave of
# jobs arrives (TW_CHAOS_STOP_S shortens it), each drain within its
# deadline and every attempt it handed back settled by its own token.
tw_add_test(test_chaos_stop SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_chaos.c
            LIBS twtest_daemon tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
                 PkgConfig::SQLITE3
            ARGS --stop-term
            LABELS e2e spot launch TIMEOUT 420)
target_compile_definitions(test_chaos_stop PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>"
  TW_AGENT_PATH="$<TARGET_FILE:tradewind-agent>")
add_dependencies(test_chaos_stop tradewindd tradewind-fakecloud tradewind-agent)
# A region drill: the fake takes the region holding most jobs down
# (region_down: notices, terminations, every launch there refused); every
# affected job runs elsewhere within the notice plus 60 s, recovery times
# printed (p50, max).
tw_add_test(test_region_drill SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_region_drill.c
            LIBS twtest_daemon tw_base PkgConfig::CURL PkgConfig::JANSSON
            LABELS e2e spot launch TIMEOUT 300)
target_compile_definitions(test_region_drill PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
add_dependencies(test_region_drill tradewindd tradewind-fakecloud)
# One cloud hangs (its fake SIGSTOPped for 60 s, default timeouts): jobs
# on the other provider keep launching, /healthz stays fast.
tw_add_test(test_cloud_hang SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_cloud_hang.c
            LIBS twtest_daemon tw_base PkgConfig::CURL PkgConfig::JANSSON
            LABELS e2e spot launch TIMEOUT 300)
target_compile_definitions(test_cloud_hang PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
add_dependencies(test_cloud_hang tradewindd tradewind-fakecloud)
