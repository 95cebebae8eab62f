#pragma once
// Kernel-internal call targets and addresses that the rewrite passes emit, given pseudo values of
// our own so the interpreter and the SMT oracles can model them (the kernel emits real function
// addresses relative to __bpf_call_base; we have no kernel).
//
// Calls to internal functions are encoded as helper calls (JMP|CALL, src_reg 0) whose imm is one of
// the kInternal* ids below. They lie far above every BPF_FUNC_* id, so they never collide with a
// real helper. Their calling conventions are those of the kernel functions they stand for:
//
//   kInternalHtabLookup  __htab_map_lookup_elem(map = R1, key = R2) -> R0 = struct htab_elem* or
//                        NULL. Used by every hash-family inline (hash, LRU hash, per-CPU hash,
//                        hash of maps). The inline then adds kHtabElemKeyOffset +
//                        round_up(key_size, 8) to reach the value.
//   kInternalTimedMayGoto arch_bpf_timed_may_goto: input AX = stack offset of the 16-byte may_goto
//                        slot (fp-relative, negative), output AX = refreshed loop budget (0 when the
//                        time slice is exhausted). Preserves R0-R5 (unlike normal helpers).
//
// Other helpers that the kernel turns into direct calls of their implementation (map_update_elem
// -> map->ops->map_update_elem, ...; row p of do_misc_fixups) keep their BPF_FUNC_* id here: the
// in-place imm rewrite changes no instruction count and no semantics we model. Row z (every other
// helper) is modelled only on request: see call_imm_of_helper() below.
//
// Addresses: per-CPU variables and jiffies appear as 32-bit constants (per-CPU offsets) and one
// ld_imm64 constant. A "per-CPU pointer" conversion is the internal insn BPF_MOV64_PERCPU_REG:
// ALU64|MOV|X with off = kAddrPercpuOff (-1), which turns a per-CPU offset into this CPU's address.
#include <cstdint>

namespace patchfuzz::isa {

inline constexpr int32_t kInternalCallBase = 0x10000;
inline constexpr int32_t kInternalHtabLookup = kInternalCallBase + 1;    // __htab_map_lookup_elem
inline constexpr int32_t kInternalTimedMayGoto = kInternalCallBase + 2;  // arch_bpf_timed_may_goto
// bpf_skb_load_helper_{8,16,32}_no_cache(skb = R1, offset = R2) -> R0 = the zero-extended
// big-endian value, or a negative errno when the offset is out of the packet (row f, gen_ld_abs).
inline constexpr int32_t kInternalSkbLoad8 = kInternalCallBase + 3;
inline constexpr int32_t kInternalSkbLoad16 = kInternalCallBase + 4;
inline constexpr int32_t kInternalSkbLoad32 = kInternalCallBase + 5;
// perf_snapshot_branch_stack(entries = R1, cnt = R2 entries) -> R0 = entries written (row x).
inline constexpr int32_t kInternalPerfSnapshotBranchStack = kInternalCallBase + 6;

inline constexpr int16_t kAddrPercpuOff = -1;  // BPF_ADDR_PERCPU: off of BPF_MOV64_PERCPU_REG
inline constexpr int16_t kAddrSpaceCastOff = 1;  // BPF_ADDR_SPACE_CAST
inline constexpr uint32_t kFlagNoUserConv = 1U << 18;  // BPF_F_NO_USER_CONV (arena map flag)

// Per-CPU variable offsets (what `(u32)(unsigned long)&pcpu_hot.cpu_number` etc. evaluate to).
inline constexpr int32_t kPcpuCpuNumber = 0x2000c;   // int cpu_number
inline constexpr int32_t kPcpuCurrentTask = 0x20000; // struct task_struct *current_task
// &jiffies (jiffies_64), loaded with one ld_imm64 (plain constant, src_reg 0).
inline constexpr uint64_t kJiffiesAddr = 0xffffffff82a05000ULL;

// (long)prog->aux, loaded with one ld_imm64 (src_reg 0) into the helper's prog argument (row n).
inline constexpr uint64_t kProgAuxAddr = 0xffff888104c3a000ULL;

// Row z (patch_call_imm): the kernel rewrites a helper call's imm in place to
// `fn->func - __bpf_call_base`, a 32-bit address delta. Ours is a deterministic, reversible stand-in
// per helper id: far above every helper id and every kInternal* id, so an executor can map it back
// with helper_of_call_imm(). Only emitted with RewriteOptions::patch_call_imm.
inline constexpr int32_t kHelperCallImmBase = 0x40000000;
inline constexpr int32_t kHelperCallImmStride = 0x40;   // "function size": ids up to 0xffffff fit
constexpr int32_t call_imm_of_helper(int32_t helper_id) { return kHelperCallImmBase + helper_id * kHelperCallImmStride; }
// The helper id a patched call imm names, or -1 when `imm` is not one.
constexpr int32_t helper_of_call_imm(int32_t imm) {
    if (imm < kHelperCallImmBase || (imm - kHelperCallImmBase) % kHelperCallImmStride != 0) return -1;
    return (imm - kHelperCallImmBase) / kHelperCallImmStride;
}

// Layout constants of the kernel objects the map inlines walk (LP64 layout of 6.x kernels):
// struct htab_elem: key[] at 48; struct bpf_lru_node's `ref` byte at 16 + 19 = 35 inside the elem.
inline constexpr int32_t kHtabElemKeyOffset = 48;
inline constexpr int16_t kHtabElemLruRefOffset = 35;
// struct bpf_array: offsetof(value) == offsetof(pptrs) == offsetof(ptrs). The exact value depends on
// struct bpf_map's size and cache-line alignment; ours is a fixed, documented stand-in.
inline constexpr int32_t kArrayValueOffset = 320;

}  // namespace patchfuzz::isa
