# Unit tests of the launcher's parts (tools/launch); include()d from
# tests/CMakeLists.txt.  The launcher as processes: tracker.cmake.
#   launch_policy_test  cmocka: rally-run's restart policy, synchronously
add_executable(launch_policy_test ${CMAKE_CURRENT_LIST_DIR}/launch_policy_test.c)
target_link_libraries(launch_policy_test rally_launch cmocka)
add_test(NAME launch_policy_test COMMAND launch_policy_test)
set_tests_properties(launch_policy_test PROPERTIES LABELS "quick" TIMEOUT 30)
