// Pass "zext": models bpf_opt_subreg_zext_lo32_rnd_hi32() (kernel/bpf/fixups.c; docs/patching.md §5.5).
// zext_dst insns get [insn, zext marker] when the JIT needs explicit zero-extension (or always for
// CMPXCHG, never after kfunc calls); with BPF_F_TEST_RND_HI32 the other 32-bit defs get their upper
// half poisoned: [insn, AX = rnd, AX <<= 32, dst |= AX]. get_random_u32() is replaced by an Rng
// seeded from RewriteOptions::rnd_hi32_seed, drawn once per poisoned insn in program order.
#include <cerrno>
#include <string>

#include "bpf/passes/insn_defs.hpp"
#include "bpf/passes/pass_util.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

class ZextPass final : public Pass {
public:
    std::string_view name() const override { return "zext"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        Rng rng(opts.rnd_hi32_seed);
        patch::PatchBatch batch;
        const uint32_t n = prog.len();
        // Read once: a patch's Insns (unsigned char fields) may alias anything, so the compiler
        // would reload these on every insn after the first patch.
        const bool rnd_hi32 = opts.test_rnd_hi32;
        const InsnAux* const aux = prog.aux.data();
        const Insn* const insns = prog.insns.data();
        for (uint32_t i = 0; i < n; ++i) {
            // Most insns are neither marked nor poisoned: skip them before decoding anything.
            if (!rnd_hi32) {
                while (i < n && !aux[i].zext_dst) ++i;
                if (i == n) break;
            }
            const InsnAux& ax = aux[i];
            const Insn insn = insns[i];
            const int reg = def_regno(insn);
            if (!ax.zext_dst) {
                if (reg < 0) continue;
                if (def_is_reg64(insn)) {
                    if (is_ldimm64(insn)) ++i;  // skip the second slot
                    continue;
                }
                // a ctx load may be converted into a wider load
                if (cls(insn) == BPF_LDX && ax.ptr_type == PtrType::Ctx) continue;
                const auto rnd = static_cast<int32_t>(static_cast<uint32_t>(rng.next()));
                add_patch(batch, {.kind = patch::PatchKind::Replace,
                                  .pos = i,
                                  .insns = {insn, mov64_imm(kRegAx, rnd), alu64_imm(BPF_LSH, kRegAx, 32),
                                            alu64_reg(BPF_OR, static_cast<uint8_t>(reg), kRegAx)}});
                continue;
            }
            if (!opts.arch.needs_zext && !is_cmpxchg(insn)) continue;
            if (is_kfunc_call(insn)) continue;  // the caller zero-extends
            if (reg < 0) return fail(-EFAULT, "verifier bug: zext_dst is set, but no reg is defined at insn " + std::to_string(i));
            add_patch(batch, {.kind = patch::PatchKind::Replace,
                              .pos = i,
                              .insns = {insn, zext_marker(static_cast<uint8_t>(reg))}});
        }
        return apply_batch(patcher, prog, batch);
    }
};

}  // namespace

std::unique_ptr<Pass> make_zext_pass() { return std::make_unique<ZextPass>(); }

}  // namespace patchfuzz::passes
