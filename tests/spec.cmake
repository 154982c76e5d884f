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

# Parsed specs kept per job version (broker/core/spec_cache.c).
tw_add_test(test_spec_cache
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_spec_cache.c
  LIBS tw_core PkgConfig::CMOCKA
  LABELS unit spec)

# SkyPilot task files read as job specs (broker/core/skypilot.c).
tw_add_test(test_skypilot
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_skypilot.c
  LIBS tw_core PkgConfig::CMOCKA
  LABELS unit ux
  TIMEOUT 30)

tw_add_fuzz(fuzz_skypilot
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_skypilot.c
  LIBS tw_core
  LABELS ux
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/skypilot)
