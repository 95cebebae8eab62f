// Shrinking: every candidate is valid and strictly smaller (well-founded measure); repeated
// shrinking of generated programs terminates in a small program; remove_range repairs jumps.
#include <gtest/gtest.h>

#include "gen/program_edit.hpp"
#include "gen/program_gen.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"
#include "gen/shrink.hpp"

namespace patchfuzz::gen {
namespace {

TEST(Shrink, EveryCandidateIsValidAndStrictlySmaller) {
    GenOptions o;
    o.max_insns = 150;
    o.patch_site_density = 0.4;
    size_t total = 0;
    for (uint64_t seed = 0; seed < 150; ++seed) {
        RngSource src(seed);
        const Program p = generate(src, o).program;
        const auto m = shrink_measure(p);
        const auto cands = shrink_candidates(p, 256);
        EXPECT_FALSE(cands.empty()) << "seed " << seed;
        for (const auto& c : cands) {
            const Status st = check_shape(c);
            ASSERT_TRUE(st.ok()) << "seed " << seed << ": " << st.error().to_string();
            ASSERT_TRUE(shrink_measure(c) < m) << "seed " << seed;
        }
        total += cands.size();
    }
    std::printf("%zu candidates checked\n", total);
}

// Greedy minimisation with a predicate ("still has a bpf_for loop"): terminates, stays valid,
// ends small, keeps the property.
TEST(Shrink, GreedyMinimisationKeepsThePropertyAndEndsSmall) {
    GenOptions o;
    o.max_insns = 200;
    o.patch_site_density = 0.5;
    int done = 0;
    for (uint64_t seed = 0; seed < 400 && done < 10; ++seed) {
        RngSource src(seed);
        Program p = generate(src, o).program;
        const auto has_iter = [](const Program& q) { return analyze(q).count(Trigger::iter_new) > 0; };
        if (!has_iter(p)) continue;
        ++done;
        const uint32_t before = p.len();
        for (int step = 0; step < 10000; ++step) {
            bool progressed = false;
            for (auto& c : shrink_candidates(p, 64))
                if (has_iter(c)) {
                    ASSERT_TRUE(shrink_measure(c) < shrink_measure(p));
                    p = std::move(c);
                    progressed = true;
                    break;
                }
            if (!progressed) break;
        }
        EXPECT_TRUE(check_shape(p).ok());
        EXPECT_TRUE(has_iter(p));
        EXPECT_LT(p.len(), before);
        // new + next + destroy, the jump between them and the exit remain; the rest is gone
        EXPECT_LE(p.len(), 24u) << "seed " << seed << " shrank " << before << " -> " << p.len();
    }
    EXPECT_EQ(done, 10);
}

TEST(Shrink, RemoveRangeRepairsJumpsCallsAndTables) {
    using namespace isa;
    // 0: if r1 == 0 goto 4 | 1: ja 0 | 2: ja 0 | 3: call 5 (pseudo) | 4: exit | 5: r0 = 1 | 6: exit
    Program p = make_program({jmp_imm(BPF_JEQ, 1, 0, 3), ja(0), ja(0), call_pseudo(1), exit_insn(), mov64_imm(0, 1), exit_insn()});
    p.linfo = {{.insn_off = 0}, {.insn_off = 2}, {.insn_off = 5}};
    p.subprogs[0].linfo_idx = 0;
    p.subprogs[1].linfo_idx = 2;
    p.subprogs[2].linfo_idx = 3;
    ASSERT_TRUE(check_shape(p).ok());
    remove_range(p, 1, 3);
    ASSERT_EQ(p.len(), 5u);
    EXPECT_EQ(p.insns[0].off, 1);  // still reaches the exit
    EXPECT_EQ(p.insns[1].imm, 1);  // still calls the subprog
    EXPECT_EQ(p.subprogs[1].start, 3u);
    ASSERT_EQ(p.linfo.size(), 2u);
    EXPECT_EQ(p.linfo[1].insn_off, 3u);
    EXPECT_TRUE(check_shape(p).ok());
}

}  // namespace
}  // namespace patchfuzz::gen
