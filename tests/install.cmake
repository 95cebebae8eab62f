# Installing (issue 27): `cmake --install` into a prefix of the build tree, the example plugin
# built out of tree against it (CMake package, then pkg-config and a bare compiler line) and run by
# the installed CLI, `--version`, and the Debian package. ~40 s together.
set(PATCHFUZZ_INSTALL_TEST_DIR ${CMAKE_BINARY_DIR}/install-test)
add_test(NAME install_prefix
         COMMAND sh -c "rm -rf '${PATCHFUZZ_INSTALL_TEST_DIR}/prefix' && '${CMAKE_COMMAND}' --install '${CMAKE_BINARY_DIR}' --prefix '${PATCHFUZZ_INSTALL_TEST_DIR}/prefix' >/dev/null && cd '${PATCHFUZZ_INSTALL_TEST_DIR}/prefix' && ls bin/patchfuzz include/patchfuzz/patcher.h share/patchfuzz/examples/batched-plugin/example_batched_plugin.cpp share/patchfuzz/examples/batched-plugin/CMakeLists.txt lib*/cmake/patchfuzz/patchfuzzConfig.cmake lib*/pkgconfig/patchfuzz-plugin.pc")
set_tests_properties(install_prefix PROPERTIES FIXTURES_SETUP patchfuzz_installed)
foreach(how IN ITEMS cmake pkg-config)
  add_test(NAME install_plugin_out_of_tree_${how}
           COMMAND ${PATCHFUZZ_SOURCE_ROOT}/tests/install/out_of_tree_plugin.sh ${PATCHFUZZ_INSTALL_TEST_DIR}/prefix
                   ${PATCHFUZZ_INSTALL_TEST_DIR}/plugin-${how} ${how})
  set_tests_properties(install_plugin_out_of_tree_${how} PROPERTIES FIXTURES_REQUIRED patchfuzz_installed TIMEOUT 120)
endforeach()

# --version: the project version and a git revision (or "unknown revision"), the same string as the
# "version" of a campaign summary; with --patcher-lib also the plugin's name and version.
add_test(NAME version_prints_version_and_revision COMMAND $<TARGET_FILE:patchfuzz> --version)
set_tests_properties(version_prints_version_and_revision PROPERTIES
                     PASS_REGULAR_EXPRESSION "^patchfuzz ${PROJECT_VERSION} \\((git [0-9a-f]+(, dirty)?|unknown revision)\\)\n$")
add_test(NAME version_is_in_fuzz_json
         COMMAND sh -c "v=$('$<TARGET_FILE:patchfuzz>' --version) && '$<TARGET_FILE:patchfuzz>' fuzz --runs 3 --oracles structural --no-known --quiet --json --out '${CMAKE_BINARY_DIR}/version-json-out' | grep -F \"\\\"version\\\": \\\"$v\\\"\"")
add_test(NAME version_names_the_plugin
         COMMAND $<TARGET_FILE:patchfuzz> --version --patcher-lib $<TARGET_FILE:patchfuzz_example_patcher>)
set_tests_properties(version_names_the_plugin PROPERTIES
                     PASS_REGULAR_EXPRESSION "^patchfuzz ${PROJECT_VERSION} \\([^)]*\\); plugin example-batched 1\\.0\\.0\n$")
# A plugin without the optional version query still loads, and says so.
add_library(patchfuzz_noversion_patcher MODULE ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/example/example_batched_plugin.cpp
                                              ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/pf_convert.cpp)
target_link_libraries(patchfuzz_noversion_patcher PRIVATE patchfuzz_patch)
target_compile_definitions(patchfuzz_noversion_patcher PRIVATE PATCHFUZZ_EXAMPLE_NO_VERSION)
set_target_properties(patchfuzz_noversion_patcher PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(patchfuzz patchfuzz_noversion_patcher)
add_test(NAME version_plugin_without_version_query
         COMMAND $<TARGET_FILE:patchfuzz> --version --patcher-lib $<TARGET_FILE:patchfuzz_noversion_patcher>)
set_tests_properties(version_plugin_without_version_query PROPERTIES
                     PASS_REGULAR_EXPRESSION "; plugin example-batched \\(no version\\)\n$")

add_test(NAME install_deb_package
         COMMAND ${PATCHFUZZ_SOURCE_ROOT}/tests/install/deb_package.sh ${CMAKE_BINARY_DIR} ${PATCHFUZZ_INSTALL_TEST_DIR}/deb)
set_tests_properties(install_deb_package PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
