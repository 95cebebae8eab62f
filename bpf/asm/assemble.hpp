#pragma once
// Assembler for the kernel syntax printed by disassemble() (see bpf/asm/SYNTAX.md), with or without
// bpftool-style "N: (xx)" prefixes, plus labels as an extension:
//   loop:                  (a label on its own line)
//   goto loop / if r1 > 5 goto loop / gotol loop / may_goto loop / call subprog_name
// Comments start with ';', '#' or '//'. Errors are located "file:line:col: message":
//   prog.s:7:9: unknown mnemonic 'ad64'
//   prog.s:3:12: register r12 out of range
//   prog.s:4:1: undefined label 'lop'
//   prog.s:5:14: immediate 4294967296 does not fit in 32 bits
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::assembly {

Expected<std::vector<isa::Insn>> assemble(std::string_view text, std::string_view filename = "<input>");

}  // namespace patchfuzz::assembly
