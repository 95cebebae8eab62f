# Hardening (issue 8): the malformed-input catalogue corpus/malformed/<kind>/<name>.<ext> + .expect,
# run through the built `patchfuzz` binary by one gtest (format: corpus/README.md). It needs the CLI,
# our BPF objects (bases of the generated bad objects) and the test plugins (--patcher-lib entries).
add_executable(malformed_catalogue_test ${CMAKE_CURRENT_SOURCE_DIR}/malformed_catalogue_test.cpp)
target_link_libraries(malformed_catalogue_test PRIVATE GTest::gtest GTest::gtest_main Threads::Threads)
target_compile_definitions(malformed_catalogue_test PRIVATE PATCHFUZZ_SOURCE_ROOT="${PATCHFUZZ_SOURCE_ROOT}"
                                                            PATCHFUZZ_BINARY_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(malformed_catalogue_test patchfuzz)
add_test(NAME malformed_catalogue_test COMMAND malformed_catalogue_test)
set_tests_properties(malformed_catalogue_test PROPERTIES TIMEOUT 600)
