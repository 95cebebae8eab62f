#pragma once
// Inline-sequence equivalence (issue 5 §3): proves with Z3, over all inputs, that each inline
// sequence a pass emits computes what the call or instruction it replaces computes, under an
// ArchProfile's execution semantics (bv_semantics.hpp).
//  * bpf_iter_num_new / next / destroy against the kfunc reference of docs/iterator-isa-arch.md §1
//    (v4 kfunc text): the 8 slot bytes, R0 on its meaningful width (low 32 bits for new's int, the
//    full pointer-or-NULL for next), R6-R10 preserved, no other memory written, for every
//    start/end including garbage upper halves of R2/R3 and every slot content.
//  * div/mod guards and sdiv/smod by -1 (bpf_do_misc_fixups rows c, d) against the ISA semantics;
//    obligations split by divisor case (0, -1, other) and the quotient/remainder abstracted as
//    uninterpreted functions (Z3 4.8 times out on generic udiv/urem identities), so what is proved
//    is that the guard routes each case to the right result and never lets the copied division trap.
//  * map_lookup_elem inlines (map_gen_lookup) against a model of the lookup helper, with the
//    internal __htab_map_lookup_elem call and this_cpu_ptr as uninterpreted functions.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/program/program.hpp"
#include "oracles/smt/smt_options.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles::smt {

inline constexpr const char* kInlineOracleName = "smt-inline";

Verdict prove_iter_num_new(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts = {});
Verdict prove_iter_num_next(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts = {});
Verdict prove_iter_num_destroy(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts = {});
// `original`: the DIV/MOD insn; `seq`: its replacement (patch-local jumps, leaving = end).
Verdict prove_div_mod(const isa::Insn& original, std::span<const isa::Insn> seq, const ArchProfile& arch,
                      const SmtOptions& opts = {});
Verdict prove_map_lookup(const MapDef& map, std::span<const isa::Insn> seq, const ArchProfile& arch,
                         const SmtOptions& opts = {});

// bpf_get_func_arg's inline (7.x / bpf-next shape: nr_args = ctx[-8] & 0xff) against the helper:
// `u32 n`; n >= nr_args -> -EINVAL; else *value = ctx[n], 0 (finding 0008: the kernel's inline
// addresses with all 64 bits of R2 and is refuted; InlineFix::Fixed proves).
Verdict prove_get_func_arg(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts = {});
// The entry of the bpf_loop inline (insns 0-8: the nr_loops check, the spills and the loop set-up;
// the loop itself, which calls the callback, is left out and its slots are taken as nops) against
// the helper's `u32 nr_loops` and `long` return: -E2BIG (64 bits) when nr_loops > BPF_MAX_LOOPS,
// else the loop bound R6 = nr_loops, counter R7 = 0, R8 = ctx (findings 0007, 0001-0006).
Verdict prove_bpf_loop_entry(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts = {});

enum class InlineFamily : uint8_t { Iter = 1, DivMod = 2, MapLookup = 4, Helpers = 8 };

struct InlineProofOptions {
    std::vector<ArchProfile> arches;                    // empty = x86_64, arm64, jit32
    passes::IterInline iter = passes::IterInline::V4;   // which iterator inline to prove
    passes::InlineFix loop = passes::InlineFix::Kernel;      // which bpf_loop inline (Helpers)
    passes::InlineFix func_arg = passes::InlineFix::Kernel;  // which get_func_arg inline (Helpers)
    unsigned families = 7;                              // bit set of InlineFamily (Helpers: on request)
    SmtOptions smt;
};

struct InlineProof {
    std::string sequence;  // e.g. "bpf_iter_num_new/v4", "sdiv64 r2, r3", "map_lookup/hash"
    std::string arch;
    Verdict verdict;       // pass = proved, fail = refuted (counterexample), unknown, skip
    double ms = 0;
};

// Every sequence of the selected families, as the passes emit them (bpf/passes/*), on every arch.
std::vector<InlineProof> prove_inlines(const InlineProofOptions& opts);

}  // namespace patchfuzz::oracles::smt
