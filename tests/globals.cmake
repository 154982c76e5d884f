# No process-wide mutable state in the libraries (docs/architecture.md,
# "Process-wide state"), and the reentrant sort that replaced the
# thread-local qsort contexts.
tw_add_test(test_sort SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sort.c
            LIBS tw_base PkgConfig::CMOCKA LABELS unit architecture)
