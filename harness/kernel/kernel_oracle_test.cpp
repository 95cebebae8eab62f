// The kernel oracle judges through the Oracle interface what a kernel check reports: a stand-in
// checker returns chosen outcomes, and the verdict must say the same (class, reason, program
// handed over). Through the runner, plain and memoised loops ask it alike.
#include "harness/kernel/kernel_oracle.hpp"

#include <gtest/gtest.h>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::kernel {
namespace {

Program small_program() { return make_program({isa::mov64_imm(0, 7), isa::exit_insn()}); }

// A checker that records what it was given and answers with `outcome`.
struct StandIn {
    CaseOutcome outcome;
    std::vector<KernelCase> seen;
    bool fail_to_boot = false;
    KernelChecker checker() {
        return [this](const std::vector<KernelCase>& cases) -> Expected<CheckReport> {
            seen.insert(seen.end(), cases.begin(), cases.end());
            if (fail_to_boot) return Error{"", "qemu exited before the guest loader started"};
            CheckReport r;
            r.release = "7.3.4";
            for (size_t i = 0; i < cases.size(); ++i) r.cases.push_back(outcome);
            return r;
        };
    }
};

TEST(KernelOracle, AgreementPassesAndHandsOverTheCase) {
    StandIn s;
    s.outcome.agreement = Agreement::Agree;
    s.outcome.kernel_len = 2;
    s.outcome.runs = {RunCompare{.input = 0, .agree = true}};
    auto oracle = make_kernel_oracle(s.checker(), arch_arm64());
    EXPECT_EQ(oracle->id(), oracles::OracleId::Kernel);
    EXPECT_EQ(oracle->scope(), oracles::Scope::Case);
    EXPECT_FALSE(oracle->applies_to({}));
    const Program p = small_program();
    passes::RewriteOptions opts;
    opts.test_rnd_hi32 = true;
    std::vector<interp::ExecInput> inputs(2);
    const auto v = oracle->judge({.options = &opts, .program = &p, .inputs = inputs, .privilege = passes::Privilege::Bpf});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].outcome, oracles::Outcome::Pass);
    EXPECT_EQ(v[0].oracle, "kernel");
    EXPECT_EQ(v[0].arch, "arm64");
    EXPECT_EQ(v[0].reason, "Linux 7.3.4: the xlated program is the model's (2 insns, 0 masked), 1 test runs agree with the interpreter");
    ASSERT_EQ(s.seen.size(), 1u);
    EXPECT_EQ(s.seen[0].program, p);
    EXPECT_EQ(s.seen[0].inputs.size(), 2u);
    EXPECT_TRUE(s.seen[0].test_rnd_hi32);
    EXPECT_EQ(s.seen[0].privilege, passes::Privilege::Bpf);
}

TEST(KernelOracle, RejectionIsASkipWithTheVerifiersLastWord) {
    StandIn s;
    s.outcome.agreement = Agreement::Rejected;
    s.outcome.rc = -13;
    s.outcome.log = {"0: (b7) r0 = 7", "R0 !read_ok"};
    const Program p = small_program();
    const auto v = make_kernel_oracle(s.checker(), arch_x86_64())->judge({.program = &p});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].outcome, oracles::Outcome::Skip);
    EXPECT_EQ(v[0].reason, "Linux 7.3.4 rejected the program: R0 !read_ok");
}

TEST(KernelOracle, DisagreementsFailWithTheirClass) {
    const Program p = small_program();
    struct Row {
        Agreement agreement;
        bool run_agrees;
        const char* divergence;
    };
    for (const Row& row : {Row{Agreement::Differ, true, "xlated-differ"}, Row{Agreement::ModelFailed, true, "model-failed"},
                           Row{Agreement::Crashed, true, "vm-crashed"}, Row{Agreement::Agree, false, "run-mismatch"}}) {
        StandIn s;
        s.outcome.agreement = row.agreement;
        s.outcome.key = "kernel 0xb4 / model 0x85";
        s.outcome.diff = "    insn 0: kernel w0 = 1, model call 8\n";
        s.outcome.runs = {RunCompare{.input = 0, .agree = row.run_agrees, .detail = "kernel retval 1, interp 2"}};
        const auto v = make_kernel_oracle(s.checker(), arch_x86_64())->judge({.program = &p});
        ASSERT_EQ(v.size(), 1u) << row.divergence;
        EXPECT_EQ(v[0].outcome, oracles::Outcome::Fail) << row.divergence;
        EXPECT_EQ(v[0].divergence, row.divergence);
        EXPECT_EQ(v[0].reason, "Linux 7.3.4: " + std::string(row.divergence) + " (kernel 0xb4 / model 0x85)");
        EXPECT_NE(v[0].counterexample.find(row.run_agrees ? "insn 0: kernel w0 = 1" : "kernel retval 1, interp 2"), std::string::npos)
            << v[0].counterexample;
    }
}

TEST(KernelOracle, AVmThatCannotRunIsUnknownNeverAPass) {
    StandIn s;
    s.fail_to_boot = true;
    const Program p = small_program();
    const auto v = make_kernel_oracle(s.checker(), arch_x86_64())->judge({.program = &p});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].outcome, oracles::Outcome::Unknown);
    EXPECT_EQ(v[0].reason, "the kernel could not be run: qemu exited before the guest loader started");
}

// The runner asks an extra (here: kernel) oracle once per case without explicit batches, after the
// built-in ones, in its plain and memoised loops alike; a case of explicit batches is not asked.
TEST(KernelOracle, TheRunnerAsksItOncePerCase) {
    StandIn s;
    s.outcome.agreement = Agreement::Agree;
    auto oracle = make_kernel_oracle(s.checker(), arch_x86_64());
    harness::Case c;
    c.program = small_program();
    harness::RunConfig cfg;
    cfg.oracles = {oracles::OracleId::Structural, oracles::OracleId::Exec};
    cfg.extra_oracles = {oracle.get()};
    for (bool memoise : {true, false}) {
        cfg.memoise = memoise;
        const harness::CaseReport r = harness::run_case(c, cfg);
        ASSERT_FALSE(r.verdicts.empty());
        EXPECT_EQ(r.verdicts.back().verdict.oracle, "kernel") << memoise;
        EXPECT_EQ(r.verdicts.back().arch, "x86_64") << memoise;
        EXPECT_EQ(r.verdicts[r.verdicts.size() - 2].verdict.oracle, "exec") << memoise;
    }
    EXPECT_EQ(s.seen.size(), 2u);
    c.patches.emplace_back();
    (void)harness::run_case(c, cfg);
    EXPECT_EQ(s.seen.size(), 2u);
}

}  // namespace
}  // namespace patchfuzz::kernel
