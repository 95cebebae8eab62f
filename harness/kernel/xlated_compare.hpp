#pragma once
// Compares the real kernel's xlated program with our model's rewrite, bit-exactly after a
// documented normalisation and mask of what is specific to one kernel build or one load.
//
// Normalisation (exact transformations, not masks):
//  N1 jit_subprogs() re-encoding (kernel/bpf/verifier.c): after a successful JIT the kernel
//     stores a pseudo call as off = relative target, imm = callee subprogram index, and a
//     BPF_PSEUDO_FUNC ld_imm64 as imm = relative target, second imm = subprogram index. The
//     model's output (imm = relative, off = 0) is re-encoded the same way from its own subprogs.
//     With one subprogram jit_subprogs() returns early: 6.x keeps the raw form (imm = relative,
//     off = 0); 7.2 and 7.3 show such a pseudo call (left by a removed, never-visited bpf_loop
//     callback) as off = relative, imm = 0, its PSEUDO_FUNC ld_imm64 still raw (measured).
//  N2 map references: bpf_insn_prepare_dump() (kernel/bpf/syscall.c) replaces the map pointer of
//     an ld_imm64 MAP_FD/MAP_VALUE by the map's id; ids are mapped back to Program::maps indexes
//     with the ids the guest printed, so "the same map" is still checked.
//  N3 the verifier's scratch register AX: its number is internal to the kernel (MAX_BPF_REG, after
//     the registers a program may name). 6.x numbers it 11; 7.2 and 7.3 number it 12 (they added
//     a register below it), so their xlated code shows AX as r12 while a program naming r11 is
//     still rejected. The kernel's AX is renumbered to the model's (isa::kRegAx), and a kernel r11
//     then to a number no model insn uses, so it can never pass for AX. A numbering, not a mask:
//     the model keeps one AX and the interpreter reads kernel code through the same renumbering.
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
//  M7 instruction-array tables (gotox): an ld_imm64 MAP_VALUE of a BPF_MAP_TYPE_INSN_ARRAY map in
//     the model against an ld_imm64 with src_reg 0 of a kernel address in the kernel, both slots:
//     the map type has no map_direct_value_meta, so bpf_insn_prepare_dump shows the raw address of
//     its code-address array, not the map's id. The entries themselves are compared after the load
//     (GuestCaseResult::insn_arrays against the model's Program::insn_arrays).
// Everything else (opcodes, registers, jump offsets, other immediates, length) must be equal.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

struct MaskFacts {
    // N3: the kernel's register number of AX (kernel_ax_reg_of).
    uint8_t kernel_ax_reg = isa::kRegAx;
    // N1 with one subprogram: the 7.x encoding of a pseudo call (off = relative, imm = 0).
    bool one_subprog_call_in_off = false;
    // kernel build (from the guest's BTF); -1 = unknown (that mask rule then never applies)
    int64_t kernel_array_value_off = -1;
    int64_t kernel_htab_key_off = -1;
    int64_t kernel_lru_ref_off = -1;
    // the model's stand-ins (bpf/isa/internal_calls.hpp)
    int64_t model_array_value_off = -1;
    int64_t model_htab_key_off = -1;
    int64_t model_lru_ref_off = -1;
    // The booted build's ctx structs (kernel_ctx_layout_of): what a converted ctx access of its
    // xlated code reads, for the interpreter.
    CtxLayout kernel_ctx_layout = CtxLayout::Uapi;
};

// Kernel facts from the guest's @@FACT lines and its release string (uname -r) plus the model's
// constants.
MaskFacts mask_facts(const std::map<std::string, int64_t>& guest_facts, std::string_view release = "");

// N3: AX's register number in the xlated code of the booted kernel, from its release string
// (uname -r): measured 11 on 6.1 and 6.12, 12 on 7.2.13 and 7.3.4 (taken for every 7.x and later).
// A fact of the build, not of the model profile it is compared with.
uint8_t kernel_ax_reg_of(std::string_view release);
// The ctx struct layout of the booted build (bpf/passes/ctx_fields.hpp), from its release string:
// on x86-64 and arm64 (an "amd64" or "arm64" release) 6.1 has its own, 6.12 and every later
// release are taken to have 6.12's (measured alike on 6.12.118, 7.2.13 and 7.3.4; arm64's 6.12.118
// and 7.3.4 alike too); Uapi (unknown) for any other (armhf's structs are 32-bit).
CtxLayout kernel_ctx_layout_of(std::string_view release);
// The leading number of a release string ("7.3.4+deb13-amd64" -> 7), 0 when there is none.
unsigned kernel_major_of(std::string_view release);

// N3 on one instruction list: the kernel's AX (`ax_reg`) becomes isa::kRegAx and, when they
// differ, a kernel r11 becomes 15 (named by no model insn). Identity when ax_reg == kRegAx.
void renumber_kernel_ax(std::vector<isa::Insn>& insns, uint8_t ax_reg);

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
