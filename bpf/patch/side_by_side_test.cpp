// SideBySide: each other patcher on a copy, the reference in place, and which others matched.
#include "bpf/patch/side_by_side.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::patch {
namespace {

using namespace isa;

// The batched patcher with the last insn of every result changed.
class WrongPatcher final : public Patcher {
public:
    std::string_view name() const override { return "wrong"; }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        PatchOutcome o = inner_->apply(prog, batch);
        prog.insns.back().imm ^= 1;
        return o;
    }

private:
    std::unique_ptr<Patcher> inner_ = make_batched_patcher();
};

Program small() { return make_program({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, 1), mov64_imm(0, 1), exit_insn()}); }
const PatchBatch kInsert{{Patch{.kind = PatchKind::InsertBefore, .pos = 3, .insns = {mov64_imm(1, 1), mov64_imm(2, 2)}}}};

TEST(SideBySide, ReferenceInPlaceOthersOnCopies) {
    auto reference = make_incremental_patcher();
    auto batched = make_batched_patcher();
    WrongPatcher wrong;
    SideBySide side({batched.get(), &wrong});
    Program p = small(), expected = small();
    ASSERT_TRUE(make_incremental_patcher()->apply(expected, kInsert).ok());

    ASSERT_TRUE(side.apply(*reference, p, kInsert).ok());
    EXPECT_TRUE(p == expected);  // the reference's result, in place
    EXPECT_TRUE(side.same(0));
    EXPECT_FALSE(side.same(1));
    EXPECT_TRUE(side.outcome(1).ok());
    Program other = side.take_result(1);
    ASSERT_EQ(other.len(), expected.len());
    EXPECT_EQ(other.insns.back().imm, expected.insns.back().imm ^ 1);
}

TEST(SideBySide, OthersNotRunAreNotTheSame) {
    auto reference = make_incremental_patcher();
    auto batched = make_batched_patcher();
    SideBySide side({batched.get(), batched.get()});
    Program p = small();
    ASSERT_TRUE(side.apply(*reference, p, kInsert, {false, true}).ok());
    EXPECT_FALSE(side.same(0));  // it would have matched, but was not applied
    EXPECT_TRUE(side.same(1));
}

}  // namespace
}  // namespace patchfuzz::patch
