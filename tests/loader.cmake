# Loader area: our own BPF C test objects, compiled at build time, and the CLI tests of
# `patchfuzz load` / `patchfuzz disasm`. The objects land in ${CMAKE_BINARY_DIR}/bpf_objs/.
# -mcpu is pinned (v3): clang 14 has no v4, and -mcpu=probe would query the host kernel.
find_program(PATCHFUZZ_BPF_CLANG NAMES clang-14 clang REQUIRED)
set(PATCHFUZZ_BPF_OBJ_DIR ${CMAKE_BINARY_DIR}/bpf_objs)
file(GLOB PATCHFUZZ_BPF_C_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bpf_c/*.bpf.c)
set(PATCHFUZZ_BPF_OBJS "")
foreach(src ${PATCHFUZZ_BPF_C_SOURCES})
  get_filename_component(stem ${src} NAME_WE)
  set(obj ${PATCHFUZZ_BPF_OBJ_DIR}/${stem}.bpf.o)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PATCHFUZZ_BPF_OBJ_DIR}
    COMMAND ${PATCHFUZZ_BPF_CLANG} -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu
            -I${CMAKE_CURRENT_SOURCE_DIR}/bpf_c -c ${src} -o ${obj}
    DEPENDS ${src} ${CMAKE_CURRENT_SOURCE_DIR}/bpf_c/common.h
    COMMENT "BPF object ${stem}.bpf.o"
    VERBATIM)
  list(APPEND PATCHFUZZ_BPF_OBJS ${obj})
endforeach()
add_custom_target(patchfuzz_bpf_objs ALL DEPENDS ${PATCHFUZZ_BPF_OBJS})
foreach(t loader_test loader_cli_test program_wire_test case_file_test)
  if(TARGET ${t})
    add_dependencies(${t} patchfuzz_bpf_objs)
  endif()
endforeach()
add_dependencies(patchfuzz patchfuzz_bpf_objs)

set(PF_OBJ ${PATCHFUZZ_BPF_OBJ_DIR})
set(PF_LDT ${CMAKE_BINARY_DIR}/loader_cli_tmp)

# --- patchfuzz load -------------------------------------------------------------------------------
add_test(NAME cli_load_help COMMAND $<TARGET_FILE:patchfuzz> load --help)
set_tests_properties(cli_load_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz load")
add_test(NAME cli_load_hash COMMAND $<TARGET_FILE:patchfuzz> load ${PF_OBJ}/hash_lookup.bpf.o)
set_tests_properties(cli_load_hash PROPERTIES
  PASS_REGULAR_EXPRESSION "program hash_lookup[^\n]*\n[^\n]*xdp.*counts +hash +4 +8 +1024.*lookups: *hash=1")
add_test(NAME cli_load_large_json COMMAND $<TARGET_FILE:patchfuzz> load --json ${PF_OBJ}/large.bpf.o)
set_tests_properties(cli_load_large_json PROPERTIES
  PASS_REGULAR_EXPRESSION "\"open_ms\": [0-9.]+.*\"name\": *\"large\".*\"insns\": *5[0-9][0-9][0-9][0-9],")
add_test(NAME cli_load_missing_arg COMMAND $<TARGET_FILE:patchfuzz> load)
set_tests_properties(cli_load_missing_arg PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_load_nonexistent COMMAND $<TARGET_FILE:patchfuzz> load ${PF_LDT}/does-not-exist.bpf.o)
set_tests_properties(cli_load_nonexistent PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz load: .*does-not-exist.bpf.o: ")
# Malformed objects (made at run time from the good ones) and the >= 50k-insn disasm run are in
# bpf/loader/loader_cli_test.cpp, which drives this binary.

# --- patchfuzz disasm -----------------------------------------------------------------------------
add_test(NAME cli_disasm_help COMMAND $<TARGET_FILE:patchfuzz> disasm --help)
set_tests_properties(cli_disasm_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz disasm")
add_test(NAME cli_disasm_obj_headers COMMAND $<TARGET_FILE:patchfuzz> disasm ${PF_OBJ}/subprog_call.bpf.o)
set_tests_properties(cli_disasm_obj_headers PROPERTIES
  PASS_REGULAR_EXPRESSION "subprog_call.*call pc[+-][0-9]+.*second_entry")
file(MAKE_DIRECTORY ${PF_LDT})
file(WRITE ${PF_LDT}/thirteen.bin "0123456789abc")
add_test(NAME cli_disasm_bad_bin_len COMMAND $<TARGET_FILE:patchfuzz> disasm ${PF_LDT}/thirteen.bin)
set_tests_properties(cli_disasm_bad_bin_len PROPERTIES PASS_REGULAR_EXPRESSION "thirteen.bin: length 13 is not a multiple of 8")

# Inputs by content, not by name: check takes an ELF object (every program of it, "?" sections
# too), and rewrite reads an object named .case as the object it is.
add_test(NAME cli_check_object
         COMMAND $<TARGET_FILE:patchfuzz> check ${CMAKE_BINARY_DIR}/bpf_objs/optional_sec.bpf.o --oracle structural)
set_tests_properties(cli_check_object PROPERTIES
                     PASS_REGULAR_EXPRESSION "# program opt_lookup \\(section tc\\).*# program opt_subprog \\(section socket\\).*0 fail")
add_test(NAME cli_rewrite_format_by_magic
         COMMAND sh -c "cp '${CMAKE_BINARY_DIR}/bpf_objs/divmod.bpf.o' '${CMAKE_BINARY_DIR}/divmod-named.case' && '$<TARGET_FILE:patchfuzz>' rewrite '${CMAKE_BINARY_DIR}/divmod-named.case'")
set_tests_properties(cli_rewrite_format_by_magic PROPERTIES PASS_REGULAR_EXPRESSION "; program divmod \\(section socket")
# check labels an inline proof by what it proves, not by the iterator pass the runner files it under.
add_test(NAME cli_check_labels_proofs
         COMMAND $<TARGET_FILE:patchfuzz> check ${CMAKE_BINARY_DIR}/bpf_objs/divmod.bpf.o --oracle smt-inline --all)
set_tests_properties(cli_check_labels_proofs PROPERTIES
                     PASS_REGULAR_EXPRESSION "pass +smt-inline x86_64 +udiv64 r[0-9], r[0-9] +div/mod guard proved"
                     FAIL_REGULAR_EXPRESSION "iter_inline +div/mod")
