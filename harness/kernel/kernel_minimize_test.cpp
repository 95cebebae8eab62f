// The kernel-finding minimizer against a stand-in kernel (no VM): a "verifier" that rejects the
// register reads passes::rejected_reads() finds, and a disagreement tied to one insn (an sdiv),
// as the 6.1 model shows against the 6.12 kernel. The real kernel runs in ci/kernel.
#include "harness/kernel/kernel_minimize.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "bpf/asm/assemble.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "bpf/passes/rejected_reads.hpp"
#include "gen/shrink.hpp"

namespace patchfuzz::kernel {
namespace {

bool is_sdiv(const isa::Insn& i) { return i.code == (BPF_ALU64 | BPF_DIV | BPF_K) && i.off == 1; }
bool has(const Program& p, bool (*pred)(const isa::Insn&)) { return std::any_of(p.insns.begin(), p.insns.end(), pred); }

Program program(std::string_view text) {
    auto insns = assembly::assemble(text, "test.s");
    EXPECT_TRUE(static_cast<bool>(insns)) << (insns ? "" : insns.error().to_string());
    Program p = make_program(insns ? *insns : std::vector<isa::Insn>{});
    passes::infer_facts(p);
    return p;
}

// The stand-in kernel: rejects what rejected_reads() finds; an accepted program with an sdiv
// "differs" (key from `key_of`), one whose input has ctx[0] == 7 mismatches in its test run.
struct FakeKernel {
    std::function<std::string(const Program&)> key_of = [](const Program&) { return std::string("kernel 0xbf / model 0x37"); };
    uint32_t calls = 0;
    std::vector<size_t> batch_sizes;
    std::optional<uint32_t> fail_on_call;  // this call returns an error instead

    Expected<CheckReport> operator()(const std::vector<KernelCase>& cases) {
        ++calls;
        batch_sizes.push_back(cases.size());
        if (fail_on_call && calls == *fail_on_call) return make_error("vm", "the guest hung");
        CheckReport r;
        for (const KernelCase& c : cases) {
            CaseOutcome o;
            o.name = c.name;
            if (!passes::rejected_reads(c.program).empty()) {
                o.agreement = Agreement::Rejected;
            } else if (has(c.program, is_sdiv)) {
                o.agreement = Agreement::Differ;
                o.key = key_of(c.program);
            } else {
                o.agreement = Agreement::Agree;
                for (uint32_t k = 0; k < c.inputs.size(); ++k) {
                    const bool marked = !c.inputs[k].ctx.empty() && c.inputs[k].ctx[0] == 7;
                    o.runs.push_back({k, !marked, marked ? "retval: kernel 1, interpreter 2" : ""});
                    if (marked && o.key.empty()) o.key = "retval: kernel N, interpreter N";
                }
            }
            r.cases.push_back(std::move(o));
        }
        return r;
    }
};

BatchChecker checker(FakeKernel& k) {
    return [&k](const std::vector<KernelCase>& cases) { return k(cases); };
}

// The needed insns (r0 for the exit, r1 -> r2 -> r3 for the sdiv) interleaved with filler: no run
// of two or more insns can become nops without a rejected read, so only single nop-outs shrink.
constexpr std::string_view kInterleaved = R"(
r0 = 0
r5 = 11
r1 = 5
r6 = 12
r2 = r1
r7 = 13
r2 += 3
r8 = 14
r3 = r2
r9 = 15
r5 = 16
r3 s/= 3
r6 = 17
r0 = r3
r7 = 18
r4 = 1
r8 = 19
r4 += r0
r9 = 20
r5 = 21
r6 = 22
r7 = 23
r8 = 24
r9 = 25
exit
)";

CaseOutcome first_outcome(FakeKernel& k, const KernelCase& c) {
    auto r = k({c});
    EXPECT_TRUE(static_cast<bool>(r));
    return r->cases.at(0);
}

TEST(KernelMinimize, ShrinksToTheInsnsTheDisagreementNeedsInFewBoots) {
    FakeKernel k;
    const KernelCase original{"interleaved", program(kInterleaved), {}};
    const CaseOutcome found = first_outcome(k, original);
    ASSERT_STREQ(divergence_of(found), "xlated-differ");
    k.calls = 0;
    k.batch_sizes.clear();
    const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k));
    EXPECT_EQ(m.ended, "fixpoint");
    // r0 = 0, r1 = .., r2 = r1, r3 = r2, r3 s/= .., exit: what the reads and the sdiv need.
    EXPECT_LE(m.minimized.program.len(), 6u) << m.minimized.program.len();
    EXPECT_TRUE(has(m.minimized.program, is_sdiv));
    EXPECT_TRUE(passes::rejected_reads(m.minimized.program).empty());
    EXPECT_STREQ(divergence_of(m.outcome), "xlated-differ");
    EXPECT_EQ(m.outcome.key, found.key);
    EXPECT_EQ(m.minimized.name, "interleaved");
    EXPECT_EQ(m.rounds, k.calls);
    EXPECT_GE(m.steps, 2u);
    // Sixteen filler insns go one nop-out each; merged, a handful of boots do it (one per insn
    // would take more than sixteen).
    EXPECT_LE(m.rounds, 8u);
    uint64_t judged = 0;
    for (size_t n : k.batch_sizes) judged += n;
    EXPECT_EQ(m.tried, judged);
}

TEST(KernelMinimize, KeepsWhatADisagreementOfTheSameKeyNeeds) {
    FakeKernel k;
    // Without `r4 = 1` the disagreement would be another one (another first difference).
    k.key_of = [](const Program& p) {
        const bool r4_set = std::any_of(p.insns.begin(), p.insns.end(), [](const isa::Insn& i) {
            return i.code == (BPF_ALU64 | BPF_MOV | BPF_K) && i.dst_reg == 4 && i.imm != 0;
        });
        return std::string(r4_set ? "kernel 0xbf / model 0x37" : "kernel 0xb7 / model end");
    };
    const KernelCase original{"keyed", program(kInterleaved), {}};
    const CaseOutcome found = first_outcome(k, original);
    const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k));
    EXPECT_EQ(m.outcome.key, "kernel 0xbf / model 0x37");
    EXPECT_EQ(k.key_of(m.minimized.program), "kernel 0xbf / model 0x37");
    EXPECT_TRUE(has(m.minimized.program, is_sdiv));
    EXPECT_LE(m.minimized.program.len(), 7u);
}

TEST(KernelMinimize, DropsTheInputsARunMismatchDoesNotNeed) {
    FakeKernel k;
    auto input = [](uint8_t first) {
        interp::ExecInput in;
        in.ctx = {first, 0, 0, 0};
        return in;
    };
    const KernelCase original{"runs", program("r0 = 0\nr1 = 2\nr0 += r1\nexit\n"), {input(1), input(7), input(3)}};
    const CaseOutcome found = first_outcome(k, original);
    ASSERT_STREQ(divergence_of(found), "run-mismatch");
    const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k));
    ASSERT_EQ(m.minimized.inputs.size(), 1u);
    EXPECT_EQ(m.minimized.inputs[0].ctx[0], 7);
    EXPECT_STREQ(divergence_of(m.outcome), "run-mismatch");
    EXPECT_LE(m.minimized.program.len(), 2u);  // r0 = 0; exit
}

TEST(KernelMinimize, EndsAtItsBudgetsWithTheBestSoFar) {
    const KernelCase original{"budget", program(kInterleaved), {}};
    {
        FakeKernel k;
        const CaseOutcome found = first_outcome(k, original);
        k.calls = 0;
        KernelMinimizeOptions o;
        o.max_rounds = 1;
        const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k), o);
        EXPECT_EQ(m.ended, "rounds");
        EXPECT_EQ(m.rounds, 1u);
        EXPECT_EQ(k.calls, 1u);
        EXPECT_LT(gen::shrink_measure(m.minimized.program), gen::shrink_measure(original.program));
    }
    {
        FakeKernel k;
        const CaseOutcome found = first_outcome(k, original);
        k.calls = 0;
        KernelMinimizeOptions o;
        uint32_t asked = 0;
        o.stop = [&] { return ++asked > 2; };
        const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k), o);
        EXPECT_EQ(m.ended, "stopped");
        EXPECT_EQ(m.rounds, 2u);
    }
    {
        FakeKernel k;
        const CaseOutcome found = first_outcome(k, original);
        k.calls = 0;
        k.fail_on_call = 2;
        const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k));
        EXPECT_EQ(m.ended.rfind("checker: ", 0), 0u) << m.ended;
        EXPECT_NE(m.ended.find("the guest hung"), std::string::npos);
        EXPECT_EQ(m.steps, 1u);  // the first round's shrink is kept
        EXPECT_TRUE(has(m.minimized.program, is_sdiv));
    }
}

TEST(KernelMinimize, AnAgreeingCaseIsLeftAsItIs) {
    FakeKernel k;
    const KernelCase original{"agrees", program("r0 = 0\nexit\n"), {}};
    const CaseOutcome found = first_outcome(k, original);
    k.calls = 0;
    const KernelMinimizeResult m = minimize_kernel_finding(original, found, checker(k));
    EXPECT_EQ(k.calls, 0u);
    EXPECT_EQ(m.rounds, 0u);
    EXPECT_EQ(m.minimized.program, original.program);
}

// The kernel's rewrite executed: an agreeing model whose kernel changes the original's results is
// a kernel finding of its own; with the original's results kept, agreement stays agreement.
TEST(KernelMinimize, AKernelThatChangesTheOriginalsResultsIsAFindingWithoutAModel) {
    CaseOutcome o;
    o.agreement = Agreement::Agree;
    o.runs = {{0, true, ""}};
    o.original_runs = {{0, true, ""}};
    EXPECT_EQ(divergence_of(o), nullptr);
    o.original_runs.push_back({1, false, "retval: kernel 4294967289, interpreter 3"});
    EXPECT_STREQ(divergence_of(o), "kernel-changes-meaning");
    o.runs.push_back({1, false, "retval: kernel 4294967289, interpreter 3"});
    EXPECT_STREQ(divergence_of(o), "run-mismatch");  // the model's own disagreement comes first
}

}  // namespace
}  // namespace patchfuzz::kernel
