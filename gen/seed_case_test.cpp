// Seed mutants (`fuzz --seeds`): valid, deterministic, really different from their seed, with
// facts rebuilt from nothing, register reads the verifier accepts, and a short step budget.
#include "gen/seed_case.hpp"

#include <gtest/gtest.h>

#include "bpf/passes/rejected_reads.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {
namespace {

// A generated program with a fact no edit keeps true and infer_facts never makes: a Spectre v1
// limit on every ALU64 add (the verifier's, for pointer arithmetic it saw).
Program seed_program(uint64_t seed) {
    RngSource src(seed);
    GenOptions go;
    go.max_insns = 64;
    go.inputs = 0;
    Program p = generate(src, go).program;
    for (size_t i = 0; i < p.len(); ++i)
        if (p.insns[i].code == (BPF_ALU64 | BPF_ADD | BPF_K)) {
            p.aux[i].alu_state = 1;
            p.aux[i].alu_limit = 8;
        }
    return p;
}

TEST(SeedMutant, ValidDeterministicDifferentAndWithoutStaleFacts) {
    uint32_t changed = 0, draws = 0, with_stale_candidates = 0, usable = 0;
    for (uint64_t s = 1; s <= 40; ++s) {
        const Program seed = seed_program(s);
        // A program whose reads the check already rejects (the generator's programs are valid for
        // the passes, not all for a kernel) is the case itself when no mutant does better.
        const bool seed_reads_ok = passes::rejected_reads(seed).empty();
        usable += seed_reads_ok;
        for (const auto& a : seed.aux) with_stale_candidates += a.alu_state != 0;
        for (uint64_t m = 0; m < 5; ++m, ++draws) {
            const GeneratedCase c = seed_mutant(seed, s * 100 + m);
            const GeneratedCase again = seed_mutant(seed, s * 100 + m);
            ASSERT_TRUE(c.program == again.program) << "seed " << s << ", mutant " << m;
            ASSERT_TRUE(check_shape(c.program).ok()) << check_shape(c.program).error().to_string();
            if (seed_reads_ok) {
                EXPECT_TRUE(passes::rejected_reads(c.program).empty()) << "seed " << s << ", mutant " << m;
            }
            for (const auto& a : c.program.aux) ASSERT_EQ(a.alu_state, 0) << "a seed's fact survived an edit";
            ASSERT_EQ(c.inputs.size(), 2u);
            for (const auto& in : c.inputs) EXPECT_LE(in.step_budget, uint64_t{1} << 20);
            bool same = c.program.len() == seed.len();
            for (size_t i = 0; same && i < seed.len(); ++i) same = isa::same(c.program.insns[i], seed.insns[i]);
            changed += !same;
        }
    }
    EXPECT_GE(usable, 20u) << "most seeds must have reads the check accepts for this test to mean anything";
    ASSERT_GT(with_stale_candidates, 0u) << "the seeds must carry the fact for this test to mean anything";
    EXPECT_GE(changed * 4, draws * 3) << changed << " of " << draws << " mutants differ from their seed";
}

}  // namespace
}  // namespace patchfuzz::gen
