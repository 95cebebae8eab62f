// The opcode prefilter of the misc_fixups pass (misc_fixups_opcodes.hpp) is exact: for every
// opcode byte, over field, aux and option variants that make each row act, the unfiltered row
// chain acts on some insn with that opcode exactly when the table lists it (so a row missing from
// the table, or an opcode listed for no row, fails here), and the pass with the prefilter gives
// the very same batches, edits and outcome as the pass without it.
#include <array>
#include <cstdio>

#include "bpf/passes/misc_fixups_opcodes.hpp"
#include "bpf/passes/pass_util.hpp"
#include "bpf/passes/ptr_arith_mask.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

// Field values that make some row act: imm 1 (row a), -1 with off 1 (row c, sdiv/smod by -1),
// helper ids of rows m, q and r; src_reg up to BPF_PSEUDO_MAP_IDX_VALUE (row i, the call kinds,
// may_goto's 0).
constexpr std::array<int32_t, 6> kImms = {0, 1, -1, BPF_FUNC_jiffies64, BPF_FUNC_tail_call, BPF_FUNC_get_smp_processor_id};
constexpr std::array<int16_t, 3> kOffs = {0, 1, -1};
constexpr uint8_t kMaxSrc = BPF_PSEUDO_MAP_IDX_VALUE;

enum class AuxVariant { Plain, NeedsZext, PtrArith, KnownMap };
constexpr std::array<AuxVariant, 4> kAuxVariants = {AuxVariant::Plain, AuxVariant::NeedsZext, AuxVariant::PtrArith,
                                                    AuxVariant::KnownMap};

// x86-64 has no PROBE_MEM guard but inlines helpers itself; arm64 guards; 6.1 rejects sdiv and
// may_goto; 6.12 has neither row i nor row s.
std::vector<RewriteOptions> option_sets() {
    std::vector<RewriteOptions> v;
    for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64()})
        for (KernelProfile k : {KernelProfile::BpfNext, KernelProfile::K6_1, KernelProfile::K6_12}) {
            RewriteOptions o;
            o.arch = *a;
            o.kernel = k;
            v.push_back(o);
        }
    return v;
}

// [insn, a second slot for ld_imm64, exit] with a per-CPU array map for row i.
Program program_with(const Insn& insn, AuxVariant variant) {
    Program p = make_program({insn, mov64_imm(BPF_REG_0, 0), exit_insn()});
    p.maps.push_back(MapDef{.name = "m", .type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4});
    InsnAux& ax = p.aux[0];
    switch (variant) {
        case AuxVariant::Plain: break;
        case AuxVariant::NeedsZext: ax.needs_zext = true; break;
        case AuxVariant::PtrArith:
            ax.alu_state = kAluSanitizeSrc | kAluNegValue;
            ax.alu_limit = 16;
            break;
        case AuxVariant::KnownMap:
            ax.map_index = 0;
            ax.map_key_known = true;
            break;
    }
    return p;
}

bool same_batches(const std::vector<patch::PatchBatch>& a, const std::vector<patch::PatchBatch>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].patches.size() != b[i].patches.size()) return false;
        for (size_t j = 0; j < a[i].patches.size(); ++j) {
            const patch::Patch &x = a[i].patches[j], &y = b[i].patches[j];
            if (x.kind != y.kind || x.pos != y.pos || x.count != y.count || x.insns.size() != y.insns.size()) return false;
            for (size_t k = 0; k < x.insns.size(); ++k)
                if (!same(x.insns[k], y.insns[k])) return false;
        }
    }
    return true;
}

struct Result {
    PatchOutcome outcome;
    std::vector<patch::PatchBatch> batches;
    Program after;
};

Result run_one(Pass& pass, const Program& before, const RewriteOptions& opts) {
    Result r{.outcome = {}, .batches = {}, .after = before};
    Recorder rec(patch::make_patcher("incremental"));
    r.outcome = pass.run(r.after, rec, opts);
    r.batches = std::move(rec.batches);
    return r;
}

TEST(MiscFixupsOpcodes, TableListsExactlyTheOpcodesTheRowsActOn) {
    const auto unfiltered = make_misc_fixups_pass_unfiltered();
    const auto filtered = make_misc_fixups_pass();
    const std::vector<RewriteOptions> sets = option_sets();
    for (unsigned code = 0; code < 256; ++code) {
        bool acted = false;  // on some variant whose aux the prefilter does not let through (row b)
        for (uint8_t src = 0; src <= kMaxSrc; ++src)
            for (int32_t imm : kImms)
                for (int16_t off : kOffs)
                    for (AuxVariant v : kAuxVariants) {
                        const Insn insn = make(static_cast<uint8_t>(code), BPF_REG_1, src, off, imm);
                        const Program before = program_with(insn, v);
                        const bool row_b = v == AuxVariant::NeedsZext && cls(insn) == BPF_ALU64;
                        for (const RewriteOptions& opts : sets) {
                            const Result want = run_one(*unfiltered, before, opts);
                            const Result got = run_one(*filtered, before, opts);
                            char what[128];
                            std::snprintf(what, sizeof what, "code 0x%02x src %u off %d imm %d aux %d kernel %d arch %s", code,
                                          src, off, imm, static_cast<int>(v), static_cast<int>(opts.kernel),
                                          std::string(opts.arch.name).c_str());
                            ASSERT_EQ(got.outcome, want.outcome) << what;
                            ASSERT_TRUE(same_batches(got.batches, want.batches)) << what;
                            ASSERT_TRUE(got.after == want.after) << what << ": " << first_difference(got.after, want.after);
                            if (!row_b && (!want.outcome.ok() || !want.batches.empty() || !(want.after == before))) acted = true;
                            // The prefilter's promise itself: what it skips, the chain leaves alone.
                            if (!misc_fixups_may_act(insn, before.aux[0].needs_zext)) {
                                ASSERT_TRUE(want.outcome.ok()) << what << ": " << want.outcome.log;
                                ASSERT_TRUE(want.batches.empty()) << what;
                                ASSERT_TRUE(want.after == before) << what << ": " << first_difference(want.after, before);
                            }
                        }
                    }
        // A listed opcode no variant makes a row act on would be a row the table names wrongly
        // (or a variant this test lacks): either way the table is no longer shown exact.
        EXPECT_EQ(acted, kMiscFixupsRowOpcodes[code]) << "opcode 0x" << std::hex << code;
    }
}

// Row b alone reaches beyond the table: any ALU64 insn with needs_zext is narrowed in place.
TEST(MiscFixupsOpcodes, NeedsZextLetsEveryAlu64InsnThrough) {
    for (unsigned code = 0; code < 256; ++code) {
        const Insn insn = make(static_cast<uint8_t>(code), 0, 0, 0, 0);
        EXPECT_EQ(misc_fixups_may_act(insn, true), kMiscFixupsRowOpcodes[code] || cls(insn) == BPF_ALU64);
        EXPECT_EQ(misc_fixups_may_act(insn, false), kMiscFixupsRowOpcodes[code]);
    }
    const auto filtered = make_misc_fixups_pass();
    RewriteOptions opts;
    opts.arch = arch_x86_64();
    const Program before = program_with(alu64_imm(BPF_LSH, BPF_REG_1, 3), AuxVariant::NeedsZext);  // no row's opcode
    const Result r = run_one(*filtered, before, opts);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same(r.after.insns[0], alu32_imm(BPF_LSH, BPF_REG_1, 3)));
}

}  // namespace
}  // namespace patchfuzz::passes::testing
