// Pass "iter_inline": the numeric-iterator inline of bpf_fixup_kfunc_call() (the "Inline the
// numeric open-coded iterator kfuncs" series). The V4 sequences are written from the xlated code
// Linux 7.3.4 produced under qemu (not from kernel source); V1/V3 reconstruct review bug classes
// on the same skeleton.
#include "bpf/passes/iter_inline.hpp"

#include <cerrno>

#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {

using namespace isa;

std::vector<Insn> emit_iter_num_new(IterInline v) {
    using R = std::vector<Insn>;
    // The shape Linux 7.3.4 emits (its xlated code, measured under qemu; harness/kernel/README.md),
    // from the distance check on (slots counted from the check [c]):
    //   [c]   if dist > MAX goto E2BIG
    //   [c+1] w2 += -1 ; [c+2] cur = w2 ; [c+3] end = w3 ; [c+4] r0 = 0 ; [c+5] goto DONE
    //   [c+6] EINVAL: slot = 0 ; [c+7] r0 = -22 ; [c+8] goto DONE
    //   [c+9] E2BIG: slot = 0 ; [c+10] r0 = -7 ; DONE
    // The error codes are 64-bit moves: R0's upper half is 0xffffffff on an error, where the kfunc
    // (an `int` function) leaves 0 on x86-64. The kfunc ABI leaves those bits undefined.
    auto tail = [](Insn dist_check) {
        return R{dist_check,
                 alu32_imm(BPF_ADD, BPF_REG_2, -1),
                 stx(BPF_W, BPF_REG_1, BPF_REG_2, 0),
                 stx(BPF_W, BPF_REG_1, BPF_REG_3, 4),
                 mov64_imm(BPF_REG_0, 0),
                 ja(5),                          // -> DONE
                 st(BPF_DW, BPF_REG_1, 0, 0),    // EINVAL
                 mov64_imm(BPF_REG_0, -EINVAL),
                 ja(2),                          // -> DONE
                 st(BPF_DW, BPF_REG_1, 0, 0),    // E2BIG
                 mov64_imm(BPF_REG_0, -E2BIG)};
    };
    R p;
    switch (v) {
        case IterInline::Off:
            return {};
        case IterInline::V4:
        case IterInline::V3: {
            p = {jmp32_reg(BPF_JSGT, BPF_REG_2, BPF_REG_3, 8),  // [0] -> EINVAL [9]
                 mov32_reg(BPF_REG_0, BPF_REG_3),               // [1]
                 alu32_reg(BPF_SUB, BPF_REG_0, BPF_REG_2)};     // [2] distance mod 2^32, zero-extended
            // V4: the distance as the u64 it is after the 32-bit subtraction (7.3 compares r0);
            // V3: a signed 32-bit compare, which lets distances >= 2^31 through (B2).
            const Insn check = v == IterInline::V4 ? jmp_imm(BPF_JGT, BPF_REG_0, kMaxLoops, 8)
                                                   : jmp32_imm(BPF_JSGT, BPF_REG_0, kMaxLoops, 8);
            R t = tail(check);  // [3] -> E2BIG [12]
            p.insert(p.end(), t.begin(), t.end());
            return p;
        }
        case IterInline::V1: {
            p = {make(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_2, 32, 0),  // [0] r2 = (s32)r2
                 make(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_3, 32, 0),  // [1] r3 = (s32)r3
                 jmp_reg(BPF_JSGT, BPF_REG_2, BPF_REG_3, 8),                      // [2] -> EINVAL [11]
                 mov64_reg(BPF_REG_0, BPF_REG_3),                                 // [3]
                 alu64_reg(BPF_SUB, BPF_REG_0, BPF_REG_2)};                       // [4] 64-bit distance
            R t = tail(jmp_imm(BPF_JGT, BPF_REG_0, kMaxLoops, 8));               // [5] -> E2BIG [14]
            p.insert(p.end(), t.begin(), t.end());
            return p;
        }
    }
    return {};
}

std::vector<Insn> emit_iter_num_next(IterInline v) {
    if (v == IterInline::Off) return {};
    // As Linux 7.3.4 emits it: cur in R0, end in R2 (R3 untouched).
    return {
        ldx(BPF_W, BPF_REG_0, BPF_REG_1, 0),          // [0] cur
        alu32_imm(BPF_ADD, BPF_REG_0, 1),             // [1] 32-bit wrap
        ldx(BPF_W, BPF_REG_2, BPF_REG_1, 4),          // [2] end
        jmp32_reg(BPF_JSGE, BPF_REG_0, BPF_REG_2, 3), // [3] -> DRAIN [7]
        stx(BPF_W, BPF_REG_1, BPF_REG_0, 0),          // [4]
        mov64_reg(BPF_REG_0, BPF_REG_1),              // [5] &cur, full 64 bits
        ja(2),                                        // [6] -> end
        st(BPF_DW, BPF_REG_1, 0, 0),                  // [7] DRAIN: (0, 0)
        mov64_imm(BPF_REG_0, 0),                      // [8] NULL
    };
}

std::vector<Insn> emit_iter_num_destroy(IterInline v) {
    if (v == IterInline::Off) return {};
    return {ja(0)};
}

namespace {

class IterInlinePass final : public Pass {
public:
    std::string_view name() const override { return "iter_inline"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        if (opts.iter_inline == IterInline::Off) return {};
        // The inlining series is in bpf-next and 7.3 (measured on 7.3.4; 7.2.13 keeps the calls): 6.12 keeps bpf_iter_num_{new,next,destroy} as kfunc
        // calls (measured on 6.12.117, harness/kernel/README.md "Model profiles"); 6.1 has no inline either.
        if (opts.kernel != KernelProfile::BpfNext && opts.kernel != KernelProfile::K7_3) return {};
        patch::PatchBatch batch;
        const uint32_t n = prog.len();
        for (uint32_t i = 0; i < n; ++i) {
            const Insn& in = prog.insns[i];
            if (!is_kfunc_call(in)) continue;
            std::vector<Insn> p;
            switch (kfunc_kind(prog, in)) {
                case kfunc::Kind::IterNumNew: p = emit_iter_num_new(opts.iter_inline); break;
                case kfunc::Kind::IterNumNext: p = emit_iter_num_next(opts.iter_inline); break;
                case kfunc::Kind::IterNumDestroy: p = emit_iter_num_destroy(opts.iter_inline); break;
                default: break;
            }
            if (!p.empty()) add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = i, .insns = std::move(p)});
        }
        return apply_batch(patcher, prog, batch);
    }
};

}  // namespace

std::unique_ptr<Pass> make_iter_inline_pass() { return std::make_unique<IterInlinePass>(); }

}  // namespace patchfuzz::passes
