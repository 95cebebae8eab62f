#include "oracles/structural.hpp"

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "bpf/program/aux_fields.hpp"
#include "bpf/program/record_fields.hpp"

namespace patchfuzz::oracles {
namespace {

std::string hex_insn(const isa::Insn& i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "code=0x%02x dst=r%u src=r%u off=%d imm=%d", i.code, i.dst_reg, i.src_reg, i.off,
                  i.imm);
    return buf;
}

// Every field, by its .case name (bpf/program/aux_fields.hpp), as a number.
std::string describe_aux(const InsnAux& a) {
    std::string o;
    for_each_aux_field([&](const char* name, auto member) {
        o += (o.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(static_cast<int64_t>(a.*member));
    });
    return o;
}

// Compares two vectors of comparable records; returns the first differing index or -1.
template <class T, class Eq>
int64_t first_diff(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i)
        if (!eq(a[i], b[i])) return static_cast<int64_t>(i);
    return a.size() == b.size() ? -1 : static_cast<int64_t>(n);
}

struct Side {
    const PatcherRun& e;
    const PatcherRun& a;
    std::string both(const std::string& what, const std::string& ev, const std::string& av) const {
        return what + ": " + e.name + " has " + ev + ", " + a.name + " has " + av;
    }
};

template <class T>
std::string at_or_missing(const std::vector<T>& v, int64_t i, std::string (*show)(const T&)) {
    return static_cast<size_t>(i) < v.size() ? show(v[static_cast<size_t>(i)]) : std::string("nothing (") +
                                                                                     std::to_string(v.size()) +
                                                                                     " entries)";
}

// Every field of a side-table record, by its .case name (bpf/program/record_fields.hpp).
template <class R>
std::string show_record(const R& r) {
    std::string o;
    RecordFields<R>::visit([&](const char* name, auto member, FieldForm form) {
        const auto v = r.*member;
        o += (o.empty() ? "" : " ") + std::string(name) + "=";
        if (form == FieldForm::LineCol)
            o += std::to_string(v >> kLineColColumnBits) + ":" + std::to_string(v & ((1u << kLineColColumnBits) - 1));
        else
            o += std::to_string(static_cast<int64_t>(v));
    });
    return o;
}
std::string show_kfunc(const KfuncDesc& k) { return k.name + "#" + std::to_string(k.btf_id); }
std::string show_aux(const InsnAux& a) { return describe_aux(a); }
std::string show_insn(const isa::Insn& i) { return hex_insn(i); }

}  // namespace

Verdict identical_outputs_verdict(const patch::PatchOutcome& outcome, size_t insns) {
    if (!outcome.ok()) return Verdict::pass_("structural", "both failed with the same error");
    // One allocation for the reason (the runner makes one of these for every agreeing batch).
    char digits[24];
    const auto len = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, insns).ptr - digits);
    constexpr std::string_view head = "identical: ", tail = " insns and every side table";
    std::string reason;
    reason.reserve(head.size() + len + tail.size());
    reason.append(head).append(digits, len).append(tail);
    return Verdict::pass_("structural", std::move(reason));
}

Verdict compare_patcher_outputs(const PatcherRun& e, const PatcherRun& a) {
    const Side s{e, a};
    const std::string oracle = "structural";
    if (e.outcome.err != a.outcome.err || e.outcome.raw_err != a.outcome.raw_err) {
        const bool erange = e.outcome.raw_err == -34 || a.outcome.raw_err == -34;  // -ERANGE
        return Verdict::fail(oracle, erange ? "erange-mismatch" : "error-mismatch", "patchers disagree on the outcome",
                             s.both("outcome", "err " + std::to_string(e.outcome.err) + "/" +
                                                   std::to_string(e.outcome.raw_err) + " '" + e.outcome.log + "'",
                                    "err " + std::to_string(a.outcome.err) + "/" + std::to_string(a.outcome.raw_err) +
                                        " '" + a.outcome.log + "'"));
    }
    if (e.outcome.log != a.outcome.log)
        return Verdict::fail(oracle, "error-mismatch", "patchers disagree on the verifier log line",
                             s.both("log", "'" + e.outcome.log + "'", "'" + a.outcome.log + "'"));
    if (!e.outcome.ok()) return identical_outputs_verdict(e.outcome, 0);

    const Program& pe = *e.program;
    const Program& pa = *a.program;
    if (pe.insns.size() != pa.insns.size())
        return Verdict::fail(oracle, "length-mismatch", "patched programs differ in length",
                             s.both("length", std::to_string(pe.insns.size()), std::to_string(pa.insns.size())));
    if (auto i = first_diff(pe.insns, pa.insns, isa::same); i >= 0)
        return Verdict::fail(oracle, "insn-mismatch", "patched insn " + std::to_string(i) + " differs",
                             s.both("insn " + std::to_string(i), at_or_missing(pe.insns, i, show_insn),
                                    at_or_missing(pa.insns, i, show_insn)));
    if (auto i = first_diff(pe.aux, pa.aux, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "aux-slot", "aux data of insn " + std::to_string(i) + " differs",
                             s.both("aux " + std::to_string(i), at_or_missing(pe.aux, i, show_aux),
                                    at_or_missing(pa.aux, i, show_aux)));
    if (auto i = first_diff(pe.subprogs, pa.subprogs, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "subprog-start", "subprog " + std::to_string(i) + " differs",
                             s.both("subprog " + std::to_string(i), at_or_missing(pe.subprogs, i, show_record<SubprogInfo>),
                                    at_or_missing(pa.subprogs, i, show_record<SubprogInfo>)));
    if (auto i = first_diff(pe.linfo, pa.linfo, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "linfo", "line info " + std::to_string(i) + " differs",
                             s.both("linfo " + std::to_string(i), at_or_missing(pe.linfo, i, show_record<LineInfo>),
                                    at_or_missing(pa.linfo, i, show_record<LineInfo>)));
    if (auto i = first_diff(pe.finfo, pa.finfo, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "finfo", "func info " + std::to_string(i) + " differs",
                             s.both("finfo " + std::to_string(i), at_or_missing(pe.finfo, i, show_record<FuncInfo>),
                                    at_or_missing(pa.finfo, i, show_record<FuncInfo>)));
    if (pe.insn_arrays.size() != pa.insn_arrays.size())
        return Verdict::fail(oracle, "insn-array", "different number of insn arrays",
                             s.both("insn arrays", std::to_string(pe.insn_arrays.size()),
                                    std::to_string(pa.insn_arrays.size())));
    for (size_t m = 0; m < pe.insn_arrays.size(); ++m) {
        const auto& ee = pe.insn_arrays[m].entries;
        const auto& ae = pa.insn_arrays[m].entries;
        if (auto i = first_diff(ee, ae, std::equal_to<>()); i >= 0) {
            auto show = [](const std::vector<InsnArrayEntry>& v, int64_t k) {
                return static_cast<size_t>(k) < v.size()
                           ? "orig_off=" + std::to_string(v[size_t(k)].orig_off) +
                                 " xlated_off=" + std::to_string(v[size_t(k)].xlated_off)
                           : std::string("nothing");
            };
            return Verdict::fail(oracle, "insn-array",
                                 "insn array " + std::to_string(m) + " entry " + std::to_string(i) + " differs",
                                 s.both("insn array " + std::to_string(m) + "[" + std::to_string(i) + "]", show(ee, i),
                                        show(ae, i)));
        }
    }
    if (auto i = first_diff(pe.pokes, pa.pokes, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "poke", "poke descriptor " + std::to_string(i) + " differs",
                             s.both("poke " + std::to_string(i), at_or_missing(pe.pokes, i, show_record<PokeDesc>),
                                    at_or_missing(pa.pokes, i, show_record<PokeDesc>)));
    if (auto i = first_diff(pe.kfuncs, pa.kfuncs, std::equal_to<>()); i >= 0)
        return Verdict::fail(oracle, "kfunc-desc", "kfunc descriptor " + std::to_string(i) + " differs",
                             s.both("kfunc " + std::to_string(i), at_or_missing(pe.kfuncs, i, show_kfunc),
                                    at_or_missing(pa.kfuncs, i, show_kfunc)));
    if (!(pe.maps == pa.maps) || pe.prog_type != pa.prog_type || pe.name != pa.name)
        return Verdict::fail(oracle, "program-meta", "maps, program type or name differ", "");
    return identical_outputs_verdict(e.outcome, pe.insns.size());
}

}  // namespace patchfuzz::oracles
