#pragma once
// The kernel's xlated program as a Program our interpreter runs (issue 22 item 5): what a real
// verifier rewrote, executed with no model involved. The xlated dump differs from the encodings
// the interpreter reads in what is internal to one kernel build or one load; each is undone here
// exactly, or the conversion fails with a reason (never a guess):
//  - AX: 7.x dumps it as r12 (xlated_compare.hpp N3); renumbered to the interpreter's AX (r11).
//    A kernel r11 on 7.x is a register no program may name: "kernel-r11".
//  - helper and kfunc calls: imm = function - __bpf_call_base (the kernel's BPF_CALL_IMM). The
//    guest names the symbol there from its kallsyms (@@SYM); the name gives back the helper id
//    (helper_of_kernel_symbol), an internal call of ours (__htab_map_lookup_elem ->
//    kInternalHtabLookup, arch_bpf_timed_may_goto, ...), or a kfunc of the program by name.
//    A call whose imm names no symbol but is a helper id stays that helper: the dump's tail call
//    (bpf_insn_prepare_dump shows it as `call 12`) and a helper the JIT inlines itself (arm64's
//    bpf_get_smp_processor_id: the verifier leaves its imm alone).
//  - ld_imm64 of a map: the dump shows the map's id (N2) -> the Program::maps index. An ld_imm64 of
//    a kernel address: &jiffies -> the interpreter's kJiffiesAddr; any other symbol fails.
//  - pseudo calls after jit_subprogs (N1): off = relative target, imm = subprogram index (and 7.x's
//    one-subprogram form off = relative, imm = 0) -> imm = relative, off = 0; a PSEUDO_FUNC
//    ld_imm64's second imm (the subprogram index) -> 0.
//  - kernel object layouts in the map inlines (M3): offsetof(struct bpf_array, value) at the array
//    inline's `r1 += off; r0 = *(u32 *)(r2 + 0)`, offsetof(struct htab_elem, key) in the `r0 += off`
//    after __htab_map_lookup_elem and the LRU ref byte there -> the interpreter's memory layout
//    (bpf/isa/internal_calls.hpp), whose map values sit at those stand-in offsets.
//  - per-CPU offsets (M5): `rX = off; rX = per-CPU(rX); rX = *(u32|u64 *)(rX + 0)` is cpu_number
//    (u32) or current_task (u64) -> the interpreter's pcpu_hot offsets.
//  - ctx accesses that convert_ctx_accesses rewrote to the kernel's own structs run on the
//    interpreter's images of them at the booted build's offsets (Program::ctx_layout, for socket
//    filters, tc and XDP on a build bpf/passes/ctx_fields.hpp has); a program of another type whose
//    aux marks a ctx access (InsnAux::ptr_type) fails with "ctx-access" instead of reading the
//    wrong bytes.
//  - `nospec` (BPF_ST | BPF_NOSPEC) and BPF_F_TEST_RND_HI32's poison need nothing: the interpreter
//    reads them as the kernel runs them.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/program/program.hpp"
#include "harness/kernel/guest_output.hpp"
#include "harness/kernel/xlated_compare.hpp"

namespace patchfuzz::kernel {

struct XlatedProgram {
    bool ok = false;
    // When !ok: the failure's class ("no-xlated", "no-symbols", "unknown-symbol", "call-not-a-symbol",
    // "unknown-kfunc", "unknown-map-id", "unknown-address", "kernel-r11", "unknown-percpu-offset",
    // "unknown-layout", "ctx-access", "no-insn-array"), counted per class in the reports, and the detail (pc, insn, name).
    std::string failure, detail;
    Program program;
};

// `g` is the guest's result for one accepted case, `original` the program it loaded (maps,
// kfuncs, type and attach target are carried over), `facts` the booted build's (mask_facts).
XlatedProgram program_of_xlated(const GuestCaseResult& g, const Program& original, const MaskFacts& facts);

// The helper id (or kInternal* id) a kernel function named `symbol` implements, as a call
// target in xlated code: the helper's own function (bpf_ktime_get_ns), a map's op the verifier
// calls directly (htab_map_update_elem -> map_update_elem), or an internal function.
std::optional<int32_t> helper_of_kernel_symbol(std::string_view symbol);

}  // namespace patchfuzz::kernel
