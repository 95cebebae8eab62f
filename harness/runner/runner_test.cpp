// The runner judges several arch profiles of one case at once and shares work between them (a
// profile whose rewrite is another's, and the passes that read no arch fact). Sharing must not
// change a verdict: a case run for all profiles together gives, per profile, exactly the verdicts
// of running that profile alone.
#include "harness/runner/runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <tuple>

#include "gen/patch_batch_gen.hpp"
#include "harness/case/case_file.hpp"
#include "gen/program_gen.hpp"
#include "gen/rng_source.hpp"

namespace patchfuzz::harness {
namespace {

// Everything a verdict says but its counterexample text, with the profile it is filed under.
using Key = std::tuple<std::string, std::string, std::string, int, std::string, std::string, std::string, std::string>;

std::vector<Key> keys_of(const CaseReport& r, const std::string& arch) {
    std::vector<Key> out;
    for (const auto& v : r.verdicts)
        if (v.arch == arch)
            out.emplace_back(v.arch, v.pass, v.patcher, static_cast<int>(v.verdict.outcome), v.verdict.oracle,
                             v.verdict.reason, v.verdict.divergence, v.verdict.patch_kind);
    return out;
}

// Everything a report's verdicts say, in order, counterexamples included.
std::vector<std::tuple<Key, std::string>> everything(const CaseReport& r) {
    std::vector<std::tuple<Key, std::string>> out;
    for (const auto& v : r.verdicts) {
        out.emplace_back(Key{v.arch, v.pass, v.patcher, static_cast<int>(v.verdict.outcome), v.verdict.oracle,
                             v.verdict.reason, v.verdict.divergence, v.verdict.patch_kind},
                         v.verdict.counterexample);
    }
    return out;
}

// The two reports' verdicts are the same, in the same order; a difference is shown by its first
// differing verdict, not by the whole lists.
void expect_same_verdicts(const CaseReport& a, const CaseReport& b, const std::string& what) {
    const auto x = everything(a), y = everything(b);
    const size_t n = std::min(x.size(), y.size());
    size_t i = 0;
    while (i < n && x[i] == y[i]) ++i;
    if (i == n) {
        EXPECT_EQ(x.size(), y.size()) << what << ": one report has more verdicts";
        return;
    }
    auto show = [](const std::tuple<Key, std::string>& v) {
        const auto& [k, counterexample] = v;
        return std::get<0>(k) + " " + std::get<1>(k) + " " + std::get<2>(k) + " outcome " + std::to_string(std::get<3>(k)) + " " +
               std::get<4>(k) + ": " + std::get<5>(k) + " [" + std::get<6>(k) + "] " + std::get<7>(k) + " | " + counterexample;
    };
    ADD_FAILURE() << what << ": verdict " << i << " differs\n  " << show(x[i]) << "\n  " << show(y[i]);
}

// A generated case; with `explicit_batch`, a patcher-only one as a campaign makes one in four:
// one explicit random batch, no passes.
Case make_case(uint64_t seed, bool explicit_batch) {
    gen::RngSource src(seed);
    gen::GenOptions go;
    go.max_insns = 256;
    Case c;
    c.program = gen::generate(src, go).program;
    if (explicit_batch) {
        gen::add_poke_descriptors(src, c.program, 3);
        c.patches = {gen::generate_patch_batch(src, c.program, gen::BatchGenOptions{})};
    }
    c.seed = seed;
    return c;
}

Case generated_case(uint64_t seed) { return make_case(seed, false); }
Case explicit_case(uint64_t seed) { return make_case(seed, true); }

void expect_profiles_judged_alone_alike(const oracles::OracleSet& oracles, uint64_t cases,
                                        Case (*make)(uint64_t) = generated_case) {
    const std::vector<ArchProfile> arches{arch_x86_64(), arch_arm64(), arch_jit32()};
    uint32_t shared_prefix_cases = 0;
    for (uint64_t seed = 1; seed <= cases; ++seed) {
        const Case c = make(seed);
        RunConfig all;
        all.oracles = oracles;
        all.arches = arches;
        const CaseReport together = run_case(c, all);
        uint32_t batches = 0;
        std::map<std::string_view, uint32_t> triggers;
        for (const ArchProfile& profile : arches) {
            const std::string arch(profile.name);
            RunConfig one = all;
            one.arches = {profile};
            const CaseReport alone = run_case(c, one);
            // An explicit batch is always judged; the passes may have nothing to patch.
            if (!c.patches.empty()) {
                EXPECT_FALSE(keys_of(together, arch).empty()) << "seed " << seed << ", " << arch;
            }
            EXPECT_EQ(keys_of(together, arch), keys_of(alone, arch)) << "seed " << seed << ", " << arch;
            batches += alone.batches;
            for (const auto& [pass, n] : alone.pass_triggers) triggers[pass] += n;
        }
        EXPECT_EQ(together.batches, batches) << "seed " << seed;
        std::map<std::string_view, uint32_t> together_triggers;
        for (const auto& [pass, n] : together.pass_triggers) {
            EXPECT_EQ(together_triggers.count(pass), 0u) << "one entry per pass: " << pass;
            together_triggers[pass] = n;
        }
        EXPECT_EQ(together_triggers, triggers) << "seed " << seed;
        shared_prefix_cases += together_triggers.count("bpf_loop") + together_triggers.count("dead_code") > 0;
    }
    // The arch-independent passes must have had something to share.
    if (make == generated_case) {
        EXPECT_GE(shared_prefix_cases, cases / 4);
    }
}

TEST(Runner, ProfilesTogetherJudgeAsEachAlone) { expect_profiles_judged_alone_alike({oracles::OracleId::Structural}, 120); }

// Explicit batches are applied once for every profile (the patchers read none): each profile still
// gets every verdict, trigger and batch of its own run.
TEST(Runner, ExplicitBatchesTogetherJudgeAsEachAlone) {
    expect_profiles_judged_alone_alike({oracles::OracleId::Structural, oracles::OracleId::Exec}, 60, explicit_case);
}

TEST(Runner, ProfilesTogetherProveJumpsAsEachAlone) { expect_profiles_judged_alone_alike({oracles::OracleId::Structural, oracles::OracleId::SmtJump}, 30); }

// A thread's patchers serve one case after another, keeping their storage: every case, whatever
// ran before it on the thread and with whichever patchers and oracles, is judged exactly as on a
// fresh thread, whose patchers are new.
TEST(Runner, PatchersServingCaseAfterCaseJudgeAsNewOnes) {
    // The configurations alternate, so that the thread's set must also be remade at the right times.
    auto config_of = [](uint64_t seed) {
        RunConfig cfg;
        cfg.oracles = seed % 3 == 0 ? oracles::OracleSet{oracles::OracleId::Structural, oracles::OracleId::SmtJump}
                                    : oracles::OracleSet{oracles::OracleId::Structural, oracles::OracleId::Exec};
        if (seed % 4 == 1) cfg.patchers = {patch::PatcherId::Batched, patch::PatcherId::Incremental};
        if (seed % 5 == 2) cfg.patchers = {patch::PatcherId::Incremental};
        return cfg;
    };
    uint32_t compared = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        const Case c = make_case(seed, seed % 2 == 0);
        const RunConfig cfg = config_of(seed);
        const CaseReport reused = run_case(c, cfg);
        CaseReport fresh;
        std::thread([&] { fresh = run_case(c, cfg); }).join();
        EXPECT_EQ(everything(reused), everything(fresh)) << "seed " << seed;
        compared += !fresh.verdicts.empty();
    }
    EXPECT_GE(compared, 30u);
}

// The oracles of a campaign for the case of `seed`: smt-jump too for one seed in `smt_jump_every`,
// and for one in four a broken iterator inline (the smt-inline proofs and exec fail on it) with
// smt-inline, so that failures are among the verdicts.
RunConfig campaign_oracles(uint64_t seed, uint64_t smt_jump_every, Case& c) {
    RunConfig cfg;
    cfg.oracles = {oracles::OracleId::Structural, oracles::OracleId::Exec};
    if (seed % smt_jump_every == 0) cfg.oracles.add(oracles::OracleId::SmtJump);
    if (seed % 4 == 3) {
        c.options.iter_inline = passes::IterInline::V1;
        cfg.oracles.add(oracles::OracleId::SmtInline);
    }
    return cfg;
}

// Memoisation (RunConfig::memoise) is an optional layer over the plain loop "profile x pass x
// batch x oracle": on generated cases (patcher-only ones too), under every oracle of the runner and
// with passes kept or only counted, it must give the very report the plain loop gives.
TEST(Runner, MemoisedJudgesAsThePlainLoop) {
    uint32_t judged = 0;
    for (uint64_t seed = 1; seed <= 48; ++seed) {
        Case c = make_case(seed, seed % 4 == 0);
        RunConfig memoised = campaign_oracles(seed, 2, c);
        if (seed % 5 == 1) memoised.patchers = {patch::PatcherId::Batched, patch::PatcherId::Incremental};
        memoised.keep_passes = seed % 3 != 0;
        RunConfig plain = memoised;
        plain.memoise = false;
        const CaseReport a = run_case(c, memoised), b = run_case_plain(c, plain);
        const std::string what = "seed " + std::to_string(seed);
        expect_same_verdicts(a, b, what);
        EXPECT_EQ(a.counted_passes, b.counted_passes) << what;
        EXPECT_EQ(a.batches, b.batches) << what;
        ASSERT_EQ(a.pass_triggers.size(), b.pass_triggers.size()) << what;
        for (size_t i = 0; i < a.pass_triggers.size(); ++i) {
            EXPECT_EQ(a.pass_triggers[i].pass, b.pass_triggers[i].pass) << what;
            EXPECT_EQ(a.pass_triggers[i].patches, b.pass_triggers[i].patches) << what;
        }
        judged += a.batches > 0;
    }
    EXPECT_GE(judged, 40u);
}

// A campaign has the passing verdicts only counted (RunConfig::keep_passes false): its report must
// hold every other verdict of the full one, in the same order, and count exactly the passes it
// leaves out. Returns the failing verdicts seen, for the callers to check that some were.
uint32_t expect_passes_counted_as_kept(const Case& c, const RunConfig& full, const std::string& what) {
    RunConfig counting = full;
    counting.keep_passes = false;
    const CaseReport kept = run_case(c, full);
    const CaseReport counted = run_case(c, counting);
    CaseReport kept_but_passes = kept;
    std::erase_if(kept_but_passes.verdicts, [](const OracleVerdict& v) { return v.verdict.outcome == oracles::Outcome::Pass; });
    EXPECT_EQ(kept.counted_passes, 0u) << what;
    EXPECT_EQ(counted.counted_passes, kept.verdicts.size() - kept_but_passes.verdicts.size()) << what;
    EXPECT_EQ(everything(counted), everything(kept_but_passes)) << what;
    EXPECT_EQ(counted.batches, kept.batches) << what;
    auto triggers = [](const CaseReport& r) {
        std::vector<std::pair<std::string_view, uint32_t>> out;
        for (const auto& t : r.pass_triggers) out.emplace_back(t.pass, t.patches);
        return out;
    };
    EXPECT_EQ(triggers(counted), triggers(kept)) << what;
    uint32_t failures = 0;
    for (const auto& v : counted.verdicts) failures += v.verdict.outcome == oracles::Outcome::Fail;
    return failures;
}

// Generated cases (patcher-only ones too) under the oracles a campaign runs, and with a broken
// iterator inline (the smt-inline proofs and exec fail on it) so that failures are among them.
TEST(Runner, PassesCountedJudgeAsPassesKept) {
    uint32_t failures = 0, passes = 0;
    for (uint64_t seed = 1; seed <= 36; ++seed) {
        Case c = make_case(seed, seed % 4 == 0);
        RunConfig cfg = campaign_oracles(seed, 3, c);
        cfg.failure_details = seed % 2 == 0;
        failures += expect_passes_counted_as_kept(c, cfg, "seed " + std::to_string(seed));
        RunConfig counting = cfg;
        counting.keep_passes = false;
        passes += run_case(c, counting).counted_passes;
    }
    EXPECT_GT(failures, 0u);
    EXPECT_GT(passes, 36u * 4);
}

// The filed findings fail under every profile a campaign runs (profiles sharing a rewrite take
// another's verdicts): what is left of their reports is their failures.
TEST(Runner, FiledFindingsCountedJudgeAsKept) {
    uint32_t failures = 0;
    for (const auto& e : std::filesystem::directory_iterator(PATCHFUZZ_SOURCE_ROOT "/corpus/regression/findings")) {
        if (e.path().extension() != ".case") continue;
        const auto c = read_case(e.path().string());
        ASSERT_TRUE(static_cast<bool>(c)) << c.error().to_string();
        RunConfig cfg;
        cfg.oracles = {oracles::OracleId::Structural, oracles::OracleId::Exec};
        cfg.failure_details = false;
        failures += expect_passes_counted_as_kept(*c, cfg, e.path().string());
    }
    EXPECT_GT(failures, 0u);
}

}  // namespace
}  // namespace patchfuzz::harness
