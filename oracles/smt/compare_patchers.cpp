// compare_patchers(): the differential check of the two Patcher implementations on one batch.
#include <string>

#include "oracles/smt/jump_oracle.hpp"

namespace patchfuzz::oracles::smt {
namespace {

std::string first_difference(const Program& a, const Program& b) {
    if (a.insns.size() != b.insns.size())
        return "length: incremental " + std::to_string(a.insns.size()) + ", batched " + std::to_string(b.insns.size());
    for (size_t i = 0; i < a.insns.size(); ++i)
        if (!isa::same(a.insns[i], b.insns[i])) return "insn " + std::to_string(i);
    for (size_t i = 0; i < a.aux.size() && i < b.aux.size(); ++i)
        if (!(a.aux[i] == b.aux[i])) return "aux " + std::to_string(i);
    if (a.subprogs != b.subprogs) return "subprogs";
    if (a.linfo != b.linfo) return "line info";
    if (a.insn_arrays != b.insn_arrays) return "insn arrays";
    if (a.pokes != b.pokes) return "pokes";
    return "other program fields";
}

}  // namespace

Verdict compare_patchers(const Program& before, const patch::PatchBatch& batch) {
    auto inc = patch::make_patcher("incremental");
    auto bat = patch::make_patcher("batched");
    if (!inc || !bat) return Verdict::skip("patchers", "patchers not available");
    Program a = before, b = before;
    const patch::PatchOutcome oa = inc->apply(a, batch);
    const patch::PatchOutcome ob = bat->apply(b, batch);
    if (!(oa == ob))
        return Verdict::fail("patchers", "outcome", "the two patchers report different outcomes",
                             "incremental err " + std::to_string(oa.err) + "/" + std::to_string(oa.raw_err) + " '" + oa.log +
                                 "', batched err " + std::to_string(ob.err) + "/" + std::to_string(ob.raw_err) + " '" + ob.log + "'");
    if (oa.ok() && !(a == b))
        return Verdict::fail("patchers", "program", "the two patchers produce different programs", first_difference(a, b));
    return Verdict::pass_("patchers", "identical outcome and program");
}

}  // namespace patchfuzz::oracles::smt
