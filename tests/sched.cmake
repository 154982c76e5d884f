# The scheduler over the fake provider, a fake clock and a temp store,
# shared by test_sched, test_gang and test_fallback_monitor (spot.cmake).
add_library(sched_fixture STATIC
            ${CMAKE_SOURCE_DIR}/tests/unit/sched_fixture.c
            ${CMAKE_SOURCE_DIR}/tests/unit/agent_play.c)
target_link_libraries(sched_fixture PUBLIC tw_sched tw_fake_provider
                      PkgConfig::CMOCKA)
tw_add_test(test_sched SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sched.c
            LIBS sched_fixture tw_sched tw_billing tw_fake_provider PkgConfig::CMOCKA LABELS unit sched)
tw_add_test(test_place SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_place.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
tw_add_test(test_api_logs SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_api_logs.c
            LIBS tw_api tw_sched tw_fake_provider PkgConfig::CURL PkgConfig::CMOCKA
            LABELS integration api)
tw_add_test(test_gang SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_gang.c
            LIBS sched_fixture tw_sched tw_fake_provider PkgConfig::CMOCKA LABELS unit placement)
# The attempt state machine under lost answers (docs/spot.md, "Attempt
# states").
tw_add_test(test_launch SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_launch.c
            LIBS sched_fixture tw_sched tw_fake_provider PkgConfig::CMOCKA
            LABELS unit launch sched)
# Cloud calls off the scheduler's thread: a hung provider, call deadlines,
# the drain's deadline (broker/sched/calls.c).
tw_add_test(test_calls SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_calls.c
            LIBS sched_fixture tw_sched tw_fake_provider PkgConfig::CMOCKA
            LABELS unit launch sched)
