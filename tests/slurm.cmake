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
if(NOT TARGET tw_providers OR NOT EXISTS ${CMAKE_SOURCE_DIR}/providers/slurm/slurm.c)
  return()
endif()

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
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/slurm_json)
