# No process-wide mutable state in the libraries (docs/architecture.md,
# "Process-wide state"), and the reentrant sort that replaced the
# thread-local qsort contexts.
tw_add_test(test_sort SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sort.c
            LIBS tw_base PkgConfig::CMOCKA LABELS unit architecture)
# The index of positions by id the scheduler's live attempts and the
# meter's states share.
tw_add_test(test_idix SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_idix.c
            LIBS tw_base PkgConfig::CMOCKA LABELS unit sched)
# The one hex digit reader (keys, trace ids, percent-escapes).
tw_add_test(test_hex SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_hex.c
            LIBS tw_base PkgConfig::CMOCKA LABELS unit architecture)

# The growable buffer's appends, formatted ones against snprintf.
tw_add_test(test_buf SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_buf.c
            LIBS tw_base PkgConfig::CMOCKA LABELS unit architecture)

# Every library made with tw_library() (the top CMakeLists.txt records
# them), read with objdump: fails on a mutable global outside the test's
# allow-list.
get_property(tw_globals_libs GLOBAL PROPERTY TW_LIBRARIES)
set(tw_globals_paths)
foreach(lib ${tw_globals_libs})
  list(APPEND tw_globals_paths $<TARGET_FILE:${lib}>)
endforeach()
if(CMAKE_OBJDUMP)
  set(tw_objdump ${CMAKE_OBJDUMP})
else()
  find_program(tw_objdump objdump)
endif()
tw_add_test(test_globals SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_globals.c
            LIBS PkgConfig::CMOCKA LABELS unit architecture
            ARGS "${tw_objdump}" ${tw_globals_paths})
add_dependencies(test_globals ${tw_globals_libs})
