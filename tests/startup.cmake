# Start-up at scale (issue 48): what each worker of a trivial job loads,
# and what its launcher maps (a fork copies it for every worker).
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
