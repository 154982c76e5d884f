# Joint placement of workflows (issue 18, item 4): policies/place/joint.c.
# Every test carries the `workflow` label plus its kind.
tw_add_test(test_joint SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_joint.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit workflow)
