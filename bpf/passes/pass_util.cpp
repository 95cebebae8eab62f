#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {

PatchOutcome apply_batch(patch::Patcher& patcher, Program& prog, const patch::PatchBatch& batch) {
    if (batch.patches.empty()) return {};
    return patcher.apply(prog, batch);
}

PatchOutcome fail(int err, std::string log) {
    PatchOutcome o;
    o.err = err;
    o.raw_err = err;
    o.log = std::move(log);
    return o;
}

kfunc::Kind kfunc_kind(const Program& prog, const isa::Insn& call) {
    for (const auto& d : prog.kfuncs)
        if (d.btf_id == call.imm && d.offset == call.off) return static_cast<kfunc::Kind>(d.kind);
    if (call.off == 0)
        if (auto info = kfunc::by_btf_id(call.imm)) return info->kind;
    return kfunc::Kind::Unknown;
}

uint32_t subprog_of(const Program& prog, uint32_t idx) {
    uint32_t cur = 0;
    for (uint32_t s = 0; s < prog.subprog_cnt(); ++s)
        if (prog.subprogs[s].start <= idx) cur = s;
    return cur;
}

bool is_map_helper(int32_t id) {
    switch (id) {
        case BPF_FUNC_map_lookup_elem:
        case BPF_FUNC_map_update_elem:
        case BPF_FUNC_map_delete_elem:
        case BPF_FUNC_map_push_elem:
        case BPF_FUNC_map_pop_elem:
        case BPF_FUNC_map_peek_elem:
        case BPF_FUNC_redirect_map:
        case BPF_FUNC_for_each_map_elem:
        case BPF_FUNC_map_lookup_percpu_elem:
            return true;
        default:
            return false;
    }
}

}  // namespace patchfuzz::passes
