# Dependencies, arrays and workflows (broker/core/flow.h, store_flow.h,
# docs/workflows.md).  Every test carries the label `workflow`.
#
#   ctest -L workflow
tw_add_test(test_flow SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_flow.c
            LIBS tw_core PkgConfig::CMOCKA LABELS unit workflow)
tw_add_test(test_flow_sched
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_flow_sched.c
            LIBS sched_fixture tw_sched tw_billing tw_fake_provider
                 PkgConfig::CMOCKA
            LABELS unit workflow sched)
tw_add_fuzz(fuzz_workflow
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_workflow.c
  LIBS tw_core
  LABELS workflow
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/workflow)

# The same cases through sbatch --dependency and --array on the project's
# Slurm cluster (tests/slurm.cmake's fixture); skipped without it.
add_test(NAME workflow_slurm_cases
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/workflow/slurm_cases.sh
          ${CMAKE_SOURCE_DIR}/tests/workflow/cases.txt)
set_tests_properties(workflow_slurm_cases PROPERTIES
  LABELS "conformance;workflow;slurm" SKIP_RETURN_CODE 77 TIMEOUT 900)
tw_slurm_cluster_test(workflow_slurm_cases)

# The routes over loopback (in-process server, open mode).
tw_add_test(test_workflow_api
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_workflow_api.c
            LIBS tw_api twtest_daemon PkgConfig::CMOCKA
            LABELS integration workflow api TIMEOUT 120)

# The daemon, the fake EC2 and the CLI together: submit --wait's exit codes
# for a workflow, an array, a dependency on it and a cancelled array.
add_test(NAME workflow_e2e
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/workflow/e2e_workflow.sh
          ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(workflow_e2e PROPERTIES LABELS "e2e;workflow" TIMEOUT 300
  DEPENDS "tradewindd;tradewind;tradewind-fakecloud")
