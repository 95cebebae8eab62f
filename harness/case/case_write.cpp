// The `.case` writer: write_case() emits every section the Case needs (side tables only where
// they differ from what make_program() gives, options the reader's defaults omit), and
// same_case() compares everything the format stores.
#include <cctype>
#include <cstdio>
#include <sstream>
#include <type_traits>

#include "bpf/asm/disassemble.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/program/aux_fields.hpp"
#include "bpf/program/record_fields.hpp"
#include "bpf/util/atomic_file.hpp"
#include "bpf/util/hex.hpp"
#include "harness/case/case_file.hpp"
#include "harness/case/case_vocab.hpp"

namespace patchfuzz::harness {

using namespace case_format;

namespace {

bool plain_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+' || c == ':' || c == '/' ||
              c == '@' || c == '$'))
            return false;
    return true;
}

// A name as one token: bare when it is plain, else "quoted" with \" \\ \xHH escapes.
std::string quote(std::string_view s) {
    if (plain_token(s)) return std::string(s);
    std::string o = "\"";
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (u < 0x20 || u >= 0x7f) {
            char b[5];
            std::snprintf(b, sizeof b, "\\x%02x", u);
            o += b;
        } else {
            o += c;
        }
    }
    return o + "\"";
}

std::string join(const std::vector<std::string>& v, char sep) {
    std::string o;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) o += sep;
        o += v[i];
    }
    return o;
}

std::string aux_line(const InsnAux& a, uint32_t i) {
    const InsnAux d{.orig_idx = i, .seen = true};
    std::string o;
    auto add = [&](const std::string& s) { o += " " + s; };
    for_each_aux_field([&](const char* key, auto member) {
        using T = std::remove_cvref_t<decltype(a.*member)>;
        if (a.*member == d.*member) return;
        if constexpr (std::is_same_v<T, bool>) {
            add(std::string(key) + "=" + (a.*member ? "1" : "0"));
        } else if constexpr (std::is_same_v<T, PtrType>) {
            auto n = name_in(kPtrTypes, a.*member);
            add(std::string(key) + "=" + (n.empty() ? std::string("none") : std::string(n)));
        } else {
            add(std::string(key) + "=" + std::to_string(a.*member));
        }
    });
    return o.empty() ? o : std::to_string(i) + o;
}

bool inputs_equal(const interp::ExecInput& a, const interp::ExecInput& b) {
    if (a.ctx != b.ctx || a.packet != b.packet || a.regs != b.regs || a.cpu != b.cpu || a.prandom_seed != b.prandom_seed ||
        a.step_budget != b.step_budget || a.maps.size() != b.maps.size())
        return false;
    for (size_t i = 0; i < a.maps.size(); ++i) {
        if (a.maps[i].size() != b.maps[i].size()) return false;
        for (size_t j = 0; j < a.maps[i].size(); ++j)
            if (a.maps[i][j].key != b.maps[i][j].key || a.maps[i][j].value != b.maps[i][j].value) return false;
    }
    return true;
}

// A side-table section, one record per line as its field list says (bpf/program/record_fields.hpp).
template <class R>
void write_records(std::ostringstream& o, const char* section, const std::vector<R>& records) {
    o << "-- " << section << '\n';
    for (const R& r : records) {
        bool first = true;
        auto field = [&]() -> std::ostringstream& {
            if (!first) o << ' ';
            first = false;
            return o;
        };
        RecordFields<R>::visit([&](const char* key, auto member, FieldForm form) {
            const auto v = r.*member;
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, bool>) {
                if (v) field() << key;
            } else if (form == FieldForm::Lead) {
                field() << v;
            } else if (form == FieldForm::LineCol) {
                field() << key << '=' << (v >> kLineColColumnBits) << ':' << (v & ((1u << kLineColColumnBits) - 1));
            } else if (v != 0 || RecordFields<R>::write_zeros) {
                field() << key << '=' << v;
            }
        });
        o << '\n';
    }
}

void write_asm(std::ostringstream& o, const std::vector<isa::Insn>& insns, const char* indent) {
    const std::string text = assembly::disassemble(insns);
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        o << indent << std::string_view(text).substr(start, nl - start) << '\n';
        start = nl + 1;
    }
}

}  // namespace

std::string write_case(const Case& c) {
    std::ostringstream o;
    for (const auto& cm : c.comments) {
        std::string t = cm;
        for (char& ch : t)
            if (ch == '\n' || ch == '\r') ch = ' ';
        o << "# " << t << '\n';
    }
    const Program& p = c.program;
    o << "-- program";
    if (!p.name.empty()) o << " name=" << quote(p.name);
    if (p.prog_type) o << " type=" << loader::prog_type_name(p.prog_type);
    if (p.attach != TraceAttach::Other) o << " attach=" << name_in(kTraceAttach, p.attach);
    if (p.attach_btf_vlen) o << " attach-vlen=" << unsigned(p.attach_btf_vlen);
    o << '\n';
    write_asm(o, p.insns, "");

    if (!p.maps.empty()) {
        o << "-- maps\n";
        for (size_t i = 0; i < p.maps.size(); ++i) {
            const auto& m = p.maps[i];
            o << i << ' ' << quote(m.name) << " type=" << loader::map_type_name(m.type) << " key=" << m.key_size
              << " value=" << m.value_size << " max_entries=" << m.max_entries;
            if (m.map_flags) o << " flags=0x" << std::hex << m.map_flags << std::dec;
            if (m.bypass_spec_v1) o << " bypass_spec_v1";
            if (m.unpriv_array) o << " unpriv_array";
            o << '\n';
        }
    }
    if (!p.kfuncs.empty()) {
        o << "-- kfuncs\n";
        for (const auto& k : p.kfuncs) {
            o << k.btf_id << ' ' << quote(k.name);
            auto kn = name_in(kKfuncKinds, static_cast<kfunc::Kind>(k.kind));
            if (!kn.empty()) o << " kind=" << kn;
            else o << " kind=" << k.kind;
            if (k.offset) o << " off=" << k.offset;
            o << '\n';
        }
    }
    std::string aux_text;
    for (uint32_t i = 0; i < p.aux.size(); ++i) {
        auto l = aux_line(p.aux[i], i);
        if (!l.empty()) aux_text += l + "\n";
    }
    if (!aux_text.empty()) o << "-- aux\n" << aux_text;
    if (p.subprogs != make_program(p.insns).subprogs) write_records(o, "subprogs", p.subprogs);
    if (!p.linfo.empty()) write_records(o, "linfo", p.linfo);
    if (!p.finfo.empty()) write_records(o, "finfo", p.finfo);
    if (!p.insn_arrays.empty()) {
        o << "-- insn-arrays\n";
        for (const auto& a : p.insn_arrays) {
            o << "map=" << a.map_index;
            for (const auto& e : a.entries) {
                o << ' ' << e.orig_off << ':';
                if (e.xlated_off == isa::kInsnDeleted) o << "del";
                else o << e.xlated_off;
            }
            o << '\n';
        }
    }
    if (!p.pokes.empty()) write_records(o, "pokes", p.pokes);
    if (!c.patches.empty()) {
        o << "-- patches\n";
        for (const auto& b : c.patches) {
            o << "batch\n";
            for (const auto& pt : b.patches) {
                // A leading filler run of 64 slots or more is written as fill=N.
                size_t fill = 0;
                while (fill < pt.insns.size() && isa::same(pt.insns[fill], patch::filler_insn(static_cast<uint32_t>(fill)))) ++fill;
                if (fill < 64) fill = 0;
                const std::string fill_attr = fill ? " fill=" + std::to_string(fill) : "";
                switch (pt.kind) {
                    case patch::PatchKind::Replace: o << "replace " << pt.pos << fill_attr << '\n'; break;
                    case patch::PatchKind::Remove: o << "remove " << pt.pos << ' ' << pt.count << '\n'; break;
                    case patch::PatchKind::InsertBefore: o << "insert-before " << pt.pos << fill_attr << '\n'; break;
                }
                if (pt.kind != patch::PatchKind::Remove)
                    write_asm(o, std::vector<isa::Insn>(pt.insns.begin() + static_cast<std::ptrdiff_t>(fill), pt.insns.end()), "  ");
            }
        }
    }
    o << "-- options\n";
    o << "arch=" << c.arch << " iter-inline=" << name_in(kIterInline, c.options.iter_inline)
      << " kernel=" << name_in(kKernels, c.options.kernel) << " privileged=" << (c.options.privileged ? 1 : 0)
      << " rnd-hi32=" << (c.options.test_rnd_hi32 ? 1 : 0);
    if (c.privilege != passes::Privilege::Root) o << " privilege=" << passes::to_string(c.privilege);
    if (c.options.rnd_hi32_seed) o << " rnd-hi32-seed=" << c.options.rnd_hi32_seed;
    // the kernel's inlines and nop removal are the default: only a fixed variant is written
    if (c.options.loop_inline != passes::InlineFix::Kernel) o << " loop-inline=" << name_in(kInlineFix, c.options.loop_inline);
    if (c.options.func_arg_inline != passes::InlineFix::Kernel)
        o << " func-arg-inline=" << name_in(kInlineFix, c.options.func_arg_inline);
    if (c.options.nop_removal != passes::InlineFix::Kernel) o << " nop-removal=" << name_in(kInlineFix, c.options.nop_removal);
    o << '\n';
    if (!c.options.only.empty()) o << "passes=" << join(c.options.only, ',') << '\n';
    if (!c.patchers.empty()) {
        std::vector<std::string> names;
        for (patch::PatcherId id : c.patchers) names.emplace_back(patch::name_of(id));
        o << "patchers=" << join(names, ',') << '\n';
    }
    if (c.seed) o << "seed=" << c.seed << '\n';
    for (const auto& in : c.inputs) {
        o << "-- input\n";
        if (!in.ctx.empty()) o << "ctx " << hex_bytes(in.ctx) << '\n';
        if (!in.packet.empty()) o << "packet " << hex_bytes(in.packet) << '\n';
        for (size_t r = 0; r < in.regs.size(); ++r)
            if (in.regs[r]) o << 'r' << r << " 0x" << std::hex << in.regs[r] << std::dec << '\n';
        if (in.cpu) o << "cpu " << in.cpu << '\n';
        if (in.prandom_seed) o << "prandom " << in.prandom_seed << '\n';
        if (in.step_budget != kDefaultStepBudget) o << "budget " << in.step_budget << '\n';
        if (!in.maps.empty()) {
            o << "maps " << in.maps.size() << '\n';
            for (size_t m = 0; m < in.maps.size(); ++m)
                for (const auto& e : in.maps[m]) o << "map " << m << " key=" << hex_bytes(e.key) << " value=" << hex_bytes(e.value) << '\n';
        }
    }
    o << "-- expect\n" << c.expect << '\n';
    return o.str();
}

Status write_case_file_atomic(const Case& c, const std::string& path) {
    return write_file_atomic(path, write_case(c));
}

bool same_case(const Case& a, const Case& b) {
    if (a.comments != b.comments || !(a.program == b.program) || a.arch != b.arch || a.patchers != b.patchers || a.expect != b.expect ||
        a.seed != b.seed)
        return false;
    const auto& x = a.options;
    const auto& y = b.options;
    if (a.privilege != b.privilege) return false;
    if (x.iter_inline != y.iter_inline || x.kernel != y.kernel || x.privileged != y.privileged || x.test_rnd_hi32 != y.test_rnd_hi32 ||
        x.rnd_hi32_seed != y.rnd_hi32_seed || x.only != y.only)
        return false;
    if (a.patches.size() != b.patches.size() || a.inputs.size() != b.inputs.size()) return false;
    for (size_t i = 0; i < a.patches.size(); ++i) {
        const auto& pa = a.patches[i].patches;
        const auto& pb = b.patches[i].patches;
        if (pa.size() != pb.size()) return false;
        for (size_t j = 0; j < pa.size(); ++j) {
            if (pa[j].kind != pb[j].kind || pa[j].pos != pb[j].pos || pa[j].count != pb[j].count || pa[j].insns.size() != pb[j].insns.size())
                return false;
            for (size_t k = 0; k < pa[j].insns.size(); ++k)
                if (!isa::same(pa[j].insns[k], pb[j].insns[k])) return false;
        }
    }
    for (size_t i = 0; i < a.inputs.size(); ++i)
        if (!inputs_equal(a.inputs[i], b.inputs[i])) return false;
    return true;
}

}  // namespace patchfuzz::harness
