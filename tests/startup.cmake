# Start-up at scale (issue 48): what each worker of a trivial job loads,
# and what its launcher maps and how much of itself it copies per worker.
# Linked as a user links (librally.so) and as rally's own tools do (the
# static library): neither may map libcurl in a worker that opens no
# s3:// store (src/util/curl.c loads it when first asked), and rally-run,
# which needs it only for `rally-run status`, must not map it either.
foreach(kind shared static)
  add_executable(startup_${kind} progs/startup.c)
  target_link_libraries(startup_${kind} rally_${kind})
  target_include_directories(startup_${kind} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  add_test(NAME startup_no_libcurl_${kind}
           COMMAND ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:startup_${kind}>)
  set_tests_properties(startup_no_libcurl_${kind} PROPERTIES TIMEOUT 80 LABELS "quick")
endforeach()

# rally-run starts its workers without copying itself (issue 48): its own
# minor page faults per worker stay those of the worker's slot (about 5
# here), where a fork of each worker made every page it wrote next fault
# (about 20 per worker, growing the launch of 1024 on two cores by seconds).
# Not under the sanitizers: there the launcher's faults are ASan's (shadow
# pages, and a quarantine that gives every allocation fresh pages: about 50
# per worker), not copies.
if(NOT RALLY_SANITIZE)
  add_test(NAME startup_launcher_copies_nothing
           COMMAND ${RUN_JOB} 0 120 $<TARGET_FILE:rally-run> -n 64 $<TARGET_FILE:startup_shared>
                   --max-launcher-faults-per-worker 10)
  set_tests_properties(startup_launcher_copies_nothing PROPERTIES TIMEOUT 140 LABELS "quick")
endif()
