# Passes area (issue 3): `patchfuzz rewrite` through the CLI — the worked example of
# docs/patching.md §6 from a .case, real objects with both patchers giving identical output,
# --json side tables, and every kind of bad input (exit 2, located message).
set(PF_RW ${CMAKE_BINARY_DIR}/passes_cli)
if(NOT DEFINED PF_OBJ)
  set(PF_OBJ ${CMAKE_BINARY_DIR}/bpf_objs)
endif()
file(MAKE_DIRECTORY ${PF_RW})
file(WRITE ${PF_RW}/worked.case
"# docs/patching.md §6: udiv guard at 2, hash lookup inline at 4
-- program name=worked
r1 = 0
if r1 == 0x0 goto pc+3
r2 /= r3
call pc+3
call bpf_map_lookup_elem#1
if r0 != 0x0 goto pc-4
exit
r0 = 1
r0 += 1
exit
-- maps
0 h type=hash key=4 value=8 max_entries=16
-- aux
4 map=0
")
file(WRITE ${PF_RW}/divmod.s
"r0 = 0
w1 s%= w2
r3 /= r4
may_goto pc+1
r0 += 1
exit
")
file(WRITE ${PF_RW}/bad.s "r0 = 0\nr1 +== 2\nexit\n")
file(WRITE ${PF_RW}/odd.bin "1234567")
file(WRITE ${PF_RW}/odd.o "not an ELF object")

foreach(p incremental batched)
  add_test(NAME cli_rewrite_worked_${p} COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/worked.case --patcher ${p} --passes misc_fixups)
  # §6.2 final table: o1 -> +8, A0 +2, A2 +1, call -> +5, B1 +1, B2 += 48 + 8, o5 -> -9
  set_tests_properties(cli_rewrite_worked_${p} PROPERTIES PASS_REGULAR_EXPRESSION
    "10 -> 15 insns.*   1: if r1 == 0x0 goto pc\\+8\n   2: if r3 != 0x0 goto pc\\+2\n   3: w2 \\^= w2\n   4: goto pc\\+1\n   5: r2 /= r3\n   6: call pc\\+5\n   7: call [^\n]*\n   8: if r0 == 0x0 goto pc\\+1\n   9: r0 \\+= 56\n  10: if r0 != 0x0 goto pc-9\n")
endforeach()

add_test(NAME cli_rewrite_help COMMAND $<TARGET_FILE:patchfuzz> rewrite --help)
set_tests_properties(cli_rewrite_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz rewrite")

# A .s without facts: facts inferred, every pass of the x86-64 pipeline (smod32 9, udiv 4, timed
# may_goto 7 + 2-insn prologue): 6 -> 6 + 8 + 3 + 6 + 2 = 25 insns.
add_test(NAME cli_rewrite_asm_x86 COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --arch x86_64)
set_tests_properties(cli_rewrite_asm_x86 PROPERTIES PASS_REGULAR_EXPRESSION "6 -> 25 insns")
# jit32: untimed may_goto (4 + 1-insn prologue) and zext markers after 32-bit defs
add_test(NAME cli_rewrite_asm_jit32 COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --arch jit32 --json)
set_tests_properties(cli_rewrite_asm_jit32 PROPERTIES PASS_REGULAR_EXPRESSION
  "\"arch\":\"jit32\".*\"name\":\"zext\",\"patches\":[1-9].*\"subprogs\":.*\"stack_extra\":8")

# Real objects: both patchers, identical listings (the header line naming the patcher aside).
foreach(obj large hash_lookup array_lookup iter_num loop_callback divmod subprog_call global_data)
  add_test(NAME cli_rewrite_obj_${obj}_same
    COMMAND sh -c "$1 rewrite $2 --patcher incremental --arch $3 > $4.inc.raw && $1 rewrite $2 --patcher batched --arch $3 > $4.bat.raw && grep -v '^; ' $4.inc.raw > $4.inc && grep -v '^; ' $4.bat.raw > $4.bat && cmp $4.inc $4.bat"
            sh $<TARGET_FILE:patchfuzz> ${PF_OBJ}/${obj}.bpf.o arm64 ${PF_RW}/${obj})
endforeach()
add_test(NAME cli_rewrite_hash_inline COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/hash_lookup.bpf.o --passes misc_fixups)
set_tests_properties(cli_rewrite_hash_inline PROPERTIES PASS_REGULAR_EXPRESSION "misc_fixups=[1-9].*call [^\n]*\n *[0-9]+: if r0 == 0x0 goto pc\\+1\n *[0-9]+: r0 \\+= ")
add_test(NAME cli_rewrite_loop_inline COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/loop_callback.bpf.o --passes bpf_loop)
set_tests_properties(cli_rewrite_loop_inline PROPERTIES PASS_REGULAR_EXPRESSION "bpf_loop=1.*if r1 <= 0x800000 goto pc\\+2\n[^\n]*w0 = -7")
add_test(NAME cli_rewrite_iter_v4 COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/iter_num.bpf.o --passes iter_inline)
set_tests_properties(cli_rewrite_iter_v4 PROPERTIES PASS_REGULAR_EXPRESSION "iter_inline=[1-9].*if w2 s> w3 goto pc\\+8.*if r0 > 0x800000 goto pc\\+8")
add_test(NAME cli_rewrite_iter_v3 COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/iter_num.bpf.o --passes iter_inline --iter-inline v3)
set_tests_properties(cli_rewrite_iter_v3 PROPERTIES PASS_REGULAR_EXPRESSION "if w0 s> 0x800000 goto pc\\+8")
add_test(NAME cli_rewrite_iter_off COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/iter_num.bpf.o --passes iter_inline --iter-inline off)
set_tests_properties(cli_rewrite_iter_off PROPERTIES PASS_REGULAR_EXPRESSION "iter_inline=0.*call bpf_iter_num_new")
add_test(NAME cli_rewrite_json COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_OBJ}/hash_lookup.bpf.o --json --patcher batched)
set_tests_properties(cli_rewrite_json PROPERTIES PASS_REGULAR_EXPRESSION
  "\"programs\":.*\"outcome\":\\{\"ok\":true.*\"insns\":.*\"hex\":\"[0-9a-f]+\".*\"aux\":.*\"orig_idx\".*\"subprogs\":.*\"fake_exit\":true.*\"linfo\":.*\"finfo\":.*\"insn_arrays\":.*\"pokes\":.*\"maps\":")

# Bad input: exit 2 and a located message.
add_test(NAME cli_rewrite_bad_arch COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --arch mips)
set_tests_properties(cli_rewrite_bad_arch PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_rewrite_bad_arch_msg COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --arch mips)
set_tests_properties(cli_rewrite_bad_arch_msg PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz rewrite: --arch: unknown arch 'mips'")
add_test(NAME cli_rewrite_bad_pass COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --passes zext,nope)
set_tests_properties(cli_rewrite_bad_pass PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz rewrite: --passes: unknown pass 'nope'")
add_test(NAME cli_rewrite_bad_patcher COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --patcher fast)
set_tests_properties(cli_rewrite_bad_patcher PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz rewrite: --patcher: unknown patcher 'fast'")
add_test(NAME cli_rewrite_bad_iter COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/divmod.s --iter-inline v2)
set_tests_properties(cli_rewrite_bad_iter PROPERTIES PASS_REGULAR_EXPRESSION "--iter-inline: unknown variant 'v2'")
add_test(NAME cli_rewrite_bad_asm COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/bad.s)
set_tests_properties(cli_rewrite_bad_asm PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz rewrite: .*bad.s:2:")
add_test(NAME cli_rewrite_bad_bin COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/odd.bin)
set_tests_properties(cli_rewrite_bad_bin PROPERTIES PASS_REGULAR_EXPRESSION "odd.bin: length 7 is not a multiple of 8")
add_test(NAME cli_rewrite_missing COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/nope.case)
set_tests_properties(cli_rewrite_missing PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz rewrite: .*nope.case: cannot open")
add_test(NAME cli_rewrite_no_input COMMAND $<TARGET_FILE:patchfuzz> rewrite)
set_tests_properties(cli_rewrite_no_input PROPERTIES WILL_FAIL TRUE)
# the exit code itself: 2 for every kind of bad input or usage
function(pf_rewrite_exit2 name)
  add_test(NAME ${name} COMMAND sh -c "\"$0\" \"$@\" 2>/dev/null; test $? -eq 2" $<TARGET_FILE:patchfuzz> rewrite ${ARGN})
endfunction()
pf_rewrite_exit2(cli_rewrite_exit2_arch ${PF_RW}/divmod.s --arch mips)
pf_rewrite_exit2(cli_rewrite_exit2_pass ${PF_RW}/divmod.s --passes nope)
pf_rewrite_exit2(cli_rewrite_exit2_asm ${PF_RW}/bad.s)
pf_rewrite_exit2(cli_rewrite_exit2_bin ${PF_RW}/odd.bin)
pf_rewrite_exit2(cli_rewrite_exit2_missing ${PF_RW}/nope.case)
pf_rewrite_exit2(cli_rewrite_exit2_obj ${PF_RW}/odd.o)
pf_rewrite_exit2(cli_rewrite_exit2_option ${PF_RW}/divmod.s --frobnicate)
pf_rewrite_exit2(cli_rewrite_exit2_noinput)

# --kernel-profile (issue 9): 6.12 emits `w0 = ...` for the processor-id inline and the untimed
# may_goto; 6.1 rejects may_goto (exit 1, the pass failure is printed); a bad profile is exit 2.
file(WRITE ${PF_RW}/profile.s "call bpf_get_smp_processor_id#8\nmay_goto pc+0\nexit\n")
add_test(NAME cli_rewrite_profile_612 COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/profile.s --passes misc_fixups --kernel-profile 6.12)
set_tests_properties(cli_rewrite_profile_612 PROPERTIES PASS_REGULAR_EXPRESSION "w0 = [0-9]+.*r11 = \\*\\(u64 \\*\\)\\(r10 -8\\)")
add_test(NAME cli_rewrite_profile_next COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/profile.s --passes misc_fixups --kernel-profile bpf-next)
set_tests_properties(cli_rewrite_profile_next PROPERTIES PASS_REGULAR_EXPRESSION "r0 = [0-9]+.*r11 = \\*\\(u64 \\*\\)\\(r10 -16\\)")
add_test(NAME cli_rewrite_profile_61 COMMAND sh -c "\"$0\" \"$@\"; test $? -eq 1" $<TARGET_FILE:patchfuzz> rewrite ${PF_RW}/profile.s --passes misc_fixups --kernel-profile 6.1)
pf_rewrite_exit2(cli_rewrite_exit2_profile ${PF_RW}/profile.s --kernel-profile 5.15)
