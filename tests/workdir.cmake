# Issue 21 (ux): a SkyPilot task's workdir, packed by the CLI, uploaded,
# fetched and unpacked by tradewind-agent (broker/base/tar.c,
# docs/skypilot.md); and the GitHub Actions example's OIDC sign-in.
tw_add_test(test_tar
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_tar.c
  LIBS tw_base PkgConfig::CMOCKA
  LABELS unit ux
  TIMEOUT 30)

tw_add_fuzz(fuzz_tar
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_tar.c
  LIBS tw_base
  LABELS ux
  ITERATIONS 5000
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/tar)

tw_add_test(test_store_workdirs
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store_workdirs.c
  LIBS tw_core PkgConfig::CMOCKA
  LABELS unit ux)
# the same on PostgreSQL (tests/ha.cmake's server; skipped without one)
tw_pg_variant(test_store_workdirs_pg test_store_workdirs)

# examples/github-actions/submit.yml's submit step signed in with a
# (stand-in) Actions OIDC token through auth.oidc
function(ux_actions_oidc)
  add_test(NAME ux_actions_oidc
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ux/actions_oidc.sh
            ${CMAKE_BINARY_DIR}/ux-actions-oidc ${CMAKE_SOURCE_DIR})
  set_tests_properties(ux_actions_oidc PROPERTIES
    LABELS "e2e;ux" SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_CLI=$<TARGET_FILE:tradewind>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
endfunction()
cmake_language(DEFER CALL ux_actions_oidc)
