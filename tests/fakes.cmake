# The in-process fakes (tests/fakes/).  The fake provider is an adapter like
# the others: its library, and the tests' registry that lists the daemon's
# adapters and then it, made by the same tw_adapter_registry() as the
# daemon's (providers/CMakeLists.txt).
add_library(tw_fake_provider STATIC
            ${CMAKE_SOURCE_DIR}/tests/fakes/fake_provider.c)
target_link_libraries(tw_fake_provider PUBLIC tw_providers)

tw_adapter_registry(tw_adapters_test ADAPTERS ${TW_ADAPTERS} fake
                    LIBS tw_fake_provider)

# The registries built from the list, each adapter's info block complete,
# provider names checked against the registry (tests/unit/test_registry.c).
tw_add_test(test_registry
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_registry.c
  LIBS tw_adapters tw_adapters_test tw_billing tw_policies tw_core
       PkgConfig::CMOCKA
  LABELS unit)
set_tests_properties(test_registry PROPERTIES LABELS "unit;architecture")
string(REPLACE ";" "," tw_adapter_list "${TW_ADAPTERS}")
target_compile_definitions(test_registry PRIVATE
  TW_ADAPTER_LIST="${tw_adapter_list}")
