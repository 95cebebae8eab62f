// AgreementPatcher: the reference's result, and per other patcher whether it matched on every batch.
#include "bpf/patch/agreement_patcher.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::patch {
namespace {

using namespace isa;

// The batched patcher, but every result gets one insn changed after a given number of batches.
class DriftingPatcher final : public Patcher {
public:
    explicit DriftingPatcher(int honest_batches) : honest_(honest_batches) {}
    std::string_view name() const override { return "drifting"; }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        PatchOutcome o = inner_->apply(prog, batch);
        if (honest_-- <= 0) prog.insns.back().imm ^= 1;
        return o;
    }

private:
    std::unique_ptr<Patcher> inner_ = make_batched_patcher();
    int honest_;
};

PatchBatch insert_two_before_exit(uint32_t exit_pos) {
    return PatchBatch{{Patch{.kind = PatchKind::InsertBefore, .pos = exit_pos, .insns = {mov64_imm(1, 1), mov64_imm(2, 2)}}}};
}

TEST(AgreementPatcher, TracksEachOtherPatcherOverEveryBatch) {
    Program p = make_program({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, 1), mov64_imm(0, 1), exit_insn()});
    auto reference = make_incremental_patcher();
    auto batched = make_batched_patcher();
    DriftingPatcher drifting(1);  // agrees on the first batch only
    AgreementPatcher a(*reference, {batched.get(), &drifting});

    Program expected = p;
    ASSERT_TRUE(make_incremental_patcher()->apply(expected, insert_two_before_exit(3)).ok());
    ASSERT_TRUE(a.apply(p, insert_two_before_exit(3)).ok());
    EXPECT_TRUE(p == expected);  // the reference's own result
    EXPECT_TRUE(a.agreed(0));
    EXPECT_TRUE(a.agreed(1));

    ASSERT_TRUE(a.apply(p, insert_two_before_exit(5)).ok());
    EXPECT_TRUE(a.agreed(0));
    EXPECT_FALSE(a.agreed(1));
    // Once it disagreed it stays so, even where its later result would match.
    ASSERT_TRUE(a.apply(p, PatchBatch{}).ok());
    EXPECT_FALSE(a.agreed(1));
    EXPECT_EQ(p.len(), 8u);
}

}  // namespace
}  // namespace patchfuzz::patch
