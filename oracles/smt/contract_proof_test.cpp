#include "oracles/smt/contract_proof.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::oracles::smt {
namespace {

TEST(ContractProof, TwoPatchesProved) {
    ContractProofOptions o;
    o.max_patches = 2;
    std::vector<ContractObligation> d;
    const Verdict v = prove_contract(o, &d);
    EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << " | " << v.counterexample;
    // K=1 and K=2: per field (off16, imm32) 5 unpatched obligations + K in-patch ones, plus tables.
    EXPECT_EQ(d.size(), (2u * (5 + 1) + 1) + (2u * (5 + 2) + 1));
    for (const auto& ob : d) EXPECT_EQ(ob.outcome, Outcome::Pass) << ob.name << ": " << ob.counterexample;
}

// With the kernel's `t >= end_old` weakened to `t > end_old`, a jump to the insn after a patch is
// not moved: the proof must find it.
TEST(ContractProof, OffByOneRuleRefuted) {
    ContractProofOptions o;
    o.max_patches = 1;
    o.inject_off_by_one = true;
    const Verdict v = prove_contract(o);
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason;
    EXPECT_NE(v.reason.find("K=1"), std::string::npos) << v.reason;
    EXPECT_NE(v.counterexample.find("p0 = "), std::string::npos) << v.counterexample;
}

TEST(ContractProof, BadBoundSkipped) {
    ContractProofOptions o;
    o.max_patches = 0;
    EXPECT_EQ(prove_contract(o).outcome, Outcome::Skip);
}

}  // namespace
}  // namespace patchfuzz::oracles::smt
