# Interpreter (issue 6): the bpf_conformance suite through the CLI, the suite's plugin protocol,
# the cost-model table, CLI behaviour of `conformance` and `costmodel` (the benchmark is in bench/).
set(PF_CONF ${PATCHFUZZ_SHARED_DIR}/conformance/bpf_conformance)

# patchfuzz-conformance-plugin: what bpf_conformance's own runner executes.
add_executable(patchfuzz-conformance-plugin ${PATCHFUZZ_SOURCE_ROOT}/bpf/interp/conformance_plugin_main.cpp)
target_link_libraries(patchfuzz-conformance-plugin PRIVATE patchfuzz_interp)
set_target_properties(patchfuzz-conformance-plugin PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# The suite: all 313 pass, all 60 negatives fail as expected.
add_test(NAME conformance_suite COMMAND $<TARGET_FILE:patchfuzz> conformance ${PF_CONF}/tests)
set_tests_properties(conformance_suite PROPERTIES PASS_REGULAR_EXPRESSION "(^|\n)313 passed, 0 failed\n" TIMEOUT 300)
add_test(NAME conformance_negative COMMAND $<TARGET_FILE:patchfuzz> conformance --expect-fail ${PF_CONF}/negative)
set_tests_properties(conformance_negative PROPERTIES PASS_REGULAR_EXPRESSION "(^|\n)0 passed, 60 failed\n" TIMEOUT 300)
# Exit codes: 0 when every outcome is expected; 1 for the negatives run as positives; 2 unreadable.
add_test(NAME conformance_exit_codes COMMAND sh -c "
  '$<TARGET_FILE:patchfuzz>' conformance '${PF_CONF}/tests' >/dev/null; a=$?
  '$<TARGET_FILE:patchfuzz>' conformance '${PF_CONF}/negative' >/dev/null; b=$?
  '$<TARGET_FILE:patchfuzz>' conformance --expect-fail '${PF_CONF}/negative' >/dev/null; c=$?
  '$<TARGET_FILE:patchfuzz>' conformance /nonexistent/dir 2>/dev/null; d=$?
  '$<TARGET_FILE:patchfuzz>' conformance 2>/dev/null; e=$?
  echo codes $a $b $c $d $e; test \"$a $b $c $d $e\" = '0 1 0 2 2'")
set_tests_properties(conformance_exit_codes PROPERTIES TIMEOUT 300)
add_test(NAME conformance_json COMMAND $<TARGET_FILE:patchfuzz> conformance --json ${PF_CONF}/tests/add.data)
set_tests_properties(conformance_json PROPERTIES PASS_REGULAR_EXPRESSION "\"passed\":true,\"expected\":true")
add_test(NAME conformance_help COMMAND $<TARGET_FILE:patchfuzz> conformance --help)
set_tests_properties(conformance_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz conformance")
add_test(NAME conformance_bad_option COMMAND sh -c "'$<TARGET_FILE:patchfuzz>' conformance --bogus x 2>&1; test $? -eq 2")
set_tests_properties(conformance_bad_option PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz conformance: unknown option '--bogus'")

# The plugin protocol: program base16 on stdin, memory base16 in argv[1], r0 in hex on stdout.
# mov r0, 42; exit -> 2a.  ldxb r0, [r1+1]; exit with memory 00 11 -> 11.  An unknown opcode -> exit 1.
add_test(NAME conformance_plugin_protocol COMMAND sh -c "
  set -e
  out=$(echo 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' | '$<TARGET_FILE:patchfuzz-conformance-plugin>' '')
  test \"$out\" = 2a
  out=$(echo '71 10 01 00 00 00 00 00  95 00 00 00 00 00 00 00' | '$<TARGET_FILE:patchfuzz-conformance-plugin>' '00  11')
  test \"$out\" = 11
  if echo 'ff 00 00 00 00 00 00 00 95 00 00 00 00 00 00 00' | '$<TARGET_FILE:patchfuzz-conformance-plugin>' '' >/dev/null; then exit 1; fi
  echo plugin-ok")
set_tests_properties(conformance_plugin_protocol PROPERTIES PASS_REGULAR_EXPRESSION "plugin-ok")
# The plugin over the whole suite, driven the way bpf_conformance's runner drives it
# (conformance_plugin_driver, below).
add_test(NAME conformance_plugin_suite COMMAND $<TARGET_FILE:conformance_plugin_driver>
         $<TARGET_FILE:patchfuzz-conformance-plugin> ${PF_CONF}/tests)
set_tests_properties(conformance_plugin_suite PROPERTIES PASS_REGULAR_EXPRESSION "313 passed, 0 failed" TIMEOUT 300)
# As the official runner sends them: options after the memory, or first when a test has none;
# --arch picks the semantics, unknown options are ignored.
add_test(NAME conformance_plugin_suite_options COMMAND $<TARGET_FILE:conformance_plugin_driver>
         $<TARGET_FILE:patchfuzz-conformance-plugin> ${PF_CONF}/tests --arch arm64 --some-other-runtime-option)
set_tests_properties(conformance_plugin_suite_options PROPERTIES PASS_REGULAR_EXPRESSION "313 passed, 0 failed" TIMEOUT 300)
# r0 compared in all 64 bits: the suite's deliberately wrong expectation fails.
add_test(NAME conformance_plugin_driver_64bit COMMAND sh -c "
  d='${CMAKE_BINARY_DIR}/conf-hi-bits'; rm -rf \"$d\"; mkdir -p \"$d\"
  cp '${PF_CONF}/negative/incorrect_return_value_high_bits.data' \"$d\"/
  '$<TARGET_FILE:conformance_plugin_driver>' '$<TARGET_FILE:patchfuzz-conformance-plugin>' \"$d\"")
set_tests_properties(conformance_plugin_driver_64bit PROPERTIES PASS_REGULAR_EXPRESSION "0 passed, 1 failed")
# Errors go to stderr; an unknown arch is refused.
add_test(NAME conformance_plugin_errors_on_stderr COMMAND sh -c "
  out=$(echo 'ff 00 00 00 00 00 00 00 95 00 00 00 00 00 00 00' | '$<TARGET_FILE:patchfuzz-conformance-plugin>' 2>/dev/null); test -z \"$out\" || exit 1
  echo 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' | '$<TARGET_FILE:patchfuzz-conformance-plugin>' --arch sparc 2>&1 >/dev/null")
set_tests_properties(conformance_plugin_errors_on_stderr PROPERTIES PASS_REGULAR_EXPRESSION "--arch: unknown arch 'sparc'")

# costmodel: the bar (inlined/call ratio within 15% of the seed on both arches) is its exit code.
add_test(NAME costmodel_table COMMAND $<TARGET_FILE:patchfuzz> costmodel)
set_tests_properties(costmodel_table PROPERTIES PASS_REGULAR_EXPRESSION "x86_64 .*bpf_for \\(inlined\\)")
add_test(NAME costmodel_json COMMAND $<TARGET_FILE:patchfuzz> costmodel --json)
set_tests_properties(costmodel_json PROPERTIES PASS_REGULAR_EXPRESSION "\"within_15_percent\":true")
add_test(NAME costmodel_help COMMAND $<TARGET_FILE:patchfuzz> costmodel --help)
set_tests_properties(costmodel_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz costmodel")
add_test(NAME costmodel_bad_arg COMMAND sh -c "'$<TARGET_FILE:patchfuzz>' costmodel --nope 2>&1; test $? -eq 2")
set_tests_properties(costmodel_bad_arg PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz costmodel: unknown option '--nope'")

add_executable(conformance_plugin_driver ${PATCHFUZZ_SOURCE_ROOT}/bpf/interp/conformance_plugin_driver_main.cpp)
target_link_libraries(conformance_plugin_driver PRIVATE patchfuzz_conformance_format)
