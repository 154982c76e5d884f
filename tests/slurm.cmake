# The Slurm adapter (providers/slurm/) and the private cluster it talks to
# (scripts/slurm.sh).  Every test carries the label `slurm`, its kind and
# `providers`.
#
#   ctest -L slurm            everything below
#   ctest -L slurm -L unit    the parsers on recorded answers only
#
# The integration and e2e tests need a real cluster: the fixture test
# slurm_cluster_start runs `scripts/slurm.sh start` on a state dir inside
# the build dir (installing Slurm from Debian when missing) and
# slurm_cluster_stop stops it; when the machine cannot run it (not root,
# packages not installable) the start test is skipped and so is every test
# that needs the cluster.
# jansson is the Slurm adapter's JSON reader; providers/CMakeLists.txt does
# not link it (the other adapters do without).
target_link_libraries(tw_providers PUBLIC PkgConfig::JANSSON)

function(tw_slurm_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_slurm_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_slurm_json.c
  LIBS tw_providers PkgConfig::JANSSON LABELS unit)
tw_slurm_labels(test_slurm_json unit slurm providers)

tw_add_fuzz(fuzz_slurm_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_slurm_json.c
  LIBS tw_providers
  LABELS slurm providers
  ITERATIONS 5000
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/slurm_json)

# ---- the cluster fixture ---------------------------------------------------
set(TW_SLURM_STATE ${CMAKE_BINARY_DIR}/slurm-state)
add_test(NAME slurm_cluster_start
  COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/slurm.sh start ${TW_SLURM_STATE})
set_tests_properties(slurm_cluster_start PROPERTIES
  LABELS "integration;slurm;providers" SKIP_RETURN_CODE 77 TIMEOUT 300
  FIXTURES_SETUP slurm_cluster)
add_test(NAME slurm_cluster_stop
  COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/slurm.sh stop ${TW_SLURM_STATE} --purge)
set_tests_properties(slurm_cluster_stop PROPERTIES
  LABELS "integration;slurm;providers" TIMEOUT 120
  FIXTURES_CLEANUP slurm_cluster)

# A test on the cluster: needs the fixture, finds it through TW_SLURM_DIR,
# and runs alone (the cases count free capacity).
function(tw_slurm_cluster_test name)
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
               "TW_SLURM_DIR=${TW_SLURM_STATE}")
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED slurm_cluster
                       RESOURCE_LOCK slurm_cluster)
endfunction()

tw_add_test(test_slurm_adapter
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_slurm_adapter.c
  LIBS tw_providers Threads::Threads LABELS integration TIMEOUT 120)
tw_slurm_labels(test_slurm_adapter integration slurm providers)
tw_slurm_cluster_test(test_slurm_adapter)

# ---- daemon, CLI and cluster together --------------------------------------
tw_add_test(test_slurm_e2e
  SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_slurm_e2e.c
          ${CMAKE_SOURCE_DIR}/tests/e2e/twtest_slurm.c
  LIBS twtest_daemon PkgConfig::JANSSON LABELS e2e TIMEOUT 120
  ARGS $<TARGET_FILE:tradewindd> $<TARGET_FILE:tradewind>)
tw_slurm_labels(test_slurm_e2e e2e slurm providers)
tw_slurm_cluster_test(test_slurm_e2e)
add_dependencies(test_slurm_e2e tradewindd tradewind)

# kill a slurmd under a running job: the broker places the job again
add_test(NAME test_slurm_fault
  COMMAND test_slurm_e2e $<TARGET_FILE:tradewindd> $<TARGET_FILE:tradewind>
          fault)
set_tests_properties(test_slurm_fault PROPERTIES
  LABELS "e2e;slurm;providers" SKIP_RETURN_CODE 77 TIMEOUT 150
  ENVIRONMENT "TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")
tw_slurm_cluster_test(test_slurm_fault)

# the queue's promises on the cluster: a head job launched within a pass of
# the node it waits for freeing, backfill into a gap, DRF between tenants,
# and a spot share of 0 going on-demand at once (fake EC2 beside it)
tw_add_test(test_slurm_queue
  SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_slurm_queue.c
          ${CMAKE_SOURCE_DIR}/tests/e2e/twtest_slurm.c
  LIBS twtest_daemon PkgConfig::JANSSON LABELS e2e TIMEOUT 240
  ARGS $<TARGET_FILE:tradewindd> $<TARGET_FILE:tradewind>
       $<TARGET_FILE:tradewind-fakecloud>)
tw_slurm_labels(test_slurm_queue e2e slurm placement)
tw_slurm_cluster_test(test_slurm_queue)
add_dependencies(test_slurm_queue tradewindd tradewind tradewind-fakecloud)
