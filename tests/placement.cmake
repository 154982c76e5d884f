# Placement (issue 7): policies/, the scheduler's place side, datasets,
# plan and policies endpoints.  Every test carries the `placement` label
# plus its kind.
tw_add_test(test_plan SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_plan.c
            LIBS tw_policies PkgConfig::JANSSON PkgConfig::CMOCKA
            LABELS unit placement)
tw_add_test(test_policy_filters SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_filters.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
# Score plugins the loader must refuse, built as shared objects like the
# example (policies/plugins/score_fit.c).
add_library(tw_test_plugin_bad_version MODULE ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_plugin_bad.c)
target_compile_definitions(tw_test_plugin_bad_version PRIVATE BAD_VERSION)
add_library(tw_test_plugin_bad_filter MODULE ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_plugin_bad.c)
target_compile_definitions(tw_test_plugin_bad_filter PRIVATE BAD_FILTER)
tw_add_test(test_policy_set SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_set.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
target_compile_definitions(test_policy_set PRIVATE
  TW_PLUGIN_FIT="$<TARGET_FILE:tw_score_fit>"
  TW_PLUGIN_BAD_VERSION="$<TARGET_FILE:tw_test_plugin_bad_version>"
  TW_PLUGIN_BAD_FILTER="$<TARGET_FILE:tw_test_plugin_bad_filter>")
add_dependencies(test_policy_set tw_score_fit tw_test_plugin_bad_version tw_test_plugin_bad_filter)
# Plugins and network files only from the config file's directories,
# refused before dlopen (issue 16, finding 4).
add_library(tw_test_plugin_ctor MODULE ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_plugin_ctor.c)
tw_add_test(test_policy_dirs SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_policy_dirs.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit security placement)
target_compile_definitions(test_policy_dirs PRIVATE
  TW_PLUGIN_CTOR="$<TARGET_FILE:tw_test_plugin_ctor>")
add_dependencies(test_policy_dirs tw_test_plugin_ctor)
tw_add_test(test_plan_netmatrix SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_plan_netmatrix.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
tw_add_fuzz(fuzz_network_matrix SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_network_matrix.c
            LIBS tw_policies LABELS placement
            CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/network)
tw_add_test(test_plan_queue SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_plan_queue.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
tw_add_test(test_plan_datasets SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_plan_datasets.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit placement)
# (tw_fake_provider is defined by a later fragment, providers-aws.cmake)
# an in-process API server over the scheduler's index and a fake
# provider: the plan, workflow and joint-placement tests share it
add_library(twtest_plan_server STATIC
            ${CMAKE_SOURCE_DIR}/tests/integration/twtest_plan_server.c)
target_link_libraries(twtest_plan_server PUBLIC tw_api tw_sched tw_cli
                      tw_fake_provider tw_adapters_test PkgConfig::CURL
                      PkgConfig::CMOCKA)
tw_add_test(test_plan_api SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_plan_api.c
            LIBS twtest_plan_server
            LABELS integration placement)
tw_add_test(test_plan_reload SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_plan_reload.c
            LIBS twtest_daemon PkgConfig::CMOCKA LABELS integration placement TIMEOUT 120)
tw_add_fuzz(fuzz_policies SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_policies.c
            LIBS tw_policies LABELS placement ITERATIONS 5000
            CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/policies)
# A job's placement.selectors, max_rtt_ms and near through whole plans.
tw_add_test(test_spec_placement SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_spec_placement.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit placement)
# Placement a user can trust (issue 22): whole prices, exact asks, price
# sanity, explanations, over small catalogs written in the test.
tw_add_test(test_place_trust SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_place_trust.c
            LIBS tw_policies tw_billing tw_adapters PkgConfig::CMOCKA LABELS unit placement)
# The 16 asks of issue 22 over the real public catalogs (SKIPPED without
# them): SkyPilot's price or below under the exact-ask rules.
tw_add_test(test_place_real SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_place_real.c
            ${CMAKE_SOURCE_DIR}/tests/integration/twtest_real_catalog.c
            LIBS tw_policies tw_billing tw_adapters PkgConfig::CMOCKA
            LABELS integration placement TIMEOUT 120)
