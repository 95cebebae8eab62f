// Execution differential on the numeric-iterator inlines (issue 6 required results): the default
// (V4) inline agrees with the kfunc calls on every profile; V1 diverges under jit32 (MOVSX decoded
// as MOV: bug class B3) and V3 diverges (signed distance compare: B2), each found by generated
// inputs. Also: compare_runs classifies divergences.
#include <gtest/gtest.h>

#include <linux/bpf.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bpf/interp/loop_programs.hpp"
#include "oracles/exec/exec_diff.hpp"
#include "oracles/exec/zext_facts.hpp"

namespace patchfuzz::oracles::exec {
namespace {

ExecDiffOptions opts_for(passes::IterInline v, std::vector<ArchProfile> archs, uint32_t inputs, uint64_t seed) {
    ExecDiffOptions o;
    o.archs = std::move(archs);
    o.rewrite.iter_inline = v;
    o.inputs = inputs;
    o.seed = seed;
    return o;
}

TEST(ExecDiff, V4InlineAgreesWithTheKfuncsOnAllProfiles) {
    for (bool from_ctx : {true, false}) {
        interp::IterSumOptions io;
        io.bounds_from_ctx = from_ctx;
        io.start = -3;
        io.end = 3;
        ExecDiffStats st;
        Verdict v = exec_diff(interp::iter_sum_program(io), opts_for(passes::IterInline::V4, {}, 300, 42), &st);
        EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << "\n" << v.counterexample;
        EXPECT_EQ(st.skipped_inputs, 0u);
        // Every input ran the original once (the meaning, under the 64-bit semantics x86_64 and
        // arm64 share) and the rewrite under both semantics classes; the jit32 rewrites behave as
        // the meaning, so jit32's own reference never runs.
        EXPECT_EQ(st.settled_by_meaning, 300u);
        EXPECT_EQ(st.executions, 300u * 3);
    }
}

// ctx's first word, sign-extended from its low byte (MOVSX, which jit32 runs as a plain move),
// is returned; w4 /= w5 (a division misc_fixups guards) and a zext_dst mark make every profile
// judged. The original means r0 = (s8)ctx[0]; the jit32 reference returns ctx[0] as it is.
Program movsx_case() {
    using namespace isa;
    Program p = make_program({ldx(BPF_W, 2, 1, 0), make(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 8, 0), mov32_imm(4, 7),
                              mov32_imm(5, 3), alu32_reg(BPF_DIV, 4, 5), mov64_reg(0, 3), exit_insn()});
    p.aux[2].zext_dst = true;
    return p;
}

TEST(ExecDiff, RewritesAreHeldToTheMeaningFirstAndToTheJitsReferenceWhenTheyDepartFromIt) {
    ExecDiffOptions o = opts_for(passes::IterInline::V4, {arch_x86_64(), arch_jit32()}, 16, 5);
    ExecDiffStats st;
    Verdict v = exec_diff(movsx_case(), o, &st);
    // jit32's rewrite runs the MOVSX as a move, as its reference does: it departs from the
    // meaning wherever ctx[0] is not its low byte sign-extended, and is judged against the
    // reference there (and agrees).
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << "\n" << v.counterexample;
    EXPECT_NE(v.reason.find("x 2 profiles"), std::string::npos) << v.reason;
    EXPECT_LT(st.settled_by_meaning, st.inputs_run);
    // Without a profile that runs the meaning, jit32 is judged against its reference alone.
    ExecDiffStats alone;
    o.archs = {arch_jit32()};
    EXPECT_EQ(exec_diff(movsx_case(), o, &alone).outcome, Outcome::Pass);
    EXPECT_EQ(alone.settled_by_meaning, 0u);
    // A jit32 rewrite that breaks the meaning and its reference still fails, with the meaning
    // there: V1's inline counts with a MOVSX that jit32 runs as a move (bug class B3).
    Verdict bad = exec_diff(interp::iter_sum_program(), opts_for(passes::IterInline::V1, {arch_x86_64(), arch_jit32()}, 300, 7));
    ASSERT_EQ(bad.outcome, Outcome::Fail) << bad.reason;
    EXPECT_EQ(bad.arch, "jit32");
}

TEST(ExecDiff, V1DivergesUnderJit32Only) {
    const Program p = interp::iter_sum_program();
    Verdict ok = exec_diff(p, opts_for(passes::IterInline::V1, {arch_x86_64(), arch_arm64()}, 300, 7));
    EXPECT_EQ(ok.outcome, Outcome::Pass) << ok.counterexample;
    auto t0 = std::chrono::steady_clock::now();
    ExecDiffStats st;
    Verdict bad = exec_diff(p, opts_for(passes::IterInline::V1, {arch_jit32()}, 300, 7), &st);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(bad.outcome, Outcome::Fail);
    EXPECT_EQ(bad.arch, "jit32");
    std::printf("V1 on jit32: %s after %u inputs, %.3f s\n%s\n", bad.divergence.c_str(), st.inputs_run, secs,
                bad.counterexample.c_str());
}

TEST(ExecDiff, V3Diverges) {
    ExecDiffStats st;
    auto t0 = std::chrono::steady_clock::now();
    Verdict bad = exec_diff(interp::iter_sum_program(), opts_for(passes::IterInline::V3, {}, 300, 11), &st);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(bad.outcome, Outcome::Fail);
    EXPECT_FALSE(bad.counterexample.empty());
    std::printf("V3: %s on %s after %u inputs, %.3f s\n%s\n", bad.divergence.c_str(), bad.arch.c_str(), st.inputs_run, secs,
                bad.counterexample.c_str());
}

TEST(ExecDiff, WithoutFailureDetailsAFailKeepsItsSignatureAndCauseButNoTraces) {
    ExecDiffOptions o = opts_for(passes::IterInline::V3, {}, 300, 11);
    const Verdict full = exec_diff(interp::iter_sum_program(), o);
    o.failure_details = false;
    const Verdict brief = exec_diff(interp::iter_sum_program(), o);
    ASSERT_EQ(full.outcome, Outcome::Fail);
    EXPECT_EQ(brief.outcome, Outcome::Fail);
    EXPECT_EQ(brief.divergence, full.divergence);
    EXPECT_EQ(brief.arch, full.arch);
    EXPECT_EQ(brief.reason, full.reason);  // the cause included: known findings match on it
    EXPECT_FALSE(exec_cause(brief).empty()) << brief.reason;
    EXPECT_NE(full.counterexample.find("reference trace"), std::string::npos) << full.counterexample;
    EXPECT_EQ(brief.counterexample.find("trace ("), std::string::npos) << brief.counterexample;
    EXPECT_EQ(brief.counterexample.find('\n'), std::string::npos) << brief.counterexample;
    // Where it happened, as the full one says first.
    EXPECT_EQ(full.counterexample.rfind(brief.counterexample.substr(0, brief.counterexample.find(':')), 0), 0u)
        << full.counterexample << "\n" << brief.counterexample;
}

TEST(ExecDiff, CompareRunsClassifies) {
    interp::ExecResult a;
    a.stack.assign(512, 0);
    a.r0 = 0x1234;
    interp::ExecResult b = a;
    EXPECT_FALSE(compare_runs(a, b, 16, false));
    b.r0 = 0xffffffff00001234ULL;  // only the upper half differs: an int return agrees
    EXPECT_FALSE(compare_runs(a, b, 16, false));
    EXPECT_EQ(compare_runs(a, b, 16, true)->kind, "r0-mismatch");
    // The details a developer reads (hex as C writes it, lower case, no padding).
    EXPECT_EQ(compare_runs(a, b, 16, true)->detail, "r0: reference 0x1234, rewritten 0xffffffff00001234");
    b = a;
    b.stack[512 - 9] = 1;  // fp-9: inside a 16-byte frame
    b.stack[512 - 16] = 0xab;
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "state-bytes-mismatch");
    EXPECT_EQ(compare_runs(a, b, 16, false)->detail,
              "stack byte -16: reference 0000000000000000, rewritten ab00000000000001 (8 bytes from -16)");
    EXPECT_FALSE(compare_runs(a, b, 8, false));  // below the program's own stack: the rewrite's
    b = a;
    b.effects = {"map_delete(map 0) = 0"};
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "effects-mismatch");
    b = a;
    b.status = interp::ExecResult::Status::Fault;
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "status-mismatch");
}

TEST(ExecDiff, InsnArrayMapsAreNotCompared) {
    // An insn array holds code addresses of the program that runs: a rewrite moves them by design.
    interp::ExecResult a;
    a.stack.assign(512, 0);
    a.maps = {{interp::MapEntry{{0, 0, 0, 0}, {0x60, 1, 0, 0, 0, 0xb0, 0xff, 0xff}}}};
    interp::ExecResult b = a;
    b.maps[0][0].value[0] = 0x50;
    std::vector<MapDef> defs = {MapDef{.type = isa::kMapTypeInsnArray, .key_size = 4, .value_size = 8, .max_entries = 1}};
    EXPECT_FALSE(compare_runs(a, b, 16, false, &defs));
    defs[0].type = BPF_MAP_TYPE_ARRAY;
    EXPECT_EQ(compare_runs(a, b, 16, false, &defs)->kind, "map-mismatch");
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "map-mismatch");
}

// compare_runs first asks whether the runs agree in everything at once (the common case) and only
// then looks for the first difference: a difference in any one compared field, alone, must still
// be found, and one in what is not compared must not be.
TEST(ExecDiff, CompareRunsFindsEveryFieldAlone) {
    interp::ExecResult a;
    a.stack.assign(512, 0);
    a.ctx.assign(64, 1);
    a.packet.assign(64, 2);
    a.map_digests = {11, 22};
    a.effects = {"clock() = 1000001000", "prandom() = 7"};
    EXPECT_FALSE(compare_runs(a, a, 16, true));
    auto kind_with = [&](auto&& change) -> std::string {
        interp::ExecResult b = a;
        change(b);
        const auto d = compare_runs(a, b, 16, true);
        return d ? d->kind : "none";
    };
    EXPECT_EQ(kind_with([](auto& b) { b.status = interp::ExecResult::Status::StepBudget; }), "status-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.r0 = 1; }), "r0-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.stack[511] = 1; }), "state-bytes-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.stack[0] = 1; }), "none");  // below the program's 16 bytes
    EXPECT_EQ(kind_with([](auto& b) { b.stack.pop_back(); }), "state-bytes-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.ctx[63] = 0; }), "state-bytes-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.ctx.clear(); }), "state-bytes-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.packet[0] = 0; }), "state-bytes-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests[1] = 23; }), "map-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests.pop_back(); }), "map-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.effects[1] = "prandom() = 8"; }), "effects-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.effects.pop_back(); }), "effects-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.steps = 99; }), "none");  // not compared
    // Digests on one side only: the entries decide (here none on either side).
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests.clear(); }), "none");
    a.maps = {{}, {}};
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests.clear(); }), "none");
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests.clear(), b.maps.pop_back(); }), "map-mismatch");
    EXPECT_EQ(kind_with([](auto& b) { b.map_digests.clear(), b.maps[1] = {interp::MapEntry{{0}, {1}}}; }), "map-mismatch");
    a.map_digests.clear();
    EXPECT_EQ(kind_with([](auto& b) { b.maps[0] = {interp::MapEntry{{0}, {1}}}; }), "map-mismatch");
}

TEST(ExecDiff, UnmodelledHelperIsSkipNotFailOrPass) {
    // bpf_get_func_ip (173) has no reference model: the oracle cannot judge the program (whose
    // division by a register the passes guard, so that there is a rewrite to compare).
    Program p = make_program({isa::call_helper(BPF_FUNC_get_func_ip), isa::mov64_imm(1, 2),
                              isa::alu64_reg(BPF_DIV, 0, 1), isa::exit_insn()});
    Verdict v = exec_diff(p, opts_for(passes::IterInline::V4, {}, 4, 1));
    EXPECT_EQ(v.outcome, Outcome::Skip) << v.reason;
    EXPECT_NE(v.reason.find("helper 173"), std::string::npos) << v.reason;
}

// A program no pass changes is compared with nothing, so nothing runs: the verdict is a skip that
// says so, not a pass. A 32-bit def with its zext mark is judged on jit32 even so: there the
// reference applies the mark and the unchanged rewrite does not (a missing zext insertion is a
// divergence to find), while the 64-bit profiles still have nothing to compare.
TEST(ExecDiff, NothingRewrittenIsNothingToCompare) {
    using namespace isa;
    const Program same = make_program({mov64_imm(0, 7), alu64_imm(BPF_ADD, 0, 1), exit_insn()});
    ExecDiffStats st;
    Verdict v = exec_diff(same, opts_for(passes::IterInline::V4, {}, 4, 1), &st);
    EXPECT_EQ(v.outcome, Outcome::Skip) << v.reason;
    EXPECT_NE(v.reason.find("nothing to compare"), std::string::npos) << v.reason;
    EXPECT_EQ(st.executions, 0u);

    Program marked = make_program({mov32_imm(0, 7), exit_insn()});
    marked.aux[0].zext_dst = true;
    ExecDiffOptions o = opts_for(passes::IterInline::V4, {arch_x86_64(), arch_jit32()}, 4, 1);
    o.rewrite.only = {"misc_fixups"};  // no zext pass: the rewrite stays the original
    ExecDiffStats marked_st;
    Verdict m = exec_diff(marked, o, &marked_st);
    EXPECT_EQ(m.outcome, Outcome::Pass) << m.reason << "\n" << m.counterexample;
    EXPECT_NE(m.reason.find("x 1 profiles"), std::string::npos) << m.reason;
    EXPECT_EQ(marked_st.executions, 4u * 2);  // jit32: the reference with marks, the rewrite without
}

// w1 = N (a 32-bit def), r2 = callback, r3 = r4 = 0, bpf_loop, r0 = loop result, exit; callback
// returns 0. `zext` sets zext_dst on the w1 def (what the verifier does: helper args are 64-bit reads).
Program bpf_loop_case(int32_t n, bool zext) {
    using namespace isa;
    Program p = make_program({mov32_imm(1, n), ldimm64_lo(2, BPF_PSEUDO_FUNC, 7), ldimm64_hi(0), mov64_imm(3, 0),
                              mov64_imm(4, 0), call_helper(BPF_FUNC_loop), stx(BPF_DW, 10, 0, -8), ldx(BPF_DW, 0, 10, -8),
                              exit_insn(), mov64_imm(0, 0), exit_insn()});
    p.aux[0].zext_dst = zext;
    p.aux[5].loop_fit_for_inline = true;
    p.aux[5].loop_callback_subprogno = 1;
    p.subprogs[0].stack_depth = 8;
    p.subprogs[1].is_cb = true;
    return p;
}

// exec_diff() reuses per thread the buffers its runs write into and start from (the generated
// input, the results, the saved set-up) and the profiles' set-ups (their rewrites, the programs
// that run). A case judged after others on one thread must get the
// verdict it gets on a fresh thread: programs with and without maps, failing ones (whose
// counterexample shows the input), and one judged again from inside its own run loop (the
// zext-facts path, which must not take the buffers in use).
TEST(ExecDiff, CasesAfterOtherCasesGetTheVerdictsOfAFreshThread) {
    using namespace isa;
    Program mapped = make_program({st(BPF_W, 10, -4, 1), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10),
                                   alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem), mov64_imm(6, 0),
                                   jmp_imm(BPF_JEQ, 0, 0, 2), ldx(BPF_DW, 6, 0, 0), st(BPF_DW, 0, 0, 5), st(BPF_DW, 10, -16, 0),
                                   stx(BPF_DW, 10, 6, -16), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 1), ldimm64_hi(0), mov64_reg(2, 10),
                                   alu64_imm(BPF_ADD, 2, -4), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0),
                                   call_helper(BPF_FUNC_map_update_elem), mov64_reg(0, 6), exit_insn()});
    mapped.maps = {MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4},
                   MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 4}};
    const Program iter = interp::iter_sum_program();
    const Program unfacted = bpf_loop_case(3, false);
    struct Case {
        const Program* prog;
        ExecDiffOptions opts;
    };
    // V1 on jit32 with one input: seed 5's passes, seed 6's fails; one after the other, a run
    // that started from the other's input would give the other's verdict.
    const std::vector<Case> cases = {{&iter, opts_for(passes::IterInline::V1, {arch_jit32()}, 1, 5)},
                                     {&iter, opts_for(passes::IterInline::V1, {arch_jit32()}, 1, 6)},
                                     {&iter, opts_for(passes::IterInline::V1, {arch_jit32()}, 1, 5)},
                                     {&iter, opts_for(passes::IterInline::V3, {}, 40, 11)},
                                     {&mapped, opts_for(passes::IterInline::V4, {}, 12, 5)},
                                     {&iter, opts_for(passes::IterInline::V1, {arch_jit32()}, 300, 7)},
                                     {&unfacted, opts_for(passes::IterInline::V4, {arch_jit32()}, 8, 3)},
                                     {&mapped, opts_for(passes::IterInline::V4, {arch_jit32()}, 12, 9)},
                                     {&iter, opts_for(passes::IterInline::V3, {}, 40, 11)}};
    struct Judged {
        Verdict v;
        ExecDiffStats st;
    };
    auto judge = [](const Case& c) {
        Judged j;
        j.v = exec_diff(*c.prog, c.opts, &j.st);
        return j;
    };
    size_t failed = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
        SCOPED_TRACE("case " + std::to_string(k));
        const Judged after_others = judge(cases[k]);
        Judged fresh;
        std::thread([&] { fresh = judge(cases[k]); }).join();
        EXPECT_EQ(after_others.v.outcome, fresh.v.outcome);
        EXPECT_EQ(after_others.v.reason, fresh.v.reason);
        EXPECT_EQ(after_others.v.divergence, fresh.v.divergence);
        EXPECT_EQ(after_others.v.counterexample, fresh.v.counterexample);
        EXPECT_EQ(after_others.v.arch, fresh.v.arch);
        EXPECT_EQ(after_others.st.executions, fresh.st.executions);
        EXPECT_EQ(after_others.st.inputs_run, fresh.st.inputs_run);
        EXPECT_EQ(after_others.st.skipped_inputs, fresh.st.skipped_inputs);
        if (fresh.v.outcome == Outcome::Fail) ++failed;
    }
    EXPECT_GE(failed, 3u);  // counterexamples (with their inputs) were compared
}

TEST(ExecDiff, HelperArgumentWithoutZextFactIsNotJudgedOnJit32) {
    // Without zext_dst on `w1 = 3` a 32-bit JIT keeps r1's stale upper half: the helper model reads
    // the u32 nr_loops (3), the inline compares all 64 bits. The kernel would have marked the def.
    const Program bad = bpf_loop_case(3, false);
    auto why = missing_zext_fact(bad);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("insn 0"), std::string::npos) << *why;
    EXPECT_FALSE(missing_zext_fact(bpf_loop_case(3, true)).has_value());
    Verdict v = exec_diff(bad, opts_for(passes::IterInline::V4, {arch_jit32()}, 8, 3));
    EXPECT_EQ(v.outcome, Outcome::Skip) << v.reason << "\n" << v.counterexample;
    // With the fact, jit32 is judged (and agrees: 3 iterations either way).
    Verdict ok = exec_diff(bpf_loop_case(3, true), opts_for(passes::IterInline::V4, {arch_jit32()}, 8, 3));
    EXPECT_EQ(ok.outcome, Outcome::Pass) << ok.reason << "\n" << ok.counterexample;
    // A 64-bit redefinition before the call: the 32-bit def's upper half is never read.
    Program redefined = bad;
    redefined.insns.insert(redefined.insns.begin() + 1, isa::mov64_imm(1, 3));
    redefined.aux.insert(redefined.aux.begin() + 1, InsnAux{});
    EXPECT_FALSE(missing_zext_fact(redefined).has_value());
}

TEST(ExecDiff, Alu64ReadOfAnUnmarked32BitDefIsNotJudgedOnJit32) {
    // w0 = 7; w0 /= w2 (misc_fixups rewrites it, marking the patched div zext_dst); r0 ^= r3 reads
    // the upper half, so the verifier marks the div; a case without the mark is skipped on jit32
    // but still judged on x86_64.
    using namespace isa;
    Program p = make_program({mov32_imm(0, 7), mov32_imm(2, 3), alu32_reg(BPF_DIV, 0, 2), mov64_imm(3, 1),
                              alu64_reg(BPF_XOR, 0, 3), exit_insn()});
    p.aux[0].zext_dst = p.aux[1].zext_dst = true;
    auto why = missing_zext_fact(p);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("insn 2 defines w0"), std::string::npos) << *why;
    // Whether this particular program diverges on jit32 depends on the inputs; what must hold is
    // that it is never a fail, and that the completed facts make it pass.
    EXPECT_NE(exec_diff(p, opts_for(passes::IterInline::V4, {arch_jit32()}, 4, 1)).outcome, Outcome::Fail);
    EXPECT_FALSE(missing_zext_fact(with_zext_facts(p)).has_value());
    EXPECT_EQ(exec_diff(with_zext_facts(p), opts_for(passes::IterInline::V4, {arch_jit32()}, 4, 1)).outcome, Outcome::Pass);
    EXPECT_EQ(exec_diff(p, opts_for(passes::IterInline::V4, {arch_x86_64()}, 4, 1)).outcome, Outcome::Pass);
    p.aux[2].zext_dst = true;
    EXPECT_FALSE(missing_zext_fact(p).has_value());
    // A 32-bit read (JMP32, ALU32) or a redefinition before any 64-bit read makes no claim.
    Program q = make_program({mov32_imm(0, 7), jmp32_imm(BPF_JEQ, 0, 1, 0), alu32_imm(BPF_ADD, 0, 1), mov64_imm(0, 0), exit_insn()});
    EXPECT_FALSE(missing_zext_fact(q).has_value());
    // The path follows a `goto`: w0 s/= w2; goto +0; lock *(u64 *)(r10 -8) += r0 reads all 64 bits.
    Program g = make_program({mov64_imm(2, 3), make(BPF_ALU | BPF_DIV | BPF_X, 0, 2, 1, 0), ja(0),
                              make(BPF_STX | BPF_DW | BPF_ATOMIC, 10, 0, -8, BPF_ADD), mov64_imm(0, 0), exit_insn()});
    auto gw = missing_zext_fact(g);
    ASSERT_TRUE(gw.has_value());
    EXPECT_NE(gw->find("insn 3 reads r0"), std::string::npos) << *gw;
    // r6-r9 survive calls: w8 s%= w2; call pc+3 (a subprog); r8 s>>= 1 reads all of r8 (found by
    // a campaign as an r0 mismatch on jit32 "caused" by the div/mod guard).
    Program c = make_program({mov64_imm(2, 3), make(BPF_ALU | BPF_MOD | BPF_X, 8, 2, 1, 0), call_pseudo(3),
                              alu64_imm(BPF_ARSH, 8, 1), mov64_reg(0, 8), exit_insn(), mov64_imm(0, 0), exit_insn()});
    auto cw = missing_zext_fact(c);
    ASSERT_TRUE(cw.has_value());
    EXPECT_NE(cw->find("insn 3 reads r8"), std::string::npos) << *cw;
    // The path continues through a gotox to the insn-array entries: w7 s%= -1; gotox r1; exit;
    // r7 s%= 3 (an entry) reads all of r7 (found as a jit32 stack mismatch blamed on row c).
    Program x = make_program({make(BPF_ALU | BPF_MOD | BPF_K, 7, 0, 1, -1), make(BPF_JMP | BPF_JA | BPF_X, 1, 0, 0, 0),
                              exit_insn(), alu64_imm(BPF_MOD, 7, 3), exit_insn()});
    EXPECT_FALSE(missing_zext_fact(x).has_value()) << "no jump table: the gotox path ends";
    x.insn_arrays = {InsnArray{.map_index = 0, .entries = {InsnArrayEntry{.orig_off = 3, .xlated_off = 3}}}};
    auto xw = missing_zext_fact(x);
    ASSERT_TRUE(xw.has_value());
    EXPECT_NE(xw->find("insn 3 reads r7"), std::string::npos) << *xw;
}

TEST(ExecDiff, NeedsZextNarrowingIsNotJudgedOnJit32) {
    // w2 = w8; r7 = r2 with needs_zext (misc_fixups narrows it to w7 = w2, no zext_dst); the stored
    // r7 keeps a stale upper half on jit32. The verifier sets needs_zext only for arena pointers,
    // which 32-bit JITs cannot load: no fail on jit32; x86_64 (implicit zero extension) agrees.
    using namespace isa;
    Program p = make_program({mov32_reg(2, 8), mov64_reg(7, 2), stx(BPF_DW, 10, 7, -8), mov64_imm(0, 0), exit_insn()});
    p.aux[0].zext_dst = true;
    p.aux[1].needs_zext = true;
    p.subprogs[0].stack_depth = 8;
    ASSERT_TRUE(zext_jit_fact_issue(p).has_value());
    EXPECT_FALSE(missing_zext_fact(p).has_value());
    Verdict j = exec_diff(p, opts_for(passes::IterInline::V4, {arch_jit32()}, 8, 2));
    EXPECT_EQ(j.outcome, Outcome::Skip) << j.reason << "\n" << j.counterexample;
    EXPECT_NE(j.reason.find("needs_zext"), std::string::npos) << j.reason;
    EXPECT_EQ(exec_diff(p, opts_for(passes::IterInline::V4, {arch_x86_64()}, 8, 2)).outcome, Outcome::Pass);
}

TEST(ExecDiff, BpfLoopE2bigDivergenceIsAttributedToTheBpfLoopPass) {
    // nr_loops = BPF_MAX_LOOPS + 1: the helper returns the long -E2BIG, the inline sets w0 = -7
    // (finding 0001); the stored r0's upper half differs. Only the bpf_loop pass reproduces it.
    Verdict v = exec_diff(bpf_loop_case(8388609, true), opts_for(passes::IterInline::V4, {arch_x86_64()}, 1, 1));
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason;
    EXPECT_EQ(v.divergence, "state-bytes-mismatch");
    // The place: the template's slot 1, the -E2BIG move (docs/patching.md §5.2: slot 0 is the
    // bound check, slot 1 the move it jumps over to), the one insn whose width decides the run.
    EXPECT_EQ(exec_cause(v), "bpf_loop@1") << v.reason;
    EXPECT_EQ(exec_cause(Verdict::pass_("exec", "x")), "");
}

TEST(ExecDiff, TwoBugsOfOnePassHaveTwoPlaces) {
    // Finding 0007's shape: nr_loops = 0x100000003 in a 64-bit register. The helper takes the u32
    // (3 loops, returns 3); the inline's 64-bit guard returns -E2BIG. The run is decided by the
    // guard (slot 0), not by the -E2BIG move of 0001 (slot 1): widening that move alone leaves
    // r0 = -7 where the helper returned 3, while the guard and the loop bound made 32-bit agree.
    using namespace isa;
    Program p = make_program({ldimm64_lo(1, 0, 3), ldimm64_hi(1), ldimm64_lo(2, BPF_PSEUDO_FUNC, 7), ldimm64_hi(0),
                              mov64_imm(3, 0), mov64_imm(4, 0), call_helper(BPF_FUNC_loop), stx(BPF_DW, 10, 0, -8),
                              ldx(BPF_DW, 0, 10, -8), exit_insn(), mov64_imm(0, 0), exit_insn()});
    p.aux[6].loop_fit_for_inline = true;
    p.aux[6].loop_callback_subprogno = 1;
    p.subprogs[0].stack_depth = 8;
    ASSERT_EQ(p.subprogs.size(), 3u);  // main, the callback, the fake exit
    p.subprogs[1].is_cb = true;
    Verdict v = exec_diff(p, opts_for(passes::IterInline::V4, {arch_x86_64()}, 1, 1));
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason << "\n" << v.counterexample;
    EXPECT_EQ(exec_cause(v), "bpf_loop@0") << v.reason;
    Verdict e2big = exec_diff(bpf_loop_case(8388609, true), opts_for(passes::IterInline::V4, {arch_x86_64()}, 1, 1));
    EXPECT_NE(exec_cause(v), exec_cause(e2big)) << e2big.reason;
}

TEST(ExecDiff, TwoSitesWithTwoBugsStillHaveAPlace) {
    // Two bpf_loop calls, 0007's shape at the first (nr_loops = 0x100000003: the helper loops 3
    // times, the inline says -E2BIG) and 0001's at the second (w1 = -1: both say -E2BIG, the
    // inline in 32 bits), their results summed. No one or two slots repair both sites; the guard,
    // the loop bound and the -E2BIG move together do: the place is the first of them, slot 0.
    // (Without the triples it has no place.)
    using namespace isa;
    // The second result's upper half is brought down (s>>= 32) so that r0's low half shows it.
    Program p = make_program({ldimm64_lo(1, 0, 3), ldimm64_hi(1), ldimm64_lo(2, BPF_PSEUDO_FUNC, 14), ldimm64_hi(0),
                              mov64_imm(3, 0), mov64_imm(4, 0), call_helper(BPF_FUNC_loop), mov64_reg(6, 0), mov32_imm(1, -1),
                              ldimm64_lo(2, BPF_PSEUDO_FUNC, 7), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0),
                              call_helper(BPF_FUNC_loop), alu64_imm(BPF_ARSH, 0, 32), alu64_reg(BPF_ADD, 0, 6), exit_insn(),
                              mov64_imm(0, 0), exit_insn()});
    ASSERT_EQ(p.subprogs.size(), 3u);
    ASSERT_EQ(p.subprogs[1].start, 17u);
    p.subprogs[1].is_cb = true;
    for (uint32_t call : {6u, 13u}) {
        p.aux[call].loop_fit_for_inline = true;
        p.aux[call].loop_callback_subprogno = 1;
    }
    Verdict v = exec_diff(p, opts_for(passes::IterInline::V4, {arch_x86_64()}, 1, 1));
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason << "\n" << v.counterexample;
    EXPECT_EQ(exec_cause(v), "bpf_loop@0") << v.reason;
}

TEST(ExecDiff, MiscFixupsCauseNamesTheRowByTheInsnItReplaced) {
    // Finding 0008's get_func_arg call (index 0x100000001: the inline bounds it in 32 bits and
    // loads with 64) behind an unrelated misc_fixups row, a guarded division: the cause names the
    // call, so that another misc_fixups bug with the same signature is not taken for this one.
    using namespace isa;
    Program p = make_program({mov64_reg(6, 1), mov64_imm(4, 5), mov64_imm(5, 1), alu64_reg(BPF_DIV, 4, 5), ldimm64_lo(2, 0, 1),
                              ldimm64_hi(1), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -8), st(BPF_DW, 10, -8, 0), mov64_reg(1, 6),
                              call_helper(BPF_FUNC_get_func_arg), ldx(BPF_DW, 7, 10, -8), stx(BPF_DW, 10, 7, -16),
                              mov64_reg(0, 4), exit_insn()});
    p.prog_type = BPF_PROG_TYPE_TRACING;
    p.attach = TraceAttach::Fentry;
    p.attach_btf_vlen = 2;
    p.subprogs[0].stack_depth = 16;
    interp::ExecInput in;
    in.ctx = {2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0};
    ExecDiffOptions o = opts_for(passes::IterInline::V4, {arch_x86_64()}, 0, 1);
    const std::vector<interp::ExecInput> given{in};
    o.given = given;
    Verdict v = exec_diff(p, o);
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason;
    EXPECT_EQ(v.divergence, "status-mismatch");
    EXPECT_EQ(exec_cause(v), "misc_fixups:call bpf_get_func_arg") << v.reason;
}

TEST(ExecDiff, MainStackDepthFromFpUses) {
    Program p = interp::iter_sum_program();
    p.subprogs[0].stack_depth = 0;
    EXPECT_EQ(main_stack_depth(p), 40u);
}

}  // namespace
}  // namespace patchfuzz::oracles::exec
