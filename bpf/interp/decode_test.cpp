// The interpreter's decode shortcuts against its general decoder (decode_check.hpp): every opcode
// byte, with register numbers, offsets and immediates that reach each rule of both (and the
// invalid forms with their reasons), decodes alike.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstdint>
#include <vector>

#include "bpf/interp/decode_check.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/internal_calls.hpp"

namespace patchfuzz::interp {
namespace {

using isa::Insn;

TEST(InterpDecode, ShortcutsDecodeAsTheGeneralDecoder) {
    // dst/src pairs: zero, equal (zext), different, fp, ax, above ax in either, and every ld_imm64
    // pseudo src (1-6).
    const uint8_t regs[][2] = {{0, 0}, {1, 2}, {3, 3}, {10, 0}, {11, 11}, {12, 1}, {0, 12}, {2, 1}, {0, 4}, {5, 5}, {6, 6}, {15, 15}};
    // offs: the movsx widths, arena/percpu casts, sdiv, in-range and out-of-range jumps.
    const int16_t offs[] = {0, 1, -1, 8, 16, 32, -2, 5, 3, isa::kAddrPercpuOff, 30000, -30000};
    // imms: byte swap widths, zext's 1, shift counts beyond the width, map/func pseudo values.
    const int32_t imms[] = {0, 1, 16, 32, 64, -1, 63, 200, -3, 3, -70000, 70000};
    for (unsigned code = 0; code < 256; ++code) {
        std::vector<Insn> insns;
        for (const auto& r : regs) {
            for (const int16_t off : offs) {
                for (const int32_t imm : imms) {
                    Insn i{};
                    i.code = static_cast<uint8_t>(code);
                    i.dst_reg = r[0] & 0xf;
                    i.src_reg = r[1] & 0xf;
                    i.off = off;
                    i.imm = imm;
                    insns.push_back(i);
                    // Each variant followed by an exit: an ld_imm64's second slot, or a plain insn
                    // (and, after a MOV64_PERCPU, what a map ld_imm64 before it looks at).
                    Insn filler = isa::exit_insn();
                    filler.imm = imm;
                    insns.push_back(filler);
                }
            }
        }
        // And one last, with nothing after it (a truncated ld_imm64).
        Insn last{};
        last.code = static_cast<uint8_t>(code);
        insns.push_back(last);
        const Program prog = make_program(std::move(insns));
        for (const bool movsx_as_mov : {false, true}) {
            EXPECT_EQ(decode_mismatch(prog, movsx_as_mov), "") << "code " << code << " movsx_as_mov " << movsx_as_mov;
        }
    }
}

TEST(InterpDecode, LdImm64PairsAndLocalCalls) {
    // The contexts the decode of these reads: the insn after a map value's pair (a per-CPU move of
    // its register, or of another), the second slot of an invalid pair, calls to either end.
    const Insn percpu = isa::make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 1, isa::kAddrPercpuOff, 0);
    const Insn other_percpu = isa::make(BPF_ALU64 | BPF_MOV | BPF_X, 2, 2, isa::kAddrPercpuOff, 0);
    const Program prog = make_program({
        isa::ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0), isa::ldimm64_hi(4), percpu,
        isa::ldimm64_lo(1, BPF_PSEUDO_MAP_IDX_VALUE, 1), isa::ldimm64_hi(8), other_percpu,
        isa::ldimm64_lo(1, 9, 0), isa::ldimm64_hi(0),  // invalid src: its second slot is decoded alone
        isa::ldimm64_lo(1, BPF_PSEUDO_FUNC, 5), isa::ldimm64_hi(0),  // a function just past the end
        isa::call_pseudo(-11), isa::call_pseudo(0), isa::call_pseudo(1), isa::exit_insn(),
    });
    for (const bool movsx_as_mov : {false, true}) EXPECT_EQ(decode_mismatch(prog, movsx_as_mov), "");
}

// A decode writes every DInsn of its array, which may hold another program's decode (arrays are
// reused per thread): a program decoded into the array of one whose every insn carried a zext
// mark, another op and other registers decodes as into fresh storage.
TEST(InterpDecode, ADecodeIntoAReusedArrayIsAFreshOne) {
    std::vector<Insn> marked_insns(700, isa::mov32_imm(3, 7));
    marked_insns.push_back(isa::exit_insn());
    Program marked = make_program(std::move(marked_insns));
    for (InsnAux& a : marked.aux) a.zext_dst = true;
    std::vector<Insn> plain_insns;
    for (int k = 0; k < 350; ++k) {
        plain_insns.push_back(isa::mov64_imm(1, k));
        plain_insns.push_back(isa::alu64_reg(BPF_ADD, 0, 1));
    }
    plain_insns.push_back(isa::exit_insn());
    const Program plain = make_program(std::move(plain_insns));
    for (int round = 0; round < 3; ++round) {
        { const Executable marks_applied(marked, arch_jit32(), ZextMarks::Apply); }
        for (const bool movsx_as_mov : {false, true}) EXPECT_EQ(decode_mismatch(plain, movsx_as_mov), "") << "round " << round;
    }
}

}  // namespace
}  // namespace patchfuzz::interp
