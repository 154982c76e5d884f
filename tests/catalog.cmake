# The catalog (billing/catalog*, billing/normalize*): unit tests, the real
# public catalogs, and the CSV fuzz target.
tw_add_test(test_catalog_normalize
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog_normalize.c
            LIBS tw_billing tw_adapters PkgConfig::CMOCKA LABELS unit catalog)
tw_add_test(test_catalog_csv
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog_csv.c
            LIBS tw_billing tw_adapters PkgConfig::CMOCKA LABELS unit catalog)
# The real public catalogs of shared/data (SKIPPED when absent).
tw_add_test(test_catalog_real
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog_real.c
            LIBS tw_billing tw_adapters LABELS integration catalog TIMEOUT 120)
# The CSV importer on arbitrary bytes (the first byte picks the options).
tw_add_fuzz(fuzz_catalog_csv
            SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_catalog_csv.c
            LIBS tw_billing tw_adapters LABELS catalog
            CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/catalog)
# The catalog object over the fake provider, files and the store.
# (tw_fake_provider is defined by a later fragment, providers-aws.cmake)
tw_add_test(test_catalog
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog.c
            LIBS tw_billing tw_fake_provider tw_adapters_test PkgConfig::CMOCKA
            LABELS unit catalog)
# GET /v1/offers and /metrics over HTTP with a published catalog.
tw_add_test(test_catalog_api
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_catalog_api.c
            LIBS tw_api tw_billing tw_cli tw_fake_provider tw_adapters_test
                 PkgConfig::CURL
                 PkgConfig::JANSSON PkgConfig::CMOCKA
            LABELS integration catalog api)
