#pragma once
// Two questions the batched patcher asks of every insn it copies or writes, answered by a table
// lookup on the opcode byte wherever that byte alone decides (nearly every insn):
//  * adj_field() (patch_rules.hpp) reads only `code` and `src_reg`, so its table is built at
//    compile time from all 16 src_reg values of every code (src_reg decides for a call, PSEUDO_CALL,
//    and for ld_imm64, PSEUDO_FUNC);
//  * isa::insn_has_def32() also reads `imm`, but only for STX (atomics) and END ops: those codes
//    are left to the function, every other code's answer is tabled once from it.
// by_opcode_test.cpp holds both to the functions over every code, register and telling imm.
#include <array>
#include <cstdint>

#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {

// adj_field() of one opcode byte: `field` for the src_reg values in `src_mask` (bit r: src_reg r),
// None for the others. One field per code is all adj_field() ever gives (checked below).
struct AdjByCode {
    uint16_t src_mask = 0;
    Field field = Field::None;
};

inline constexpr auto kAdjByCode = [] {
    std::array<AdjByCode, 256> t{};
    for (unsigned code = 0; code < 256; ++code) {
        isa::Insn i{};
        i.code = static_cast<uint8_t>(code);
        for (uint8_t src = 0; src < 16; ++src) {
            i.src_reg = src;
            const Field f = adj_field(i);
            if (f == Field::None) continue;
            if (t[code].src_mask != 0 && t[code].field != f) throw "two fields for one opcode";
            t[code].src_mask = static_cast<uint16_t>(t[code].src_mask | 1u << src);
            t[code].field = f;
        }
    }
    return t;
}();

// Whether adj_field() can be other than None for this opcode byte, whatever the registers.
constexpr bool may_adjust(const isa::Insn& i) { return kAdjByCode[i.code].src_mask != 0; }

// adj_field(i), by the table.
constexpr Field adj_field_by_code(const isa::Insn& i) {
    const AdjByCode& a = kAdjByCode[i.code];
    return (a.src_mask >> i.src_reg) & 1 ? a.field : Field::None;
}

enum class Def32ByCode : uint8_t { No, Yes, ByImm };

// Not constexpr: isa::insn_has_def32() is not. Filled once at start-up.
inline const auto kDef32ByCode = [] {
    std::array<Def32ByCode, 256> t{};
    for (unsigned code = 0; code < 256; ++code) {
        isa::Insn i{};
        i.code = static_cast<uint8_t>(code);
        const bool alu = isa::cls(i) == BPF_ALU || isa::cls(i) == BPF_ALU64;
        if (isa::cls(i) == BPF_STX || (alu && isa::op(i) == BPF_END))
            t[code] = Def32ByCode::ByImm;
        else
            t[code] = isa::insn_has_def32(i) ? Def32ByCode::Yes : Def32ByCode::No;
    }
    return t;
}();

// isa::insn_has_def32(i), by the table.
inline bool has_def32_by_code(const isa::Insn& i) {
    const Def32ByCode k = kDef32ByCode[i.code];
    if (k == Def32ByCode::ByImm) [[unlikely]]
        return isa::insn_has_def32(i);
    return k == Def32ByCode::Yes;
}

}  // namespace patchfuzz::patch
