# The spot lifecycle (issue 8): blocklist, fallback strategies, monitor,
# reconciler and checkpoints.  Every test carries the label `spot` and its
# kind.
tw_add_test(test_blocklist SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_blocklist.c
            LIBS tw_broker PkgConfig::CMOCKA LABELS unit spot)
tw_add_test(test_fallback SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fallback.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit spot)
if(TARGET tw_sched AND TARGET tw_fake_provider)
  tw_add_test(test_reconcile SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_reconcile.c
              LIBS tw_sched tw_fake_provider PkgConfig::CMOCKA LABELS unit spot)
endif()
if(TARGET tw_sched AND TARGET tw_fake_provider)
  tw_add_test(test_fallback_monitor
              SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fallback_monitor.c
              LIBS tw_sched tw_fake_provider PkgConfig::CMOCKA LABELS unit spot)
endif()
