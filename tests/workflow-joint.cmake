# Joint placement of workflows (issue 18, item 4): policies/place/joint.c.
# Every test carries the `workflow` label plus its kind.
tw_add_test(test_joint SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_joint.c
            LIBS tw_policies PkgConfig::CMOCKA LABELS unit workflow)
# Issue 18's chain over the real public catalogs (SKIPPED without them):
# jointly at $22.34 or less, printed beside step-by-step placement.
tw_add_test(test_joint_real SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_joint_real.c
            ${CMAKE_SOURCE_DIR}/tests/integration/twtest_real_catalog.c
            LIBS tw_policies tw_billing tw_adapters PkgConfig::CMOCKA
            LABELS integration workflow TIMEOUT 300)
# POST /v1/plan with a workflow and `tradewind plan WORKFLOW`.
# (tw_fake_provider is defined by an earlier fragment, providers-aws.cmake)
tw_add_test(test_joint_api SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_joint_api.c
            LIBS twtest_plan_server
            LABELS integration workflow)
# The minimal workflow document on arbitrary bytes, with the placement
# bounds checked on whatever parses.
tw_add_fuzz(fuzz_joint_doc SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_joint_doc.c
            LIBS tw_policies LABELS workflow
            CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/joint)
# POST /v1/workflows placing a workflow jointly: the released jobs run in
# the joint plan's regions; `placement: step` and a task fitting nowhere
# keep step-by-step placement.
tw_add_test(test_joint_submit SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_joint_submit.c
            LIBS twtest_plan_server
            LABELS integration workflow)
