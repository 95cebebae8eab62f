#include "gen/shape_check.hpp"

#include <string>

#include "bpf/isa/validate.hpp"

namespace patchfuzz::gen {

namespace {
Error at(uint32_t pc, std::string msg) { return Error{"pc " + std::to_string(pc), std::move(msg)}; }
}  // namespace

Status check_shape(const Program& p) {
    isa::ValidateOptions vo;
    vo.allow_internal = false;
    if (auto st = isa::validate_program(p, vo); !st) return st;
    const uint32_t n = p.len();
    for (uint32_t i = 0; i < n; ++i) {
        const auto& in = p.insns[i];
        const auto& a = p.aux[i];
        if (isa::is_ldimm64(in)) {
            const bool map_ref = in.src_reg == BPF_PSEUDO_MAP_FD || in.src_reg == BPF_PSEUDO_MAP_VALUE ||
                                 in.src_reg == BPF_PSEUDO_MAP_IDX || in.src_reg == BPF_PSEUDO_MAP_IDX_VALUE;
            if (map_ref && (in.imm < 0 || static_cast<size_t>(in.imm) >= p.maps.size()))
                return at(i, "ldimm64 names map " + std::to_string(in.imm) + ", program has " + std::to_string(p.maps.size()));
        }
        if (isa::is_kfunc_call(in)) {
            bool found = false;
            for (const auto& k : p.kfuncs) found = found || k.btf_id == in.imm;
            if (!found) return at(i, "kfunc call to btf id " + std::to_string(in.imm) + " without a kfunc descriptor");
        }
        if (a.map_index >= 0 && static_cast<size_t>(a.map_index) >= p.maps.size())
            return at(i, "aux.map_index " + std::to_string(a.map_index) + " out of range");
        if (a.map_index >= 0 && !isa::is_helper_call(in)) return at(i, "aux.map_index on an insn that is no helper call");
        if (a.loop_fit_for_inline) {
            if (!isa::is_helper_call(in) || in.imm != BPF_FUNC_loop) return at(i, "loop_fit_for_inline on an insn that is no bpf_loop call");
            if (a.loop_callback_subprogno == 0 || a.loop_callback_subprogno >= p.subprog_cnt())
                return at(i, "loop_callback_subprogno " + std::to_string(a.loop_callback_subprogno) + " out of range");
        }
    }
    if (!p.finfo.empty()) {
        if (p.finfo.size() != p.subprog_cnt())
            return Error{"finfo", std::to_string(p.finfo.size()) + " records for " + std::to_string(p.subprog_cnt()) + " subprogs"};
        for (uint32_t s = 0; s < p.subprog_cnt(); ++s)
            if (p.finfo[s].insn_off != p.subprogs[s].start)
                return Error{"finfo " + std::to_string(s), "insn_off " + std::to_string(p.finfo[s].insn_off) +
                                                               " is not the subprog start " + std::to_string(p.subprogs[s].start)};
    }
    for (const auto& ia : p.insn_arrays)
        if (ia.map_index < 0 || static_cast<size_t>(ia.map_index) >= p.maps.size())
            return Error{"insn_arrays", "map_index " + std::to_string(ia.map_index) + " out of range"};
    return {};
}

}  // namespace patchfuzz::gen
