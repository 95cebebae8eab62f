#include "oracles/exec/cost_table.hpp"

#include "bpf/interp/cost_model.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/interp/loop_programs.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::oracles::exec {
namespace {

struct PerIter {
    double cycles = 0;
    double insns = 0;
};

Expected<PerIter> per_iteration(const Program& p, const interp::CostParams& cp, const ArchProfile& arch) {
    double c[2], s[2];
    for (int k = 0; k < 2; ++k) {
        interp::ExecInput in;
        interp::set_nr_loops(in, 1000u * static_cast<uint32_t>(k + 1));
        interp::CostModel m(cp);
        interp::ExecOptions o;
        o.cost = &m;
        interp::ExecResult r = interp::execute(p, in, arch, o);
        if (r.status != interp::ExecResult::Status::Ok)
            return make_error(p.name + " pc " + std::to_string(r.fault_pc), std::string(interp::to_string(r.status)) + ": " + r.reason);
        if (r.r0 != 1000u * static_cast<uint32_t>(k + 1))
            return make_error(p.name, "ran " + std::to_string(r.r0) + " iterations instead of " + std::to_string(1000 * (k + 1)));
        c[k] = r.cycles;
        s[k] = static_cast<double>(r.steps);
    }
    return PerIter{(c[1] - c[0]) / 1000.0, (s[1] - s[0]) / 1000.0};
}

}  // namespace

Expected<std::vector<CostRow>> cost_table() {
    struct ArchCase {
        const ArchProfile* arch;
        const interp::CostParams* cost;
        std::array<double, 3> seed;
    };
    const ArchCase cases[] = {{&arch_x86_64(), &interp::cost_x86_64(), {4252, 3608, 7417}},
                              {&arch_arm64(), &interp::cost_arm64(), {649, 548, 546}}};
    std::vector<CostRow> rows;
    for (const ArchCase& ac : cases) {
        CostRow row;
        row.arch = std::string(ac.arch->name);
        row.seed = ac.seed;
        Program inl = interp::bpf_for_program();
        passes::RewriteOptions ro;
        ro.arch = *ac.arch;
        ro.iter_inline = passes::IterInline::V4;
        ro.only = {"iter_inline"};
        auto patcher = patch::make_patcher("incremental");
        passes::PipelineResult pr = passes::run_pipeline(inl, *patcher, ro);
        if (!pr.outcome.ok()) return make_error("iter_inline", pr.outcome.log);
        inl.name = "bpf_for_inlined";
        const Program progs[3] = {interp::bpf_loop_program(true), interp::bpf_for_program(), inl};
        for (int s = 0; s < 3; ++s) {
            auto pi = per_iteration(progs[s], *ac.cost, *ac.arch);
            if (!pi.ok()) return pi.error();
            row.cycles[static_cast<size_t>(s)] = pi->cycles;
            row.insns[static_cast<size_t>(s)] = pi->insns;
        }
        row.k = row.seed[kBpfForInlined] * row.cycles[kBpfForInlined];
        for (size_t s = 0; s < 3; ++s) row.predicted[s] = row.k / row.cycles[s];
        rows.push_back(row);
    }
    return rows;
}

}  // namespace patchfuzz::oracles::exec
