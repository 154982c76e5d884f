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

# The AWS chain against the fake STS, IMDSv2 and container endpoints of
# an in-process fake cloud.
tw_add_test(test_aws_creds
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_aws_creds.c
  LIBS tw_fakecloud tw_adapters tw_providers PkgConfig::CURL
  LABELS integration TIMEOUT 60)
tw_creds_labels(test_aws_creds integration ux credentials providers aws)

# The fake endpoints against botocore's own clients and fetchers.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME creds_conformance_botocore
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_SOURCE_DIR}/tests/conformance/creds/botocore_creds.py
            $<TARGET_FILE:tradewind-fakecloud>)
  set_tests_properties(creds_conformance_botocore PROPERTIES
    LABELS "conformance;ux;credentials;fakecloud;aws"
    SKIP_RETURN_CODE 77 TIMEOUT 60)
endif()

tw_add_fuzz(fuzz_aws_creds
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_aws_creds.c
  LIBS tw_providers
  LABELS ux credentials
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/aws_creds)

# The job's machine on EC2: RunInstances' image, subnet, profile and root
# volume, checked by the fake as EC2 checks them.
tw_add_test(test_aws_machine
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_aws_machine.c
  LIBS tw_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
  LABELS integration TIMEOUT 60)
tw_creds_labels(test_aws_machine integration ux providers aws)

# Azure: the certificate's client assertion, workload identity and the
# managed identity against the fake Entra ID and IMDS.
tw_add_test(test_azure_creds
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_azure_creds.c
  LIBS tw_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
       PkgConfig::OPENSSL
  LABELS integration TIMEOUT 60)
tw_creds_labels(test_azure_creds integration ux credentials providers azure)

# Alibaba: an STS token, the ECS RAM role and STS AssumeRole against the
# fake ECS, STS and metadata service.
tw_add_test(test_alibaba_creds
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_alibaba_creds.c
  LIBS tw_fakecloud tw_adapters tw_providers PkgConfig::CURL PkgConfig::JANSSON
  LABELS integration TIMEOUT 60)
tw_creds_labels(test_alibaba_creds integration ux credentials providers alibaba)

# The fake Entra ID's assertions and IMDS against @azure/identity
# (the packages of tests/conformance/azure, installed by its setup).
add_test(NAME creds_conformance_azure_identity
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/conformance/azure/run.sh test
          ${CMAKE_BINARY_DIR}/conformance-azure identity.test.mjs)
set_tests_properties(creds_conformance_azure_identity PROPERTIES
  LABELS "conformance;ux;credentials;fakecloud;azure"
  FIXTURES_REQUIRED azure_npm SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>")

# A script over EC2's user data limit on a provider without `agent: true`:
# the agent's bootstrap delivers it instead of a refusal.
tw_add_test(test_user_data_agent_e2e
  SOURCES ${CMAKE_SOURCE_DIR}/tests/e2e/test_user_data_agent_e2e.c
  LIBS twtest_daemon twtest_fakecloud tw_base PkgConfig::CURL
       PkgConfig::JANSSON
  LABELS e2e TIMEOUT 180)
tw_creds_labels(test_user_data_agent_e2e e2e ux agent aws)
add_dependencies(test_user_data_agent_e2e tradewindd tradewind-agent
  tradewind-fakecloud)

# The machine allow-list through a running daemon's API.
tw_add_test(test_machine_api
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_machine_api.c
  LIBS twtest_daemon tw_base PkgConfig::CURL PkgConfig::JANSSON
  LABELS integration TIMEOUT 60)
tw_creds_labels(test_machine_api integration ux api spec)
add_dependencies(test_machine_api tradewindd)
