tw_add_test(test_store SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
tw_add_test(test_job SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_job.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit store)
