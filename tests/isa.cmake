# ISA area (issue 2): CLI tests of `patchfuzz asm`. Inputs are written into the build tree at
# configure time; one driver script runs the binary and checks the exit code, stderr verbatim and,
# for good input, the output bytes (expected bytes written by hand from the uapi encoding).
set(PF_ISA_DIR ${CMAKE_BINARY_DIR}/isa_cli)
file(MAKE_DIRECTORY ${PF_ISA_DIR})
file(WRITE ${PF_ISA_DIR}/good.s "; r0 = 42, then exit\n    r0 = 42\nloop:\n    if w0 s> 0x5 goto out\n    goto loop\nout:\n    r1 = 0x100000000\n    exit\n")
file(WRITE ${PF_ISA_DIR}/bad_mnemonic.s "r0 = 0\n    ad64 r1, 2\nexit\n")
file(WRITE ${PF_ISA_DIR}/bad_reg.s "r0 = 0\nr3 = r12\nexit\n")
file(WRITE ${PF_ISA_DIR}/bad_label.s "r0 = 0\ngoto lop\nexit\n")
file(WRITE ${PF_ISA_DIR}/bad_imm.s "r0 = 0\nr1 += 4294967296\nexit\n")
file(WRITE ${PF_ISA_DIR}/bad_target.s "goto pc+5\nexit\n")
file(WRITE ${PF_ISA_DIR}/internal.s "nospec\nr0 = 0\nexit\n")

# Driver: run patchfuzz with ARGS (|-separated), expect exit code RC, stderr == ERR (if given) and
# the file OUT to hold HEX (if given).
file(WRITE ${PF_ISA_DIR}/check.cmake [=[
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${PF} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}\nstdout: ${out}\nstderr: ${err}")
endif()
if(DEFINED ERR AND NOT err STREQUAL "${ERR}\n")
  message(FATAL_ERROR "stderr:\n${err}\nexpected:\n${ERR}\n")
endif()
if(DEFINED HEX)
  file(READ ${OUT} got HEX)
  if(NOT got STREQUAL HEX)
    message(FATAL_ERROR "output bytes\n${got}\nexpected\n${HEX}")
  endif()
endif()
]=])

function(pf_isa_cli name rc)
  cmake_parse_arguments(A "" "ERR;HEX;OUT" "ARGS" ${ARGN})
  # ctest would split a ;-list into separate arguments: pass ARGS |-separated instead.
  string(REPLACE ";" "|" args "${A_ARGS}")
  set(defs -DPF=$<TARGET_FILE:patchfuzz> "-DARGS=${args}" -DRC=${rc})
  if(DEFINED A_ERR)
    list(APPEND defs "-DERR=${A_ERR}")
  endif()
  if(DEFINED A_HEX)
    list(APPEND defs -DHEX=${A_HEX} -DOUT=${A_OUT})
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${defs} -P ${PF_ISA_DIR}/check.cmake)
endfunction()

add_test(NAME isa_asm_help COMMAND $<TARGET_FILE:patchfuzz> asm --help)
set_tests_properties(isa_asm_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz asm IN.s -o OUT.bin")
# b7 r0=42 | 66 jsgt32 w0,5,+1 | 05 goto -2 | 18 ldimm64 r1 lo=0 | 00 hi=1 | 95 exit
pf_isa_cli(isa_asm_good 0 ARGS asm ${PF_ISA_DIR}/good.s -o ${PF_ISA_DIR}/good.bin OUT ${PF_ISA_DIR}/good.bin
           HEX b70000002a00000066000100050000000500feff00000000180100000000000000000000010000009500000000000000)
pf_isa_cli(isa_asm_bad_mnemonic 2 ARGS asm ${PF_ISA_DIR}/bad_mnemonic.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/bad_mnemonic.s:2:5: unknown mnemonic 'ad64'")
pf_isa_cli(isa_asm_bad_reg 2 ARGS asm ${PF_ISA_DIR}/bad_reg.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/bad_reg.s:2:6: register r12 out of range")
pf_isa_cli(isa_asm_bad_label 2 ARGS asm ${PF_ISA_DIR}/bad_label.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/bad_label.s:2:6: undefined label 'lop'")
pf_isa_cli(isa_asm_bad_imm 2 ARGS asm ${PF_ISA_DIR}/bad_imm.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/bad_imm.s:2:7: immediate 4294967296 does not fit in 32 bits")
pf_isa_cli(isa_asm_bad_target 2 ARGS asm ${PF_ISA_DIR}/bad_target.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/bad_target.s: pc 0: jump to pc 6 out of range (2 insns)")
pf_isa_cli(isa_asm_internal_user 2 ARGS asm ${PF_ISA_DIR}/internal.s -o ${PF_ISA_DIR}/x.bin --user
           ERR "patchfuzz asm: ${PF_ISA_DIR}/internal.s: pc 0: kernel-internal insn 'nospec' not allowed")
pf_isa_cli(isa_asm_internal_ok 0 ARGS asm ${PF_ISA_DIR}/internal.s -o ${PF_ISA_DIR}/internal.bin --internal
           OUT ${PF_ISA_DIR}/internal.bin HEX c200000000000000b7000000000000009500000000000000)
# An input program never holds r11 (BPF_REG_AX): the verifier rejects it; only rewritten code does.
file(WRITE ${PF_ISA_DIR}/ax.s "r11 = 1\nr0 = 0\nexit\n")
pf_isa_cli(isa_asm_r11_rejected 2 ARGS asm ${PF_ISA_DIR}/ax.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/ax.s: pc 0: dst_reg r11 (BPF_REG_AX) only allowed in kernel-internal code")
add_test(NAME isa_rewrite_r11_rejected COMMAND $<TARGET_FILE:patchfuzz> rewrite ${PF_ISA_DIR}/ax.s)
set_tests_properties(isa_rewrite_r11_rejected PROPERTIES
                     PASS_REGULAR_EXPRESSION "ax.s: pc 0: dst_reg r11 \\(BPF_REG_AX\\) only allowed in kernel-internal code")
add_test(NAME isa_check_r11_rejected COMMAND $<TARGET_FILE:patchfuzz> check ${PF_ISA_DIR}/ax.s)
set_tests_properties(isa_check_r11_rejected PROPERTIES
                     PASS_REGULAR_EXPRESSION "ax.s: pc 0: dst_reg r11 \\(BPF_REG_AX\\) only allowed in kernel-internal code")
pf_isa_cli(isa_asm_missing_input 2 ARGS asm ${PF_ISA_DIR}/nope.s -o ${PF_ISA_DIR}/x.bin
           ERR "patchfuzz asm: ${PF_ISA_DIR}/nope.s: cannot open: No such file or directory")
pf_isa_cli(isa_asm_missing_out 2 ARGS asm ${PF_ISA_DIR}/good.s ERR "patchfuzz asm: missing -o OUT.bin")
pf_isa_cli(isa_asm_bad_option 2 ARGS asm --frob ERR "patchfuzz asm: unknown option '--frob' (see --help)")
