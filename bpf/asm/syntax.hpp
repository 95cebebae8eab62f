#pragma once
// Tables shared by the kernel-syntax disassembler and assembler: operator spellings
// (kernel/bpf/disasm.c bpf_alu_string / bpf_jmp_string) and helper names (func_id_str, built from
// the uapi __BPF_FUNC_MAPPER so it follows linux/bpf.h).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::assembly {

// "+=", "-=", ..., "=", "s>>=" for an ALU op (code & 0xf0); "?" for END/NEG.
const char* alu_op_string(uint8_t op);
// "==", ">", ..., "s<=" for a conditional jump op (code & 0xf0).
const char* jmp_op_string(uint8_t op);

// "bpf_map_lookup_elem" for 1, ...; "unknown" outside the uapi table (as the kernel prints).
std::string_view helper_name(int32_t id);
// The id of a helper name ("bpf_map_lookup_elem" -> 1), if it is one.
std::optional<int32_t> helper_id(std::string_view name);

// How many slots disassemble() prints as one line at pc (2 for a legal ldimm64 pair, else 1).
size_t insn_width(std::span<const isa::Insn> insns, size_t pc);

}  // namespace patchfuzz::assembly
