# Money, sizes and durations (broker/base/units.c): the one parser of each
# and the one rounding rule.
tw_add_test(test_units
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_units.c
  LIBS tw_base PkgConfig::CMOCKA
  LABELS unit architecture)

tw_add_fuzz(fuzz_units
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_units.c
  LIBS tw_base
  LABELS architecture
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/units)
