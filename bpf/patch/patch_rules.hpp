#pragma once
// Instruction classifications both patchers share, stated as the kernel's branch walkers see them
// (docs/patching.md §2.1, §3.7). Kept in one place so the two patchers cannot disagree on what is
// relative.
#include <cstdint>
#include <limits>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {

enum class Field : uint8_t { None, Off, Imm };

// Which field bpf_adj_branches() (kernel/bpf/core.c) adjusts: the opcode facts' displacement
// field (isa::InsnFacts::disp), with src_reg deciding for a call (PSEUDO_CALL) and an ld_imm64
// (PSEUDO_FUNC). So JMP/JMP32 class except op EXIT -> off, but gotol -> imm and JMP | CALL -> imm
// for a bpf-to-bpf call only; ld_imm64 PSEUDO_FUNC -> imm.
constexpr Field adj_field(const isa::Insn& i) {
    switch (isa::disp_field(i.code, i.src_reg)) {
        case isa::DispField::Off: return Field::Off;
        case isa::DispField::Imm: return Field::Imm;
        default: return Field::None;
    }
}

// Whether adj_field() can be other than None for an insn with this opcode byte, whatever its
// src_reg: the walkers' first test, since most insns of a program are neither jumps nor ld_imm64.
constexpr bool may_adjust(const isa::Insn& i) { return isa::kInsnFacts[i.code].disp != isa::DispField::None; }

// Which field adjust_jmp_off() (kernel/bpf/fixups.c) matches: JMP/JMP32 class whose op is neither
// CALL nor EXIT; JMP32|JA uses imm, everything else off. A subset of adj_field().
constexpr Field jmp_off_field(const isa::Insn& i) {
    const isa::InsnFacts& f = isa::kInsnFacts[i.code];
    if ((f.cls != BPF_JMP && f.cls != BPF_JMP32) || f.op == BPF_CALL) return Field::None;
    return adj_field(i);  // (src_reg decides nothing for these)
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
