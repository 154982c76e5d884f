# Placement (issue 7): policies/, the scheduler's place side, datasets,
# plan and policies endpoints.  Every test carries the `placement` label
# plus its kind.
tw_add_test(test_plan SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_plan.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
