# The external-patcher C ABI (include/patchfuzz/patcher.h): the example plugin built from our own
# batched patcher, two broken variants (crashing, wrong ABI version), and campaigns that load them.
foreach(variant IN ITEMS example crash hang scribble badabi)
  add_library(patchfuzz_${variant}_patcher MODULE
              ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/example/example_batched_plugin.cpp
              ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/pf_convert.cpp)
  target_link_libraries(patchfuzz_${variant}_patcher PRIVATE patchfuzz_patch)
  target_include_directories(patchfuzz_${variant}_patcher PRIVATE ${PATCHFUZZ_SOURCE_ROOT})
  set_target_properties(patchfuzz_${variant}_patcher PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endforeach()
target_compile_definitions(patchfuzz_crash_patcher PRIVATE PATCHFUZZ_EXAMPLE_CRASH)
target_compile_definitions(patchfuzz_hang_patcher PRIVATE PATCHFUZZ_EXAMPLE_HANG)
target_compile_definitions(patchfuzz_scribble_patcher PRIVATE PATCHFUZZ_EXAMPLE_SCRIBBLE)
target_compile_definitions(patchfuzz_badabi_patcher PRIVATE PATCHFUZZ_EXAMPLE_ABI=99)
add_dependencies(patchfuzz patchfuzz_example_patcher patchfuzz_crash_patcher patchfuzz_hang_patcher patchfuzz_scribble_patcher
                 patchfuzz_badabi_patcher)

add_test(NAME plugin_example_agrees
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 40 --seed 3 --quiet --oracles structural
                 --out ${CMAKE_BINARY_DIR}/plugin-example-out
                 --patcher-lib $<TARGET_FILE:patchfuzz_example_patcher>)
# The same in the isolated host process from the first call (shared memory, futex handshake).
add_test(NAME plugin_example_agrees_isolated
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 40 --seed 3 --quiet --oracles structural --plugin-isolated
                 --out ${CMAKE_BINARY_DIR}/plugin-example-isolated-out
                 --patcher-lib $<TARGET_FILE:patchfuzz_example_patcher>)
add_test(NAME plugin_crash_is_a_finding
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 10 --seed 3 --quiet --oracles structural --arch x86_64
                 --out ${CMAKE_BINARY_DIR}/plugin-crash-out
                 --patcher-lib $<TARGET_FILE:patchfuzz_crash_patcher>)
# exit 1 (a finding) is expected; the regex decides: the crash became a structural finding.
set_tests_properties(plugin_crash_is_a_finding PROPERTIES
                     PASS_REGULAR_EXPRESSION "finding structural/[a-z_]+/[a-z+-]+/error-mismatch/x86_64")
add_test(NAME plugin_wrong_abi_rejected
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 1 --patcher-lib $<TARGET_FILE:patchfuzz_badabi_patcher>)
set_tests_properties(plugin_wrong_abi_rejected PROPERTIES
                     PASS_REGULAR_EXPRESSION "ABI version 99, patchfuzz speaks version 1")
add_test(NAME plugin_missing_rejected
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 1 --patcher-lib /nonexistent/x.so)
set_tests_properties(plugin_missing_rejected PROPERTIES PASS_REGULAR_EXPRESSION "/nonexistent/x.so: no such file")
# Files that are no plugin get told so before dlopen: a BPF object, a text file, a directory.
add_test(NAME plugin_bpf_object_rejected
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --runs 1 --patcher-lib ${PATCHFUZZ_BPF_OBJ_DIR}/divmod.bpf.o)
set_tests_properties(plugin_bpf_object_rejected PROPERTIES
                     PASS_REGULAR_EXPRESSION "divmod.bpf.o: a BPF object \\(ELF machine eBPF\\), not a shared library")
add_test(NAME plugin_not_elf_rejected
         COMMAND sh -c "'$<TARGET_FILE:patchfuzz>' fuzz --runs 1 --patcher-lib '${PATCHFUZZ_SOURCE_ROOT}/README.md' 2>&1; test $? -eq 2")
set_tests_properties(plugin_not_elf_rejected PROPERTIES PASS_REGULAR_EXPRESSION "README.md: not an ELF file")
add_test(NAME plugin_directory_rejected
         COMMAND sh -c "'$<TARGET_FILE:patchfuzz>' fuzz --runs 1 --patcher-lib '${PATCHFUZZ_SOURCE_ROOT}/corpus' 2>&1; test $? -eq 2")
set_tests_properties(plugin_directory_rejected PROPERTIES PASS_REGULAR_EXPRESSION "corpus: is a directory")
# A plugin that hangs and one that writes into its (read-only) input: each ends as a finding whose
# bucket and verdict name what the plugin did (one bucket per misbehaviour), within the test's 60 s, and the campaign ends normally (exit 1:
# findings). The crash variant above runs the same path through a signal.
foreach(misbehaviour IN ITEMS hang scribble crash)
  if(misbehaviour STREQUAL "hang")
    set(said "bucket: structural/plugin-hung\n.*hung \\(no answer within 2 s")
  elseif(misbehaviour STREQUAL "scribble")
    set(said "bucket: structural/plugin-wrote-input\n.*wrote into its input")
  else()
    set(said "bucket: structural/plugin-crashed\n.*crashed \\(signal 4, Illegal instruction\\)")
  endif()
  set(out ${CMAKE_BINARY_DIR}/plugin-${misbehaviour}-finding-out)
  add_test(NAME plugin_${misbehaviour}_ends_as_a_finding
           COMMAND sh -c "rm -rf '${out}'; '$<TARGET_FILE:patchfuzz>' fuzz --seconds 30 --seed 5 --quiet --no-known --out '${out}' --patcher-lib '$<TARGET_FILE:patchfuzz_${misbehaviour}_patcher>' >/dev/null 2>&1; rc=$?; test $rc -eq 1 || { echo \"exit $rc\"; exit 1; }; cat '${out}'/findings/*/verdict.txt")
  set_tests_properties(plugin_${misbehaviour}_ends_as_a_finding PROPERTIES TIMEOUT 60 PASS_REGULAR_EXPRESSION "${said}")
endforeach()
