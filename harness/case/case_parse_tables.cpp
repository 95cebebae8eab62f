// The `.case` reader's side-table sections (maps, kfuncs, aux, subprogs, linfo, finfo,
// insn-arrays, pokes) and its explicit patch batches: each fills its part of the Case's Program,
// with located errors for values out of the program's range.
#include <string>
#include <type_traits>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/program/aux_fields.hpp"
#include "bpf/program/record_fields.hpp"
#include "harness/case/case_parser.hpp"
#include "harness/case/case_vocab.hpp"

namespace patchfuzz::harness::case_format {

Status Parser::maps(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        if (toks->size() < 2) return err(l.no, 1, "expected 'INDEX NAME type=... key=... value=... max_entries=...'");
        auto idx = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "map index");
        if (!idx) return idx.error();
        if (*idx != c.program.maps.size())
            return err(l.no, 1, "map index " + std::to_string(*idx) + " out of order (expected " + std::to_string(c.program.maps.size()) + ")");
        MapDef m;
        m.name = (*toks)[1].text;
        for (size_t i = 2; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [k, v] = kv(t);
            Expected<uint32_t> n = 0u;
            if (k == "type" && v) {
                auto mt = loader::map_type_by_name(*v);
                if (!mt) return err(l.no, t.col + 5, "unknown map type '" + std::string(*v) + "'");
                m.type = *mt;
            } else if (k == "key" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "key size"))) return n.error();
                m.key_size = *n;
            } else if (k == "value" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "value size"))) return n.error();
                m.value_size = *n;
            } else if (k == "max_entries" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "max_entries"))) return n.error();
                m.max_entries = *n;
            } else if (k == "flags" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "flags"))) return n.error();
                m.map_flags = *n;
            } else if (k == "bypass_spec_v1" && !v) {
                m.bypass_spec_v1 = true;
            } else if (k == "unpriv_array" && !v) {
                m.unpriv_array = true;
            } else {
                return err(l.no, t.col, "unknown map attribute '" + t.text + "'");
            }
        }
        c.program.maps.push_back(std::move(m));
    }
    return {};
}

Status Parser::kfuncs(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        if (toks->size() < 2) return err(l.no, 1, "expected 'BTF_ID NAME [kind=...] [off=N]'");
        auto id = num<int32_t>(l, (*toks)[0], (*toks)[0].text, "btf id");
        if (!id) return id.error();
        KfuncDesc k{.btf_id = *id, .name = (*toks)[1].text};
        if (auto info = kfunc::by_name(k.name)) k.kind = static_cast<uint32_t>(info->kind);
        for (size_t i = 2; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [key, v] = kv(t);
            if (key == "kind" && v) {
                if (auto kk = value_in(kKfuncKinds, *v)) {
                    k.kind = static_cast<uint32_t>(*kk);
                } else {
                    auto n = num<uint32_t>(l, t, *v, "kfunc kind");
                    if (!n) return err(l.no, t.col + 5, "unknown kfunc kind '" + std::string(*v) + "'");
                    k.kind = *n;
                }
            } else if (key == "off" && v) {
                auto n = num<int16_t>(l, t, *v, "kfunc offset");
                if (!n) return n.error();
                k.offset = *n;
            } else {
                return err(l.no, t.col, "unknown kfunc attribute '" + t.text + "'");
            }
        }
        c.program.kfuncs.push_back(std::move(k));
    }
    return {};
}

Status Parser::aux(const Section& s, Case& c) const {
    std::vector<size_t> set_at(c.program.aux.size(), 0);
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto idx = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "insn index");
        if (!idx) return idx.error();
        if (*idx >= c.program.aux.size())
            return err(l.no, 1, "aux for insn " + std::to_string(*idx) + " but the program has " + std::to_string(c.program.aux.size()) + " insns");
        if (set_at[*idx]) return err(l.no, 1, "aux for insn " + std::to_string(*idx) + " already given at line " + std::to_string(set_at[*idx]));
        set_at[*idx] = l.no;
        InsnAux& a = c.program.aux[*idx];
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            const auto kvp = kv(t);  // (not a structured binding: the lambdas below capture it)
            const std::string_view k = kvp.first;
            const std::optional<std::string_view>& v = kvp.second;
            if (!v) return err(l.no, t.col, "expected key=value, got '" + t.text + "'");
            Status st;
            bool known = false;
            for_each_aux_field([&](const char* key, auto member) {
                using T = std::remove_cvref_t<decltype(a.*member)>;
                if (known || k != key) return;
                known = true;
                if constexpr (std::is_same_v<T, bool>) {
                    if (*v == "0") a.*member = false;
                    else if (*v == "1") a.*member = true;
                    else st = err(l.no, t.col + k.size() + 1, "expected 0 or 1 for " + std::string(k));
                } else if constexpr (std::is_same_v<T, PtrType>) {
                    auto p = value_in(kPtrTypes, *v);
                    if (!p) st = err(l.no, t.col + k.size() + 1, "unknown pointer type '" + std::string(*v) + "'");
                    else a.*member = *p;
                } else {
                    auto n = num<T>(l, t, *v, key);
                    if (!n) st = n.error();
                    else a.*member = *n;
                }
            });
            if (!known) st = err(l.no, t.col, "unknown aux field '" + std::string(k) + "'");
            if (!st) return st;
        }
    }
    return {};
}

// One side-table record per line, read as its field list says (bpf/program/record_fields.hpp):
// the Lead field first when the record has one, then key=N, key=LINE:COL and bare flag words.
template <class R>
Status Parser::records(const Section& s, std::vector<R>& out) const {
    using Fields = RecordFields<R>;
    std::string known_keys;  // for the error on an unknown attribute
    Fields::visit([&](const char* key, auto, FieldForm form) {
        if (form == FieldForm::Lead) return;
        known_keys += (known_keys.empty() ? "" : ", ") + std::string(key) + (form == FieldForm::Flag ? "" : "=");
    });
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        R r{};
        Status st;
        size_t first = 0;
        if constexpr (Fields::lead != nullptr) {
            const Tok& t = (*toks)[0];
            Fields::visit([&](const char*, auto member, FieldForm form) {
                using T = std::remove_cvref_t<decltype(r.*member)>;
                if constexpr (!std::is_same_v<T, bool>)
                    if (form == FieldForm::Lead) {
                        auto n = num<T>(l, t, t.text, Fields::lead);
                        if (!n) st = n.error();
                        else r.*member = *n;
                    }
            });
            if (!st) return st;
            first = 1;
        }
        for (size_t i = first; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            const auto kvp = kv(t);  // (not a structured binding: the lambda below captures it)
            const std::string_view k = kvp.first;
            const std::optional<std::string_view>& v = kvp.second;
            bool known = false;
            Fields::visit([&](const char* key, auto member, FieldForm form) {
                using T = std::remove_cvref_t<decltype(r.*member)>;
                if (known || form == FieldForm::Lead || k != key || (form == FieldForm::Flag) != !v) return;
                known = true;
                if constexpr (std::is_same_v<T, bool>) {
                    r.*member = true;
                } else if (form == FieldForm::LineCol) {
                    auto colon = v->find(':');
                    if (colon == std::string_view::npos) {
                        st = err(l.no, t.col, "expected " + std::string(key) + "=LINE:COL");
                        return;
                    }
                    auto ln = num<uint32_t>(l, t, v->substr(0, colon), "line");
                    auto cl = ln ? num<uint32_t>(l, t, v->substr(colon + 1), "column") : Expected<uint32_t>(0u);
                    if (!ln || !cl) {
                        st = !ln ? ln.error() : cl.error();
                    } else if (*ln >= kLineColMaxLine || *cl >= (1u << kLineColColumnBits)) {
                        st = err(l.no, t.col, "line " + std::string(*v) + " out of range (line < 2^22, col < 1024)");
                    } else {
                        r.*member = static_cast<T>(*ln << kLineColColumnBits | *cl);
                    }
                } else {
                    auto n = num<T>(l, t, *v, key);
                    if (!n) st = n.error();
                    else r.*member = *n;
                }
            });
            if (!st) return st;
            if (!known) return err(l.no, t.col, "unknown " + std::string(Fields::noun) + " attribute '" + t.text + "' (" + known_keys + ")");
        }
        out.push_back(r);
    }
    return {};
}

Status Parser::subprogs(const Section& s, Case& c) const {
    c.program.subprogs.clear();
    return records(s, c.program.subprogs);
}

Status Parser::linfo(const Section& s, Case& c) const { return records(s, c.program.linfo); }

Status Parser::finfo(const Section& s, Case& c) const { return records(s, c.program.finfo); }

Status Parser::insn_arrays(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto [k, v] = kv((*toks)[0]);
        if (k != "map" || !v) return err(l.no, (*toks)[0].col, "expected 'map=N ORIG:XLATED ...'");
        auto mi = num<int32_t>(l, (*toks)[0], *v, "map");
        if (!mi) return mi.error();
        InsnArray a{.map_index = *mi};
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            std::string_view e = t.text;
            auto colon = e.find(':');
            if (colon == std::string_view::npos) return err(l.no, t.col, "expected ORIG:XLATED or ORIG:del, got '" + t.text + "'");
            auto o = num<uint32_t>(l, t, e.substr(0, colon), "orig offset");
            if (!o) return o.error();
            InsnArrayEntry en{.orig_off = *o};
            if (e.substr(colon + 1) == "del") {
                en.xlated_off = isa::kInsnDeleted;
            } else {
                auto x = num<uint32_t>(l, t, e.substr(colon + 1), "xlated offset");
                if (!x) return x.error();
                en.xlated_off = *x;
            }
            a.entries.push_back(en);
        }
        c.program.insn_arrays.push_back(std::move(a));
    }
    return {};
}

Status Parser::pokes(const Section& s, Case& c) const { return records(s, c.program.pokes); }

Status Parser::patches(const Section& s, Case& c) const {
    const auto& b = s.body;
    for (size_t i = 0; i < b.size(); ++i) {
        const Line& l = b[i];
        if (blank_or_comment(l.text)) continue;
        if (l.text[0] == ' ' || l.text[0] == '\t') return err(l.no, 1, "assembly line outside a 'replace' or 'insert-before'");
        auto toks = tokens(l);
        if (!toks) return toks.error();
        const std::string& kw = (*toks)[0].text;
        if (kw == "batch") {
            if (toks->size() > 1) return err(l.no, (*toks)[1].col, "'batch' takes no arguments");
            c.patches.emplace_back();
            continue;
        }
        if (c.patches.empty()) return err(l.no, 1, "expected 'batch' before the first patch");
        patch::Patch p;
        // `replace POS fill=N` / `insert-before POS fill=N`: the body starts with N filler slots.
        const bool filled = kw != "remove" && toks->size() == 3 && (*toks)[2].text.rfind("fill=", 0) == 0;
        const size_t want = kw == "remove" || filled ? 3 : 2;
        if (kw == "replace") p.kind = patch::PatchKind::Replace;
        else if (kw == "remove") p.kind = patch::PatchKind::Remove;
        else if (kw == "insert-before") p.kind = patch::PatchKind::InsertBefore;
        else return err(l.no, 1, "unknown patch '" + kw + "' (batch, replace POS, remove POS COUNT, insert-before POS)");
        if (toks->size() != want)
            return err(l.no, 1, kw == "remove" ? "expected 'remove POS COUNT'" : "expected '" + kw + " POS [fill=N]'");
        auto pos = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "position");
        if (!pos) return pos.error();
        p.pos = *pos;
        if (p.kind == patch::PatchKind::Remove) {
            auto cnt = num<uint32_t>(l, (*toks)[2], (*toks)[2].text, "count");
            if (!cnt) return cnt.error();
            p.count = *cnt;
        } else {
            std::vector<Line> body;
            while (i + 1 < b.size() && (b[i + 1].text.empty() || b[i + 1].text[0] == ' ' || b[i + 1].text[0] == '\t')) body.push_back(b[++i]);
            auto insns = assemble_lines(body);
            if (!insns) return insns.error();
            if (filled) {
                const Tok& f = (*toks)[2];
                auto n = num<uint32_t>(l, f, std::string_view(f.text).substr(5), "fill");
                if (!n) return n.error();
                if (*n > kMaxFill) return err(l.no, f.col, "fill=" + std::to_string(*n) + " is more than " + std::to_string(kMaxFill) + " slots");
                p.insns.reserve(*n + insns->size());
                for (uint32_t j = 0; j < *n; ++j) p.insns.push_back(patch::filler_insn(j));
            }
            p.insns.insert(p.insns.end(), insns->begin(), insns->end());
        }
        c.patches.back().patches.push_back(std::move(p));
    }
    return {};
}

}  // namespace patchfuzz::harness::case_format
