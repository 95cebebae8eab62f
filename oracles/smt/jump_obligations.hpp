#pragma once
// The jump oracle's obligations, private to oracles/smt and free of Z3: relations over the segment
// deltas D that the contract requires (Ob), the rule each one checks with its report text, and
// holds(), which evaluates one on a concrete D. jump_oracle.cpp builds them; jump_solver.cpp asks
// Z3 whether some D violates one.
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::oracles::smt::jump {

// ---- obligations --------------------------------------------------------------------------------
// Every obligation is over the segment deltas D (D[0] = 0, D[i+1] = D[i] + n_i - 1):
//   Eq:     D[a] - D[b] == k
//   FitsN:  D[b] - D[a] + k fits in a signed N-bit field
enum class ObKind : uint8_t { Eq, Fits16, Fits32 };

enum class Rule : uint8_t {
    JumpTarget,        // unpatched transfer relocates through S
    FirstInsnOfPatch,  // ... to a patched insn: first insn of its patch
    PrologueRedirect,  // plain jump to an InsertBefore position skips the prologue (adjust_jmp_off)
    PatchInternal,     // in-patch target inside the patch: displacement kept
    PatchOutgoing,     // in-patch target outside the patch: local->original rule then S
    SubprogStart,
    FakeExit,
    Linfo,
    InsnArray,
    Poke,
    ErangeNotReported,  // a relocated displacement does not fit, outcome ok
    ErangeMay,          // in-patch outgoing displacement that does not fit (kernel: truncated)
    CopiedRelativeJump,
};

inline const char* rule_name(Rule r) {
    switch (r) {
        case Rule::JumpTarget: return "jump-target";
        case Rule::FirstInsnOfPatch: return "first-insn-of-patch";
        case Rule::PrologueRedirect: return "prologue-redirect";
        case Rule::PatchInternal: return "patch-internal-target";
        case Rule::PatchOutgoing: return "patch-outgoing-target";
        case Rule::SubprogStart: return "subprog-start";
        case Rule::FakeExit: return "fake-exit";
        case Rule::Linfo: return "linfo";
        case Rule::InsnArray: return "insn-array";
        case Rule::Poke: return "poke";
        case Rule::ErangeNotReported: return "erange-not-reported";
        case Rule::ErangeMay: return "erange-in-patch";
        case Rule::CopiedRelativeJump: return "copied-relative-jump";
    }
    return "?";
}

inline const char* rule_text(Rule r) {
    switch (r) {
        case Rule::JumpTarget: return "a relative transfer lands on S(original target) (docs/patching.md §7.1, bpf_adj_branches)";
        case Rule::FirstInsnOfPatch:
            return "a transfer that named the patched insn lands on the first insn of its patch (docs/patching.md §2.1)";
        case Rule::PrologueRedirect:
            return "a plain jump to a prologue-patched insn skips the prologue (adjust_jmp_off, docs/patching.md §3.7)";
        case Rule::PatchInternal: return "in-patch displacements to slots of the same patch are never adjusted (docs/patching.md §2.1)";
        case Rule::PatchOutgoing:
            return "an outgoing in-patch transfer lands on S(local->original target) (docs/patching.md §7.2)";
        case Rule::SubprogStart: return "subprog start maps through S: start <= off stays (adjust_subprog_starts, §3.2)";
        case Rule::FakeExit: return "the fake exit subprog start is the new program length S(N) (§3.2)";
        case Rule::Linfo: return "line info insn_off maps through S: insn_off <= off stays (bpf_adj_linfo, §2.2)";
        case Rule::InsnArray: return "insn-array xlated_off maps through S: xlated_off <= off stays (§3.5)";
        case Rule::Poke: return "poke insn_idx maps through S: insn_idx <= off stays (adjust_poke_descs, §3.3)";
        case Rule::ErangeNotReported:
            return "a relocated displacement that does not fit its field must make the patch fail with -ERANGE (§2, §7.3)";
        case Rule::ErangeMay: return "in-patch outgoing displacement does not fit its field";
        case Rule::CopiedRelativeJump:
            return "a relative jump copied into a non-first slot of its own patch keeps its displacement, so its "
                   "target moves (docs/patching.md §8)";
    }
    return "?";
}

struct Ob {
    ObKind kind = ObKind::Eq;
    uint32_t a = 0, b = 0;
    int64_t k = 0;
    // context for the report
    Rule rule = Rule::JumpTarget;
    int64_t orig = -1;        // original index of the jumping insn / table entry value
    int64_t new_idx = -1;     // concrete new index of the jumping insn (-1: table entry)
    int64_t base = 0;         // for transfers: new index = base + D[a]
    int64_t target = 0;       // original target T (transfers) / original table value
    int64_t redirect = 0;     // prologue length added to the expected target
    int64_t actual = 0;       // actual target (transfers) or actual table value
    int64_t patch_slot = -1;  // slot j when the jumper sits in a patch
    uint32_t table_idx = 0;
    const char* what = "";
};

struct ObKey {
    ObKind kind;
    uint32_t a, b;
    int64_t k;
    bool operator==(const ObKey&) const = default;
};

inline const char* transfer_kind(const isa::Insn& in) {
    if (isa::is_pseudo_func(in)) return "PSEUDO_FUNC ld_imm64 (imm s32)";
    if (isa::is_pseudo_call(in)) return "pseudo call (imm s32)";
    if (isa::is_gotol(in)) return "gotol (imm s32)";
    if (isa::is_ja(in)) return "ja (off s16)";
    if (isa::is_may_goto(in)) return "may_goto (off s16)";
    if (isa::is_gotox(in)) return "gotox (off s16)";
    if (isa::is_tail_call(in)) return "tail call (off s16)";
    return "conditional jump (off s16)";
}

// adjust_jmp_off() moves only JMP/JMP32-class insns other than CALL/EXIT.
inline bool is_plain_jump(const isa::Insn& in) { return isa::is_jmp_class(in) && !isa::is_call(in) && !isa::is_exit(in); }

inline ObKind fits_kind(const isa::Insn& in) {
    return isa::relative_field(in) == isa::RelField::Off16 ? ObKind::Fits16 : ObKind::Fits32;
}

inline bool holds(const Ob& o, const std::vector<int64_t>& d) {
    switch (o.kind) {
        case ObKind::Eq: return d[o.a] - d[o.b] == o.k;
        case ObKind::Fits16: {
            const int64_t v = d[o.b] - d[o.a] + o.k;
            return v >= INT16_MIN && v <= INT16_MAX;
        }
        case ObKind::Fits32: {
            const int64_t v = d[o.b] - d[o.a] + o.k;
            return v >= INT32_MIN && v <= INT32_MAX;
        }
    }
    return true;
}

}  // namespace patchfuzz::oracles::smt::jump
