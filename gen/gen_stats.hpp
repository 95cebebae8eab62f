#pragma once
// GenStats: what a program contains, computed from the program alone (so it works as well for
// generated, mutated, shrunk and loaded programs). Triggers name the rewrite each construct
// reaches (docs/patching.md §5, §8; docs/iterator-isa-arch.md §1.7, §2.4); the coverage test
// requires every trigger to be reached.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::gen {

#define PATCHFUZZ_GEN_TRIGGERS(X)                                                         \
    X(misc_b_needs_zext) X(misc_c_sdiv_neg1) X(misc_c_smod_neg1) X(misc_d_sdiv_x)         \
    X(misc_d_smod_x64) X(misc_d_smod_x32) X(misc_d_udiv_x) X(misc_d_umod_x64)              \
    X(misc_d_umod_x32) X(misc_e_probe_mem) X(misc_f_ld_abs) X(misc_f_ld_ind)                \
    X(misc_g_alu_sanitize) X(misc_h_may_goto) X(misc_i_percpu_ldimm64) X(misc_j_kfunc_cast) \
    X(misc_l_prandom) X(misc_m_tail_call) X(misc_m_tail_call_unpriv) X(misc_p_lookup_hash) \
    X(misc_p_lookup_lru) X(misc_p_lookup_percpu_hash) X(misc_p_lookup_array)               \
    X(misc_p_lookup_array_bypass) X(misc_p_lookup_array_inner) X(misc_p_lookup_percpu_array) \
    X(misc_p_lookup_array_of_maps) X(misc_p_lookup_hash_of_maps) X(misc_p_lookup_poisoned)  \
    X(misc_p_map_update) X(misc_p_map_delete) X(misc_q_jiffies64) X(misc_r_smp_processor_id) \
    X(misc_s_current_task) X(misc_t_func_arg) X(misc_u_func_ret) X(misc_v_func_arg_cnt)     \
    X(misc_w_func_ip) X(misc_x_branch_snapshot) X(misc_z_helper_call)                       \
    X(bpf_loop_fit) X(bpf_loop_unfit) X(iter_new) X(iter_next) X(iter_destroy)              \
    X(iter_empty) X(iter_start_gt_end) X(iter_dist_max_loops) X(iter_dist_max_loops_m1)     \
    X(iter_dist_max_loops_p1) X(iter_int_min) X(iter_int_max) X(iter_upper_garbage)         \
    X(ctx_access) X(nospec) X(nospec_result) X(dead_code) X(nop_ja0) X(zext_dst)            \
    X(side_linfo) X(side_finfo) X(side_insn_array) X(side_kfunc_desc) X(side_subprog)       \
    X(side_callback) X(pseudo_func) X(gotol) X(gotox) X(far_jump) X(len_over_32767)

enum class Trigger : uint16_t {
#define PATCHFUZZ_GEN_ENUM(n) n,
    PATCHFUZZ_GEN_TRIGGERS(PATCHFUZZ_GEN_ENUM)
#undef PATCHFUZZ_GEN_ENUM
        Count
};
inline constexpr size_t kTriggerCount = static_cast<size_t>(Trigger::Count);
std::string_view trigger_name(Trigger t);

struct GenStats {
    uint32_t insns = 0;
    uint32_t lookups = 0;      // map_lookup_elem calls on a known, unpoisoned map
    uint32_t hash_lookups = 0; // ... on a BPF_MAP_TYPE_HASH (the profiles' "lookups at rewrite time")
    uint32_t subprogs = 0;
    uint32_t jumps = 0;        // relative transfers (jumps, pseudo calls, PSEUDO_FUNC)
    uint32_t max_jump = 0;     // largest |displacement| of a jump
    std::array<uint32_t, kTriggerCount> triggers{};
    uint32_t count(Trigger t) const { return triggers[static_cast<size_t>(t)]; }
};

GenStats analyze(const Program& prog);
// {"insns":..,"lookups":..,"subprogs":..,"jumps":..,"max_jump":..,"triggers":{...}}
std::string stats_json(const GenStats& s);

}  // namespace patchfuzz::gen
