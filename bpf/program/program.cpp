#include "bpf/program/program.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace patchfuzz {

bool operator==(const Program& a, const Program& b) {
    // isa::same on every insn and == on every aux slot, line info, func info and poke entry, as
    // bytes (same_elements): the oracles compare after every batch, and line info is about as long
    // as the code. SubprogInfo has padding, so it keeps its defaulted ==; so do the rare insn arrays.
    return same_elements(a.insns, b.insns) && same_elements(a.aux, b.aux) && a.name == b.name &&
           a.prog_type == b.prog_type && a.attach == b.attach && a.attach_btf_vlen == b.attach_btf_vlen &&
           a.ctx_layout == b.ctx_layout &&
           a.subprogs == b.subprogs && same_elements(a.linfo, b.linfo) && same_elements(a.finfo, b.finfo) &&
           a.insn_arrays == b.insn_arrays && same_elements(a.pokes, b.pokes) &&
           a.kfuncs == b.kfuncs && a.maps == b.maps;
}

void copy_all_but_code(const Program& in, Program& out) {
    // A field added to Program must be added here too (and to operator== above).
    static_assert(sizeof(Program) == sizeof(std::string) + 8 + 9 * sizeof(std::vector<int>), "copy every field of Program");
    out.name = in.name;
    out.prog_type = in.prog_type;
    out.attach = in.attach;
    out.attach_btf_vlen = in.attach_btf_vlen;
    out.ctx_layout = in.ctx_layout;
    out.subprogs = in.subprogs;
    out.linfo = in.linfo;
    out.finfo = in.finfo;
    out.insn_arrays = in.insn_arrays;
    out.pokes = in.pokes;
    out.kfuncs = in.kfuncs;
    out.maps = in.maps;
}

Program make_program(std::vector<isa::Insn> insns) {
    Program p;
    p.insns = std::move(insns);
    const auto n = static_cast<int64_t>(p.insns.size());
    p.aux.resize(p.insns.size());
    for (uint32_t i = 0; i < p.insns.size(); ++i) {
        p.aux[i].orig_idx = i;
        p.aux[i].seen = true;
    }
    std::set<uint32_t> starts{0};
    for (int64_t i = 0; i < n; ++i) {
        const auto& in = p.insns[static_cast<size_t>(i)];
        if (isa::is_pseudo_call(in) || isa::is_pseudo_func(in)) {
            int64_t t = i + 1 + in.imm;
            if (t >= 0 && t < n) starts.insert(static_cast<uint32_t>(t));
        }
    }
    for (uint32_t s : starts) p.subprogs.push_back(SubprogInfo{.start = s});
    p.subprogs.push_back(SubprogInfo{.start = p.len()});
    return p;
}

uint32_t ctx_size_for(uint32_t prog_type) {
    switch (prog_type) {
        case BPF_PROG_TYPE_KPROBE: return 168;  // struct pt_regs (x86-64)
        case BPF_PROG_TYPE_TRACING:
        case BPF_PROG_TYPE_RAW_TRACEPOINT: return 64;  // u64 args[]
        case BPF_PROG_TYPE_XDP: return 24;  // struct xdp_md
        default: return 192;                // struct __sk_buff
    }
}

}  // namespace patchfuzz
