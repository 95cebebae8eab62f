// Models the pointer-arithmetic masking block of bpf_do_misc_fixups() (kernel/bpf/fixups.c),
// written from docs/patching.md §5.3 row g.
#include "bpf/passes/ptr_arith_mask.hpp"

namespace patchfuzz::passes {

using namespace isa;

std::vector<Insn> emit_ptr_arith_mask(const Insn& insn, uint8_t alu_state, uint32_t alu_limit) {
    const uint8_t add = BPF_ALU64 | BPF_ADD | BPF_X, sub = BPF_ALU64 | BPF_SUB | BPF_X;
    if (insn.code != add && insn.code != sub) return {};
    if (alu_state == 0 || alu_state == kAluNonPointer) return {};
    const bool isneg = (alu_state & kAluNegValue) != 0;
    const bool issrc = (alu_state & kAluSanitize) == kAluSanitizeSrc;
    const bool isimm = (alu_state & kAluImmediate) != 0;
    const uint8_t off_reg = issrc ? insn.src_reg : insn.dst_reg;
    const Insn limit = mov32_imm(kRegAx, static_cast<int32_t>(alu_limit));
    std::vector<Insn> p;
    if (isimm) {
        p.push_back(limit);
    } else {
        if (isneg) p.push_back(alu64_imm(BPF_MUL, off_reg, -1));
        // AX = (limit - off | off) sign-spread: all ones when 0 <= off <= limit, else 0; then AX &= off
        p.push_back(limit);
        p.push_back(alu64_reg(BPF_SUB, kRegAx, off_reg));
        p.push_back(alu64_reg(BPF_OR, kRegAx, off_reg));
        p.push_back(make(BPF_ALU64 | BPF_NEG, kRegAx, 0, 0, 0));
        p.push_back(alu64_imm(BPF_ARSH, kRegAx, 63));
        p.push_back(alu64_reg(BPF_AND, kRegAx, off_reg));
    }
    if (!issrc) p.push_back(mov64_reg(insn.dst_reg, insn.src_reg));
    // the kernel edits the original slot (src := AX, ADD <-> SUB when negative) and then copies it
    Insn rewritten = insn;
    rewritten.src_reg = kRegAx;
    if (isneg) rewritten.code = insn.code == add ? sub : add;
    p.push_back(rewritten);
    if (issrc && isneg && !isimm) p.push_back(alu64_imm(BPF_MUL, off_reg, -1));  // restore src
    return p;
}

}  // namespace patchfuzz::passes
