#pragma once
// The one table of legal instruction encodings (PREVAIL's and uBPF's tables are the model).
//
// A row names one opcode byte plus the values its other fields may take. Several rows can share a
// code byte; they are then told apart by a field with a fixed value (the call's src_reg, the atomic
// op in imm, movsx's off, ...). Everything that decides "is this encoding legal" lives here: the
// validator, the disassembler/assembler round-trip tests and the 256-opcode sweep are all driven
// by this table, so a new encoding is one new row. What an opcode byte means (its control flow,
// the registers it reads and defines, ...) is insn_facts.hpp's table; insn_facts_test holds the
// two to each other.
//
// Sources of the rules: kernel/bpf/verifier.c (resolve_pseudo_ldimm64, check_alu_op, check_mem_insn,
// check_atomic, do_check's "reserved fields" checks, check_subprogs), include/linux/filter.h
// (kernel-internal encodings), Documentation/bpf/standardization/instruction-set.rst (cpu versions).
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::isa {

enum class Group : uint8_t {
    Alu,       // ALU / ALU64 (incl. mov, movsx, neg, endian/bswap, sdiv/smod, addr_space_cast)
    Jump,      // conditional jumps, goto, gotol, gotox, may_goto
    Call,      // helper, bpf-to-bpf (pseudo) and kfunc calls
    Exit,
    Load,      // LDX (MEM, MEMSX, PROBE_*)
    Store,     // ST / STX (MEM, PROBE_MEM32)
    Atomic,    // STX | ATOMIC / PROBE_ATOMIC
    LdImm64,   // LD | IMM | DW, two slots
    LdPacket,  // legacy LD | ABS / IND
    Nospec,    // ST | NOSPEC (internal)
    TailCall,  // JMP | 0xf0 (internal)
};

// What one field may hold.
enum class Rule : uint8_t {
    Zero,      // reserved: must be 0
    Any,       // any value of the field's type
    Reg,       // a register that is read: r0..r10 (r11 = BPF_REG_AX only in internal code)
    RegWrite,  // a register that is written: r0..r9 (r10 is read-only; r11 = AX internal only)
    OneOf,     // one of `values[0..count)`
    Target,    // a relative jump/call displacement (any value; the validator checks the target)
};

struct FieldRule {
    Rule rule = Rule::Zero;
    std::array<int32_t, 3> values{};
    uint8_t count = 0;

    // Whether `v` is allowed, ignoring the AX/internal distinction (r11 counts as a register).
    [[nodiscard]] bool allows(int64_t v) const;
};

struct OpcodeRow {
    uint8_t code = 0;
    FieldRule dst, src, off, imm;
    FieldRule imm2;            // ldimm64 only: the second slot's imm (Zero or Any)
    bool dst_eq_src = false;   // zext marker: dst_reg must equal src_reg
    uint8_t cpu = 1;           // first -mcpu version with this encoding (1..4); internal rows: 1
    Group group = Group::Alu;
    const char* mnemonic = ""; // unique per row, e.g. "add64_imm", "ldxw", "call_kfunc"
    bool internal = false;     // only the kernel creates it (never accepted from user space)
};

// Every legal encoding, user-visible and kernel-internal, through cpu v4.
std::span<const OpcodeRow> opcode_table();

// All rows with this code byte (empty: the byte is not an instruction).
std::span<const OpcodeRow* const> rows_for_code(uint8_t code);

// The row that `insn` matches exactly (all fields), or nullptr. `allow_internal` = false skips
// internal rows and refuses r11 (AX) in register fields. ldimm64's second slot is not looked at.
const OpcodeRow* match_row(const Insn& insn, bool allow_internal = true);

// Lower-case name of a field as used in messages: "dst_reg", "src_reg", "off", "imm".
const char* field_name(int field);  // 0 dst, 1 src, 2 off, 3 imm

// Human text of the rule's allowed values: "0", "one of 8, 16, 32".
std::string describe_allowed(const FieldRule& r);

// A random legal encoding of `row` (2 insns for ldimm64, else 1), for generators and tests.
// Register fields use r11 (AX) only if `allow_ax`. Jump displacements are arbitrary (the caller
// places the insn into a program and fixes targets if it needs valid ones).
std::vector<Insn> random_encoding(const OpcodeRow& row, Rng& rng, bool allow_ax = false);

}  // namespace patchfuzz::isa
