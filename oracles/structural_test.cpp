// The structural oracle must find each kind of difference and name it; identical outputs pass.
#include "oracles/structural.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::oracles {
namespace {

Program sample() {
    Program p = make_program({isa::mov64_imm(0, 0), isa::jmp_imm(BPF_JEQ, 1, 0, 1), isa::mov64_imm(0, 1),
                              isa::exit_insn()});
    p.linfo = {{.insn_off = 0, .line_col = 1 << 10}, {.insn_off = 2, .line_col = 2 << 10}};
    p.pokes = {{.insn_idx = 2, .map_index = 0, .key = 1}};
    p.insn_arrays = {{.map_index = 0, .entries = {{.orig_off = 2, .xlated_off = 2}}}};
    return p;
}

Verdict run(const Program& a, const Program& b, patch::PatchOutcome oa = {}, patch::PatchOutcome ob = {}) {
    return compare_patcher_outputs({"incremental", &a, oa}, {"batched", &b, ob});
}

TEST(Structural, IdenticalPasses) {
    Program a = sample(), b = sample();
    EXPECT_EQ(run(a, b).outcome, Outcome::Pass);
}

TEST(Structural, EachFieldIsNamed) {
    const Program a = sample();
    struct Row {
        const char* divergence;
        void (*mutate)(Program&);
    };
    const Row rows[] = {
        {"insn-mismatch", [](Program& p) { p.insns[2].imm = 7; }},
        {"length-mismatch", [](Program& p) { p.insns.push_back(isa::exit_insn()); }},
        {"aux-slot", [](Program& p) { p.aux[3].orig_idx = 0; }},
        {"subprog-start", [](Program& p) { p.subprogs.back().start = 5; }},
        {"linfo", [](Program& p) { p.linfo[1].insn_off = 3; }},
        {"poke", [](Program& p) { p.pokes[0].insn_idx = 3; }},
        {"insn-array", [](Program& p) { p.insn_arrays[0].entries[0].xlated_off = isa::kInsnDeleted; }},
        {"finfo", [](Program& p) { p.finfo.push_back({.insn_off = 0, .type_id = 3}); }},
    };
    for (const auto& r : rows) {
        Program b = a;
        r.mutate(b);
        const Verdict v = run(a, b);
        EXPECT_EQ(v.outcome, Outcome::Fail) << r.divergence;
        EXPECT_EQ(v.divergence, r.divergence);
        EXPECT_NE(v.counterexample.find("incremental has"), std::string::npos) << v.counterexample;
    }
}

TEST(Structural, OutcomeMismatchIsErange) {
    Program a = sample(), b = sample();
    const patch::PatchOutcome fail{.err = -12, .raw_err = -34, .log = "insn 3 cannot be patched due to 16-bit range"};
    const Verdict v = run(a, b, fail, {});
    EXPECT_EQ(v.outcome, Outcome::Fail);
    EXPECT_EQ(v.divergence, "erange-mismatch");
    // Same failure on both sides: programs are not compared (the kernel discards them).
    b.insns[0].imm = 99;
    EXPECT_EQ(run(a, b, fail, fail).outcome, Outcome::Pass);
    patch::PatchOutcome other_log = fail;
    other_log.log = "insn 4 cannot be patched due to 16-bit range";
    EXPECT_EQ(run(a, b, fail, other_log).divergence, "error-mismatch");
}

}  // namespace
}  // namespace patchfuzz::oracles
