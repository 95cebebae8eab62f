// Models the div/mod rows of bpf_do_misc_fixups() (kernel/bpf/fixups.c).
#include "bpf/passes/div_mod_guard.hpp"

namespace patchfuzz::passes {

using namespace isa;

std::vector<Insn> emit_div_mod_guard(const Insn& insn) {
    if (!is_alu_class(insn)) return {};
    const uint8_t o = op(insn);
    if (o != BPF_DIV && o != BPF_MOD) return {};
    const bool is64 = cls(insn) == BPF_ALU64;
    const bool is_div = o == BPF_DIV;
    const bool is_sdiv = insn.off == 1;
    const uint8_t alu = is64 ? BPF_ALU64 : BPF_ALU;
    const uint8_t jmp = is64 ? BPF_JMP : BPF_JMP32;
    const uint8_t dst = insn.dst_reg, src = insn.src_reg;

    if (src_bit(insn) == BPF_K) {
        // Row c: "make sdiv/smod divide-by-minus-one exceptions impossible".
        if (!is_sdiv || insn.imm != -1) return {};
        if (is_div) return {make(alu | BPF_NEG | BPF_K, dst, 0, 0, 0)};
        return {mov32_imm(dst, 0)};
    }
    if (is_sdiv) {
        if (is_div) {
            return {
                mov64_reg(kRegAx, src),                        // [0] AX = src
                make(alu | BPF_ADD | BPF_K, kRegAx, 0, 0, 1),  // [1] AX += 1
                make(jmp | BPF_JGT | BPF_K, kRegAx, 0, 4, 1),  // [2] if AX > 1 -> [7]
                make(jmp | BPF_JEQ | BPF_K, kRegAx, 0, 1, 0),  // [3] if AX == 0 -> [5]
                make(alu | BPF_MOV | BPF_K, dst, 0, 0, 0),     // [4] dst = 0
                make(alu | BPF_NEG | BPF_K, dst, 0, 0, 0),     // [5] dst = -dst
                ja(1),                                         // [6] -> end
                insn,                                          // [7]
            };
        }
        std::vector<Insn> p{
            mov64_reg(kRegAx, src),
            make(alu | BPF_ADD | BPF_K, kRegAx, 0, 0, 1),
            make(jmp | BPF_JGT | BPF_K, kRegAx, 0, 3, 1),                        // [2] -> [6]
            make(jmp | BPF_JEQ | BPF_K, kRegAx, 0, static_cast<int16_t>(is64 ? 3 : 4), 1),  // [3] -> end / [8]
            mov32_imm(dst, 0),                                                   // [4] (src == -1)
            ja(1),                                                               // [5] -> [7]
            insn,                                                                // [6]
        };
        if (!is64) {
            p.push_back(ja(1));               // [7] -> end
            p.push_back(mov32_reg(dst, dst));  // [8] mod by zero: zero-extend dst
        }
        return p;
    }
    if (is_div) {
        return {
            make(jmp | BPF_JNE | BPF_K, src, 0, 2, 0),  // [0] if src != 0 -> [3]
            alu32_reg(BPF_XOR, dst, dst),               // [1] w_dst ^= w_dst
            ja(1),                                      // [2] -> end
            insn,                                       // [3]
        };
    }
    std::vector<Insn> p{
        make(jmp | BPF_JEQ | BPF_K, src, 0, static_cast<int16_t>(is64 ? 1 : 2), 0),  // -> end / [3]
        insn,
    };
    if (!is64) {
        p.push_back(ja(1));
        p.push_back(mov32_reg(dst, dst));
    }
    return p;
}

}  // namespace patchfuzz::passes
