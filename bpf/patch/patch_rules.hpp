#pragma once
// Instruction classifications both patchers share, stated as the kernel's branch walkers see them
// (docs/patching.md §2.1, §3.7). Kept in one place so the two patchers cannot disagree on what is
// relative.
#include <array>
#include <cstdint>
#include <limits>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {

enum class Field : uint8_t { None, Off, Imm };

// Which field bpf_adj_branches() (kernel/bpf/core.c) adjusts: ld_imm64 PSEUDO_FUNC -> imm;
// JMP/JMP32 class except op EXIT; exactly JMP|CALL only with src PSEUDO_CALL -> imm;
// exactly JMP32|JA (gotol) -> imm; every other JMP/JMP32 insn (cond jumps, ja, may_goto, gotox,
// tail call, callx) -> off.
constexpr Field adj_field(const isa::Insn& i) {
    if (isa::is_pseudo_func(i)) return Field::Imm;
    if (!isa::is_jmp_class(i) || isa::op(i) == BPF_EXIT) return Field::None;
    if (i.code == (BPF_JMP | BPF_CALL)) return i.src_reg == BPF_PSEUDO_CALL ? Field::Imm : Field::None;
    if (i.code == (BPF_JMP32 | BPF_JA)) return Field::Imm;
    return Field::Off;
}

// adj_field(i) != None is only possible for these opcode bytes (ld_imm64, and JMP/JMP32 class
// but EXIT): a table the walkers test first, since most insns of a program are neither.
inline constexpr auto kMayAdjust = [] {
    std::array<bool, 256> t{};
    for (unsigned code = 0; code < 256; ++code) {
        const unsigned cls = code & 0x07;
        t[code] = code == (BPF_LD | BPF_IMM | BPF_DW) ||
                  ((cls == BPF_JMP || cls == BPF_JMP32) && (code & 0xf0) != BPF_EXIT);
    }
    return t;
}();

// Which field adjust_jmp_off() (kernel/bpf/fixups.c) matches: JMP/JMP32 class whose op is neither
// CALL nor EXIT; JMP32|JA uses imm, everything else off. A subset of adj_field().
constexpr Field jmp_off_field(const isa::Insn& i) {
    if (!isa::is_jmp_class(i) || isa::op(i) == BPF_CALL || isa::op(i) == BPF_EXIT) return Field::None;
    return i.code == (BPF_JMP32 | BPF_JA) ? Field::Imm : Field::Off;
}

constexpr int64_t get_disp(const isa::Insn& i, Field f) { return f == Field::Off ? i.off : f == Field::Imm ? i.imm : 0; }
// Plain C assignment (truncation), as the kernel stores a computed displacement.
constexpr void set_disp(isa::Insn& i, Field f, int64_t v) {
    if (f == Field::Off) i.off = static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(v)));
    if (f == Field::Imm) i.imm = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}
constexpr bool fits(Field f, int64_t v) {
    if (f == Field::Off) return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
    if (f == Field::Imm) return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    return true;
}
constexpr int64_t field_max(Field f) {
    return f == Field::Off ? std::numeric_limits<int16_t>::max() : std::numeric_limits<int32_t>::max();
}

// Length change of one patch: Replace n-1, InsertBefore prologue size, Remove -count.
inline int64_t growth(const Patch& p) {
    switch (p.kind) {
        case PatchKind::Replace: return static_cast<int64_t>(p.insns.size()) - 1;
        case PatchKind::InsertBefore: return static_cast<int64_t>(p.insns.size());
        case PatchKind::Remove: return -static_cast<int64_t>(p.count);
    }
    return 0;
}

// Length of the buffer the kernel applies at `pos` (the patch-local `n`).
inline int64_t local_len(const Patch& p) {
    return p.kind == PatchKind::InsertBefore ? static_cast<int64_t>(p.insns.size()) + 1
                                             : static_cast<int64_t>(p.insns.size());
}

// The outcome both patchers report for a failed patch (docs/patching.md §3: callers turn NULL into -ENOMEM).
PatchOutcome erange_outcome(const Patch& p, uint32_t orig_idx);
PatchOutcome invalid_outcome(const std::string& msg);

}  // namespace patchfuzz::patch
