# The provider interface (providers/provider.c, registry.c), the in-process
# fake provider (tests/fakes/) and the AWS EC2 adapter (providers/aws/).
#
# tw_add_test() keeps only the first of several LABELS, so each test sets
# its full label list again.
function(tw_aws_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_provider
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_provider.c
  LIBS tw_fake_provider tw_adapters_test tw_providers LABELS unit)
tw_aws_labels(test_provider unit providers)

tw_add_test(test_aws_xml
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_aws_xml.c
          ${CMAKE_SOURCE_DIR}/tests/fuzz/ec2_xml_tree.c
          ${CMAKE_SOURCE_DIR}/tests/fuzz/ec2_xml_compare.c
  LIBS tw_providers PkgConfig::LIBXML2 LABELS unit)
tw_aws_labels(test_aws_xml unit providers aws)

tw_add_test(test_aws_pricing
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_aws_pricing.c
  LIBS tw_providers PkgConfig::CMOCKA LABELS unit)
tw_aws_labels(test_aws_pricing unit providers aws)

tw_add_test(test_aws_errors
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_aws_errors.c
  LIBS tw_providers LABELS unit)
tw_aws_labels(test_aws_errors unit providers aws)

# Each input also runs through the tree-based parsers the SAX2 ones
# replaced (tests/fuzz/ec2_xml_tree.c), which must agree field by field.
tw_add_fuzz(fuzz_ec2_xml
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_ec2_xml.c
          ${CMAKE_SOURCE_DIR}/tests/fuzz/ec2_xml_tree.c
          ${CMAKE_SOURCE_DIR}/tests/fuzz/ec2_xml_compare.c
  LIBS tw_providers PkgConfig::LIBXML2
  LABELS providers aws
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/ec2_xml)

# The adapter against tradewind-fakecloud (started as a subprocess).
tw_add_test(test_aws_fake
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_aws_fake.c
  LIBS twtest_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
  LABELS integration TIMEOUT 120)
tw_aws_labels(test_aws_fake integration providers aws)
target_compile_definitions(test_aws_fake PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
add_dependencies(test_aws_fake tradewind-fakecloud)

# One listing costs what the live instances cost, however many terminated
# ones EC2 still shows (issue 20: listing that does not grow with history).
tw_add_test(test_list_live
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_list_live.c
  LIBS twtest_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
  LABELS launch TIMEOUT 120)
tw_aws_labels(test_list_live launch integration providers aws)
target_compile_definitions(test_list_live PRIVATE
  TW_FAKECLOUD_PATH="$<TARGET_FILE:tradewind-fakecloud>")
add_dependencies(test_list_live tradewind-fakecloud)
