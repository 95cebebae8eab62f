# The regression corpus: every .case under corpus/regression carries its expected verdict. One
# ctest per case (named corpus/<folder>/<file>, so a failure names its file), each replayed twice
# and required to give the same outcome both times (the determinism guard of issue 8).
file(GLOB_RECURSE PATCHFUZZ_REGRESSION_CASES CONFIGURE_DEPENDS ${PATCHFUZZ_SOURCE_ROOT}/corpus/regression/*.case)
foreach(case_path ${PATCHFUZZ_REGRESSION_CASES})
  file(RELATIVE_PATH case_name ${PATCHFUZZ_SOURCE_ROOT} ${case_path})
  add_test(NAME ${case_name} COMMAND $<TARGET_FILE:patchfuzz> replay ${case_path} --times 2)
  set_tests_properties(${case_name} PROPERTIES TIMEOUT 300 LABELS corpus)
endforeach()
# The seeds of the .case parser's fuzz target are the corpus itself.
add_test(NAME case_parse_fuzz_corpus_replay COMMAND case_parse_fuzz_replay ${PATCHFUZZ_SOURCE_ROOT}/corpus/regression)
