# The job's machine in the spec and the clouds' credential chains
# (providers/*/..._creds.c) against the fake token and metadata endpoints.
# tw_add_test() keeps the first label only; the full list is set after.
function(tw_creds_labels name)
  set_tests_properties(${name} PROPERTIES LABELS "${ARGN}" SKIP_RETURN_CODE 77)
endfunction()

tw_add_test(test_spec_machine
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_spec_machine.c
  LIBS tw_core LABELS unit TIMEOUT 30)
tw_creds_labels(test_spec_machine unit ux spec)
