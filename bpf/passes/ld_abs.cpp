// Models bpf_gen_ld_abs() (net/core/filter.c), written from docs/patching.md §5.3 row f.
#include "bpf/passes/ld_abs.hpp"

#include "bpf/isa/internal_calls.hpp"

namespace patchfuzz::passes {

using namespace isa;

bool prog_type_has_gen_ld_abs(uint32_t prog_type) {
    return prog_type == BPF_PROG_TYPE_SOCKET_FILTER || prog_type == BPF_PROG_TYPE_SCHED_CLS ||
           prog_type == BPF_PROG_TYPE_SCHED_ACT;
}

std::vector<Insn> emit_gen_ld_abs(const Insn& ld) {
    if (cls(ld) != BPF_LD || (mode(ld) != BPF_ABS && mode(ld) != BPF_IND)) return {};
    int32_t helper = 0;
    switch (size(ld)) {
        case BPF_B: helper = kInternalSkbLoad8; break;
        case BPF_H: helper = kInternalSkbLoad16; break;
        case BPF_W: helper = kInternalSkbLoad32; break;
        default: return {};
    }
    std::vector<Insn> p;
    if (mode(ld) == BPF_ABS) {
        p.push_back(mov64_imm(BPF_REG_2, ld.imm));
    } else {
        p.push_back(mov64_reg(BPF_REG_2, ld.src_reg));
        if (ld.imm != 0) p.push_back(alu64_imm(BPF_ADD, BPF_REG_2, ld.imm));
    }
    p.push_back(mov64_reg(BPF_REG_1, BPF_REG_6));  // the verifier guarantees ctx in R6
    p.push_back(call_helper(helper));
    p.push_back(jmp_imm(BPF_JSGE, BPF_REG_0, 0, 2));  // -> end (the next original insn)
    p.push_back(alu32_reg(BPF_XOR, BPF_REG_0, BPF_REG_0));
    p.push_back(exit_insn());  // out-of-packet load: the program returns 0
    return p;
}

}  // namespace patchfuzz::passes
