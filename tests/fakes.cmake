# The in-process fakes (tests/fakes/).  The fake provider is an adapter like
# the others: its library, and the tests' registry that lists the daemon's
# adapters and then it, made by the same tw_adapter_registry() as the
# daemon's (providers/CMakeLists.txt).
add_library(tw_fake_provider STATIC
            ${CMAKE_SOURCE_DIR}/tests/fakes/fake_provider.c)
target_link_libraries(tw_fake_provider PUBLIC tw_providers)

tw_adapter_registry(tw_adapters_test ADAPTERS ${TW_ADAPTERS} fake
                    LIBS tw_fake_provider)
