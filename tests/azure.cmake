# The Azure adapter (providers/azure/) and the Azure module of
# tradewind-fakecloud (tests/fakecloud/azure*.c): parser tests on written
# and recorded answers, fuzz targets, the adapter against the fake over
# TLS, and conformance with the official Azure SDK for JavaScript.  See
# docs/azure.md.
#
# tw_add_test() keeps only the first of several LABELS, so each test sets
# its full label list again.
if(NOT TARGET tw_providers OR
   NOT EXISTS ${CMAKE_SOURCE_DIR}/providers/azure/azure.c)
  return()
endif()

function(tw_azure_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_azure_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_azure_json.c
  LIBS tw_providers LABELS unit)
tw_azure_labels(test_azure_json unit providers azure)

tw_add_test(test_azure_fixtures
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_azure_fixtures.c
  LIBS tw_providers LABELS unit)
tw_azure_labels(test_azure_fixtures unit providers azure)

tw_add_fuzz(fuzz_azure_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_azure_json.c
  LIBS tw_providers
  LABELS providers azure
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/azure_json)
