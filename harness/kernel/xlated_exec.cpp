#include "harness/kernel/xlated_exec.hpp"

#include <algorithm>

#include "bpf/asm/disassemble.hpp"
#include "bpf/passes/zext_marks.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::kernel {
namespace {

// Two insns are "the same kept insn" when they differ at most in what a rewrite moves: a jump's
// offset (code was inserted or removed between), a pseudo call's or PSEUDO_FUNC's relative target.
bool kept_as(const isa::Insn& x, const isa::Insn& o) {
    if (x.code != o.code || x.dst_reg != o.dst_reg || x.src_reg != o.src_reg) return false;
    if (isa::is_pseudo_call(x) || isa::is_pseudo_func(x)) return true;
    if (isa::is_jmp_class(x) && !isa::is_call(x) && !isa::is_exit(x)) return x.imm == o.imm || isa::op(x) == BPF_JA;
    return x.imm == o.imm && x.off == o.off;
}

constexpr size_t kMaxAligned = 4000;         // longer programs are not located (quadratic table)
constexpr uint32_t kMaxTrace = 1u << 21;     // steps kept to locate a divergence

}  // namespace

std::vector<int32_t> align_xlated(const std::vector<isa::Insn>& x, const std::vector<isa::Insn>& o) {
    std::vector<int32_t> kept(x.size(), -1);
    const size_t n = std::min(x.size(), kMaxAligned), m = std::min(o.size(), kMaxAligned);
    std::vector<std::vector<uint16_t>> L(n + 1, std::vector<uint16_t>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            L[i][j] = kept_as(x[i], o[j]) ? static_cast<uint16_t>(L[i + 1][j + 1] + 1) : std::max(L[i + 1][j], L[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < n && j < m) {
        if (kept_as(x[i], o[j]) && L[i][j] == L[i + 1][j + 1] + 1) kept[i++] = static_cast<int32_t>(j++);
        else if (L[i + 1][j] >= L[i][j + 1]) i++;
        else j++;
    }
    return kept;
}

OriginalReference::OriginalReference(const Program& original, const ArchProfile& arch) : program(original) {
    if (!arch.needs_zext) return;
    passes::add_zext_marks(program);
    marks = interp::ZextMarks::Apply;
}

std::string result_difference(const interp::ExecResult& a, const interp::ExecResult& b, const std::vector<MapDef>& maps) {
    using S = interp::ExecResult::Status;
    if (a.status != S::Ok || b.status != S::Ok) {
        if (a.status == b.status) return "";
        auto shown = [](const interp::ExecResult& r) {
            return std::string(interp::to_string(r.status)) + (r.status == S::Ok ? "" : " at pc " + std::to_string(r.fault_pc) + ": " + r.reason);
        };
        return "xlated " + shown(a) + ", original " + shown(b);
    }
    std::string d;
    if (static_cast<uint32_t>(a.r0) != static_cast<uint32_t>(b.r0))
        d = "retval: xlated " + std::to_string(static_cast<uint32_t>(a.r0)) + ", original " + std::to_string(static_cast<uint32_t>(b.r0));
    for (size_t m = 0; m < a.maps.size() && m < b.maps.size(); m++)
        if (a.maps[m] != b.maps[m] && !(m < maps.size() && maps[m].type == isa::kMapTypeInsnArray)) d += (d.empty() ? "" : "; ") + std::string("map ") + std::to_string(m) + " contents differ";
    if (a.packet != b.packet) d += (d.empty() ? "" : "; ") + std::string("packet differs");
    return d;
}

XlatedExecution run_xlated_vs_original(const Program& xlated, const Program& original,
                                       const std::vector<interp::ExecInput>& inputs, const ArchProfile& arch) {
    XlatedExecution out;
    const OriginalReference ref(original, arch);
    for (size_t k = 0; k < inputs.size(); k++) {
        auto rx = interp::execute(xlated, inputs[k], arch);
        auto ro = interp::execute(ref.program, inputs[k], arch, {}, ref.marks);
        std::string d = result_difference(rx, ro, original.maps);
        if (d.empty()) continue;
        out.agree = false;
        out.input = static_cast<uint32_t>(k);
        out.detail = d;
        break;
    }
    if (out.agree) return out;
    // Locate: the traced runs walked along the kept insns.
    if (xlated.insns.size() > kMaxAligned || original.insns.size() > kMaxAligned) {
        out.located = "not located: longer than " + std::to_string(kMaxAligned) + " insns";
        return out;
    }
    interp::ExecOptions traced{.trace_last = kMaxTrace};
    auto tx = interp::execute(xlated, inputs[out.input], arch, traced);
    auto to = interp::execute(ref.program, inputs[out.input], arch, traced, ref.marks);
    if (tx.steps > kMaxTrace || to.steps > kMaxTrace) {
        out.located = "not located: a run of more than " + std::to_string(kMaxTrace) + " steps";
        return out;
    }
    std::vector<int32_t> kept = align_xlated(xlated.insns, original.insns);
    std::vector<bool> orig_kept(original.insns.size(), false);
    for (int32_t j : kept)
        if (j >= 0) orig_kept[static_cast<size_t>(j)] = true;
    size_t po = 0;
    int64_t last_match = -1;  // index into the xlated trace
    size_t first_off = tx.trace.size();
    for (size_t s = 0; s < tx.trace.size(); s++) {
        const auto& step = tx.trace[s];
        if (step.pc >= kept.size() || kept[step.pc] < 0) continue;  // code the kernel inserted
        while (po < to.trace.size() && (to.trace[po].pc >= orig_kept.size() || !orig_kept[to.trace[po].pc])) po++;
        // A code address (PSEUDO_FUNC, a pseudo call's return) is the insn's position, which the
        // rewrite moves: only its place in the run is compared.
        const isa::Insn& insn = xlated.insns[step.pc];
        const bool code_address = isa::is_pseudo_func(insn) || isa::is_pseudo_call(insn);
        if (po == to.trace.size() || to.trace[po].pc != static_cast<uint32_t>(kept[step.pc]) ||
            (!code_address && to.trace[po].dst_after != step.dst_after)) {
            first_off = s;
            break;
        }
        last_match = static_cast<int64_t>(s);
        po++;
    }
    const size_t at = static_cast<size_t>(last_match + 1);
    if (tx.trace.empty()) {
        out.located = "not located: the xlated run executed nothing";
        return out;
    }
    const size_t step = std::min(at, tx.trace.size() - 1);
    out.diverging_pc = tx.trace[step].pc;
    out.diverging_insn = assembly::disasm_insn(xlated.insns, tx.trace[step].pc);
    out.located = first_off < tx.trace.size()
                      ? "the runs part after xlated step " + std::to_string(at) + " (of " + std::to_string(tx.trace.size()) +
                            "); first disagreeing kept insn at xlated pc " + std::to_string(tx.trace[first_off].pc)
                      : "every kept insn agrees; the results differ after xlated step " + std::to_string(at);
    return out;
}

}  // namespace patchfuzz::kernel
