# Triage's kernel selftest snippets must be C that clang compiles for BPF: each filed finding
# whose program clang 14 can express (no cpu v4 insns, no gotox) is triaged, and its
# repro_selftest.c, with the shim standing in for bpf_misc.h, is compiled with -target bpf.
find_program(PATCHFUZZ_BPF_CLANG NAMES clang-14 clang REQUIRED)
set(PF_SNIP ${CMAKE_BINARY_DIR}/selftest_snippet)
set(PF_FINDINGS ${PATCHFUZZ_SOURCE_ROOT}/corpus/regression/findings)
foreach(f 0002-bpf-loop-e2big-upper-half-in-stack 0005-bpf-loop-e2big-upper-half-in-branch
          0007-bpf-loop-nr-loops-upper-half 0008-get-func-arg-index-upper-half)
  add_test(NAME selftest_snippet_compiles_${f} COMMAND sh -c
    "rm -rf ${PF_SNIP}/${f} && mkdir -p ${PF_SNIP}/${f} && \
     '$<TARGET_FILE:patchfuzz>' triage ${PF_FINDINGS}/${f}.case --out ${PF_SNIP}/${f}/t >/dev/null; \
     test $? -eq 1 || exit 1; \
     s=$(find ${PF_SNIP}/${f}/t -name repro_selftest.c) && test -n \"$s\" && \
     { echo '#include \"selftest_shim.h\"'; cat \"$s\"; echo 'char _license[] SEC(\"license\") = \"GPL\";'; } > ${PF_SNIP}/${f}/prog.c && \
     ${PATCHFUZZ_BPF_CLANG} -target bpf -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
       -I${CMAKE_CURRENT_SOURCE_DIR}/selftest_snippet -c ${PF_SNIP}/${f}/prog.c -o ${PF_SNIP}/${f}/prog.o")
endforeach()
