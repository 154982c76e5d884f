# The catalog (billing/catalog*, billing/normalize*): unit tests, the real
# public catalogs, and the CSV fuzz target.
if(TARGET tw_billing)
  tw_add_test(test_catalog_normalize
              SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog_normalize.c
              LIBS tw_billing PkgConfig::CMOCKA LABELS unit catalog)
endif()
