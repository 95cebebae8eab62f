#pragma once
// Bounded proof of the batched patching contract (issue 5 §2): for programs up to a bound, the
// closed form of docs/patching.md §7 (index map S, relocated displacements, -ERANGE condition)
// equals the composition of the kernel's single-patch rules of §2 (bpf_patch_insn_single():
// len-1 fast path, overflow probe only above S16_MAX, bpf_adj_branches() displacement rule per
// patch in ascending order; adjust_subprog_starts()/bpf_adj_linfo()/adjust_insn_arrays()/
// adjust_poke_descs() for the side tables).
//
// Symbolic: the program length N, K patch positions p_1 < ... < p_K < N with lengths n_i >= 1,
// one relative transfer (unpatched at c, or an outgoing jump in slot j of patch m as the generator
// contract of §7.2 emits it), its displacement (s16 `off` or s32 `imm`) and target, and one side
// table value v in [0, N]. Every K' = 1..K is its own set of queries. Theorems (each one query):
//  * jump:    kernel -ERANGE <=> closed-form displacement out of range; on success the final
//             displacement and position equal S(T) - S(c) - 1 and S(c);
//  * first:   on -ERANGE, the first failing patch equals the first patch after which the
//             closed form has an out-of-range displacement (the log line's orig_idx);
//  * no-bug:  no step without the probe (new length <= 32767) produces an out-of-range value
//             (the kernel's BUG_ON after a real insertion is unreachable);
//  * in-patch: the same for outgoing in-patch jumps whose generator output fits its field;
//  * tables:  a side-table value moved per patch ("<= off stays") equals S(v);
//  * sanity:  the preconditions of each family are satisfiable (the theorems are not vacuous).
#include <cstdint>
#include <string>
#include <vector>

#include "oracles/smt/smt_options.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles::smt {

inline constexpr const char* kContractOracleName = "smt-contract";

struct ContractProofOptions {
    uint32_t max_patches = 4;        // K (1..6)
    uint32_t max_len = 1u << 17;     // bound on the original program length N (around/above S16_MAX)
    uint32_t max_patch_len = 1u << 13;  // bound on each patch length n_i
    SmtOptions smt{.timeout_ms = 60000};
    // Test hook (shows the proof is not vacuous): model bpf_adj_branches() with `t > end_old`
    // instead of `t >= end_old`, so a jump to the insn right after a patch is not moved.
    bool inject_off_by_one = false;
};

struct ContractObligation {
    std::string name;   // e.g. "K=2 jump off16"
    Outcome outcome = Outcome::Unknown;
    double ms = 0;
    std::string counterexample;
};

// Pass when every obligation is proved; Fail with the counterexample of the first refuted one;
// Unknown when some obligation timed out. `details` (optional) receives one entry per obligation.
Verdict prove_contract(const ContractProofOptions& opts, std::vector<ContractObligation>* details = nullptr);

}  // namespace patchfuzz::oracles::smt
