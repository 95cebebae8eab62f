// patchfuzz costmodel [--json]: the per-arch cycle model (docs/iterator-isa-arch.md §5) of the three
// loop shapes, next to the seed's measured numbers (oracles/exec/cost_table.hpp).
#include <cstdio>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "oracles/exec/cost_table.hpp"

namespace patchfuzz::cli {

int cmd_costmodel(Args args) {
    bool json = false;
    const VerbFlags spec{
        .verb = "costmodel",
        .usage = {"patchfuzz costmodel [--json]"},
        .about = "Interprets the three loop shapes of the seed benchmark (bpf_loop callback, bpf_for with\n"
                 "kfunc calls, bpf_for with the V4 inline) with the per-arch scoreboard cost model and\n"
                 "prints cycles per iteration, the predicted M iterations/s (calibrated on the inlined\n"
                 "column) next to the seed's measurements, and the inlined/call and inlined/loop ratios.",
        .flags = {switch_flag({"--json"}, "one JSON object on stdout instead of the tables", json)},
        .exit = "exit: 0 every model ratio within 15% of the seed's, 1 one is not, 2 bad usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    auto t = oracles::exec::cost_table();
    if (!t.ok()) {
        std::fprintf(stderr, "patchfuzz costmodel: %s\n", t.error().to_string().c_str());
        return 1;
    }
    using namespace oracles::exec;
    bool within = true;
    for (const CostRow& r : *t) {
        double rel = r.model_inl_call() / r.seed_inl_call();
        if (rel < 0.85 || rel > 1.15) within = false;
    }
    if (json) {
        std::printf("{\"rows\":[");
        bool first = true;
        for (const CostRow& r : *t) {
            std::printf("%s{\"arch\":\"%s\",\"k_mcycles_per_s\":%.1f", first ? "" : ",", r.arch.c_str(), r.k);
            const char* keys[3] = {"bpf_loop", "bpf_for_call", "bpf_for_inlined"};
            for (int s = 0; s < 3; ++s)
                std::printf(",\"%s\":{\"cycles_per_iter\":%.3f,\"insns_per_iter\":%.2f,\"model_mps\":%.0f,\"seed_mps\":%.0f}", keys[s],
                            r.cycles[static_cast<size_t>(s)], r.insns[static_cast<size_t>(s)], r.predicted[static_cast<size_t>(s)],
                            r.seed[static_cast<size_t>(s)]);
            std::printf(",\"inl_call\":{\"model\":%.3f,\"seed\":%.3f},\"inl_loop\":{\"model\":%.3f,\"seed\":%.3f}}", r.model_inl_call(),
                        r.seed_inl_call(), r.model_inl_loop(), r.seed_inl_loop());
            first = false;
        }
        std::printf("],\"within_15_percent\":%s}\n", within ? "true" : "false");
    } else {
        std::printf("per-arch cost model (docs/iterator-isa-arch.md §5): cycles/iteration, predicted vs seed M iterations/s\n\n");
        std::printf("%-7s %-18s %8s %8s %10s %9s\n", "arch", "shape", "insns", "cycles", "model M/s", "seed M/s");
        for (const CostRow& r : *t) {
            for (size_t s = 0; s < 3; ++s)
                std::printf("%-7s %-18s %8.2f %8.3f %10.0f %9.0f\n", r.arch.c_str(), kShapeNames[s], r.insns[s], r.cycles[s], r.predicted[s],
                            r.seed[s]);
        }
        std::printf("\n%-7s %14s %14s %14s %14s %8s\n", "arch", "inl/call model", "inl/call seed", "inl/loop model", "inl/loop seed",
                    "within");
        for (const CostRow& r : *t) {
            double rel = r.model_inl_call() / r.seed_inl_call();
            std::printf("%-7s %14.3f %14.3f %14.3f %14.3f %7.1f%%\n", r.arch.c_str(), r.model_inl_call(), r.seed_inl_call(),
                        r.model_inl_loop(), r.seed_inl_loop(), 100.0 * (rel - 1.0));
        }
        std::printf("\n(throughput calibrated on the inlined column: K = seed M/s x model cycles; only ratios are meaningful)\n");
    }
    return within ? 0 : 1;
}

}  // namespace patchfuzz::cli
