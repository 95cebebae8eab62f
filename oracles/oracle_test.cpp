// Oracle names parse to ids and back; each built-in Oracle judges its evidence as the function it
// wraps does (failures included), and says which evidence it applies to.
#include "oracles/oracle.hpp"

#include <gtest/gtest.h>

#include "oracles/builtin_oracles.hpp"
#include "oracles/smt/jump_oracle.hpp"
#include "oracles/structural.hpp"

namespace patchfuzz::oracles {
namespace {

TEST(OracleNames, EveryIdRoundTripsAndUnknownNamesAreRejected) {
    const char* names[] = {"structural", "smt-jump", "smt-inline", "exec", "kernel"};
    for (size_t i = 0; i < kAllOracles.size(); ++i) {
        EXPECT_EQ(name_of(kAllOracles[i]), names[i]);
        EXPECT_EQ(parse_oracle(names[i]), kAllOracles[i]);
    }
    EXPECT_EQ(parse_oracle("smt"), std::nullopt);
    EXPECT_EQ(parse_oracle("Structural"), std::nullopt);
    EXPECT_EQ(parse_oracle(""), std::nullopt);
    EXPECT_EQ(oracle_name_list(), "structural, smt-jump, smt-inline, exec, kernel");
}

TEST(OracleNames, SetParsesAListAndNamesTheBadEntry) {
    auto s = parse_oracle_set({"exec", "structural"});
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->has(OracleId::Exec));
    EXPECT_TRUE(s->has(OracleId::Structural));
    EXPECT_FALSE(s->has(OracleId::SmtJump));
    EXPECT_EQ(*s, (OracleSet{OracleId::Structural, OracleId::Exec}));
    s->remove(OracleId::Exec);
    EXPECT_FALSE(s->has(OracleId::Exec));
    std::string bad;
    EXPECT_FALSE(parse_oracle_set({"exec", "smt-jmp"}, &bad));
    EXPECT_EQ(bad, "smt-jmp");
    EXPECT_TRUE(OracleSet{}.empty());
}

// A straight program whose insn 1 is replaced by two insns, and the jump around it.
Program before() {
    return make_program({isa::jmp_imm(BPF_JEQ, 1, 0, 1), isa::mov64_imm(0, 1), isa::mov64_imm(0, 2), isa::exit_insn()});
}
patch::PatchBatch batch() {
    patch::PatchBatch b;
    b.patches.push_back({.kind = patch::PatchKind::Replace, .pos = 1, .insns = {isa::mov64_imm(0, 1), isa::alu64_imm(BPF_ADD, 0, 0)}});
    return b;
}

TEST(BuiltinOracles, StructuralJudgesLikeCompareOutputs) {
    auto patcher = patch::make_patcher("incremental");
    Program ref = before();
    const patch::PatchOutcome out = patcher->apply(ref, batch());
    ASSERT_TRUE(out.ok());
    Program other = ref;
    other.insns[2].imm = 5;
    auto oracle = make_structural_oracle();
    EXPECT_EQ(oracle->name(), "structural");
    EXPECT_EQ(oracle->scope(), Scope::Batch);
    const Program b = before();
    const patch::PatchBatch pb = batch();
    Evidence e{.before = &b, .batch = &pb, .reference = {"incremental", &ref, out}, .candidate = {"batched", &other, out}};
    ASSERT_TRUE(oracle->applies_to(e));
    auto v = oracle->judge(e);
    ASSERT_EQ(v.size(), 1u);
    const Verdict direct = compare_patcher_outputs({"incremental", &ref, out}, {"batched", &other, out});
    EXPECT_EQ(v[0].outcome, Outcome::Fail);
    EXPECT_EQ(v[0].divergence, direct.divergence);
    EXPECT_EQ(v[0].counterexample, direct.counterexample);
    // Known to be the reference's result: a pass, without comparing.
    e.candidate.program = &ref;
    e.same_as_reference = true;
    v = oracle->judge(e);
    EXPECT_EQ(v[0].outcome, Outcome::Pass);
    // The reference is not compared with itself.
    e.candidate.patcher = "incremental";
    EXPECT_FALSE(oracle->applies_to(e));
}

TEST(BuiltinOracles, SmtJumpJudgesLikeCheckJumpTargets) {
    auto patcher = patch::make_patcher("incremental");
    const Program b = before();
    const patch::PatchBatch pb = batch();
    Program after = b;
    const patch::PatchOutcome out = patcher->apply(after, pb);
    ASSERT_TRUE(out.ok());
    smt::SmtOptions so;
    so.use_cache = false;
    auto oracle = make_smt_jump_oracle(so);
    EXPECT_EQ(oracle->name(), "smt-jump");
    Evidence e{.before = &b, .batch = &pb, .reference = {"incremental", &after, out}, .candidate = {"incremental", &after, out}};
    EXPECT_TRUE(oracle->applies_to(e));
    auto v = oracle->judge(e);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].outcome, Outcome::Pass) << v[0].reason;
    Program wrong = after;
    wrong.insns[0].off = 1;  // the jump must now skip both insns of the patch
    e.candidate.program = &wrong;
    v = oracle->judge(e);
    const Verdict direct = smt::check_jump_targets(b, pb, out, wrong, so);
    ASSERT_EQ(direct.outcome, Outcome::Fail);
    EXPECT_EQ(v[0].outcome, Outcome::Fail);
    EXPECT_EQ(v[0].divergence, direct.divergence);
    EXPECT_EQ(v[0].counterexample, direct.counterexample);
}

TEST(BuiltinOracles, SmtInlineAppliesOnlyWhenTheOptionsInline) {
    auto oracle = make_smt_inline_oracle({});
    EXPECT_EQ(oracle->scope(), Scope::Arch);
    const ArchProfile arch = *arch_by_name("x86_64");
    passes::RewriteOptions opts;
    opts.iter_inline = passes::IterInline::Off;
    EXPECT_FALSE(oracle->applies_to({.arch = &arch, .options = &opts}));
    opts.iter_inline = passes::IterInline::V4;
    EXPECT_TRUE(oracle->applies_to({.arch = &arch, .options = &opts}));
    EXPECT_FALSE(oracle->applies_to({.options = &opts}));
}

TEST(BuiltinOracles, ExecJudgesLikeExecDiff) {
    auto oracle = make_exec_oracle({});
    EXPECT_EQ(oracle->scope(), Scope::Case);
    EXPECT_FALSE(oracle->applies_to({}));
    const Program p = make_program({isa::mov64_imm(0, 3), isa::exit_insn()});
    exec::ExecDiffOptions o;
    o.inputs = 2;
    auto with_options = make_exec_oracle(o);
    const ArchProfile arch = *arch_by_name("x86_64");
    auto v = with_options->judge({.arch = &arch, .program = &p});
    exec::ExecDiffOptions direct_opts = o;
    direct_opts.archs = {arch};
    const Verdict direct = exec::exec_diff(p, direct_opts);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].outcome, direct.outcome);
    EXPECT_EQ(v[0].oracle, "exec");
    EXPECT_EQ(v[0].reason, direct.reason);
}

}  // namespace
}  // namespace patchfuzz::oracles
