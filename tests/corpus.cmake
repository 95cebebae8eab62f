# The regression corpus: every .case under corpus/regression carries its expected verdict; replay
# them all, twice, and require the same outcome both times (determinism guard of issue 8).
add_test(NAME corpus_replay
         COMMAND $<TARGET_FILE:patchfuzz> replay ${PATCHFUZZ_SOURCE_ROOT}/corpus/regression --times 2)
set_tests_properties(corpus_replay PROPERTIES TIMEOUT 900 PASS_REGULAR_EXPRESSION "[1-9][0-9]* passed, 0 failed")
# The seeds of the .case parser's fuzz target are the corpus itself.
add_test(NAME case_parse_fuzz_corpus_replay COMMAND case_parse_fuzz_replay ${PATCHFUZZ_SOURCE_ROOT}/corpus/regression)
