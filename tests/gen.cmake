# gen/: the `patchfuzz gen` CLI tests (the generator benchmark is in bench/).

set(GEN_OUT ${CMAKE_BINARY_DIR}/gen_cli_out)
add_test(NAME gen_cli_help COMMAND $<TARGET_FILE:patchfuzz> gen --help)
set_tests_properties(gen_cli_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz gen")
add_test(NAME gen_cli_unknown_option COMMAND $<TARGET_FILE:patchfuzz> gen --bogus -o x.case)
set_tests_properties(gen_cli_unknown_option PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz gen: unknown option '--bogus'")
add_test(NAME gen_cli_unknown_option_exit2 COMMAND sh -c "$<TARGET_FILE:patchfuzz> gen --bogus -o x.case 2>/dev/null; test $? -eq 2")
add_test(NAME gen_cli_bad_seed COMMAND $<TARGET_FILE:patchfuzz> gen --seed 12x -o x.case)
set_tests_properties(gen_cli_bad_seed PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz gen: --seed: '12x' is not a whole number")
add_test(NAME gen_cli_unknown_profile COMMAND $<TARGET_FILE:patchfuzz> gen --profile nope -o x.case)
set_tests_properties(gen_cli_unknown_profile PROPERTIES PASS_REGULAR_EXPRESSION "--profile: unknown profile 'nope' \\(expected pyperf180, pyperf600, strobemeta or scale100k\\)")
add_test(NAME gen_cli_missing_out COMMAND $<TARGET_FILE:patchfuzz> gen --seed 1)
set_tests_properties(gen_cli_missing_out PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz gen: missing -o OUT")
# prints its seed; same seed -> same bytes; different seed -> different bytes
# Each test writes under its own directory: ctest runs them in parallel.
add_test(NAME gen_cli_same_seed_same_bytes COMMAND sh -c
  "rm -rf ${GEN_OUT}/seed && mkdir -p ${GEN_OUT}/seed && \
   $<TARGET_FILE:patchfuzz> gen --seed 77 --size 300 -o ${GEN_OUT}/seed/a.case 2>${GEN_OUT}/seed/a.err && \
   $<TARGET_FILE:patchfuzz> gen --seed 77 --size 300 -o ${GEN_OUT}/seed/b.case 2>/dev/null && \
   $<TARGET_FILE:patchfuzz> gen --seed 78 --size 300 -o ${GEN_OUT}/seed/c.case 2>/dev/null && \
   grep -q 'patchfuzz gen: seed 77' ${GEN_OUT}/seed/a.err && cmp ${GEN_OUT}/seed/a.case ${GEN_OUT}/seed/b.case && \
   ! cmp -s ${GEN_OUT}/seed/a.case ${GEN_OUT}/seed/c.case")
# every verb reads a number alike (harness/cli/cli_numbers.hpp): 0x4d is 77
add_test(NAME gen_cli_hex_seed_is_the_number COMMAND sh -c
  "rm -rf ${GEN_OUT}/hex && mkdir -p ${GEN_OUT}/hex && \
   $<TARGET_FILE:patchfuzz> gen --seed 0x4d --size 300 -o ${GEN_OUT}/hex/a.case 2>/dev/null && \
   $<TARGET_FILE:patchfuzz> gen --seed 77 --size 300 -o ${GEN_OUT}/hex/b.case 2>/dev/null && \
   cmp ${GEN_OUT}/hex/a.case ${GEN_OUT}/hex/b.case")
add_test(NAME gen_cli_json_count COMMAND sh -c
  "rm -rf ${GEN_OUT}/count && mkdir -p ${GEN_OUT}/count && \
   $<TARGET_FILE:patchfuzz> gen --seed 5 --count 3 --json -o ${GEN_OUT}/count/dir 2>/dev/null > ${GEN_OUT}/count/stats.json && \
   test $(ls ${GEN_OUT}/count/dir | wc -l) -eq 3 && test $(grep -c '\"insns\":' ${GEN_OUT}/count/stats.json) -eq 3 && \
   grep -q '\"lookups\":' ${GEN_OUT}/count/stats.json && grep -q '\"subprogs\":' ${GEN_OUT}/count/stats.json && \
   grep -q '\"jumps\":' ${GEN_OUT}/count/stats.json && grep -q '\"misc_h_may_goto\":' ${GEN_OUT}/count/stats.json")
file(MAKE_DIRECTORY ${GEN_OUT}/profile)
add_test(NAME gen_cli_profile_json COMMAND $<TARGET_FILE:patchfuzz> gen --profile pyperf180 --seed 1 --json -o ${GEN_OUT}/profile/pyperf180.case)
set_tests_properties(gen_cli_profile_json PROPERTIES PASS_REGULAR_EXPRESSION "\"hash_lookups\":9[0-9][0-9],")
