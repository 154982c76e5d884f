# Job spec parser and validator (broker/spec.c).
#
# tw_add_test flattens a multi-entry LABELS list into set_tests_properties
# (odd argument count), so the test is registered with one label and the
# full label list is set right after.
tw_add_test(test_spec
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_spec.c
  LIBS tw_broker
  LABELS unit
  TIMEOUT 30)
set_tests_properties(test_spec PROPERTIES LABELS "unit;spec")

tw_add_fuzz(fuzz_spec
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_spec.c
  LIBS tw_broker
  LABELS spec
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/spec)
