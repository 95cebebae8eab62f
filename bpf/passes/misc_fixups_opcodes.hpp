#pragma once
// The opcodes that the per-insn rows of bpf_do_misc_fixups() (misc_fixups.cpp, docs/patching.md
// §5.3) can act on: every row but b starts by testing the opcode (and only then the other fields,
// the aux data or the options), so an insn whose opcode no row names passes the whole chain
// untouched. Row b (needs_zext narrowing) is the exception: it acts on any ALU64 insn whose aux
// has needs_zext. The pass skips the chain for every other insn (most of a program);
// misc_fixups_opcodes_test.cpp checks, for every opcode byte, that the unfiltered chain leaves a
// skipped insn alone.
#include <array>
#include <cstdint>
#include <memory>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"

namespace patchfuzz::passes {

// Whether a row other than b may act on an insn with opcode `code`: the rows' opcode tests alone,
// in the chain's order, asked of the opcode facts (isa/insn_facts.hpp).
constexpr bool misc_fixups_row_opcode(uint8_t code) {
    using namespace isa;
    const InsnFacts& f = kInsnFacts[code];
    const bool alu = f.cls == BPF_ALU || f.cls == BPF_ALU64;
    return code == (BPF_ALU64 | BPF_MOV | BPF_X)                                                  // a
           || (alu && (f.op == BPF_DIV || f.op == BPF_MOD))                                       // c, d
           || (f.cls == BPF_LDX && (f.mode == kModeProbeMem || f.mode == kModeProbeMemSx))        // e
           || (f.cls == BPF_LD && (f.mode == BPF_ABS || f.mode == BPF_IND))                       // f
           || code == (BPF_ALU64 | BPF_ADD | BPF_X) || code == (BPF_ALU64 | BPF_SUB | BPF_X)      // g
           || code == (BPF_JMP | BPF_JCOND)                                                       // h, h'
           || f.slots == 2                                                                        // i: ld_imm64
           || code == (BPF_JMP | BPF_CALL);                                                       // j-z
}

// misc_fixups_row_opcode() for every opcode byte, computed once from the opcode facts: the pass
// asks it for every insn.
inline constexpr std::array<bool, 256> kMiscFixupsRowOpcodes = [] {
    std::array<bool, 256> t{};
    for (unsigned c = 0; c < t.size(); ++c) t[c] = misc_fixups_row_opcode(static_cast<uint8_t>(c));
    return t;
}();

// Whether the chain may act on `insn` with aux `needs_zext`: a listed opcode, or row b's ALU64.
constexpr bool misc_fixups_may_act(const isa::Insn& insn, bool needs_zext) {
    return kMiscFixupsRowOpcodes[insn.code] || (needs_zext && isa::cls(insn) == BPF_ALU64);
}

// The pass with every insn walking the whole chain: the reference the prefilter's test compares
// against (make_misc_fixups_pass() in pass_util.hpp is the one the pipeline runs).
std::unique_ptr<Pass> make_misc_fixups_pass_unfiltered();

}  // namespace patchfuzz::passes
