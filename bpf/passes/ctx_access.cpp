// Pass "ctx_access": bpf_convert_ctx_accesses() (kernel/bpf/fixups.c; verifier.c before 7.x), the
// parts our generated programs reach: the Spectre barriers the verifier asked for on a load below
// bypass_spec_v1 / bypass_spec_v4 (bpf/passes/privilege.hpp).
//  * aux.nospec (7.x: a speculative path failed at this insn, so the verifier stops every
//    speculative path there instead of rejecting): [nospec, insn], and the same insn is then
//    examined again at its new place (it may need a barrier after it too).
//  * aux.nospec_result on a store (6.12 calls it sanitize_stack_spill: a stack store that could be
//    bypassed speculatively, leaving a stale slot, or that spills a pointer): [insn, nospec].
// An insn with both gets [nospec, insn, nospec], which is what the kernel's two successive patches
// leave (the second one patches the last insn of the first).
// Context field rewrites (the prog type's convert_ctx_access) are not modelled yet: the generated
// programs never read their context.
#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

// The stores the kernel's loop classifies as BPF_WRITE: ST and STX of mode MEM (atomics are not).
bool is_plain_store(const Insn& in) { return (cls(in) == BPF_ST || cls(in) == BPF_STX) && mode(in) == BPF_MEM; }

class CtxAccessPass final : public Pass {
public:
    std::string_view name() const override { return "ctx_access"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions&) const override {
        patch::PatchBatch batch;
        for (uint32_t i = 0; i < prog.len(); ++i) {
            const InsnAux& ax = prog.aux[i];
            const Insn& in = prog.insns[i];
            const bool after = ax.nospec_result && is_plain_store(in);
            if (!ax.nospec && !after) continue;
            std::vector<Insn> p;
            if (ax.nospec) p.push_back(nospec());
            p.push_back(in);
            if (after) p.push_back(nospec());
            add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = i, .insns = std::move(p)});
            if (is_ldimm64(in)) ++i;
        }
        return apply_batch(patcher, prog, batch);
    }
};

}  // namespace

std::unique_ptr<Pass> make_ctx_access_pass() { return std::make_unique<CtxAccessPass>(); }

}  // namespace patchfuzz::passes
