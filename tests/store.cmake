tw_add_test(test_store SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
tw_add_test(test_job SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_job.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
# Only broker/core/store*.c may include sqlite3.h or call sqlite3_*.
tw_add_test(test_sql_owner SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sql_owner.c
            LIBS PkgConfig::CMOCKA LABELS unit architecture store)
