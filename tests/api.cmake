tw_add_test(test_api SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_api.c
            LIBS tw_api PkgConfig::CURL PkgConfig::CMOCKA
            LABELS integration api TIMEOUT 120)
tw_add_test(test_openapi SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_openapi.c
            LIBS tw_api PkgConfig::CMOCKA LABELS unit api)
# A full disk through the API: 507, /readyz 503 until a write commits
# (issue 20: storage errors that say what happened).
tw_add_test(test_api_store_full
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_api_store_full.c
            LIBS tw_api PkgConfig::CURL PkgConfig::CMOCKA
            LABELS launch integration api TIMEOUT 120)
