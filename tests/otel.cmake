# Traces (label otel) and metrics (label metrics): docs/observability.md.

# The exporter against a send function of the test's: W3C trace context,
# the OTLP JSON, the bounded queue, retries, sampling.
tw_add_test(test_trace
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_trace.c
  LIBS tw_base PkgConfig::JANSSON
  LABELS unit otel)

# The traces read by a receiver that is not ours: the exported payloads
# decoded against the official OTLP schema (@opentelemetry/otlp-transformer
# from npm, pinned in tests/otel/package-lock.json, installed into the
# build tree), and one job's span tree from POST /v1/jobs to its provider
# call under the submitter's traceparent.  Skips (77) without node or npm.
function(otel_receiver)
  set(ot_work ${CMAKE_BINARY_DIR}/otel-npm)
  set(ot_run ${CMAKE_SOURCE_DIR}/tests/otel/run.sh)
  add_test(NAME otel_npm_setup COMMAND sh ${ot_run} setup ${ot_work})
  set_tests_properties(otel_npm_setup PROPERTIES
    LABELS "conformance;otel" FIXTURES_SETUP otel_npm
    SKIP_RETURN_CODE 77 TIMEOUT 600)
  add_test(NAME otel_span_tree COMMAND sh ${ot_run} trace ${ot_work})
  set_tests_properties(otel_span_tree PROPERTIES
    LABELS "conformance;otel" FIXTURES_REQUIRED otel_npm
    SKIP_RETURN_CODE 77 TIMEOUT 240
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>;TW_AGENT=$<TARGET_FILE:tradewind-agent>")
endfunction()
cmake_language(DEFER CALL otel_receiver)

# configs/grafana/tradewind.json parses, and every metric name its queries
# use is on the /metrics of a tradewindd running a job, scraped with a
# bearer token as docs/observability.md configures Prometheus.
function(otel_dashboard)
  find_program(TW_PYTHON3 python3)
  if(NOT TW_PYTHON3)
    return()
  endif()
  add_test(NAME metrics_dashboard
    COMMAND ${TW_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/otel/dashboard.py
            ${CMAKE_SOURCE_DIR}/configs/grafana/tradewind.json
            ${CMAKE_BINARY_DIR}/metrics-dashboard)
  set_tests_properties(metrics_dashboard PROPERTIES
    LABELS "integration;metrics" TIMEOUT 120
    ENVIRONMENT "TW_DAEMON=$<TARGET_FILE:tradewindd>;TW_FAKECLOUD=$<TARGET_FILE:tradewind-fakecloud>")
endfunction()
cmake_language(DEFER CALL otel_dashboard)

# A caller's traceparent header is outside input: fuzzed.
tw_add_fuzz(fuzz_traceparent
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_traceparent.c
  LIBS tw_base
  LABELS otel
  CORPUS ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/traceparent)

# A job's trace context in its own row, across a restart and from the
# table of earlier builds; on PostgreSQL too.
tw_add_test(test_trace_store
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_trace_store.c
  LIBS tw_core PkgConfig::CMOCKA LABELS unit otel observability)
tw_pg_variant(test_trace_store_pg test_trace_store)
