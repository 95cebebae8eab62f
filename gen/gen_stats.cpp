#include "gen/gen_stats.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "bpf/kfunc/kfunc_table.hpp"

namespace patchfuzz::gen {

std::string_view trigger_name(Trigger t) {
    static constexpr std::string_view kNames[] = {
#define PATCHFUZZ_GEN_NAME(n) #n,
        PATCHFUZZ_GEN_TRIGGERS(PATCHFUZZ_GEN_NAME)
#undef PATCHFUZZ_GEN_NAME
    };
    const auto i = static_cast<size_t>(t);
    return i < kTriggerCount ? kNames[i] : "?";
}

namespace {

// Value a register holds before insn `at`, looking back over the straight-line set-up the
// generator (and clang) emit for call arguments: mov32/mov64 imm or ld_imm64. nullopt: unknown.
bool reg_const_before(const Program& p, uint32_t at, uint8_t reg, uint64_t& value) {
    for (uint32_t back = 1; back <= 8 && back <= at; ++back) {
        const uint32_t j = at - back;
        const auto& in = p.insns[j];
        if (j > 0 && isa::is_ldimm64(p.insns[j - 1])) continue;  // second slot
        if (isa::is_ldimm64(in) && in.dst_reg == reg && in.src_reg == 0 && j + 1 < p.len()) {
            value = static_cast<uint32_t>(in.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(p.insns[j + 1].imm)) << 32);
            return true;
        }
        if (in.dst_reg == reg && in.code == (BPF_ALU | BPF_MOV | BPF_K)) {
            value = static_cast<uint32_t>(in.imm);
            return true;
        }
        if (in.dst_reg == reg && in.code == (BPF_ALU64 | BPF_MOV | BPF_K)) {
            value = static_cast<uint64_t>(static_cast<int64_t>(in.imm));
            return true;
        }
        if (isa::is_call(in) || isa::is_jmp_class(in)) return false;
        if (in.dst_reg == reg && (isa::is_alu_class(in) || isa::cls(in) == BPF_LDX)) return false;
    }
    return false;
}

}  // namespace

GenStats analyze(const Program& p) {
    GenStats s;
    auto hit = [&s](Trigger t) { ++s.triggers[static_cast<size_t>(t)]; };
    s.insns = p.len();
    s.subprogs = p.subprog_cnt();
    bool prev_dead = false;
    for (uint32_t i = 0; i < p.len(); ++i) {
        const auto& in = p.insns[i];
        static const InsnAux kNone{};
        const InsnAux& a = i < p.aux.size() ? p.aux[i] : kNone;
        if (i > 0 && isa::is_ldimm64(p.insns[i - 1])) continue;  // second slot
        if (!a.seen) {
            if (!prev_dead) hit(Trigger::dead_code);
            prev_dead = true;
        } else {
            prev_dead = false;
        }
        if (a.zext_dst) hit(Trigger::zext_dst);
        if (a.needs_zext) hit(Trigger::misc_b_needs_zext);
        if (a.nospec) hit(Trigger::nospec);
        if (a.nospec_result) hit(Trigger::nospec_result);
        if (a.alu_state) hit(Trigger::misc_g_alu_sanitize);
        const auto rf = isa::relative_field(in);
        if (rf != isa::RelField::None) {
            ++s.jumps;
            const int64_t d = isa::displacement(in);
            const uint32_t ad = static_cast<uint32_t>(d < 0 ? -d : d);
            if (!isa::is_pseudo_call(in) && !isa::is_pseudo_func(in)) {
                s.max_jump = std::max(s.max_jump, ad);
                if (ad >= 32000 && ad <= 32767) hit(Trigger::far_jump);
            }
        }
        const uint8_t c = isa::cls(in);
        if (c == BPF_ALU || c == BPF_ALU64) {
            const uint8_t o = isa::op(in);
            if (o == BPF_DIV || o == BPF_MOD) {
                const bool mod = o == BPF_MOD, is64 = c == BPF_ALU64;
                if (isa::src_bit(in) == BPF_K) {
                    if (in.off == 1 && in.imm == -1) hit(mod ? Trigger::misc_c_smod_neg1 : Trigger::misc_c_sdiv_neg1);
                } else if (in.off == 1) {
                    hit(!mod ? Trigger::misc_d_sdiv_x : is64 ? Trigger::misc_d_smod_x64 : Trigger::misc_d_smod_x32);
                } else {
                    hit(!mod ? Trigger::misc_d_udiv_x : is64 ? Trigger::misc_d_umod_x64 : Trigger::misc_d_umod_x32);
                }
            }
        } else if (c == BPF_LDX) {
            if (a.ptr_type == PtrType::Btf) hit(Trigger::misc_e_probe_mem);
            if (a.ptr_type == PtrType::Ctx) hit(Trigger::ctx_access);
        } else if (c == BPF_LD && !isa::is_ldimm64(in)) {
            if (isa::mode(in) == BPF_ABS) hit(Trigger::misc_f_ld_abs);
            if (isa::mode(in) == BPF_IND) hit(Trigger::misc_f_ld_ind);
        }
        if (isa::is_ldimm64(in)) {
            if (in.src_reg == BPF_PSEUDO_FUNC) hit(Trigger::pseudo_func);
            if ((in.src_reg == BPF_PSEUDO_MAP_VALUE || in.src_reg == BPF_PSEUDO_MAP_IDX_VALUE) && in.imm >= 0 &&
                static_cast<size_t>(in.imm) < p.maps.size() && p.maps[static_cast<size_t>(in.imm)].type == BPF_MAP_TYPE_PERCPU_ARRAY)
                hit(Trigger::misc_i_percpu_ldimm64);
        }
        if (isa::is_may_goto(in)) hit(Trigger::misc_h_may_goto);
        if (isa::is_ja(in) && in.off == 0) hit(Trigger::nop_ja0);
        if (isa::is_gotol(in)) hit(Trigger::gotol);
        if (isa::is_gotox(in)) hit(Trigger::gotox);
        if (isa::is_kfunc_call(in)) {
            const auto info = kfunc::by_btf_id(in.imm);
            if (!info) continue;
            switch (info->kind) {
                case kfunc::Kind::IterNumNew: {
                    hit(Trigger::iter_new);
                    uint64_t r2 = 0, r3 = 0;
                    if (reg_const_before(p, i, 2, r2) && reg_const_before(p, i, 3, r3)) {
                        const int32_t st = static_cast<int32_t>(r2), en = static_cast<int32_t>(r3);
                        const int64_t dist = static_cast<int64_t>(en) - st;
                        if (st == en) hit(Trigger::iter_empty);
                        if (st > en) hit(Trigger::iter_start_gt_end);
                        if (dist == isa::kMaxLoops) hit(Trigger::iter_dist_max_loops);
                        if (dist == isa::kMaxLoops - 1) hit(Trigger::iter_dist_max_loops_m1);
                        if (dist == isa::kMaxLoops + 1) hit(Trigger::iter_dist_max_loops_p1);
                        constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
                        if (st == kMin || en == kMin) hit(Trigger::iter_int_min);
                        if (st == kMax || en == kMax) hit(Trigger::iter_int_max);
                        auto garbage = [](uint64_t v) {
                            const uint64_t sext = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v)));
                            return (v >> 32) != 0 && v != sext;
                        };
                        if (garbage(r2) || garbage(r3)) hit(Trigger::iter_upper_garbage);
                    }
                    break;
                }
                case kfunc::Kind::IterNumNext: hit(Trigger::iter_next); break;
                case kfunc::Kind::IterNumDestroy: hit(Trigger::iter_destroy); break;
                case kfunc::Kind::CastToKernCtx:
                case kfunc::Kind::RdonlyCast: hit(Trigger::misc_j_kfunc_cast); break;
                default: break;
            }
            continue;
        }
        if (!isa::is_helper_call(in)) continue;
        const MapDef* md = a.map_index >= 0 && static_cast<size_t>(a.map_index) < p.maps.size()
                               ? &p.maps[static_cast<size_t>(a.map_index)] : nullptr;
        switch (in.imm) {
            case BPF_FUNC_map_lookup_elem:
                if (!md) break;
                if (a.map_ptr_poisoned) {
                    hit(Trigger::misc_p_lookup_poisoned);
                    break;
                }
                ++s.lookups;
                switch (md->type) {
                    case BPF_MAP_TYPE_HASH: ++s.hash_lookups; hit(Trigger::misc_p_lookup_hash); break;
                    case BPF_MAP_TYPE_LRU_HASH: hit(Trigger::misc_p_lookup_lru); break;
                    case BPF_MAP_TYPE_PERCPU_HASH: hit(Trigger::misc_p_lookup_percpu_hash); break;
                    case BPF_MAP_TYPE_ARRAY:
                        hit(md->map_flags & BPF_F_INNER_MAP ? Trigger::misc_p_lookup_array_inner
                            : md->bypass_spec_v1 ? Trigger::misc_p_lookup_array_bypass : Trigger::misc_p_lookup_array);
                        break;
                    case BPF_MAP_TYPE_PERCPU_ARRAY: hit(Trigger::misc_p_lookup_percpu_array); break;
                    case BPF_MAP_TYPE_ARRAY_OF_MAPS: hit(Trigger::misc_p_lookup_array_of_maps); break;
                    case BPF_MAP_TYPE_HASH_OF_MAPS: hit(Trigger::misc_p_lookup_hash_of_maps); break;
                    default: break;
                }
                break;
            case BPF_FUNC_map_update_elem: hit(Trigger::misc_p_map_update); break;
            case BPF_FUNC_map_delete_elem: hit(Trigger::misc_p_map_delete); break;
            case BPF_FUNC_tail_call: hit(md && md->unpriv_array ? Trigger::misc_m_tail_call_unpriv : Trigger::misc_m_tail_call); break;
            case BPF_FUNC_jiffies64: hit(Trigger::misc_q_jiffies64); break;
            case BPF_FUNC_get_smp_processor_id: hit(Trigger::misc_r_smp_processor_id); break;
            case BPF_FUNC_get_current_task:
            case BPF_FUNC_get_current_task_btf: hit(Trigger::misc_s_current_task); break;
            case BPF_FUNC_get_func_arg: hit(Trigger::misc_t_func_arg); break;
            case BPF_FUNC_get_func_ret: hit(Trigger::misc_u_func_ret); break;
            case BPF_FUNC_get_func_arg_cnt: hit(Trigger::misc_v_func_arg_cnt); break;
            case BPF_FUNC_get_func_ip: hit(Trigger::misc_w_func_ip); break;
            case BPF_FUNC_get_branch_snapshot: hit(Trigger::misc_x_branch_snapshot); break;
            case BPF_FUNC_get_prandom_u32: hit(Trigger::misc_l_prandom); break;
            case BPF_FUNC_loop: hit(a.loop_fit_for_inline ? Trigger::bpf_loop_fit : Trigger::bpf_loop_unfit); break;
            default: hit(Trigger::misc_z_helper_call); break;
        }
    }
    if (!p.linfo.empty()) hit(Trigger::side_linfo);
    if (!p.finfo.empty()) hit(Trigger::side_finfo);
    if (!p.insn_arrays.empty()) hit(Trigger::side_insn_array);
    if (!p.kfuncs.empty()) hit(Trigger::side_kfunc_desc);
    if (p.subprog_cnt() > 1) hit(Trigger::side_subprog);
    for (const auto& sp : p.subprogs)
        if (sp.is_cb) {
            hit(Trigger::side_callback);
            break;
        }
    if (p.len() > 32767) hit(Trigger::len_over_32767);
    return s;
}

std::string stats_json(const GenStats& s) {
    std::string out = "{\"insns\":" + std::to_string(s.insns) + ",\"lookups\":" + std::to_string(s.lookups) +
                      ",\"hash_lookups\":" + std::to_string(s.hash_lookups) + ",\"subprogs\":" + std::to_string(s.subprogs) +
                      ",\"jumps\":" + std::to_string(s.jumps) + ",\"max_jump\":" + std::to_string(s.max_jump) + ",\"triggers\":{";
    for (size_t t = 0; t < kTriggerCount; ++t) {
        if (t) out += ",";
        out += "\"" + std::string(trigger_name(static_cast<Trigger>(t))) + "\":" + std::to_string(s.triggers[t]);
    }
    return out + "}}";
}

}  // namespace patchfuzz::gen
