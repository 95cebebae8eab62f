#include "harness/plugin/pf_convert.hpp"

#include <cstdlib>
#include <cstring>

namespace patchfuzz::plugin {
namespace {

pf_insn_aux aux_to_pf(const InsnAux& a) {
    pf_insn_aux o{};
    o.orig_idx = a.orig_idx;
    o.seen = a.seen;
    o.zext_dst = a.zext_dst;
    o.needs_zext = a.needs_zext;
    o.nospec = a.nospec;
    o.nospec_result = a.nospec_result;
    o.alu_state = a.alu_state;
    o.ptr_type = static_cast<uint8_t>(a.ptr_type);
    o.ctx_field_size = a.ctx_field_size;
    o.alu_limit = a.alu_limit;
    o.map_index = a.map_index;
    o.map_ptr_poisoned = a.map_ptr_poisoned;
    o.map_key_poisoned = a.map_key_poisoned;
    o.map_key_known = a.map_key_known;
    o.loop_fit_for_inline = a.loop_fit_for_inline;
    o.map_key = a.map_key;
    o.loop_callback_subprogno = a.loop_callback_subprogno;
    o.call_with_percpu_alloc_ptr = a.call_with_percpu_alloc_ptr;
    o.arg_prog = a.arg_prog;
    o.indirect_target = a.indirect_target;
    return o;
}

InsnAux aux_from_pf(const pf_insn_aux& o) {
    InsnAux a;
    a.orig_idx = o.orig_idx;
    a.seen = o.seen;
    a.zext_dst = o.zext_dst;
    a.needs_zext = o.needs_zext;
    a.nospec = o.nospec;
    a.nospec_result = o.nospec_result;
    a.alu_state = o.alu_state;
    a.ptr_type = static_cast<PtrType>(o.ptr_type);
    a.ctx_field_size = o.ctx_field_size;
    a.alu_limit = o.alu_limit;
    a.map_index = o.map_index;
    a.map_ptr_poisoned = o.map_ptr_poisoned;
    a.map_key_poisoned = o.map_key_poisoned;
    a.map_key_known = o.map_key_known;
    a.loop_fit_for_inline = o.loop_fit_for_inline;
    a.map_key = o.map_key;
    a.loop_callback_subprogno = o.loop_callback_subprogno;
    a.call_with_percpu_alloc_ptr = o.call_with_percpu_alloc_ptr;
    a.arg_prog = o.arg_prog;
    a.indirect_target = o.indirect_target;
    return a;
}

pf_subprog sub_to_pf(const SubprogInfo& s) {
    pf_subprog o{};
    o.start = s.start;
    o.stack_depth = s.stack_depth;
    o.stack_extra = s.stack_extra;
    o.linfo_idx = s.linfo_idx;
    o.has_tail_call = s.has_tail_call;
    o.is_cb = s.is_cb;
    o.is_async_cb = s.is_async_cb;
    o.is_exception_cb = s.is_exception_cb;
    o.is_hidden = s.is_hidden;
    return o;
}

SubprogInfo sub_from_pf(const pf_subprog& o) {
    return SubprogInfo{.start = o.start,
                       .stack_depth = o.stack_depth,
                       .stack_extra = o.stack_extra,
                       .linfo_idx = o.linfo_idx,
                       .has_tail_call = o.has_tail_call != 0,
                       .is_cb = o.is_cb != 0,
                       .is_async_cb = o.is_async_cb != 0,
                       .is_exception_cb = o.is_exception_cb != 0,
                       .is_hidden = o.is_hidden != 0};
}

template <class T>
T* dup(const std::vector<T>& v) {
    if (v.empty()) return nullptr;
    T* p = static_cast<T*>(std::malloc(sizeof(T) * v.size()));
    std::memcpy(p, v.data(), sizeof(T) * v.size());
    return p;
}

}  // namespace

void to_pf(const Program& p, PfProgramStorage& s) {
    s.insns = p.insns;
    s.aux.clear();
    for (const auto& a : p.aux) s.aux.push_back(aux_to_pf(a));
    s.subprogs.clear();
    for (const auto& x : p.subprogs) s.subprogs.push_back(sub_to_pf(x));
    s.linfo.clear();
    for (const auto& l : p.linfo) s.linfo.push_back({l.insn_off, l.file_name_off, l.line_off, l.line_col});
    s.finfo.clear();
    for (const auto& f : p.finfo) s.finfo.push_back({f.insn_off, f.type_id});
    s.entries.clear();
    for (uint32_t m = 0; m < p.insn_arrays.size(); ++m)
        for (const auto& e : p.insn_arrays[m].entries) s.entries.push_back({m, e.orig_off, e.xlated_off});
    s.pokes.clear();
    for (const auto& k : p.pokes) s.pokes.push_back({k.insn_idx, k.map_index, k.key});
    s.view = pf_program{};
    s.view.struct_size = sizeof(pf_program);
    s.view.len = static_cast<uint32_t>(s.insns.size());
    s.view.insns = s.insns.data();
    s.view.aux = s.aux.data();
    s.view.nr_subprogs = static_cast<uint32_t>(s.subprogs.size());
    s.view.subprogs = s.subprogs.data();
    s.view.nr_linfo = static_cast<uint32_t>(s.linfo.size());
    s.view.linfo = s.linfo.data();
    s.view.nr_finfo = static_cast<uint32_t>(s.finfo.size());
    s.view.finfo = s.finfo.data();
    s.view.nr_insn_arrays = static_cast<uint32_t>(p.insn_arrays.size());
    s.view.nr_insn_array_entries = static_cast<uint32_t>(s.entries.size());
    s.view.insn_array_entries = s.entries.data();
    s.view.nr_pokes = static_cast<uint32_t>(s.pokes.size());
    s.view.pokes = s.pokes.data();
}

Program from_pf(const pf_program& v, const Program& like) {
    Program p;
    p.name = like.name;
    p.prog_type = like.prog_type;
    p.attach = like.attach;
    p.attach_btf_vlen = like.attach_btf_vlen;
    p.ctx_layout = like.ctx_layout;
    p.maps = like.maps;
    p.kfuncs = like.kfuncs;
    p.insns.assign(v.insns, v.insns + v.len);
    for (uint32_t i = 0; i < v.len; ++i) p.aux.push_back(aux_from_pf(v.aux[i]));
    for (uint32_t i = 0; i < v.nr_subprogs; ++i) p.subprogs.push_back(sub_from_pf(v.subprogs[i]));
    for (uint32_t i = 0; i < v.nr_linfo; ++i)
        p.linfo.push_back({v.linfo[i].insn_off, v.linfo[i].file_name_off, v.linfo[i].line_off, v.linfo[i].line_col});
    for (uint32_t i = 0; i < v.nr_finfo; ++i) p.finfo.push_back({v.finfo[i].insn_off, v.finfo[i].type_id});
    p.insn_arrays.resize(v.nr_insn_arrays);
    for (uint32_t m = 0; m < v.nr_insn_arrays && m < like.insn_arrays.size(); ++m)
        p.insn_arrays[m].map_index = like.insn_arrays[m].map_index;
    for (uint32_t i = 0; i < v.nr_insn_array_entries; ++i) {
        const auto& e = v.insn_array_entries[i];
        if (e.array < p.insn_arrays.size()) p.insn_arrays[e.array].entries.push_back({e.orig_off, e.xlated_off});
    }
    for (uint32_t i = 0; i < v.nr_pokes; ++i)
        p.pokes.push_back({v.pokes[i].insn_idx, v.pokes[i].map_index, v.pokes[i].key});
    return p;
}

void from_pf_into(const pf_program& v, Program& p) {
    p.insns.assign(v.insns, v.insns + v.len);
    p.aux.resize(v.len);
    for (uint32_t i = 0; i < v.len; ++i) p.aux[i] = aux_from_pf(v.aux[i]);
    p.subprogs.clear();
    for (uint32_t i = 0; i < v.nr_subprogs; ++i) p.subprogs.push_back(sub_from_pf(v.subprogs[i]));
    p.linfo.clear();
    for (uint32_t i = 0; i < v.nr_linfo; ++i)
        p.linfo.push_back({v.linfo[i].insn_off, v.linfo[i].file_name_off, v.linfo[i].line_off, v.linfo[i].line_col});
    p.finfo.clear();
    for (uint32_t i = 0; i < v.nr_finfo; ++i) p.finfo.push_back({v.finfo[i].insn_off, v.finfo[i].type_id});
    const size_t arrays = p.insn_arrays.size();
    p.insn_arrays.resize(v.nr_insn_arrays);
    for (size_t m = arrays; m < p.insn_arrays.size(); ++m) p.insn_arrays[m].map_index = -1;
    for (auto& a : p.insn_arrays) a.entries.clear();
    for (uint32_t i = 0; i < v.nr_insn_array_entries; ++i) {
        const auto& e = v.insn_array_entries[i];
        if (e.array < p.insn_arrays.size()) p.insn_arrays[e.array].entries.push_back({e.orig_off, e.xlated_off});
    }
    p.pokes.clear();
    for (uint32_t i = 0; i < v.nr_pokes; ++i) p.pokes.push_back({v.pokes[i].insn_idx, v.pokes[i].map_index, v.pokes[i].key});
}

void to_pf(const patch::PatchBatch& b, PfBatchStorage& s) {
    s.patches.clear();
    for (const auto& p : b.patches)
        s.patches.push_back(pf_patch{static_cast<uint32_t>(p.kind), p.pos, p.count,
                                     static_cast<uint32_t>(p.insns.size()), p.insns.data()});
}

patch::PatchBatch from_pf(const pf_patch* patches, uint32_t n) {
    patch::PatchBatch b;
    for (uint32_t i = 0; i < n; ++i) {
        patch::Patch p;
        p.kind = static_cast<patch::PatchKind>(patches[i].kind);
        p.pos = patches[i].pos;
        p.count = patches[i].count;
        p.insns.assign(patches[i].insns, patches[i].insns + patches[i].nr_insns);
        b.patches.push_back(std::move(p));
    }
    return b;
}

void to_pf_malloc(const Program& p, pf_program& out) {
    PfProgramStorage s;
    to_pf(p, s);
    const uint32_t size = out.struct_size;
    out = s.view;
    out.struct_size = size;
    out.insns = dup(s.insns);
    out.aux = dup(s.aux);
    out.subprogs = dup(s.subprogs);
    out.linfo = dup(s.linfo);
    out.finfo = dup(s.finfo);
    out.insn_array_entries = dup(s.entries);
    out.pokes = dup(s.pokes);
}

void free_pf_malloc(pf_program& out) {
    std::free(out.insns);
    std::free(out.aux);
    std::free(out.subprogs);
    std::free(out.linfo);
    std::free(out.finfo);
    std::free(out.insn_array_entries);
    std::free(out.pokes);
    const uint32_t size = out.struct_size;
    out = pf_program{};
    out.struct_size = size;
}

}  // namespace patchfuzz::plugin
