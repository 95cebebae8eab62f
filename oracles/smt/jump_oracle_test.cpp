// Tests of the jump-target oracle. Expected outputs are written by hand from the tables of
// docs/patching.md §6 (and small programs worked out the same way), never computed by the oracle.
#include "oracles/smt/jump_oracle.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::oracles::smt {
namespace {

using isa::Insn;
using patch::Patch;
using patch::PatchBatch;
using patch::PatchKind;
using patch::PatchOutcome;

constexpr int32_t kHtabLookup = 1000;  // stand-in id for __htab_map_lookup_elem (not relative)

// docs/patching.md §6: main prog 0..6, subprog 1 = 7..9, fake exit 10; linfo {0,2,4,7}; insn array {4}; a poke at 4.
Program worked_before() {
    Program p = make_program({
        isa::mov64_imm(1, 0),                  // 0
        isa::jmp_imm(BPF_JEQ, 1, 0, 3),        // 1 -> 5
        isa::alu64_reg(BPF_DIV, 2, 3),         // 2  patch A
        isa::call_pseudo(3),                   // 3 -> 7
        isa::call_helper(BPF_FUNC_map_lookup_elem),  // 4  patch B
        isa::jmp_imm(BPF_JNE, 0, 0, -4),       // 5 -> 2
        isa::exit_insn(),                      // 6
        isa::mov64_imm(0, 1),                  // 7
        isa::alu64_imm(BPF_ADD, 0, 1),         // 8
        isa::exit_insn(),                      // 9
    });
    for (uint32_t off : {0u, 2u, 4u, 7u}) p.linfo.push_back(LineInfo{.insn_off = off, .line_off = off * 10});
    p.insn_arrays.push_back(InsnArray{.map_index = 0, .entries = {InsnArrayEntry{.orig_off = 4, .xlated_off = 4}}});
    p.pokes.push_back(PokeDesc{.insn_idx = 4, .map_index = 0, .key = 0});
    return p;
}

std::vector<Insn> patch_a() {
    return {isa::jmp_imm(BPF_JNE, 3, 0, 2), isa::alu32_reg(BPF_XOR, 2, 2), isa::ja(1), isa::alu64_reg(BPF_DIV, 2, 3)};
}
std::vector<Insn> patch_b() {
    return {isa::call_helper(kHtabLookup), isa::jmp_imm(BPF_JEQ, 0, 0, 1), isa::alu64_imm(BPF_ADD, 0, 8)};
}

PatchBatch worked_batch() {
    PatchBatch b;
    b.patches.push_back(Patch{.kind = PatchKind::Replace, .pos = 2, .insns = patch_a()});
    b.patches.push_back(Patch{.kind = PatchKind::Replace, .pos = 4, .insns = patch_b()});
    return b;
}

// The table of docs/patching.md §6.2 (final state), typed in by hand.
Program worked_after() {
    Program p = worked_before();
    auto a = patch_a();
    auto b = patch_b();
    p.insns = {
        isa::mov64_imm(1, 0),              // 0  o0
        isa::jmp_imm(BPF_JEQ, 1, 0, 8),    // 1  o1 +8 (-> 10 = o5)
        a[0], a[1], a[2], a[3],            // 2..5 A
        isa::call_pseudo(5),               // 6  o3 +5 (-> 12 = o7)
        b[0], b[1], b[2],                  // 7..9 B
        isa::jmp_imm(BPF_JNE, 0, 0, -9),   // 10 o5 -9 (-> 2 = A0)
        isa::exit_insn(),                  // 11
        isa::mov64_imm(0, 1),              // 12 o7
        isa::alu64_imm(BPF_ADD, 0, 1),     // 13
        isa::exit_insn(),                  // 14
    };
    p.aux.resize(p.insns.size());
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 12}, SubprogInfo{.start = 15}};
    const uint32_t offs[] = {0, 2, 7, 12};
    for (size_t i = 0; i < 4; ++i) p.linfo[i].insn_off = offs[i];
    p.insn_arrays[0].entries[0].xlated_off = 7;
    p.pokes[0].insn_idx = 7;
    return p;
}

Verdict check(const Program& before, const PatchBatch& batch, const Program& after, PatchOutcome out = {}) {
    SmtOptions o;
    o.use_cache = false;
    return check_jump_targets(before, batch, out, after, o);
}

void expect_fail(const Verdict& v, const std::string& divergence, const std::vector<std::string>& cex_parts) {
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason << " | " << v.counterexample;
    EXPECT_EQ(v.divergence, divergence) << v.reason << " | " << v.counterexample;
    for (const auto& part : cex_parts) EXPECT_NE(v.counterexample.find(part), std::string::npos) << "missing '" << part << "' in: " << v.counterexample;
}

TEST(JumpOracle, WorkedExampleProved) {
    const Verdict v = check(worked_before(), worked_batch(), worked_after());
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
    EXPECT_EQ(v.oracle, kJumpOracleName);
}

TEST(JumpOracle, WorkedExampleCachedAnswerIsTheSame) {
    SmtOptions o;  // cache on
    const Verdict v1 = check_jump_targets(worked_before(), worked_batch(), {}, worked_after(), o);
    const Verdict v2 = check_jump_targets(worked_before(), worked_batch(), {}, worked_after(), o);
    EXPECT_EQ(v1.outcome, Outcome::Pass);
    EXPECT_EQ(v2.outcome, Outcome::Pass);
}

// A small query that exhausts its resource limit is Unknown with the solver's reason, never
// Pass; the same query under a normal limit (the thread's solver is reconfigured) is proved.
TEST(JumpOracle, ResourceLimitIsUnknownNotPass) {
    SmtOptions o;
    o.use_cache = false;
    o.small_query_rlimit = 1;
    const Verdict v = check_jump_targets(worked_before(), worked_batch(), {}, worked_after(), o);
    EXPECT_EQ(v.outcome, Outcome::Unknown) << v.reason;
    EXPECT_FALSE(v.reason.empty());
    o.small_query_rlimit = SmtOptions{}.small_query_rlimit;
    EXPECT_EQ(check_jump_targets(worked_before(), worked_batch(), {}, worked_after(), o).outcome, Outcome::Pass);
}

TEST(JumpOracle, WrongJumpTargetRefuted) {
    Program after = worked_after();
    after.insns[1].off = 7;  // o1 must reach o5 at new 10 (+8)
    expect_fail(check(worked_before(), worked_batch(), after), "jump-target",
                {"orig 1", "new 1", "expected target new 10", "orig target 5", "actual new 9"});
}

TEST(JumpOracle, JumpToPatchedInsnMustLandOnFirstPatchInsn) {
    Program after = worked_after();
    after.insns[10].off = -6;  // o5 -> 5 = A3 (the copied div, last slot) instead of A0 at 2
    expect_fail(check(worked_before(), worked_batch(), after), "first-insn-of-patch",
                {"orig 5", "new 10", "expected target new 2", "actual new 5"});
}

TEST(JumpOracle, PseudoCallTargetRefuted) {
    Program after = worked_after();
    after.insns[6].imm = 3;  // o3 call not adjusted for patch B
    expect_fail(check(worked_before(), worked_batch(), after), "jump-target",
                {"orig 3", "pseudo call", "expected target new 12", "actual new 10"});
}

TEST(JumpOracle, PatchLocalJumpAdjustedRefuted) {
    Program after = worked_after();
    after.insns[2].off = 3;  // A0 internal target must stay (+2)
    expect_fail(check(worked_before(), worked_batch(), after), "patch-internal-target",
                {"patch at orig 2, slot 0", "new 2", "expected target new 5 (local slot 3", "actual new 6"});
}

TEST(JumpOracle, PatchOutgoingJumpRefuted) {
    Program after = worked_after();
    after.insns[8].off = 0;  // B1 must leave the patch to o5 at new 10
    expect_fail(check(worked_before(), worked_batch(), after), "patch-outgoing-target",
                {"patch at orig 4, slot 1", "new 8", "expected target new 10 (orig target 5", "actual new 9"});
}

TEST(JumpOracle, WrongSubprogStartRefuted) {
    Program after = worked_after();
    after.subprogs[1].start = 13;
    expect_fail(check(worked_before(), worked_batch(), after), "subprog-start", {"subprog[1] orig 7", "expected new 12", "actual 13"});
}

TEST(JumpOracle, FakeExitNotMovedRefuted) {
    Program after = worked_after();
    after.subprogs[2].start = 10;
    expect_fail(check(worked_before(), worked_batch(), after), "fake-exit", {"orig 10", "expected new 15", "actual 10"});
}

TEST(JumpOracle, LinfoAtPatchedOffMovedRefuted) {
    Program after = worked_after();
    after.linfo[1].insn_off = 5;  // entry at the patched insn 2 must stay at 2 and cover patch A
    expect_fail(check(worked_before(), worked_batch(), after), "linfo", {"linfo[1] orig 2", "expected new 2", "actual 5"});
}

TEST(JumpOracle, InsnArrayAtPatchedOffMovedRefuted) {
    Program after = worked_after();
    after.insn_arrays[0].entries[0].xlated_off = 9;  // must name B0 (first insn of patch B) = 7
    expect_fail(check(worked_before(), worked_batch(), after), "insn-array", {"insn-array[0] orig 4", "expected new 7", "actual 9"});
}

TEST(JumpOracle, PokeOffByOneRefuted) {
    Program after = worked_after();
    after.pokes[0].insn_idx = 8;
    expect_fail(check(worked_before(), worked_batch(), after), "poke", {"poke[0] orig 4", "expected new 7", "actual 8"});
}

TEST(JumpOracle, LengthMismatchRefuted) {
    Program after = worked_after();
    after.insns.pop_back();
    expect_fail(check(worked_before(), worked_batch(), after), "length", {"expected 15", "actual 14"});
}

TEST(JumpOracle, InsnContentChangeRefuted) {
    Program after = worked_after();
    after.insns[3].imm = 5;  // A1 changed beyond any displacement
    expect_fail(check(worked_before(), worked_batch(), after), "insn-content", {"slot 1", "new 3"});
}

// gotol keeps its displacement in imm (s32); a patcher that adjusts off instead leaves imm stale.
TEST(JumpOracle, GotolAdjustedOnOffRefuted) {
    Program before = make_program({isa::gotol(2), isa::mov64_imm(0, 0), isa::alu64_imm(BPF_ADD, 0, 1), isa::exit_insn()});
    PatchBatch batch;
    batch.patches.push_back(Patch{.pos = 2, .insns = {isa::mov64_imm(3, 1), isa::mov64_imm(4, 1), isa::alu64_imm(BPF_ADD, 0, 1)}});
    Program good = before;
    good.insns = {isa::gotol(4), isa::mov64_imm(0, 0), isa::mov64_imm(3, 1), isa::mov64_imm(4, 1),
                  isa::alu64_imm(BPF_ADD, 0, 1), isa::exit_insn()};
    good.aux.resize(6);
    good.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 6}};
    EXPECT_EQ(check(before, batch, good).outcome, Outcome::Pass);
    Program bad = good;
    bad.insns[0] = isa::make(BPF_JMP32 | BPF_JA, 0, 0, 2, 2);  // off += 2, imm untouched
    expect_fail(check(before, batch, bad), "jump-target", {"orig 0", "gotol (imm s32)", "expected target new 5", "actual new 3"});
}

TEST(JumpOracle, PseudoFuncNotAdjustedRefuted) {
    Program before = make_program({isa::ldimm64_lo(2, BPF_PSEUDO_FUNC, 3), isa::ldimm64_hi(0), isa::mov64_imm(1, 0),
                                   isa::exit_insn(), isa::mov64_imm(0, 0), isa::exit_insn()});
    ASSERT_EQ(before.subprogs.size(), 3u);  // 0, 4, fake exit 6
    PatchBatch batch;
    batch.patches.push_back(Patch{.pos = 2, .insns = {isa::mov64_imm(1, 0), isa::mov64_imm(5, 0)}});
    Program good = before;
    good.insns = {isa::ldimm64_lo(2, BPF_PSEUDO_FUNC, 4), isa::ldimm64_hi(0), isa::mov64_imm(1, 0), isa::mov64_imm(5, 0),
                  isa::exit_insn(), isa::mov64_imm(0, 0), isa::exit_insn()};
    good.aux.resize(7);
    good.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 5}, SubprogInfo{.start = 7}};
    EXPECT_EQ(check(before, batch, good).outcome, Outcome::Pass) << check(before, batch, good).counterexample;
    Program bad = good;
    bad.insns[0].imm = 3;
    expect_fail(check(before, batch, bad), "jump-target", {"orig 0", "PSEUDO_FUNC", "expected target new 5", "actual new 4"});
}

// A long forward jump over a patch on a program above 32767 insns (docs/patching.md §2 step 3).
struct Big {
    Program before;
    PatchBatch batch;
    Program after;  // with the displacement truncated to 16 bits, as an unchecked patcher would write it
};
Big big_case(int16_t jump_off, uint32_t patch_len) {
    constexpr uint32_t n = 33000;
    std::vector<Insn> insns(n, isa::mov64_imm(0, 0));
    insns[0] = isa::ja(jump_off);
    insns[n - 1] = isa::exit_insn();
    Big b{.before = make_program(insns)};
    b.batch.patches.push_back(Patch{.pos = 100, .insns = std::vector<Insn>(patch_len, isa::mov64_imm(1, 1))});
    std::vector<Insn> out(insns.begin(), insns.begin() + 100);
    out.insert(out.end(), patch_len, isa::mov64_imm(1, 1));
    out.insert(out.end(), insns.begin() + 101, insns.end());
    const int64_t need = static_cast<int64_t>(jump_off) + (patch_len - 1);
    out[0].off = static_cast<int16_t>(static_cast<uint16_t>(need));
    b.after = make_program(out);
    return b;
}

TEST(JumpOracle, ErangeNotReportedRefuted) {
    Big b = big_case(32000, 800);  // needs 32799 > 32767
    expect_fail(check(b.before, b.batch, b.after), "erange-not-reported",
                {"orig 0", "ja (off s16)", "needs displacement 32799", "does not fit s16", "reported success"});
}

TEST(JumpOracle, ErangeReportedProved) {
    Big b = big_case(32000, 800);
    const Verdict v = check(b.before, b.batch, Program{}, PatchOutcome{.err = -ENOMEM, .raw_err = -ERANGE});
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
}

TEST(JumpOracle, LongJumpThatFitsProved) {
    Big b = big_case(32000, 700);  // needs 32699: fits
    const Verdict v = check(b.before, b.batch, b.after);
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
}

TEST(JumpOracle, ErangeReportedSpuriouslyRefuted) {
    Big b = big_case(32000, 700);
    expect_fail(check(b.before, b.batch, Program{}, PatchOutcome{.err = -ENOMEM, .raw_err = -ERANGE}), "erange-spurious",
                {"every relocated displacement fits"});
    expect_fail(check(worked_before(), worked_batch(), Program{}, PatchOutcome{.err = -ENOMEM, .raw_err = -ERANGE}),
                "erange-spurious", {"new length 15"});
}

// Prologue (InsertBefore) at a subprog start: plain jumps skip it, calls and tables do not (§3.7).
struct Prologue {
    Program before;
    PatchBatch batch;
    Program after;
};
Prologue prologue_case() {
    Prologue c;
    c.before = make_program({isa::call_pseudo(2), isa::jmp_imm(BPF_JEQ, 0, 0, 1), isa::exit_insn(), isa::mov64_imm(0, 1),
                             isa::exit_insn()});
    c.before.linfo = {LineInfo{.insn_off = 0}, LineInfo{.insn_off = 3}};
    c.batch.patches.push_back(Patch{.kind = PatchKind::InsertBefore, .pos = 3, .insns = {isa::st(BPF_DW, 10, -8, 0)}});
    c.after = c.before;
    c.after.insns = {isa::call_pseudo(2), isa::jmp_imm(BPF_JEQ, 0, 0, 2), isa::exit_insn(), isa::st(BPF_DW, 10, -8, 0),
                     isa::mov64_imm(0, 1), isa::exit_insn()};
    c.after.aux.resize(6);
    c.after.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 3}, SubprogInfo{.start = 6}};
    c.after.linfo[1].insn_off = 3;
    return c;
}

TEST(JumpOracle, PrologueRedirectProved) {
    Prologue c = prologue_case();
    const Verdict v = check(c.before, c.batch, c.after);
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
}

TEST(JumpOracle, PlainJumpIntoPrologueRefuted) {
    Prologue c = prologue_case();
    c.after.insns[1].off = 1;  // lands on the prologue instead of skipping it
    expect_fail(check(c.before, c.batch, c.after), "prologue-redirect",
                {"orig 1", "expected target new 4", "prologue 1", "actual new 3"});
}

TEST(JumpOracle, CallSkippingPrologueRefuted) {
    Prologue c = prologue_case();
    c.after.insns[0].imm = 3;  // calls keep pointing at the prologue start
    expect_fail(check(c.before, c.batch, c.after), "first-insn-of-patch", {"orig 0", "expected target new 3", "actual new 4"});
}

// §8: [nospec, copy of a backward jump] keeps the copy's displacement: the contract holds (both
// patchers agree) but the jump now lands on the barrier instead of its original target.
TEST(JumpOracle, CopiedRelativeJumpReportedAsOwnClass) {
    Program before = make_program({isa::mov64_imm(0, 0), isa::mov64_imm(1, 1), isa::jmp_imm(BPF_JEQ, 1, 0, -2), isa::exit_insn()});
    PatchBatch batch;
    batch.patches.push_back(Patch{.pos = 2, .insns = {isa::nospec(), isa::jmp_imm(BPF_JEQ, 1, 0, -2)}});
    Program after = before;
    after.insns = {isa::mov64_imm(0, 0), isa::mov64_imm(1, 1), isa::nospec(), isa::jmp_imm(BPF_JEQ, 1, 0, -2), isa::exit_insn()};
    after.aux.resize(5);
    after.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 5}};
    const Verdict v = check(before, batch, after);
    expect_fail(v, "copied-relative-jump", {"orig 2 copied into slot 1", "intended target new 1", "denoted target new 2"});
    EXPECT_EQ(v.patch_kind, "copied-relative-jump");
}

TEST(JumpOracle, CopiedForwardJumpInLastSlotIsFine) {
    Program before = make_program({isa::mov64_imm(1, 1), isa::jmp_imm(BPF_JEQ, 1, 0, 1), isa::mov64_imm(0, 0), isa::exit_insn()});
    PatchBatch batch;
    batch.patches.push_back(Patch{.pos = 1, .insns = {isa::nospec(), isa::jmp_imm(BPF_JEQ, 1, 0, 1)}});
    Program after = before;
    after.insns = {isa::mov64_imm(1, 1), isa::nospec(), isa::jmp_imm(BPF_JEQ, 1, 0, 1), isa::mov64_imm(0, 0), isa::exit_insn()};
    after.aux.resize(5);
    after.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 5}};
    const Verdict v = check(before, batch, after);
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
}

TEST(JumpOracle, RemovalBatchSkipped) {
    PatchBatch batch;
    batch.patches.push_back(Patch{.kind = PatchKind::Remove, .pos = 2, .count = 1});
    EXPECT_EQ(check(worked_before(), batch, worked_after()).outcome, Outcome::Skip);
}

}  // namespace
}  // namespace patchfuzz::oracles::smt

namespace patchfuzz::oracles::smt {
namespace {

// The §6 example through the real patchers: both outputs equal the spec's table and are proved.
TEST(JumpOracleRealPatchers, WorkedExampleFromBothPatchers) {
    for (const char* name : {"incremental", "batched"}) {
        auto p = patch::make_patcher(name);
        ASSERT_TRUE(p) << name;
        Program after = worked_before();
        const PatchOutcome out = p->apply(after, worked_batch());
        ASSERT_TRUE(out.ok()) << name << ": " << out.log;
        const Program want = worked_after();
        ASSERT_EQ(after.len(), want.len()) << name;
        for (uint32_t i = 0; i < want.len(); ++i) EXPECT_TRUE(isa::same(after.insns[i], want.insns[i])) << name << " insn " << i;
        EXPECT_EQ(after.subprogs, want.subprogs) << name;
        EXPECT_EQ(after.linfo, want.linfo) << name;
        EXPECT_EQ(after.insn_arrays, want.insn_arrays) << name;
        EXPECT_EQ(after.pokes, want.pokes) << name;
        const Verdict v = check(worked_before(), worked_batch(), after, out);
        EXPECT_EQ(v.outcome, Outcome::Pass) << name << ": " << v.reason << " | " << v.counterexample;
    }
    EXPECT_EQ(compare_patchers(worked_before(), worked_batch()).outcome, Outcome::Pass);
}

// Random programs and batches (seeded): every output of both patchers satisfies the contract, and
// the long-jump case near the s16 limit gets the same -ERANGE verdict from the oracle and patchers.
TEST(JumpOracleRealPatchers, RandomBatchesProved) {
    const uint64_t seed = 20261130;
    Rng rng(seed);
    for (int c = 0; c < 150; ++c) {
        const uint32_t n = static_cast<uint32_t>(rng.range(4, 60));
        std::vector<Insn> in(n);
        for (uint32_t i = 0; i < n; ++i) {
            const int64_t t = static_cast<int64_t>(rng.range(0, n - 1));
            switch (rng.range(0, 5)) {
                case 0: in[i] = isa::jmp_imm(BPF_JGT, 1, 3, static_cast<int16_t>(t - i - 1)); break;
                case 1: in[i] = isa::ja(static_cast<int16_t>(t - i - 1)); break;
                case 2: in[i] = isa::gotol(static_cast<int32_t>(t - i - 1)); break;
                default: in[i] = isa::alu64_imm(BPF_ADD, 1, static_cast<int32_t>(i)); break;
            }
        }
        in[n - 1] = isa::exit_insn();
        Program before = make_program(in);
        for (uint32_t i = 0; i < n; i += static_cast<uint32_t>(rng.range(1, 4))) before.linfo.push_back(LineInfo{.insn_off = i});
        before.pokes.push_back(PokeDesc{.insn_idx = static_cast<uint32_t>(rng.range(0, n - 1))});
        PatchBatch batch;
        for (uint32_t i = 0; i < n; ++i) {
            if (!rng.chance(1, 4)) continue;
            const uint32_t len = static_cast<uint32_t>(rng.range(1, 5));
            std::vector<Insn> buf(len, isa::mov64_imm(2, 7));
            if (len >= 2) buf[0] = isa::jmp_imm(BPF_JEQ, 2, 0, static_cast<int16_t>(len - 1));  // -> patch end
            buf[len - 1] = isa::relative_field(in[i]) == isa::RelField::None ? in[i] : isa::mov64_imm(3, 1);
            batch.patches.push_back(Patch{.pos = i, .insns = buf});
        }
        for (const char* name : {"incremental", "batched"}) {
            Program after = before;
            const PatchOutcome out = patch::make_patcher(name)->apply(after, batch);
            const Verdict v = check(before, batch, after, out);
            ASSERT_EQ(v.outcome, Outcome::Pass) << "seed " << seed << " case " << c << " " << name << ": " << v.reason << " | "
                                                << v.counterexample;
        }
    }
    for (int16_t off : {int16_t{32000}, int16_t{31000}}) {
        Big b = big_case(off, 800);
        for (const char* name : {"incremental", "batched"}) {
            Program after = b.before;
            const PatchOutcome out = patch::make_patcher(name)->apply(after, b.batch);
            EXPECT_EQ(out.raw_err == -ERANGE, off == 32000) << name;
            const Verdict v = check(b.before, b.batch, after, out);
            EXPECT_EQ(v.outcome, Outcome::Pass) << name << " off " << off << ": " << v.reason << " | " << v.counterexample;
        }
    }
}

}  // namespace
}  // namespace patchfuzz::oracles::smt
