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
