// Generator tests (issue #4 "Done means"): validity of every sample, determinism, byte decoding,
// coverage of every trigger and every user-visible row of the encoding table, distribution report.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "bpf/isa/opcode_table.hpp"
#include "bpf/passes/zext_marks.hpp"
#include "bpf/util/rng.hpp"
#include "gen/byte_source.hpp"
#include "gen/program_gen.hpp"
#include "gen/rc_source.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {
namespace {

GenOptions small_opts() {
    GenOptions o;
    o.min_insns = 4;
    o.max_insns = 40;
    o.subprogs_max = 3;
    o.patch_site_density = 0.3;
    o.inputs = 0;
    return o;
}

// 100k samples, small programs (the benchmark runs the 100-insn size).
TEST(ProgramGen, HundredThousandSamplesPassTheValidator) {
    const GenOptions o = small_opts();
    uint64_t total_insns = 0;
    for (uint64_t seed = 0; seed < 100000; ++seed) {
        RngSource src(seed);
        const GeneratedCase c = generate(src, o);
        const Status st = check_shape(c.program);
        ASSERT_TRUE(st.ok()) << "seed " << seed << ": " << st.error().to_string();
        total_insns += c.program.len();
    }
    std::printf("100000 programs, %llu insns\n", static_cast<unsigned long long>(total_insns));
}

TEST(ProgramGen, SameSeedSameProgramAndInputs) {
    GenOptions o;
    o.max_insns = 300;
    for (uint64_t seed : {1ull, 42ull, 0xdeadbeefull}) {
        RngSource a(seed), b(seed);
        const GeneratedCase ca = generate(a, o), cb = generate(b, o);
        EXPECT_TRUE(ca.program == cb.program);
        ASSERT_EQ(ca.inputs.size(), cb.inputs.size());
        for (size_t i = 0; i < ca.inputs.size(); ++i) {
            EXPECT_EQ(ca.inputs[i].ctx, cb.inputs[i].ctx);
            EXPECT_EQ(ca.inputs[i].regs, cb.inputs[i].regs);
        }
        RngSource d(seed + 1);
        EXPECT_FALSE(generate(d, o).program == ca.program);
    }
}

// another() answers the seeded back end inline: as its more() does; every other back end through
// more() itself.
TEST(ChoiceSource, AnotherAnswersAsMore) {
    RngSource seeded(1);
    for (uint32_t have = 0; have < 6; ++have)
        for (uint32_t want : {0u, 1u, 3u, 5u, UINT32_MAX}) EXPECT_EQ(seeded.another(have, want), seeded.more(have, want));
    std::vector<uint8_t> bytes(64);
    Rng(7).fill(bytes);
    ByteSource a(bytes), b(bytes);
    for (uint32_t k = 0; k < 70; ++k) EXPECT_EQ(a.another(k % 5, 3), b.more(k % 5, 3)) << k;
}

// skip_draws(n) leaves the seeded back end where n draws would, and an RngSource from the state
// it returns makes exactly those n draws; the other back ends skip nothing.
TEST(ChoiceSource, SkippedDrawsAreMadeLaterFromTheirState) {
    for (uint32_t n : {0u, 1u, 5u, 64u}) {
        RngSource drawn(99), skipped(99);
        std::vector<uint64_t> want;
        for (uint32_t k = 0; k < n; ++k) want.push_back(drawn.draw(0, 1000 + k, Tag::Imm));
        const std::optional<uint64_t> before = skipped.skip_draws(n);
        ASSERT_TRUE(before.has_value());
        EXPECT_EQ(drawn.draw(0, UINT32_MAX, Tag::Misc), skipped.draw(0, UINT32_MAX, Tag::Misc)) << n;
        RngSource again(*before);
        for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(again.draw(0, 1000 + k, Tag::Imm), want[k]) << k;
    }
    std::vector<uint8_t> bytes(16, 0x5a);
    ByteSource a(bytes), b(bytes);
    EXPECT_FALSE(a.skip_draws(3).has_value());
    EXPECT_EQ(a.draw(0, 255, Tag::Imm), b.draw(0, 255, Tag::Imm));
}

// The campaign turns the statistics off: the program, its inputs and the draws left for the
// caller (the patch batch of the same case) are those of a run that computes them.
TEST(ProgramGen, StatsOffChangesNothingButTheStats) {
    GenOptions on;
    on.max_insns = 256;
    GenOptions off = on;
    off.compute_stats = false;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        RngSource a(seed), b(seed);
        const GeneratedCase ca = generate(a, on), cb = generate(b, off);
        ASSERT_TRUE(ca.program == cb.program) << "seed " << seed;
        ASSERT_EQ(ca.inputs.size(), cb.inputs.size());
        for (size_t i = 0; i < ca.inputs.size(); ++i) {
            EXPECT_EQ(ca.inputs[i].ctx, cb.inputs[i].ctx);
            EXPECT_EQ(ca.inputs[i].packet, cb.inputs[i].packet);
            EXPECT_EQ(ca.inputs[i].regs, cb.inputs[i].regs);
            EXPECT_EQ(ca.inputs[i].maps, cb.inputs[i].maps);
        }
        EXPECT_EQ(a.draw(0, UINT32_MAX, Tag::Misc), b.draw(0, UINT32_MAX, Tag::Misc)) << "seed " << seed;
        EXPECT_EQ(ca.stats.insns, ca.program.len());
        EXPECT_EQ(cb.stats.insns, 0u);
    }
}

// The campaign asks for no inputs for a patcher-only case: the program and the draws left for
// the caller (its explicit batch) are those of a run that makes them.
TEST(ProgramGen, NoInputsChangesNothingButTheInputs) {
    GenOptions two;
    two.max_insns = 256;
    GenOptions none = two;
    none.inputs = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        RngSource a(seed), b(seed);
        const GeneratedCase ca = generate(a, two), cb = generate(b, none);
        ASSERT_TRUE(ca.program == cb.program) << "seed " << seed;
        EXPECT_EQ(ca.inputs.size(), 2u);
        EXPECT_TRUE(cb.inputs.empty());
        EXPECT_EQ(a.draw(0, UINT32_MAX, Tag::Misc), b.draw(0, UINT32_MAX, Tag::Misc)) << "seed " << seed;
    }
}

// Every 32-bit def the verifier would mark zext_dst is marked: on a zext JIT (jit32) a generated
// case runs the program the kernel would, instead of being skipped by the exec oracle.
TEST(ProgramGen, NoDefLacksTheVerifiersZextMark) {
    GenOptions o;
    o.max_insns = 256;
    o.patch_site_density = 0.3;
    o.inputs = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        RngSource src(seed);
        const GeneratedCase c = generate(src, o);
        const auto gaps = passes::zext_gaps(c.program);
        ASSERT_TRUE(gaps.empty()) << "seed " << seed << ": insn " << gaps[0].def_pc << " defines w" << gaps[0].reg;
    }
}

TEST(ProgramGen, SizeKnobsAreHonoured) {
    for (uint32_t max : {8u, 64u, 1000u, 20000u}) {
        GenOptions o;
        o.min_insns = max / 2;
        o.max_insns = max;
        for (uint64_t seed = 0; seed < 20; ++seed) {
            RngSource src(seed);
            const auto c = generate(src, o);
            ASSERT_TRUE(check_shape(c.program).ok());
            EXPECT_GE(c.program.len(), o.min_insns);
            // the last lookup/epilogue may overshoot the budget by one item at most
            EXPECT_LE(c.program.len(), max + 40) << "max " << max << " seed " << seed;
        }
    }
}

// min_insns above max_insns pads main far past the room function() reserved for it, so that
// emit() grows a function's buffers (gen/emitted.hpp) in the middle of it: every insn and aux
// record must survive, in order.
TEST(ProgramGen, FunctionsThatOutgrowTheirRoomKeepEveryInsn) {
    GenOptions o;
    o.min_insns = 3000;
    o.max_insns = 64;
    for (uint64_t seed = 0; seed < 20; ++seed) {
        RngSource src(seed);
        const auto c = generate(src, o);
        ASSERT_TRUE(check_shape(c.program).ok()) << "seed " << seed;
        // main is padded to exactly min_insns with its epilogue: one insn more or less is one
        // that growth lost or repeated
        ASSERT_EQ(c.program.len(), o.min_insns) << "seed " << seed;
        ASSERT_EQ(c.program.aux.size(), c.program.len());
        for (uint32_t i = 0; i < c.program.len(); ++i) ASSERT_EQ(c.program.aux[i].orig_idx, i) << "seed " << seed;
        // The padding ends main: its last two insns are the epilogue (r0 = var; exit).
        const uint32_t main_end = c.program.subprogs.size() > 2 ? c.program.subprogs[1].start : c.program.len();
        EXPECT_EQ(c.program.insns[main_end - 1].code, BPF_JMP | BPF_EXIT) << "seed " << seed;
    }
}

TEST(ByteSource, EveryByteStringDecodesToAValidProgram) {
    Rng rng(7);
    GenOptions o = small_opts();
    o.max_insns = 200;
    for (int n = 0; n < 20000; ++n) {
        std::vector<uint8_t> bytes(rng.range(0, n % 10 == 0 ? 4096 : 256));
        for (auto& b : bytes) b = static_cast<uint8_t>(rng.next() >> (rng.next() % 8 == 0 ? 0 : 61));
        ByteSource src(bytes);
        const auto c = generate(src, o);
        const Status st = check_shape(c.program);
        ASSERT_TRUE(st.ok()) << "sample " << n << ": " << st.error().to_string();
    }
    ByteSource empty(std::span<const uint8_t>{});
    EXPECT_TRUE(check_shape(generate(empty, o).program).ok());
}

TEST(ByteSource, EncodedTraceDecodesToTheSameProgram) {
    Rng rng(9);
    GenOptions o = small_opts();
    o.max_insns = 300;
    for (int n = 0; n < 2000; ++n) {
        std::vector<uint8_t> bytes(rng.range(0, 600));
        for (auto& b : bytes) b = static_cast<uint8_t>(rng.next());
        ByteSource src(bytes, true);
        const auto c = generate(src, o);
        const auto enc = encode_trace(src.trace());
        ByteSource again(enc, true);
        const auto c2 = generate(again, o);
        ASSERT_TRUE(c.program == c2.program) << "sample " << n;
        ASSERT_EQ(src.trace().size(), again.trace().size());
        EXPECT_EQ(encode_trace(again.trace()), enc);
    }
}

// Every trigger and every user-visible encoding row within the stated number of samples.
TEST(ProgramGen, CoverageOfTriggersAndEncodingRows) {
    constexpr uint64_t kSamples = 3000;  // the stated budget
    GenOptions o;
    o.max_insns = 400;
    o.patch_site_density = 0.5;
    o.subprogs_max = 4;
    std::array<uint64_t, kTriggerCount> hits{};
    std::map<std::string, uint64_t> rows;
    auto account = [&](const Program& p) {
        const auto s = analyze(p);
        for (size_t t = 0; t < kTriggerCount; ++t) hits[t] += s.triggers[t];
        for (uint32_t i = 0; i < p.len(); ++i) {
            if (i > 0 && isa::is_ldimm64(p.insns[i - 1])) continue;
            if (const auto* r = isa::match_row(p.insns[i], false)) ++rows[r->mnemonic];
        }
    };
    for (uint64_t seed = 0; seed < kSamples; ++seed) {
        RngSource src(seed);
        const auto c = generate(src, o);
        ASSERT_TRUE(check_shape(c.program).ok());
        account(c.program);
    }
    // Long-jump knob: 4 programs above 32767 insns with jumps near +-32767.
    GenOptions big;
    big.min_insns = 40000;
    big.max_insns = 70000;
    big.far_jump_prob = 1.0;
    big.patch_site_density = 0.5;
    for (uint64_t seed = 0; seed < 4; ++seed) {
        RngSource src(seed);
        const auto c = generate(src, big);
        ASSERT_TRUE(check_shape(c.program).ok());
        account(c.program);
    }
    std::printf("%-32s %10s\n", "trigger", "hits");
    int missing = 0;
    for (size_t t = 0; t < kTriggerCount; ++t) {
        std::printf("%-32s %10llu%s\n", std::string(trigger_name(static_cast<Trigger>(t))).c_str(),
                    static_cast<unsigned long long>(hits[t]), hits[t] ? "" : "   <-- UNREACHED");
        missing += hits[t] == 0;
    }
    // Rows we do not generate, and why.
    const std::set<std::string> excluded = {
        "addr_space_cast",  // needs an arena map; our map numbering has no arena type yet
    };
    std::printf("%-32s %10s\n", "encoding row", "hits");
    for (const auto& row : isa::opcode_table()) {
        if (row.internal) continue;
        const std::string mn = row.mnemonic;
        const uint64_t h = rows.count(mn) ? rows[mn] : 0;
        const bool ex = excluded.count(mn) > 0;
        std::printf("%-32s %10llu%s\n", mn.c_str(), static_cast<unsigned long long>(h),
                    h ? "" : ex ? "   (excluded)" : "   <-- UNREACHED");
        if (!h && !ex) ++missing;
    }
    EXPECT_EQ(missing, 0) << "unreached triggers or encoding rows, see the table above";
}

// The distribution the default options promise: sizes within [min_insns, max_insns] spread over
// many 32-insn buckets, programs of main alone and with up to subprogs_max more functions, and
// rewrite sites at a density that patch_site_density (a share of items, each item a few insns)
// keeps between a fraction and the whole of it per insn.
TEST(ProgramGen, DefaultDistribution) {
    GenOptions o;
    std::map<uint32_t, uint32_t> size_hist, sub_hist;
    uint64_t sites = 0, insns = 0;
    for (uint64_t seed = 0; seed < 2000; ++seed) {
        RngSource src(seed);
        const auto c = generate(src, o);
        ASSERT_LE(c.stats.subprogs, o.subprogs_max + 1) << "seed " << seed;  // main and up to subprogs_max more
        ++size_hist[c.program.len() / 32 * 32];
        ++sub_hist[c.stats.subprogs];
        insns += c.stats.insns;
        for (auto h : c.stats.triggers) sites += h;
    }
    EXPECT_GE(size_hist.size(), 3u);
    EXPECT_GT(sub_hist[1], 0u);
    EXPECT_GT(sub_hist.size(), 2u);
    const double per_insn = static_cast<double>(sites) / static_cast<double>(insns);
    EXPECT_GT(per_insn, o.patch_site_density / 10);
    EXPECT_LT(per_insn, o.patch_site_density * 3);
}

RC_GTEST_PROP(ProgramGenRc, RapidCheckCasesAreValid, ()) {
    GenOptions o = small_opts();
    o.max_insns = 120;
    const auto c = *rc_case(o);
    RC_CLASSIFY(c.stats.subprogs > 1, "subprogs");
    RC_CLASSIFY(c.stats.lookups > 0, "lookups");
    RC_CLASSIFY(c.stats.count(Trigger::iter_new) > 0, "bpf_for");
    RC_CLASSIFY(c.stats.count(Trigger::misc_h_may_goto) > 0, "may_goto");
    RC_CLASSIFY(c.program.len() < 20, "< 20 insns");
    const Status st = check_shape(c.program);
    RC_ASSERT(st.ok());
}

}  // namespace
}  // namespace patchfuzz::gen
