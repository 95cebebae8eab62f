// The opcode tables of by_opcode.hpp give what the functions they stand for give, for every opcode
// byte and register, and (insn_has_def32) every imm the function tests and then some.
#include <gtest/gtest.h>

#include <vector>

#include "bpf/isa/insn_def32.hpp"
#include "bpf/patch/by_opcode.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {
namespace {

TEST(ByOpcode, AdjFieldAsTheFunction) {
    for (unsigned code = 0; code < 256; ++code) {
        bool any = false;
        for (uint8_t src = 0; src < 16; ++src)
            for (uint8_t dst = 0; dst < 16; dst = static_cast<uint8_t>(dst + 5)) {
                isa::Insn i{};
                i.code = static_cast<uint8_t>(code);
                i.src_reg = src;
                i.dst_reg = dst;
                i.off = -3;
                i.imm = 7;
                EXPECT_EQ(adj_field_by_code(i), adj_field(i)) << "code 0x" << std::hex << code << " src " << +src;
                any |= adj_field(i) != Field::None;
                if (adj_field(i) != Field::None) {
                    EXPECT_TRUE(may_adjust(i)) << "code 0x" << std::hex << code;
                }
            }
        isa::Insn i{};
        i.code = static_cast<uint8_t>(code);
        EXPECT_EQ(may_adjust(i), any) << "code 0x" << std::hex << code;
    }
}

TEST(ByOpcode, HasDef32AsTheFunction) {
    std::vector<int32_t> imms{0, 1, -1, 8, 16, 32, 64, 0x7fffffff, -0x7fffffff - 1, BPF_LOAD_ACQ, BPF_STORE_REL,
                              BPF_FETCH};
    for (int32_t op : {BPF_ADD, BPF_AND, BPF_OR, BPF_XOR, BPF_XCHG, BPF_CMPXCHG}) {
        imms.push_back(op);
        imms.push_back(op | BPF_FETCH);
    }
    for (unsigned code = 0; code < 256; ++code)
        for (uint8_t reg = 0; reg < 16; ++reg)
            for (int32_t imm : imms) {
                isa::Insn i{};
                i.code = static_cast<uint8_t>(code);
                i.dst_reg = reg;
                i.src_reg = static_cast<uint8_t>(15 - reg);
                i.imm = imm;
                EXPECT_EQ(has_def32_by_code(i), isa::insn_has_def32(i))
                    << "code 0x" << std::hex << code << " reg " << std::dec << +reg << " imm " << imm;
            }
}

}  // namespace
}  // namespace patchfuzz::patch
