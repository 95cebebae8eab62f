#pragma once
// Program: the instructions plus everything the kernel carries beside them when it rewrites a
// verified program (struct bpf_verifier_env / bpf_prog_aux in the kernel). Both patchers take and
// produce this one type; every oracle compares it field by field.
//
// Conventions:
//  * ld_imm64 with src MAP_FD / MAP_VALUE / MAP_IDX / MAP_IDX_VALUE: the first slot's imm is an
//    index into `maps` (our stand-in for the fd or map pointer); MAP_VALUE's second slot imm is the
//    value offset.
//  * kfunc calls: imm is the BTF id of an entry in `kfuncs` (bpf/kfunc/kfunc_table.hpp names ours).
//  * `subprogs` always has subprog_cnt + 1 entries; the last one is the kernel's fake "exit"
//    subprog whose start equals insns.size() (docs/patching.md §3.2).
//  * `aux` has exactly insns.size() entries (the kernel's array may be larger; the tail is never
//    read, so we do not model it).
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "bpf/isa/insn.hpp"

namespace patchfuzz {

// What the verifier learnt about a pointer operand; only the kinds the rewrites read.
enum class PtrType : uint8_t { None = 0, Ctx, Stack, MapValue, Packet, Btf, Arena };

// The expected_attach_type of a BPF_PROG_TYPE_TRACING program, as far as the get_func_* inlines
// of do_misc_fixups (docs/patching.md §5.3 rows t-u) tell them apart. Our own numbering (stable in
// .case files), not the uapi enum: FSESSION and the *_MULTI types are too new for a fixed number.
enum class TraceAttach : uint8_t {
    Other = 0,     // fentry, iter, lsm, ...: no return value to read
    RawTp,         // BPF_TRACE_RAW_TP (tp_btf)
    Fentry,        // BPF_TRACE_FENTRY
    Fexit,         // BPF_TRACE_FEXIT
    ModifyReturn,  // BPF_MODIFY_RETURN
    Fsession,      // BPF_TRACE_FSESSION (bpf-next)
    FentryMulti,   // BPF_TRACE_FENTRY_MULTI (bpf-next)
    FexitMulti,    // BPF_TRACE_FEXIT_MULTI (bpf-next)
    FsessionMulti, // BPF_TRACE_FSESSION_MULTI (bpf-next)
};

// How a program's ctx pointer (R1 at entry) is laid out when it runs. A program as loaded reads
// the uapi struct of its type (struct __sk_buff, struct xdp_md, ...); after convert_ctx_accesses
// (pass ctx_access) the accesses of socket filter, tc and XDP programs read the kernel's own
// structs (struct sk_buff, struct xdp_buff and what they point to) at the offsets of one kernel
// build, which bpf/passes/ctx_fields.hpp holds. The interpreter builds the ctx it runs a program
// on in this layout, so the two forms see the same values.
enum class CtxLayout : uint8_t {
    Uapi = 0,
    Linux6_1,   // Debian 6.1.0-57 (6.1.192)
    Linux6_12,  // Debian 6.12.118, 7.2.13 and 7.3.4: measured alike
};

// struct bpf_insn_aux_data (include/linux/bpf_verifier.h): the fields the rewrite passes read or
// the patchers move. Zero-initialised means "fresh slot" exactly as the kernel's vrealloc+memset.
struct InsnAux {
    // The 32-bit fields first and the byte-sized ones after them, with `reserved_` closing the
    // last gap: no padding, so vectors of InsnAux compare with one memcmp (same_elements below).
    uint32_t orig_idx = 0;      // load-time index of the insn (0 for slots created by a patch)
    uint32_t alu_limit = 0;     // Spectre v1 pointer-arith limit (with alu_state)
    // helper calls on maps: index into Program::maps, -1 = unknown/none; map_ptr_poisoned: more
    // than one map reached this call (the rewrite falls back to the generic helper).
    int32_t map_index = -1;
    uint32_t map_key = 0;        // constant key, for tail-call pokes
    uint32_t loop_callback_subprogno = 0;  // bpf_loop inline state (struct bpf_loop_inline_state)
    bool seen = false;          // reached during verification (dead-code passes)
    bool zext_dst = false;      // upper 32 bits of dst must be zeroed explicitly (zext pass)
    bool needs_zext = false;    // ALU64 insn that may be narrowed (do_misc_fixups row b)
    bool nospec = false;        // convert_ctx_accesses: barrier before the insn
    bool nospec_result = false; // barrier after the insn
    uint8_t alu_state = 0;      // Spectre v1 pointer-arith state (0 = none)
    PtrType ptr_type = PtrType::None;  // for memory insns: what they access
    uint8_t ctx_field_size = 0;
    bool map_ptr_poisoned = false;
    bool map_key_poisoned = false;
    bool map_key_known = false;
    bool loop_fit_for_inline = false;  // bpf_loop inline state
    bool call_with_percpu_alloc_ptr = false;
    uint8_t arg_prog = 0;        // register that receives prog->aux (bpf-next row n), 0 = none
    bool indirect_target = false;  // gotox target (bpf-next)
    uint8_t reserved_ = 0;       // always 0: fills the struct's last byte (see above)

    bool operator==(const InsnAux&) const = default;
};
static_assert(sizeof(InsnAux) == 36 && std::has_unique_object_representations_v<InsnAux>,
              "InsnAux must stay free of padding: Program's operator== compares it with memcmp (a new field "
              "also gets its line in bpf/program/aux_fields.hpp)");

// struct bpf_subprog_info: the fields that patching touches or the passes read.
struct SubprogInfo {
    uint32_t start = 0;
    uint32_t stack_depth = 0;
    uint32_t stack_extra = 0;   // may_goto counter bytes added by do_misc_fixups
    uint32_t linfo_idx = 0;
    bool has_tail_call = false;
    bool is_cb = false;
    bool is_async_cb = false;
    bool is_exception_cb = false;
    bool is_hidden = false;      // added by add_hidden_subprog (no func_info)

    bool operator==(const SubprogInfo&) const = default;
};

// struct bpf_line_info (uapi)
struct LineInfo {
    uint32_t insn_off = 0;
    uint32_t file_name_off = 0;
    uint32_t line_off = 0;
    uint32_t line_col = 0;  // line << 10 | col
    bool operator==(const LineInfo&) const = default;
};

// struct bpf_func_info (uapi)
struct FuncInfo {
    uint32_t insn_off = 0;
    uint32_t type_id = 0;
    bool operator==(const FuncInfo&) const = default;
};

// One BPF_MAP_TYPE_INSN_ARRAY map bound to the program (kernel/bpf/bpf_insn_array.c).
struct InsnArrayEntry {
    uint32_t orig_off = 0;
    uint32_t xlated_off = 0;  // isa::kInsnDeleted once its insn was removed
    bool operator==(const InsnArrayEntry&) const = default;
};
struct InsnArray {
    int32_t map_index = -1;  // into Program::maps
    std::vector<InsnArrayEntry> entries;
    bool operator==(const InsnArray&) const = default;
};

// struct bpf_jit_poke_descriptor (only what patching moves).
struct PokeDesc {
    uint32_t insn_idx = 0;
    int32_t map_index = -1;
    uint32_t key = 0;
    bool operator==(const PokeDesc&) const = default;
};

// struct bpf_kfunc_desc, reduced: which kfunc a call's imm (BTF id) names.
struct KfuncDesc {
    int32_t btf_id = 0;
    int16_t offset = 0;     // BTF fd index (0 = vmlinux)
    uint32_t kind = 0;      // patchfuzz::kfunc::Kind (bpf/kfunc/kfunc_table.hpp)
    std::string name;       // e.g. "bpf_iter_num_new"
    bool operator==(const KfuncDesc&) const = default;
};

// A map the program references (what libbpf reads from BTF, or what a .case declares).
struct MapDef {
    std::string name;
    uint32_t type = 0;        // BPF_MAP_TYPE_*
    uint32_t key_size = 0;
    uint32_t value_size = 0;
    uint32_t max_entries = 0;
    uint32_t map_flags = 0;   // BPF_F_* (BPF_F_INNER_MAP etc.)
    bool bypass_spec_v1 = false;  // privileged load: array lookups drop the index mask
    bool unpriv_array = false;    // tail calls fall back to the bounds-checked sequence
    bool operator==(const MapDef&) const = default;
};

struct Program {
    std::string name;
    uint32_t prog_type = 0;             // BPF_PROG_TYPE_*
    // What the tracing-helper inlines (do_misc_fixups rows t-v) read about the attach target:
    // prog->expected_attach_type, and btf_type_vlen() of its BTF func proto (for tp_btf the first
    // param is the hidden `void *__data`). Program-wide, never moved by a patcher.
    TraceAttach attach = TraceAttach::Other;
    uint8_t attach_btf_vlen = 0;
    // Uapi for a program as loaded; set by the ctx_access pass when it rewrites the ctx accesses
    // into a kernel build's struct offsets. Program-wide, never moved by a patcher.
    CtxLayout ctx_layout = CtxLayout::Uapi;
    std::vector<isa::Insn> insns;
    std::vector<InsnAux> aux;           // same length as insns
    std::vector<SubprogInfo> subprogs;  // subprog_cnt + 1 (fake exit last)
    std::vector<LineInfo> linfo;
    std::vector<FuncInfo> finfo;
    std::vector<InsnArray> insn_arrays;
    std::vector<PokeDesc> pokes;
    std::vector<KfuncDesc> kfuncs;
    std::vector<MapDef> maps;

    [[nodiscard]] uint32_t len() const { return static_cast<uint32_t>(insns.size()); }
    [[nodiscard]] uint32_t subprog_cnt() const { return subprogs.empty() ? 0 : static_cast<uint32_t>(subprogs.size() - 1); }
};

// `out` = `in` but for the insns and aux, which `out` keeps: for a patcher that writes those anew.
void copy_all_but_code(const Program& in, Program& out);

// Full equality of everything a patcher must produce (used by oracles and tests).
bool operator==(const Program& a, const Program& b);

// Element-wise equality of two vectors of a type whose equal values have equal bytes (no
// padding, no floats): one memcmp, which the oracles' per-batch comparisons lean on.
template <class T>
bool same_elements(const std::vector<T>& a, const std::vector<T>& b) {
    static_assert(std::has_unique_object_representations_v<T>);
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// A fresh Program around raw insns: aux with orig_idx = i and seen = true, one subprog at 0 plus
// subprogs at every pseudo-call / PSEUDO_FUNC target, and the fake exit. No line info, no maps.
Program make_program(std::vector<isa::Insn> insns);

// Bytes of the context a program of this type reads through r1 (its loads stay inside it):
// struct pt_regs for kprobes, the u64 argument array for tracing, struct xdp_md, struct __sk_buff.
// The generators size ctx loads and execution inputs by it.
uint32_t ctx_size_for(uint32_t prog_type);

}  // namespace patchfuzz
