# Billing: metering, the ledger and the spend reports (docs/billing.md).
tw_add_test(test_ledger SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_ledger.c
            LIBS tw_billing PkgConfig::CMOCKA LABELS unit billing)
tw_add_test(test_meter SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_meter.c
            LIBS tw_billing tw_adapters PkgConfig::CMOCKA PkgConfig::JANSSON
            LABELS unit billing)
# The same cases through the meter's own pass, on the live attempts it
# keeps from the store's changes (billing/ledger/meter.c, tw_meter_tick).
add_test(NAME test_meter_tick COMMAND test_meter --by-tick)
set_tests_properties(test_meter_tick PROPERTIES LABELS "unit;billing")
tw_add_test(test_report SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_report.c
            LIBS tw_billing tw_adapters PkgConfig::CMOCKA PkgConfig::JANSSON
            LABELS unit billing)
tw_add_test(test_report_html
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_report_html.c
            LIBS tw_api tw_billing PkgConfig::CURL PkgConfig::JANSSON
            LABELS integration billing TIMEOUT 180)
# The provider's own run times each adapter's parser reads (billing
# follows them).
tw_add_test(test_provider_times
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_provider_times.c
            LIBS tw_adapters tw_providers PkgConfig::JANSSON
            LABELS unit billing)
