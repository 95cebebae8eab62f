#include "gen/seed_case.hpp"

#include <algorithm>

#include "bpf/passes/infer_facts.hpp"
#include "bpf/passes/rejected_reads.hpp"
#include "bpf/util/rng.hpp"
#include "gen/program_edit.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {

GeneratedCase case_from_program(Program prog, uint64_t seed, uint32_t inputs) {
    passes::infer_facts(prog);
    RngSource src(seed);
    GeneratedCase c;
    c.inputs = make_inputs(prog, src, inputs);
    c.stats = analyze(prog);
    c.program = std::move(prog);
    return c;
}

namespace {

// Instructions a mutation may insert: plain ALU on r0..r9, nops, and rewrite sites that need no
// set-up (division by a register, may_goto +0, a 32-bit def).
isa::Insn random_insn(Rng& rng) {
    const uint8_t d = static_cast<uint8_t>(rng.range(0, 9)), s = static_cast<uint8_t>(rng.range(0, 9));
    switch (rng.range(0, 7)) {
        case 0: return isa::ja(0);
        case 1: return isa::may_goto(0);
        case 2: return isa::alu64_reg(rng.chance(1, 2) ? BPF_DIV : BPF_MOD, d, s);
        case 3: return isa::make(BPF_ALU | (rng.chance(1, 2) ? BPF_DIV : BPF_MOD) | BPF_X, d, s, 1, 0);
        case 4: return isa::make(BPF_ALU64 | BPF_DIV | BPF_K, d, 0, 1, -1);
        case 5: return isa::alu32_imm(BPF_ADD, d, static_cast<int32_t>(rng.next()));
        case 6: return isa::mov64_imm(d, static_cast<int32_t>(rng.next()));
        default: return isa::alu64_reg(BPF_XOR, d, s);
    }
}

}  // namespace

namespace {

// A seed program's case with every verifier fact rebuilt from nothing (no fact survives an edit),
// its inputs with a budget that ends a loop an edit unbounded sooner (16 times below the default,
// still 2^20 insns).
GeneratedCase case_with_fresh_facts(Program p, uint64_t seed, uint32_t inputs) {
    for (InsnAux& a : p.aux) a = InsnAux{.orig_idx = a.orig_idx, .seen = true};
    GeneratedCase c = case_from_program(std::move(p), seed, inputs);
    for (interp::ExecInput& in : c.inputs) in.step_budget = std::min<uint64_t>(in.step_budget, uint64_t{1} << 20);
    return c;
}

}  // namespace

GeneratedCase seed_mutant(const Program& prog, uint64_t seed, uint32_t inputs) {
    Rng rng(seed ^ 0x6d7574616e74ULL);
    for (int attempt = 0; attempt < 8; ++attempt) {
        Program p = prog;
        for (uint64_t edits = rng.range(1, 4); edits > 0; --edits) p = mutate_program(p, rng.next());
        GeneratedCase c = case_with_fresh_facts(std::move(p), seed, inputs);
        if (passes::rejected_reads(c.program).empty()) return c;
    }
    return case_with_fresh_facts(prog, seed, inputs);
}

Program mutate_program(const Program& prog, uint64_t seed) {
    Rng rng(seed);
    const uint32_t n = prog.len();
    if (n == 0) return prog;
    for (int attempt = 0; attempt < 32; ++attempt) {
        Program c = prog;
        const uint32_t i = static_cast<uint32_t>(rng.range(0, n - 1));
        switch (rng.range(0, 4)) {
            case 0: insert_range(c, i, {random_insn(rng)}); break;  // insert (jump fix-up)
            case 1: remove_range(c, i, i + 1); break;               // delete (jump repair)
            case 2:                                                 // replace
                if (isa::relative_field(c.insns[i]) != isa::RelField::None || isa::is_ldimm64(c.insns[i])) continue;
                c.insns[i] = random_insn(rng);
                c.aux[i] = InsnAux{.orig_idx = c.aux[i].orig_idx, .seen = true};
                break;
            case 3: {  // retarget a jump within its subprog
                if (isa::relative_field(c.insns[i]) != isa::RelField::Off16) continue;
                uint32_t lo = 0, hi = n;
                for (size_t k = 0; k + 1 < c.subprogs.size(); ++k)
                    if (c.subprogs[k].start <= i && i < c.subprogs[k + 1].start) lo = c.subprogs[k].start, hi = c.subprogs[k + 1].start;
                const int64_t t = static_cast<int64_t>(rng.range(lo, hi - 1));
                const int64_t d = t - static_cast<int64_t>(i) - 1;
                if (d < -32768 || d > 32767) continue;
                c.insns[i].off = static_cast<int16_t>(d);
                break;
            }
            default: {  // add a patch site after insn i
                if (i + 1 >= n) continue;
                insert_range(c, i + 1, {isa::alu64_reg(BPF_DIV, static_cast<uint8_t>(rng.range(0, 9)), static_cast<uint8_t>(rng.range(0, 9)))});
                break;
            }
        }
        if (check_shape(c).ok() && !(c == prog)) return c;
    }
    return prog;
}

}  // namespace patchfuzz::gen
