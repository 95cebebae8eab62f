#include "oracles/exec/zext_facts.hpp"

namespace patchfuzz::oracles::exec {

std::optional<std::string> missing_zext_fact(const Program& prog) {
    const auto gaps = passes::zext_gaps(prog);
    if (gaps.empty()) return std::nullopt;
    const passes::ZextGap& g = gaps.front();
    const std::optional<uint32_t> use = passes::zext_gap_read(prog, g);
    const std::string r = std::to_string(g.reg);
    return "case facts: insn " + std::to_string(g.def_pc) + " defines w" + r + " without zext_dst, but " +
           (use ? "insn " + std::to_string(*use) : std::string("a later insn")) + " reads r" + r +
           " as 64 bits (the verifier would mark the def)" +
           (gaps.size() > 1 ? " and " + std::to_string(gaps.size() - 1) + " more" : std::string());
}

std::optional<std::string> zext_jit_fact_issue(const Program& prog) {
    std::optional<std::string> issue = missing_zext_fact(prog);
    for (size_t i = 0; i < prog.aux.size(); ++i)
        if (prog.aux[i].needs_zext && prog.aux[i].seen) {
            const std::string n = "case facts: insn " + std::to_string(i) +
                                  " has needs_zext (an arena-pointer narrowing a 32-bit JIT never loads)";
            issue = issue ? *issue + "; " + n : n;
            break;
        }
    return issue;
}

Program zext_jit_facts(const Program& prog) {
    Program p = with_zext_facts(prog);
    for (auto& a : p.aux) a.needs_zext = false;
    return p;
}

}  // namespace patchfuzz::oracles::exec
