tw_add_test(test_config SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_config.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit config)
tw_add_test(test_node SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_node.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit config)
tw_add_fuzz(fuzz_config SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_config.c
            LIBS tw_core LABELS config
            CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/config)
