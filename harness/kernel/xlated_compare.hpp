#pragma once
// Compares the real kernel's xlated program with our model's rewrite, bit-exactly after a
// documented normalisation and mask of what is specific to one kernel build or one load.
//
// Normalisation (exact transformations, not masks):
//  N1 jit_subprogs() re-encoding (kernel/bpf/verifier.c): after a successful JIT the kernel
//     stores a pseudo call as off = relative target, imm = callee subprogram index, and a
//     BPF_PSEUDO_FUNC ld_imm64 as imm = relative target, second imm = subprogram index. The
//     model's output (imm = relative, off = 0) is re-encoded the same way from its own subprogs.
//  N2 map references: bpf_insn_prepare_dump() (kernel/bpf/syscall.c) replaces the map pointer of
//     an ld_imm64 MAP_FD/MAP_VALUE by the map's id; ids are mapped back to Program::maps indexes
//     with the ids the guest printed, so "the same map" is still checked.
// Mask (fields compared as equal even when their values differ), each with its reason:
//  M1 helper call imm (src_reg 0): an address offset from __bpf_call_base in the kernel (differs
//     per build; inlined map lookups call e.g. __htab_map_lookup_elem), a helper/internal id in
//     the model. The call's position, code and registers are still compared.
//  M2 kfunc call imm (src_reg 2): the same, for kfuncs.
//  M3 struct offsets, each only at the instruction shape that carries it and only when the two
//     values are the kernel's and the model's value of the same quantity: ALU64 ADD K of
//     offsetof(struct bpf_array, value) (array lookup inline) and of
//     offsetof(struct htab_elem, key) + round_up(key_size, 8) (hash lookup inlines);
//     the off of a byte load/store of htab_elem.lru_node.ref (LRU hash inline). Kernel values
//     come from the guest kernel's BTF (@@FACT lines); model values from bpf/passes.
//  M4 absolute kernel addresses: an ld_imm64 with src_reg 0 whose kernel value is a kernel
//     address (>= 0xffff800000000000, e.g. &jiffies) against any src_reg-0 ld_imm64 of the model.
//  M5 per-CPU offsets: the imm of a MOV K whose next instruction is the per-CPU address mov
//     (ALU64 MOV X, off = -1) on the same register (bpf_get_smp_processor_id inline).
//  M6 BPF_F_TEST_RND_HI32 poison: the imm of `AX = imm` (ALU64 MOV K into BPF_REG_AX) followed by
//     `AX <<= 32` in both: get_random_u32() in the kernel, a seeded draw in the model.
// Everything else (opcodes, registers, jump offsets, other immediates, length) must be equal.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

struct MaskFacts {
    // kernel build (from the guest's BTF); -1 = unknown (that mask rule then never applies)
    int64_t kernel_array_value_off = -1;
    int64_t kernel_htab_key_off = -1;
    int64_t kernel_lru_ref_off = -1;
    // the model's stand-ins (bpf/passes/internal_calls.hpp)
    int64_t model_array_value_off = -1;
    int64_t model_htab_key_off = -1;
    int64_t model_lru_ref_off = -1;
};

// Kernel facts from the guest's @@FACT lines plus the model's constants.
MaskFacts mask_facts(const std::map<std::string, int64_t>& guest_facts);

struct CompareResult {
    bool equal = false;
    uint32_t first_diff = 0;         // insn index of the first difference (when !equal)
    uint32_t masked = 0;             // how many fields the mask (M1-M5) accepted
    std::string diff;                // side-by-side disassembly around the differences
    std::vector<isa::Insn> model_normalised;  // the model's insns after N1
    std::vector<isa::Insn> kernel_normalised; // the kernel's insns after N2
};

// `model` is our rewritten Program (for N1 and the map key sizes of M3); `map_ids` the kernel map
// id of each Program::maps index.
CompareResult compare_xlated(const std::vector<isa::Insn>& kernel, const Program& model,
                             const std::vector<uint32_t>& map_ids, const MaskFacts& facts);

}  // namespace patchfuzz::kernel
