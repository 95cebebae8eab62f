// The normalisation and mask of xlated_compare.hpp on hand-written kernel/model pairs: each rule
// accepts exactly its difference, and an unrelated difference is still reported.
#include "harness/kernel/xlated_compare.hpp"

#include <gtest/gtest.h>

#include "bpf/isa/internal_calls.hpp"

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
    Program m = make_program({call_helper(isa::kInternalHtabLookup), exit_insn()});
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
    Insn pcpu = make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, isa::kAddrPercpuOff, 0);
    Program m = make_program({mov32_imm(0, isa::kPcpuCpuNumber), pcpu, ldx(BPF_W, 0, 0, 0), exit_insn()});
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

// N3, as 7.3.4 showed it (gen-1-0 of `kernel gen --kernel 7.3 --seed 1`): the untimed/timed
// may_goto counter load `79 ac ffb0` = `r12 = *(u64 *)(r10 -80)` where the model writes AX (r11).
TEST(XlatedCompare, AxIsR12In7xXlatedCode) {
    Program m = make_program({ldx(BPF_DW, kRegAx, 10, -80), jmp_imm(BPF_JEQ, kRegAx, 0, 1), stx(BPF_DW, 10, kRegAx, -80), exit_insn()});
    std::vector<Insn> k = m.insns;
    for (auto& i : k) {
        if (i.dst_reg == kRegAx) i.dst_reg = 12;
        if (i.src_reg == kRegAx) i.src_reg = 12;
    }
    EXPECT_EQ(k[0].code, 0x79);
    EXPECT_EQ(k[0].dst_reg, 12);
    MaskFacts f7 = mask_facts({}, "7.3.4+deb13-amd64");
    EXPECT_EQ(f7.kernel_ax_reg, 12);
    EXPECT_TRUE(compare_xlated(k, m, {}, f7).equal);
    // the same kernel code is a difference for a 6.x build (AX is r11 there)
    EXPECT_FALSE(compare_xlated(k, m, {}, mask_facts({}, "6.12.118+deb12-amd64")).equal);
    // a 7.x kernel r11 is not AX: it never matches the model's AX
    std::vector<Insn> k11 = m.insns;
    EXPECT_FALSE(compare_xlated(k11, m, {}, f7).equal);
    EXPECT_EQ(kernel_major_of("7.2.13+deb14-amd64"), 7u);
    EXPECT_EQ(kernel_major_of("6.1.0-57-amd64"), 6u);
    EXPECT_EQ(kernel_ax_reg_of("6.1.0-57-amd64"), kRegAx);
    EXPECT_EQ(kernel_ax_reg_of(""), kRegAx);
}

// N1 with one subprogram (a never-visited bpf_loop callback removed), gen-1-11 of `kernel gen
// --kernel 7.3 --seed 1`: 7.3.4 shows the call as `85 10 001b 00000000` (off = 27, imm = 0); 6.12
// kept the raw `call pc+27` (imm = 27, off = 0).
TEST(XlatedCompare, OneSubprogPseudoCallEncodingBy7x) {
    Program m = make_program({call_pseudo(27), exit_insn()});
    ASSERT_EQ(m.subprog_cnt(), 1u);
    std::vector<Insn> k7 = m.insns;
    k7[0].off = 27;
    k7[0].imm = 0;
    EXPECT_TRUE(compare_xlated(k7, m, {}, mask_facts({}, "7.3.4+deb13-amd64")).equal);
    EXPECT_FALSE(compare_xlated(k7, m, {}, mask_facts({}, "6.12.118+deb12-amd64")).equal);
    EXPECT_TRUE(compare_xlated(m.insns, m, {}, mask_facts({}, "6.12.118+deb12-amd64")).equal);
    EXPECT_FALSE(compare_xlated(m.insns, m, {}, mask_facts({}, "7.3.4+deb13-amd64")).equal);
}

}  // namespace
}  // namespace patchfuzz::kernel
