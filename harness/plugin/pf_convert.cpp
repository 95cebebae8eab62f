#include "harness/plugin/pf_convert.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace patchfuzz::plugin {
namespace {

// Each record's fields paired with the C ABI struct's, listed once for both directions: f(ours,
// theirs). A test holds each list to the record's field count (kAuxFieldCount, RecordFields).
template <class A, class P, class F>
    requires std::is_same_v<std::remove_const_t<A>, InsnAux>
void pair_fields(A& a, P& o, F&& f) {
    f(a.orig_idx, o.orig_idx);
    f(a.seen, o.seen);
    f(a.zext_dst, o.zext_dst);
    f(a.needs_zext, o.needs_zext);
    f(a.nospec, o.nospec);
    f(a.nospec_result, o.nospec_result);
    f(a.alu_state, o.alu_state);
    f(a.ptr_type, o.ptr_type);
    f(a.ctx_field_size, o.ctx_field_size);
    f(a.alu_limit, o.alu_limit);
    f(a.map_index, o.map_index);
    f(a.map_ptr_poisoned, o.map_ptr_poisoned);
    f(a.map_key_poisoned, o.map_key_poisoned);
    f(a.map_key_known, o.map_key_known);
    f(a.loop_fit_for_inline, o.loop_fit_for_inline);
    f(a.map_key, o.map_key);
    f(a.loop_callback_subprogno, o.loop_callback_subprogno);
    f(a.call_with_percpu_alloc_ptr, o.call_with_percpu_alloc_ptr);
    f(a.arg_prog, o.arg_prog);
    f(a.indirect_target, o.indirect_target);
}

template <class A, class P, class F>
    requires std::is_same_v<std::remove_const_t<A>, SubprogInfo>
void pair_fields(A& s, P& o, F&& f) {
    f(s.start, o.start);
    f(s.stack_depth, o.stack_depth);
    f(s.stack_extra, o.stack_extra);
    f(s.linfo_idx, o.linfo_idx);
    f(s.has_tail_call, o.has_tail_call);
    f(s.is_cb, o.is_cb);
    f(s.is_async_cb, o.is_async_cb);
    f(s.is_exception_cb, o.is_exception_cb);
    f(s.is_hidden, o.is_hidden);
}

template <class A, class P, class F>
    requires std::is_same_v<std::remove_const_t<A>, LineInfo>
void pair_fields(A& l, P& o, F&& f) {
    f(l.insn_off, o.insn_off);
    f(l.file_name_off, o.file_name_off);
    f(l.line_off, o.line_off);
    f(l.line_col, o.line_col);
}

template <class A, class P, class F>
    requires std::is_same_v<std::remove_const_t<A>, FuncInfo>
void pair_fields(A& fi, P& o, F&& f) {
    f(fi.insn_off, o.insn_off);
    f(fi.type_id, o.type_id);
}

template <class A, class P, class F>
    requires std::is_same_v<std::remove_const_t<A>, PokeDesc>
void pair_fields(A& k, P& o, F&& f) {
    f(k.insn_idx, o.insn_idx);
    f(k.map_index, o.map_index);
    f(k.key, o.key);
}

// Our record as the ABI's, and back: integers, enums (PtrType) and bools (0/1 bytes) convert.
template <class Pf, class R>
Pf to_c(const R& r) {
    Pf o{};
    pair_fields(r, o, [](const auto& ours, auto& theirs) { theirs = static_cast<std::remove_cvref_t<decltype(theirs)>>(ours); });
    return o;
}

template <class R, class Pf>
R from_c(const Pf& o) {
    R r{};
    pair_fields(r, o, [](auto& ours, const auto& theirs) { ours = static_cast<std::remove_cvref_t<decltype(ours)>>(theirs); });
    return r;
}

// Appends the ABI's records to ours.
template <class R, class Pf>
void append_from_c(std::vector<R>& out, const Pf* in, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) out.push_back(from_c<R>(in[i]));
}

template <class Pf, class R>
void assign_to_c(std::vector<Pf>& out, const std::vector<R>& in) {
    out.clear();
    for (const R& r : in) out.push_back(to_c<Pf>(r));
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
    assign_to_c(s.aux, p.aux);
    assign_to_c(s.subprogs, p.subprogs);
    assign_to_c(s.linfo, p.linfo);
    assign_to_c(s.finfo, p.finfo);
    s.entries.clear();
    for (uint32_t m = 0; m < p.insn_arrays.size(); ++m)
        for (const auto& e : p.insn_arrays[m].entries) s.entries.push_back({m, e.orig_off, e.xlated_off});
    assign_to_c(s.pokes, p.pokes);
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
    append_from_c(p.aux, v.aux, v.len);
    append_from_c(p.subprogs, v.subprogs, v.nr_subprogs);
    append_from_c(p.linfo, v.linfo, v.nr_linfo);
    append_from_c(p.finfo, v.finfo, v.nr_finfo);
    p.insn_arrays.resize(v.nr_insn_arrays);
    for (uint32_t m = 0; m < v.nr_insn_arrays && m < like.insn_arrays.size(); ++m)
        p.insn_arrays[m].map_index = like.insn_arrays[m].map_index;
    for (uint32_t i = 0; i < v.nr_insn_array_entries; ++i) {
        const auto& e = v.insn_array_entries[i];
        if (e.array < p.insn_arrays.size()) p.insn_arrays[e.array].entries.push_back({e.orig_off, e.xlated_off});
    }
    append_from_c(p.pokes, v.pokes, v.nr_pokes);
    return p;
}

void from_pf_into(const pf_program& v, Program& p) {
    p.insns.assign(v.insns, v.insns + v.len);
    p.aux.resize(v.len);
    for (uint32_t i = 0; i < v.len; ++i) p.aux[i] = from_c<InsnAux>(v.aux[i]);
    p.subprogs.clear();
    append_from_c(p.subprogs, v.subprogs, v.nr_subprogs);
    p.linfo.clear();
    append_from_c(p.linfo, v.linfo, v.nr_linfo);
    p.finfo.clear();
    append_from_c(p.finfo, v.finfo, v.nr_finfo);
    const size_t arrays = p.insn_arrays.size();
    p.insn_arrays.resize(v.nr_insn_arrays);
    for (size_t m = arrays; m < p.insn_arrays.size(); ++m) p.insn_arrays[m].map_index = -1;
    for (auto& a : p.insn_arrays) a.entries.clear();
    for (uint32_t i = 0; i < v.nr_insn_array_entries; ++i) {
        const auto& e = v.insn_array_entries[i];
        if (e.array < p.insn_arrays.size()) p.insn_arrays[e.array].entries.push_back({e.orig_off, e.xlated_off});
    }
    p.pokes.clear();
    append_from_c(p.pokes, v.pokes, v.nr_pokes);
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
