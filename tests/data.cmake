# Tests of the data layer (src/data, tools/rally-datagen); include()d from
# tests/CMakeLists.txt.
#   data_<part>_test   cmocka (tests/unit/data_rig.h): read (malformed and
#                      well-formed input), partition (partitioning,
#                      fingerprints), gen (the generator) (label "quick")
#   cursor_test        cmocka: the data cursor (orders, splits at any world,
#                      resumes, its bytes) (label "quick")
#   datagen_cli        the rally-datagen tool end to end (label "quick")
#   fuzz_libsvm/csv    libFuzzer targets over both readers, ~20 s each from a
#                      generated seed corpus (label "fuzz"); built with clang
#                      whatever the main compiler, only when clang can link
#                      -fsanitize=fuzzer
set(RALLY_DATA_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})

add_library(rally_test_data_rig STATIC ${RALLY_DATA_TESTS_DIR}/unit/data_rig.c)
target_link_libraries(rally_test_data_rig PUBLIC rally_static cmocka m)
foreach(part read partition gen)
  add_executable(data_${part}_test ${RALLY_DATA_TESTS_DIR}/unit/data_${part}_test.c)
  target_link_libraries(data_${part}_test rally_test_data_rig)
  add_test(NAME data_${part}_test COMMAND data_${part}_test)
  set_tests_properties(data_${part}_test PROPERTIES LABELS "quick" TIMEOUT 300)
endforeach()

add_executable(cursor_test ${RALLY_DATA_TESTS_DIR}/unit/cursor_test.c)
target_link_libraries(cursor_test rally_static cmocka)
add_test(NAME cursor_test COMMAND cursor_test)
set_tests_properties(cursor_test PROPERTIES LABELS "quick" TIMEOUT 120)

add_test(NAME datagen_cli
         COMMAND sh ${RALLY_DATA_TESTS_DIR}/jobs/datagen_test.sh $<TARGET_FILE:rally-datagen>)
set_tests_properties(datagen_cli PROPERTIES LABELS "quick" TIMEOUT 120)

include(${RALLY_DATA_TESTS_DIR}/fuzz/fuzz.cmake OPTIONAL)
