# Tenancy (issue 9): tokens, the policy table, quotas, budgets, the audit
# chain, sealed secrets and TLS.  Every test carries the label `tenancy`.

tw_add_test(test_tenancy_rbac
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_tenancy_rbac.c
  LIBS tw_api PkgConfig::CMOCKA
  LABELS unit tenancy)

tw_add_test(test_audit
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_audit.c
  LIBS tw_tenancy PkgConfig::CMOCKA PkgConfig::SQLITE3 PkgConfig::JANSSON
       Threads::Threads
  LABELS unit tenancy TIMEOUT 60)

tw_add_test(test_tenancy
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_tenancy.c
  LIBS tw_tenancy PkgConfig::CMOCKA PkgConfig::SQLITE3 PkgConfig::OPENSSL
  LABELS unit tenancy TIMEOUT 60)

# Placement over the real scheduler and the in-process fake provider.
tw_add_test(test_tenancy_quota
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_tenancy_quota.c
  LIBS sched_fixture tw_sched tw_tenancy tw_fake_provider PkgConfig::CMOCKA
  LABELS unit tenancy TIMEOUT 60)

# Budgets over the scheduler: a hard budget refuses a job and stops a
# running one; thresholds alert once (audit entry and a webhook served by
# the test itself).
tw_add_test(test_tenancy_budget
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_tenancy_budget.c
  LIBS tw_sched tw_tenancy tw_billing tw_fake_provider PkgConfig::CMOCKA
       PkgConfig::MHD PkgConfig::JANSSON Threads::Threads
  LABELS unit tenancy billing TIMEOUT 60)

# Every route x every role against the live server with real tokens, then
# again with the same roles signed in through a loopback OIDC issuer.
tw_add_test(test_rbac
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_rbac.c
  LIBS tw_api twtest_oidc PkgConfig::CURL
  LABELS integration tenancy security TIMEOUT 180)

# HTTPS from a configured certificate (made by the test).
tw_add_test(test_tls
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_tls.c
  LIBS tw_api PkgConfig::CURL PkgConfig::OPENSSL PkgConfig::MHD
  LABELS integration tenancy TIMEOUT 60)
# ... and the tradewind binary against it with --cacert / TRADEWIND_CACERT.
target_compile_definitions(test_tls PRIVATE TW_CLI_BIN="$<TARGET_FILE:tradewind>")
add_dependencies(test_tls tradewind)

# The client's token, user, tenant, quota, budget and audit commands.
tw_add_test(test_rbac_cli
  SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_rbac_cli.c
  LIBS tw_api tw_cli PkgConfig::CURL PkgConfig::SQLITE3
  LABELS integration tenancy cli TIMEOUT 120)

# Token checking and the audit chain against patched inputs: only the real
# token authenticates, and no change to a chain verifies.
tw_add_fuzz(fuzz_auth
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_auth.c
  LIBS tw_tenancy
  LABELS tenancy)

# Provider credentials as sealed secrets, end to end against the fake EC2.
tw_add_test(test_sealed_secrets
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_sealed_secrets.c
            LIBS twtest_daemon LABELS integration tenancy TIMEOUT 120)
add_dependencies(test_sealed_secrets tradewind-fakecloud tradewindd)

# Budget webhooks cannot reach loopback, link-local or private addresses
# unless tenancy.webhook_allow lists them (issue 16, finding 10).
tw_add_test(test_webhook_guard
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_webhook_guard.c
  LIBS tw_tenancy PkgConfig::CMOCKA PkgConfig::MHD Threads::Threads
  LABELS unit security tenancy TIMEOUT 60)
