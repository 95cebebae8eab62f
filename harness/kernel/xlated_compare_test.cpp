// The normalisation and mask of xlated_compare.hpp on hand-written kernel/model pairs: each rule
// accepts exactly its difference, and an unrelated difference is still reported.
#include "harness/kernel/xlated_compare.hpp"

#include <gtest/gtest.h>

#include "bpf/passes/internal_calls.hpp"

namespace patchfuzz::kernel {
namespace {

using namespace isa;

MaskFacts facts() {
    MaskFacts f;
    f.kernel_array_value_off = 264;
    f.kernel_htab_key_off = 48;
    f.kernel_lru_ref_off = 35;
    f.model_array_value_off = 320;
    f.model_htab_key_off = 48;
    f.model_lru_ref_off = 35;
    return f;
}

TEST(XlatedCompare, IdenticalProgramsAgree) {
    Program m = make_program({mov64_imm(0, 1), exit_insn()});
    auto r = compare_xlated(m.insns, m, {}, facts());
    EXPECT_TRUE(r.equal);
    EXPECT_EQ(r.masked, 0u);
}

TEST(XlatedCompare, PseudoCallIsReencodedLikeJitSubprogs) {
    // main: call +1 (to insn 3); exit... subprog at 3.
    Program m = make_program({call_pseudo(1), mov64_imm(0, 0), exit_insn(), mov64_imm(0, 2), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].off = 1;  // kernel after the JIT: off = relative target, imm = subprog index 1
    k[0].imm = 1;
    EXPECT_TRUE(compare_xlated(k, m, {}, facts()).equal);
    k[0].imm = 0;  // wrong subprog index
    EXPECT_FALSE(compare_xlated(k, m, {}, facts()).equal);
}

TEST(XlatedCompare, MapIdsMapBackToIndexes) {
    Program m = make_program({ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 1), ldimm64_hi(0), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].imm = 42;  // map id of Program::maps[1]
    EXPECT_TRUE(compare_xlated(k, m, {17, 42}, facts()).equal);
    EXPECT_FALSE(compare_xlated(k, m, {42, 17}, facts()).equal);  // that id is map 0: a different map
}

TEST(XlatedCompare, HelperCallImmIsMaskedButNotItsRegisters) {
    Program m = make_program({call_helper(passes::kInternalHtabLookup), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].imm = 290016;  // __htab_map_lookup_elem - __bpf_call_base on 6.12
    auto r = compare_xlated(k, m, {}, facts());
    EXPECT_TRUE(r.equal);
    EXPECT_EQ(r.masked, 1u);
    k[0].src_reg = BPF_PSEUDO_CALL;  // not a helper call any more
    EXPECT_FALSE(compare_xlated(k, m, {}, facts()).equal);
}

TEST(XlatedCompare, ArrayValueOffsetOnlyWhenBothAreTheirBuildsValue) {
    Program m = make_program({alu64_imm(BPF_ADD, 1, 320), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].imm = 264;
    EXPECT_TRUE(compare_xlated(k, m, {}, facts()).equal);
    k[0].imm = 272;  // 6.1's value against a 6.12 fact: a real difference
    EXPECT_FALSE(compare_xlated(k, m, {}, facts()).equal);
}

TEST(XlatedCompare, HtabValueOffsetDependsOnTheKeySize) {
    Program m = make_program({alu64_imm(BPF_ADD, 0, 48 + 8), exit_insn()});
    m.maps.push_back(MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 1});
    std::vector<Insn> k = m.insns;
    auto f = facts();
    f.kernel_htab_key_off = 40;  // a build with a smaller htab_elem header
    k[0].imm = 40 + 8;
    EXPECT_TRUE(compare_xlated(k, m, {}, f).equal);
    k[0].imm = 40 + 24;  // a key size no map has
    EXPECT_FALSE(compare_xlated(k, m, {}, f).equal);
}

TEST(XlatedCompare, KernelAddressInLdImm64IsMasked) {
    Program m = make_program({ldimm64_lo(0, 0, 0x02a05000), ldimm64_hi(static_cast<int32_t>(0xffffffff)), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].imm = static_cast<int32_t>(0x82c079c0);
    EXPECT_TRUE(compare_xlated(k, m, {}, facts()).equal);
    k[1].imm = 0;  // not a kernel address: a plain constant must match
    EXPECT_FALSE(compare_xlated(k, m, {}, facts()).equal);
}

TEST(XlatedCompare, PercpuOffsetBeforePercpuMov) {
    Insn pcpu = make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, passes::kAddrPercpuOff, 0);
    Program m = make_program({mov32_imm(0, passes::kPcpuCpuNumber), pcpu, ldx(BPF_W, 0, 0, 0), exit_insn()});
    std::vector<Insn> k = m.insns;
    k[0].imm = 217548;
    EXPECT_TRUE(compare_xlated(k, m, {}, facts()).equal);
    k[1].off = 0;  // without the per-CPU mov the constant is an ordinary immediate
    EXPECT_FALSE(compare_xlated(k, m, {}, facts()).equal);
}

TEST(XlatedCompare, LengthDifferenceIsReportedWithDiff) {
    Program m = make_program({mov64_imm(0, 1), exit_insn()});
    std::vector<Insn> k = {mov64_imm(0, 1), ja(0), exit_insn()};
    auto r = compare_xlated(k, m, {}, facts());
    EXPECT_FALSE(r.equal);
    EXPECT_EQ(r.first_diff, 1u);
    EXPECT_NE(r.diff.find("-   1: 05 00 0000 00000000  goto pc+0"), std::string::npos) << r.diff;  // kernel-only line
}

}  // namespace
}  // namespace patchfuzz::kernel
