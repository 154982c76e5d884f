# High availability (issue 17): the PostgreSQL backend and the leader lease.
#
# One PostgreSQL for the whole build tree, started by the fixture below
# with scripts/postgres.sh in ${CMAKE_BINARY_DIR}/pg and stopped after the
# last test that needs it.  The start never fails the fixture: when
# PostgreSQL cannot start here, the tests find no pg.env and are SKIPPED
# with the reason.
set(TW_PG_DIR ${CMAKE_BINARY_DIR}/pg)
add_test(NAME ha_pg_start
         COMMAND bash -c "'${CMAKE_SOURCE_DIR}/scripts/postgres.sh' start '${TW_PG_DIR}' || { rm -f '${TW_PG_DIR}/pg.env'; echo 'postgres: cannot start here; the PostgreSQL tests skip'; }")
set_tests_properties(ha_pg_start PROPERTIES FIXTURES_SETUP ha_pg
                     LABELS "integration;ha" TIMEOUT 600)
add_test(NAME ha_pg_stop
         COMMAND ${CMAKE_SOURCE_DIR}/scripts/postgres.sh stop ${TW_PG_DIR})
set_tests_properties(ha_pg_stop PROPERTIES FIXTURES_CLEANUP ha_pg
                     LABELS "integration;ha")

# tw_pg_variant(TEST BINARY): the store suite BINARY again, on PostgreSQL
# (tests/unit/pg_store.h): one suite, two backends.
function(tw_pg_variant name binary)
  add_test(NAME ${name} COMMAND ${binary} --backend=postgres)
  set_tests_properties(${name} PROPERTIES
    LABELS "integration;ha;store" SKIP_RETURN_CODE 77 TIMEOUT 300
    FIXTURES_REQUIRED ha_pg
    ENVIRONMENT "TW_TEST_PG_DIR=${TW_PG_DIR};TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")
endfunction()
tw_pg_variant(test_store_pg test_store)
tw_pg_variant(test_ledger_pg test_ledger)
# dependencies, arrays and workflows (store_flow.c)
tw_pg_variant(test_flow_pg test_flow)
# the audit chain (store_audit.c), tokens, quotas and secrets
# (store_tenancy.c, store_secrets.c)
tw_pg_variant(test_audit_pg test_audit)
tw_pg_variant(test_tenancy_pg test_tenancy)
# budgets and their alerts (store_budgets.c), the meter and the reports
# over the ledger, the catalog's snapshots and price history
# (store_catalog.c), the reconciler (store_reconcile.c), datasets
# (store_datasets.c), the agent's rows (store_agent.c)
tw_pg_variant(test_tenancy_budget_pg test_tenancy_budget)
tw_pg_variant(test_meter_pg test_meter)
add_test(NAME test_meter_tick_pg
         COMMAND test_meter --backend=postgres --by-tick)
set_tests_properties(test_meter_tick_pg PROPERTIES
  LABELS "integration;ha;store" SKIP_RETURN_CODE 77 TIMEOUT 300
  FIXTURES_REQUIRED ha_pg
  ENVIRONMENT "TW_TEST_PG_DIR=${TW_PG_DIR};TW_SOURCE_DIR=${CMAKE_SOURCE_DIR};TW_BINARY_DIR=${CMAKE_BINARY_DIR}")
tw_pg_variant(test_report_pg test_report)
tw_pg_variant(test_catalog_pg test_catalog)
tw_pg_variant(test_reconcile_pg test_reconcile)
tw_pg_variant(test_plan_datasets_pg test_plan_datasets)
tw_pg_variant(test_agent_broker_pg test_agent_broker)
tw_pg_variant(test_agent_gang_pg test_agent_gang)
tw_pg_variant(test_webhook_guard_pg test_webhook_guard)
tw_pg_variant(test_catalog_api_pg test_catalog_api)
# the scheduler's suites over tests/unit/sched_fixture.c (attempts, the
# queue, gangs, fallback and the monitor; store.c, store_flow.c) and
# quota admission (store_tenancy.c)
tw_pg_variant(test_sched_pg test_sched)
tw_pg_variant(test_launch_pg test_launch)
tw_pg_variant(test_gang_pg test_gang)
tw_pg_variant(test_calls_pg test_calls)
tw_pg_variant(test_fallback_monitor_pg test_fallback_monitor)
tw_pg_variant(test_flow_sched_pg test_flow_sched)
tw_pg_variant(test_tenancy_quota_pg test_tenancy_quota)
# the console's event stream (store_stream.c)
tw_pg_variant(test_events_stream_pg test_events_stream)

# The leader lease and its fence, on both backends.
tw_add_test(test_ha_lease SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_ha_lease.c
            LIBS tw_core PkgConfig::CMOCKA Threads::Threads LABELS unit ha store)
tw_pg_variant(test_ha_lease_pg test_ha_lease)

# Three brokers on one PostgreSQL with the fake EC2: the leader SIGKILLed
# and SIGSTOPped beyond its lease, then PostgreSQL restarted, while jobs
# are submitted; no acknowledged job lost, no job with two live
# instances, the frozen leader's writes refused, the takeover times
# (docs/ha.md).  On a cluster of its own, since it restarts it.
add_test(NAME ha_chaos
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/ha_chaos.sh ${CMAKE_BINARY_DIR})
set_tests_properties(ha_chaos PROPERTIES LABELS "e2e;ha" TIMEOUT 300
                     SKIP_RETURN_CODE 77)

# A group-committed batch whose operations fail in different places: on
# PostgreSQL the batch is one pipeline, a failure found after its
# operation returned stays with that operation (broker/core/db_pg.c).
tw_add_test(test_store_batch SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_store_batch.c
            LIBS tw_core PkgConfig::CMOCKA Threads::Threads LABELS unit ha store)
tw_pg_variant(test_store_batch_pg test_store_batch)
