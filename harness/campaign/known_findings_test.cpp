// Known findings: the filed corpus/regression/findings cases become known keys (signature, for
// exec without the arch, + the exec cause), a report's failures with those keys are filtered out, other failures stay.
#include "harness/campaign/known_findings.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace patchfuzz::harness {
namespace {

const std::string kFindings = std::string(PATCHFUZZ_SOURCE_ROOT) + "/corpus/regression/findings";

RunConfig exec_only() {
    RunConfig c;
    c.oracles = {oracles::OracleId::Exec};
    c.exec_inputs = 2;
    return c;
}

OracleVerdict exec_fail(const std::string& divergence, const std::string& arch, const std::string& cause) {
    OracleVerdict v;
    v.verdict = oracles::Verdict::fail("exec", divergence, divergence + " on " + arch + " with incremental [cause: " + cause + "]", "");
    v.verdict.arch = arch;
    v.arch = arch;
    return v;
}

TEST(KnownFindings, FiledE2bigFindingIsKnownOnlyWithItsCause) {
    const KnownFindings kf = KnownFindings::load(kFindings, exec_only());
    EXPECT_GE(kf.files(), 1u);
    EXPECT_TRUE(kf.notes().empty()) << kf.notes().front();
    // 0001: r0 mismatch caused by the bpf_loop pass at the inline's -E2BIG move (slot 1 of the
    // template, docs/patching.md §5.2); on every profile the campaign runs.
    EXPECT_TRUE(kf.keys().count("exec/bpf_loop@1")) << *kf.keys().begin();
    // 0007: the same pass, another bug: the 64-bit nr_loops guard, slot 0. Two causes, two keys.
    EXPECT_TRUE(kf.keys().count("exec/bpf_loop@0")) << *kf.keys().begin();
    EXPECT_FALSE(kf.keys().count("exec/bpf_loop"));
    EXPECT_FALSE(kf.keys().count("exec/iter_inline"));
    EXPECT_TRUE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "bpf_loop@1")));
    // The same root cause surfacing first on another profile (what the oracle reports depends on
    // the code around the bug) is the same finding.
    EXPECT_TRUE(kf.is_known(exec_fail("r0-mismatch", "jit32", "bpf_loop@1")));
    // So is the same root cause seen through another symptom (a map, the stack): the key is the
    // cause, not the symptom.
    EXPECT_TRUE(kf.is_known(exec_fail("map-mismatch", "jit32", "bpf_loop@1")));
    EXPECT_TRUE(kf.is_known(exec_fail("status-mismatch", "arm64", "bpf_loop@0")));
    // The pass alone (no place found) or another place in its template: another bug of that pass.
    EXPECT_FALSE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "bpf_loop")));
    EXPECT_FALSE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "bpf_loop@7")));
    // Another pass's divergence is not, unless filed too.
    EXPECT_FALSE(kf.is_known(exec_fail("map-mismatch", "jit32", "iter_inline")));
    // Same signature, another cause: new.
    EXPECT_FALSE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "misc_fixups")));
    EXPECT_FALSE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "")));

    CaseReport r;
    r.verdicts = {exec_fail("r0-mismatch", "x86_64", "bpf_loop@1")};
    EXPECT_TRUE(r.failed());
    EXPECT_FALSE(kf.without_known(r).failed());
    r.verdicts.push_back(exec_fail("effects-mismatch", "x86_64", "iter_inline"));
    r.verdicts.push_back(exec_fail("effects-mismatch", "x86_64", "bpf_loop@1"));
    const CaseReport fresh = kf.without_known(r);
    ASSERT_TRUE(fresh.failed());
    EXPECT_EQ(fresh.first_failure()->verdict.divergence, "effects-mismatch");
}

// A filed case that also fails another way (here: its options ask for the buggy v3 iterator
// inline, so the smt-inline proofs fail) only makes its filed failure known: a mutant that breaks
// an inline would otherwise hide behind every filed case.
TEST(KnownFindings, OnlyTheFiledSignatureBecomesKnown) {
    const auto dir = std::filesystem::temp_directory_path() / ("pf_known_only_filed." + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto c = read_case(kFindings + "/0001-bpf-loop-e2big-r0-upper-half.case");
    ASSERT_TRUE(c) << c.error().to_string();
    c->options.iter_inline = passes::IterInline::V3;
    ASSERT_TRUE(write_case_file_atomic(*c, (dir / "filed.case").string()));
    RunConfig cfg = exec_only();
    cfg.oracles = {oracles::OracleId::Exec, oracles::OracleId::SmtInline};
    const CaseReport direct = run_case(*c, cfg);
    bool inline_fails = false;
    for (const auto& v : direct.verdicts) inline_fails |= v.verdict.outcome == oracles::Outcome::Fail && v.verdict.oracle == "smt-inline";
    ASSERT_TRUE(inline_fails) << "the v3 inline must fail its proof for this test to mean anything";
    const KnownFindings kf = KnownFindings::load(dir.string(), cfg);
    ASSERT_FALSE(kf.empty());
    for (const auto& k : kf.keys()) EXPECT_EQ(k, "exec/bpf_loop@1");
    std::filesystem::remove_all(dir);
}

// A finding filed on jit32 does not fail when the campaign runs x86_64 alone: that is no news
// (nothing was fixed), so no note says it "no longer fails"; with jit32 it fails and is known.
TEST(KnownFindings, AFindingOfAProfileNotRunIsNoNews) {
    const auto dir = std::filesystem::temp_directory_path() / ("pf_known_other_arch." + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string filed = kFindings + "/0006-bpf-loop-e2big-upper-half-jit32.case";
    auto c = read_case(filed);
    ASSERT_TRUE(c) << c.error().to_string();
    ASSERT_EQ(c->expect, "fail exec/-/-/state-bytes-mismatch/jit32");
    std::filesystem::copy_file(filed, dir / "filed.case");
    RunConfig x86 = exec_only();
    x86.arches = {arch_x86_64()};
    ASSERT_FALSE(run_case(*c, x86).failed()) << "the finding must not show on x86_64 for this test to mean anything";
    const KnownFindings on_x86 = KnownFindings::load(dir.string(), x86);
    EXPECT_TRUE(on_x86.notes().empty()) << on_x86.notes().front();
    RunConfig jit32 = exec_only();
    jit32.arches = {arch_jit32()};
    const KnownFindings on_jit32 = KnownFindings::load(dir.string(), jit32);
    EXPECT_FALSE(on_jit32.empty());
    EXPECT_TRUE(on_jit32.notes().empty()) << on_jit32.notes().front();
    // A profile it was filed on that runs and does not fail is news: the same case filed as if
    // found on x86_64.
    c->expect = "fail exec/-/-/state-bytes-mismatch/x86_64";
    ASSERT_TRUE(write_case_file_atomic(*c, (dir / "filed.case").string()));
    const KnownFindings stale = KnownFindings::load(dir.string(), x86);
    ASSERT_EQ(stale.notes().size(), 1u);
    EXPECT_NE(stale.notes().front().find("no longer fails"), std::string::npos) << stale.notes().front();
    std::filesystem::remove_all(dir);
}

TEST(KnownFindings, MissingDirectoryKnowsNothing) {
    const KnownFindings kf = KnownFindings::load("/nonexistent/findings", exec_only());
    EXPECT_TRUE(kf.empty());
    EXPECT_EQ(kf.files(), 0u);
    EXPECT_FALSE(kf.is_known(exec_fail("r0-mismatch", "x86_64", "bpf_loop@1")));
}

}  // namespace
}  // namespace patchfuzz::harness
