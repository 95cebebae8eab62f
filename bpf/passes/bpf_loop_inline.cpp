// Pass "bpf_loop": models bpf_optimize_bpf_loop() + inline_bpf_loop() (kernel/bpf/fixups.c).
#include "bpf/passes/bpf_loop_inline.hpp"

#include <cerrno>

#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

bool is_bpf_loop_call(const Insn& i) { return is_helper_call(i) && i.imm == BPF_FUNC_loop; }

class BpfLoopPass final : public Pass {
public:
    std::string_view name() const override { return "bpf_loop"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        patch::PatchBatch batch;
        const uint32_t n = prog.len();
        const uint32_t nsub = prog.subprog_cnt();
        if (nsub == 0) return {};
        // Per subprog: the growth decided while walking it (applied at its boundary, as the kernel
        // does when `subprogs[cur+1].start == i + delta + 1`).
        std::vector<uint32_t> extra(nsub, 0);
        uint32_t cur = 0;
        uint32_t depth = prog.subprogs[0].stack_depth;
        uint32_t roundup = ((depth + 7) / 8) * 8 - depth;
        // subprogs[cur + 1].start while cur + 1 <= nsub (the boundary test below), else never
        constexpr uint32_t kNoBoundary = UINT32_MAX;  // i + 1 <= n < UINT32_MAX
        uint32_t next_start = prog.subprogs[1].start;
        for (uint32_t i = 0; i < n; ++i) {
            const Insn& in = prog.insns[i];
            const InsnAux& ax = prog.aux[i];
            if (is_bpf_loop_call(in) && ax.loop_fit_for_inline && ax.loop_callback_subprogno < nsub) {
                extra[cur] = 3 * 8 + roundup;
                const auto base = static_cast<int16_t>(-static_cast<int32_t>(depth + extra[cur]));
                int64_t s = prog.subprogs[ax.loop_callback_subprogno].start;
                if (s > i) s += kBpfLoopInlineLen - 1;
                const auto imm = static_cast<int32_t>(s - (static_cast<int64_t>(i) + kBpfLoopCallSlot) - 1);
                add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = i, .insns = emit_bpf_loop_inline(base, imm, opts.loop_inline)});
            }
            if (next_start == i + 1) {
                ++cur;
                if (cur < nsub) {
                    depth = prog.subprogs[cur].stack_depth;
                    roundup = ((depth + 7) / 8) * 8 - depth;
                }
                next_start = cur + 1 <= nsub ? prog.subprogs[cur + 1].start : kNoBoundary;
            }
        }
        PatchOutcome out = apply_batch(patcher, prog, batch);
        if (!out.ok()) return out;
        for (uint32_t s = 0; s < nsub; ++s) prog.subprogs[s].stack_depth += extra[s];
        return out;
    }
};

}  // namespace

std::vector<Insn> emit_bpf_loop_inline(int16_t base, int32_t callback_imm, InlineFix fix) {
    const auto o6 = base, o7 = static_cast<int16_t>(base + 8), o8 = static_cast<int16_t>(base + 16);
    // The kernel compares and copies all 64 bits of R1 and returns -E2BIG through a 32-bit move;
    // the helper takes `u32 nr_loops` and returns `long` (findings 0007 and 0001-0006). The fix:
    // a 32-bit compare and copy, a 64-bit -E2BIG.
    const bool fixed = fix == InlineFix::Fixed;
    return {
        fixed ? jmp32_imm(BPF_JLE, BPF_REG_1, kMaxLoops, 2) : jmp_imm(BPF_JLE, BPF_REG_1, kMaxLoops, 2),  // [0] -> [3]
        fixed ? mov64_imm(BPF_REG_0, -E2BIG) : mov32_imm(BPF_REG_0, -E2BIG),                              // [1]
        ja(16),                                      // [2] -> end (19)
        stx(BPF_DW, BPF_REG_10, BPF_REG_6, o6),      // [3..5] spill r6..r8
        stx(BPF_DW, BPF_REG_10, BPF_REG_7, o7),
        stx(BPF_DW, BPF_REG_10, BPF_REG_8, o8),
        fixed ? mov32_reg(BPF_REG_6, BPF_REG_1) : mov64_reg(BPF_REG_6, BPF_REG_1),  // [6] loop max
        mov32_imm(BPF_REG_7, 0),                     // [7] counter
        mov64_reg(BPF_REG_8, BPF_REG_3),             // [8] ctx
        jmp_reg(BPF_JGE, BPF_REG_7, BPF_REG_6, 5),   // [9] -> [15]
        mov64_reg(BPF_REG_1, BPF_REG_7),             // [10]
        mov64_reg(BPF_REG_2, BPF_REG_8),             // [11]
        call_pseudo(callback_imm),                   // [12]
        alu64_imm(BPF_ADD, BPF_REG_7, 1),            // [13]
        jmp_imm(BPF_JEQ, BPF_REG_0, 0, -6),          // [14] -> [9]
        mov64_reg(BPF_REG_0, BPF_REG_7),             // [15]
        ldx(BPF_DW, BPF_REG_6, BPF_REG_10, o6),      // [16..18] restore
        ldx(BPF_DW, BPF_REG_7, BPF_REG_10, o7),
        ldx(BPF_DW, BPF_REG_8, BPF_REG_10, o8),
    };
}

std::unique_ptr<Pass> make_bpf_loop_pass() { return std::make_unique<BpfLoopPass>(); }

}  // namespace patchfuzz::passes
