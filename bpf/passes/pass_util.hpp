#pragma once
// Small helpers shared by the rewrite passes (not a public API).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/pass.hpp"

namespace patchfuzz::passes {

// Applies `batch` unless it is empty (the kernel calls nothing when a pass finds nothing).
PatchOutcome apply_batch(patch::Patcher& patcher, Program& prog, const patch::PatchBatch& batch);
// Appends `p` to a batch a pass is building. The first patch reserves room for a few: a batch that
// has one usually gets more, and growing one at a time reallocates at 1, 2, 4, ... patches.
inline void add_patch(patch::PatchBatch& batch, patch::Patch p) {
    constexpr size_t kFirstCapacity = 8;
    if (batch.patches.empty()) batch.patches.reserve(kFirstCapacity);
    batch.patches.push_back(std::move(p));
}
// An outcome for a pass that fails on its own (-EINVAL, -EFAULT, ...), with the verifier log line.
PatchOutcome fail(int err, std::string log);
// Which modelled kfunc a kfunc call names (through Program::kfuncs; our BTF ids as a fallback).
kfunc::Kind kfunc_kind(const Program& prog, const isa::Insn& call);
// Whether helper `id` takes a map as its first argument (check_map_func_compatibility's list):
// the calls whose map the verifier records in the insn's aux.
bool is_map_helper(int32_t id);
// The stores convert_ctx_accesses() classifies as BPF_WRITE: ST and STX of mode MEM (atomics are
// not). ctx_access converts them; infer_ctx marks them.
constexpr bool is_plain_store(const isa::Insn& in) {
    return (isa::cls(in) == BPF_ST || isa::cls(in) == BPF_STX) && isa::mode(in) == BPF_MEM;
}
// The loads it classifies as BPF_READ (of the modes a ctx access can have).
constexpr bool is_plain_load(const isa::Insn& in) {
    return isa::cls(in) == BPF_LDX && (isa::mode(in) == BPF_MEM || isa::mode(in) == BPF_MEMSX);
}
// Index of the subprog containing insn `idx` (the fake exit is never returned).
uint32_t subprog_of(const Program& prog, uint32_t idx);

// The 7.x pre-pass (const_branches.cpp): decided conditional jumps become `goto`s, in place.
void fold_constant_branches(Program& prog);

// The passes, in kernel order (pipeline.cpp registers them).
std::unique_ptr<Pass> make_const_branches_pass();
std::unique_ptr<Pass> make_bpf_loop_pass();
std::unique_ptr<Pass> make_dead_code_pass();
std::unique_ptr<Pass> make_ctx_access_pass();
std::unique_ptr<Pass> make_misc_fixups_pass();
std::unique_ptr<Pass> make_iter_inline_pass();
std::unique_ptr<Pass> make_zext_pass();
// Whether do_misc_fixups may rewrite `prog` differently under a's and b's arch profiles (the only
// pass whose decisions read more of the profile than needs_zext; rewrites_alike() asks it).
bool misc_fixups_arch_sensitive(const Program& prog, const RewriteOptions& a, const RewriteOptions& b);
// Whether convert_ctx_accesses may rewrite `prog` differently under a's and b's arch profiles: a
// napi_id read, whose MIN_NAPI_ID is the architecture's (ctx_fields.hpp).
bool ctx_access_arch_sensitive(const Program& prog, const RewriteOptions& a, const RewriteOptions& b);

}  // namespace patchfuzz::passes
