# Job spec parser and validator (broker/core/spec.c).
tw_add_test(test_spec
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_spec.c
  LIBS tw_core
  LABELS unit spec
  TIMEOUT 30)

tw_add_fuzz(fuzz_spec
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_spec.c
  LIBS tw_core
  LABELS spec
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/spec)
