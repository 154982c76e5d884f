tw_add_test(test_store SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
# The live attempts kept from the store's changes (broker/core/live.h),
# shared by the scheduler and the meter.
tw_add_test(test_live SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_live.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
tw_add_test(test_job SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_job.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
# Only broker/core/store*.c may include sqlite3.h or call sqlite3_*.
tw_add_test(test_sql_owner SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sql_owner.c
            LIBS PkgConfig::CMOCKA LABELS unit architecture store)
# A full disk (sqlite's max_page_count): TW_E_FULL, the store's health,
# nothing acknowledged lost (issue 20: storage errors that say what
# happened).
tw_add_test(test_store_full SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store_full.c
            LIBS tw_core PkgConfig::CMOCKA LABELS launch unit store)
