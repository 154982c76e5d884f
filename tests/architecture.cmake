# The architecture's rules, checked on the tree itself (docs/architecture.md).
tw_add_test(test_layers SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_layers.c
            LIBS PkgConfig::CMOCKA LABELS unit architecture)
