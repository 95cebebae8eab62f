#pragma once
// The outcome of a conditional jump on two known values: the one definition the passes that decide
// branches from constants share (const_branches, zext_marks' model of is_branch_taken).
#include <linux/bpf.h>

#include <cstdint>
#include <optional>

namespace patchfuzz::isa {

// Whether the jump `op` (BPF_JEQ .. BPF_JSLE, BPF_JSET: the op bits of a JMP/JMP32 code) is taken
// with dst value `a` and src value `b`, compared in 32 bits (JMP32) or 64; nullopt for an op that
// compares nothing (JA, CALL, EXIT, JCOND).
constexpr std::optional<bool> jump_taken(uint8_t op, uint64_t a, uint64_t b, bool is32) {
    if (is32) {
        a = static_cast<uint32_t>(a);
        b = static_cast<uint32_t>(b);
    }
    const int64_t sa = is32 ? static_cast<int32_t>(a) : static_cast<int64_t>(a);
    const int64_t sb = is32 ? static_cast<int32_t>(b) : static_cast<int64_t>(b);
    switch (op) {
        case BPF_JEQ: return a == b;
        case BPF_JNE: return a != b;
        case BPF_JGT: return a > b;
        case BPF_JGE: return a >= b;
        case BPF_JLT: return a < b;
        case BPF_JLE: return a <= b;
        case BPF_JSGT: return sa > sb;
        case BPF_JSGE: return sa >= sb;
        case BPF_JSLT: return sa < sb;
        case BPF_JSLE: return sa <= sb;
        case BPF_JSET: return (a & b) != 0;
        default: return std::nullopt;
    }
}

}  // namespace patchfuzz::isa
