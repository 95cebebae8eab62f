// RapidCheck properties: the batched patcher produces exactly what the incremental (kernel-faithful)
// patcher produces — full Program equality and the same outcome — on random programs x random
// batches, including programs that cross 32767 insns so that -ERANGE and the adjust_jmp_off() WARN
// must agree. Inputs come from a seed (printed by RapidCheck on failure) through patch_test_gen.hpp.
// The incremental patcher's two branch walks (BranchWalk) must leave the very same program and
// outcome, also when a walk stops at -ERANGE half-way.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cerrno>

#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_test_gen.hpp"

namespace patchfuzz::patch {
namespace {

using namespace isa;
using testgen::BatchOpts;

struct Both {
    PatchOutcome inc, bat, every;
    Program pi, pb, pe;  // pe: the incremental patcher walking every insn
    // apply_to(): each patcher's result written over an unrelated program (its storage reused)
    PatchOutcome inc_to, bat_to;
    Program pi_to, pb_to;
};

// A program unlike `prog` in every field: what apply_to() must leave no trace of.
Program stale_unlike(const Program& prog) {
    Program s = prog;
    s.name += "-stale";
    s.prog_type += 1;
    s.attach = prog.attach == TraceAttach::Other ? TraceAttach::Fentry : TraceAttach::Other;
    s.attach_btf_vlen += 1;
    s.insns.push_back(isa::exit_insn());
    s.aux.push_back(InsnAux{.orig_idx = 77});
    s.subprogs.push_back(SubprogInfo{.start = 99});
    s.linfo.push_back(LineInfo{.insn_off = 98});
    s.finfo.push_back(FuncInfo{});
    s.insn_arrays.push_back(InsnArray{});
    s.pokes.push_back(PokeDesc{});
    s.kfuncs.push_back(KfuncDesc{});
    s.maps.push_back(MapDef{});
    return s;
}

Both run_both(const Program& prog, const PatchBatch& batch) {
    Both b{.pi = prog, .pb = prog, .pe = prog, .pi_to = stale_unlike(prog), .pb_to = stale_unlike(prog)};
    b.inc = make_patcher("incremental")->apply(b.pi, batch);
    b.bat = make_patcher("batched")->apply(b.pb, batch);
    b.every = make_incremental_patcher(BranchWalk::EveryInsn)->apply(b.pe, batch);
    b.inc_to = make_patcher("incremental")->apply_to(prog, b.pi_to, batch);
    b.bat_to = make_patcher("batched")->apply_to(prog, b.pb_to, batch);
    return b;
}

void assert_same(const Both& b) {
    RC_ASSERT(b.inc == b.every);
    RC_ASSERT(b.pi == b.pe);
    RC_ASSERT(b.inc == b.bat);
    if (b.inc.ok()) RC_ASSERT(b.pi == b.pb);
    // apply_to() is apply() on a copy, failures included (the batched patcher then leaves it a
    // copy of the input).
    RC_ASSERT(b.inc_to == b.inc);
    RC_ASSERT(b.pi_to == b.pi);
    RC_ASSERT(b.bat_to == b.bat);
    RC_ASSERT(b.pb_to == b.pb);
}

RC_GTEST_PROP(PatcherEquivalence, SmallProgramsAllPatchKinds, (uint64_t seed)) {
    Rng r(seed);
    const auto len = static_cast<uint32_t>(r.range(3, 120));
    const auto nsub = static_cast<uint32_t>(r.range(1, std::max<uint64_t>(1, std::min<uint64_t>(4, len / 3))));
    auto g = testgen::gen_program(r, len, nsub);
    BatchOpts o;
    o.density_pct = static_cast<uint32_t>(r.range(5, 60));
    o.removals = r.chance(2, 3);
    o.insert_before = r.chance(2, 3);
    const PatchBatch batch = testgen::gen_batch(r, g.prog, g.lay, o);
    RC_CLASSIFY(batch.patches.empty(), "empty batch");
    const Both b = run_both(g.prog, batch);
    RC_ASSERT(b.inc.ok());  // small valid programs never fail
    assert_same(b);
    RC_ASSERT(b.pi.aux.size() == b.pi.insns.size());
    RC_ASSERT(b.pi.subprogs.back().start == b.pi.len());
}

RC_GTEST_PROP(PatcherEquivalence, ReplaceOnlyLen1AndEdges, (uint64_t seed)) {
    Rng r(seed);
    auto g = testgen::gen_program(r, static_cast<uint32_t>(r.range(3, 40)), 1);
    BatchOpts o{.density_pct = 50, .removals = false, .insert_before = false, .max_n = static_cast<uint32_t>(r.range(1, 3))};
    const PatchBatch batch = testgen::gen_batch(r, g.prog, g.lay, o);
    RC_CLASSIFY(!batch.patches.empty() && batch.patches.front().pos == 0, "patch at 0");
    RC_CLASSIFY(!batch.patches.empty() && batch.patches.back().pos + 1 == g.prog.len(), "patch at last insn");
    assert_same(run_both(g.prog, batch));
}

// The layout gen_batch() needs, read back from a (patched) program.
testgen::Layout layout_of(const Program& p) {
    testgen::Layout lay;
    lay.len = p.len();
    for (size_t s = 0; s + 1 < p.subprogs.size(); ++s) lay.starts.push_back(p.subprogs[s].start);
    lay.second.assign(lay.len, 0);
    for (uint32_t i = 0; i + 1 < lay.len; ++i)
        if (p.insns[i].code == (BPF_LD | BPF_IMM | BPF_DW)) lay.second[++i] = 1;
    return lay;
}

// One incremental patcher keeps its branch list from a batch to the next when the next starts on
// the code the last one left (IncrementalPatcher::listed_code_). Used for a chain of batches - on
// its own results, on an unrelated program in between, then on its results again - it must leave
// exactly what a fresh patcher leaves at every step.
RC_GTEST_PROP(PatcherEquivalence, ReusedIncrementalPatcherMatchesFreshOnes, (uint64_t seed)) {
    Rng r(seed);
    auto gx = testgen::gen_program(r, static_cast<uint32_t>(r.range(3, 80)), static_cast<uint32_t>(r.range(1, 3)));
    auto gz = testgen::gen_program(r, static_cast<uint32_t>(r.range(3, 80)), static_cast<uint32_t>(r.range(1, 3)));
    const auto reused = make_patcher("incremental");
    for (const bool on_z : {false, false, true, false, false}) {
        Program& prog = on_z ? gz.prog : gx.prog;
        BatchOpts o;
        o.density_pct = static_cast<uint32_t>(r.range(5, 40));
        const PatchBatch batch = testgen::gen_batch(r, prog, layout_of(prog), o);
        Program fresh = prog;
        const PatchOutcome want = make_patcher("incremental")->apply(fresh, batch);
        RC_ASSERT(reused->apply(prog, batch) == want);
        RC_ASSERT(prog == fresh);
        if (!want.ok()) return;
    }
}

// A program just around 32767 insns with long jumps across the patch sites (both directions, off
// and gotol/imm forms, a call and a prologue target), patched so that the length crosses the limit.
struct Big {
    Program prog;
    PatchBatch batch;
};

Big gen_big(Rng& r) {
    const uint32_t len = static_cast<uint32_t>(r.range(32600, 32790));
    const uint32_t sub2 = len - static_cast<uint32_t>(r.range(20, 60));  // second subprog near the end
    std::vector<Insn> insns(len);
    for (uint32_t i = 0; i < len; ++i) insns[i] = alu64_imm(BPF_ADD, static_cast<uint8_t>(i % 10), static_cast<int32_t>(i));
    insns[sub2 - 1] = exit_insn();
    insns[len - 1] = exit_insn();
    auto put_jump = [&](uint32_t from, uint32_t to) {
        const int64_t d = int64_t{to} - from - 1;
        if (d > 32767 || d < -32768) return;
        switch (r.range(0, 3)) {
            case 0: insns[from] = ja(static_cast<int16_t>(d)); break;
            case 1: insns[from] = jmp_imm(BPF_JNE, 1, 0, static_cast<int16_t>(d)); break;
            case 2: insns[from] = gotol(static_cast<int32_t>(d)); break;
            default: insns[from] = jmp32_imm(BPF_JLT, 2, 7, static_cast<int16_t>(d)); break;
        }
    };
    // Long forward jumps from the first few hundred insns, long backward ones from the end region.
    for (int k = 0; k < 6; ++k) {
        const uint32_t from = static_cast<uint32_t>(r.range(0, 300));
        const uint32_t to = std::min<uint32_t>(sub2 - 2, from + 1 + static_cast<uint32_t>(r.range(32300, 32767)));
        put_jump(from, to);
    }
    for (int k = 0; k < 6; ++k) {
        const uint32_t from = static_cast<uint32_t>(r.range(sub2 - 400, sub2 - 3));
        const uint32_t to = static_cast<uint32_t>(std::max<int64_t>(0, int64_t{from} - static_cast<int64_t>(r.range(32200, 32768))));
        put_jump(from, to);
    }
    // Jumps to the second subprog start (a prologue target) from far before it.
    for (int k = 0; k < 3; ++k) {
        const uint32_t from = static_cast<uint32_t>(r.range(sub2 > 32767 ? sub2 - 32767 : 0, sub2 - 32700));
        put_jump(from, sub2);
    }
    insns[1] = call_pseudo(static_cast<int32_t>(sub2 - 2));
    Program p = make_program(std::move(insns));
    for (uint32_t i = 0; i < len; i += static_cast<uint32_t>(r.range(1, 4)))
        p.linfo.push_back(LineInfo{.insn_off = i, .line_col = i << 10});
    p.pokes.push_back(PokeDesc{.insn_idx = static_cast<uint32_t>(r.range(0, len - 1))});

    // Patches in the middle: their growth pushes crossing jumps over the limit (or nearly).
    PatchBatch b;
    std::set<uint32_t> pos;
    const int npatch = static_cast<int>(r.range(1, 12));
    while (static_cast<int>(pos.size()) < npatch) pos.insert(static_cast<uint32_t>(r.range(400, sub2 - 500)));
    const bool with_remove = r.chance(1, 3);
    for (uint32_t q : pos) {
        if (with_remove && r.chance(1, 4)) {
            b.patches.push_back(Patch{.kind = PatchKind::Remove, .pos = q, .count = static_cast<uint32_t>(r.range(1, 30))});
            continue;
        }
        std::vector<Insn> buf(static_cast<size_t>(r.range(1, 40)), mov64_imm(0, 0));
        buf[0] = jmp_imm(BPF_JEQ, 0, 0, static_cast<int16_t>(buf.size() - 1));  // internal to the end
        b.patches.push_back(Patch{.pos = q, .insns = std::move(buf)});
    }
    // fix removal overlap with the next patch
    for (size_t i = 0; i + 1 < b.patches.size(); ++i)
        if (b.patches[i].kind == PatchKind::Remove)
            b.patches[i].count = std::min(b.patches[i].count, b.patches[i + 1].pos - b.patches[i].pos);
    if (r.chance(1, 2)) {
        std::vector<Insn> pro{st(BPF_DW, 10, -8, 0)};
        if (r.chance(1, 2)) pro.push_back(ja(0));
        b.patches.push_back(Patch{.kind = PatchKind::InsertBefore, .pos = sub2, .insns = pro});
    }
    return Big{std::move(p), std::move(b)};
}

TEST(PatcherEquivalence, AcrossTheS16Limit) {
    // Fixed seeds keep it fast and reproducible; each seed prints on failure.
    int failures = 0, warns = 0;
    for (uint64_t seed = 1; seed <= 24; ++seed) {
        Rng r(seed * 0x9e3779b97f4a7c15ULL);
        Big big = gen_big(r);
        Both b = run_both(big.prog, big.batch);
        ASSERT_EQ(b.inc, b.every) << "seed " << seed;
        ASSERT_TRUE(b.pi == b.pe) << "seed " << seed;  // also what a failed walk left behind
        ASSERT_EQ(b.inc, b.bat) << "seed " << seed << " inc log '" << b.inc.log << "' bat log '" << b.bat.log << "'";
        if (b.inc.ok()) {
            ASSERT_TRUE(b.pi == b.pb) << "seed " << seed;
        } else {
            failures++;
            EXPECT_EQ(b.inc.err, b.inc.log.empty() ? -ERANGE : -ENOMEM);
        }
        if (!b.inc.kernel_warn.empty()) warns++;
        ASSERT_EQ(b.inc_to, b.inc) << "seed " << seed;
        ASSERT_TRUE(b.pi_to == b.pi) << "seed " << seed;
        ASSERT_EQ(b.bat_to, b.bat) << "seed " << seed;
        ASSERT_TRUE(b.pb_to == b.pb) << "seed " << seed;  // on -ERANGE: the input, untouched
    }
    // The workload must actually exercise the failure path (and not only it).
    EXPECT_GT(failures, 0);
    EXPECT_LT(failures, 24);
    std::printf("across 32767: %d of 24 seeds fail with -ERANGE, %d WARN\n", failures, warns);
}

// A hand-checked -ERANGE: jump 0 -> 32700 (off 32699) over a 100-insn patch at 100 in a
// 32760-insn program: the new length 32859 > 32767 triggers the probe, the jump would need
// off 32798 > S16_MAX, so bpf_patch_insn_data() logs aux[100].orig_idx and callers see -ENOMEM.
TEST(PatcherErange, HandCheckedProbeFailure) {
    std::vector<Insn> insns(32760, mov64_imm(1, 1));
    insns[0] = ja(32699);
    insns.back() = exit_insn();
    Program p = make_program(insns);
    p.aux[100].orig_idx = 4242;
    PatchBatch b{{Patch{.pos = 100, .insns = std::vector<Insn>(101, mov64_imm(2, 2))}}};
    for (auto name : patcher_names()) {
        Program q = p;
        auto out = make_patcher(name)->apply(q, b);
        EXPECT_EQ(out.err, -ENOMEM) << name;
        EXPECT_EQ(out.raw_err, -ERANGE) << name;
        EXPECT_EQ(out.log, "insn 4242 cannot be patched due to 16-bit range\n") << name;
    }
    // One insn less of growth fits exactly: off 32699 + 68 = 32767.
    PatchBatch ok{{Patch{.pos = 100, .insns = std::vector<Insn>(69, mov64_imm(2, 2))}}};
    for (auto name : patcher_names()) {
        Program q = p;
        auto out = make_patcher(name)->apply(q, ok);
        EXPECT_TRUE(out.ok()) << name << out.log;
        EXPECT_EQ(q.insns[0].off, 32767) << name;
    }
}

// The probe does not look at the patched insn itself: a long jump AT the patch position is
// replaced, so only other insns can overflow.
TEST(PatcherErange, PatchedInsnIsNotProbed) {
    std::vector<Insn> insns(32760, mov64_imm(1, 1));
    insns[5] = ja(32700);
    insns.back() = exit_insn();
    Program p = make_program(insns);
    PatchBatch b{{Patch{.pos = 5, .insns = std::vector<Insn>(200, mov64_imm(2, 2))}}};
    for (auto name : patcher_names()) {
        Program q = p;
        EXPECT_TRUE(make_patcher(name)->apply(q, b).ok()) << name;
        EXPECT_EQ(q.len(), 32959u);
    }
}

// adjust_jmp_off() overflow is only a WARN: the load continues, the jumps before the overflowing
// one are redirected past the prologue, the overflowing one and everything after are not.
TEST(PatcherErange, AdjustJmpOffWarnStopsTheWalk) {
    const uint32_t len = 32790, sub2 = 32770;
    std::vector<Insn> insns(len, mov64_imm(1, 1));
    insns[sub2 - 1] = exit_insn();
    insns[len - 1] = exit_insn();
    insns[1] = call_pseudo(static_cast<int32_t>(sub2 - 2));
    insns[10] = ja(static_cast<int16_t>(sub2 - 10 - 1));  // off 32759: +1 fits
    insns[3] = ja(static_cast<int16_t>(sub2 - 3 - 1));    // off 32766: +2 overflows -> walk stops at 3
    insns[sub2 + 5] = ja(static_cast<int16_t>(-6));       // backward to sub2: after the stop
    Program p = make_program(insns);
    PatchBatch b{{Patch{.kind = PatchKind::InsertBefore, .pos = sub2, .insns = {st(BPF_DW, 10, -8, 0), st(BPF_DW, 10, -16, 0)}}}};
    for (auto name : patcher_names()) {
        Program q = p;
        auto out = make_patcher(name)->apply(q, b);
        EXPECT_TRUE(out.ok()) << name;
        EXPECT_EQ(out.kernel_warn, "adjust_jmp_off(tgt 32770, delta 2): insn 3: -ERANGE\n") << name;
        EXPECT_EQ(q.insns[3].off, 32766) << name;   // not redirected (the failing one)
        EXPECT_EQ(q.insns[10].off, 32759) << name;  // after the stop in index order: untouched
        EXPECT_EQ(q.insns[sub2 + 2 + 5].off, -8) << name;  // moved by the patch, not redirected
        EXPECT_EQ(q.insns[1].imm, static_cast<int32_t>(sub2 - 2)) << name;  // calls never redirected
    }
}

}  // namespace
}  // namespace patchfuzz::patch
