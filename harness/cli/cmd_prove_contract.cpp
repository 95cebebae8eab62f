// patchfuzz prove-contract: the bounded proof that the batched closed form of docs/patching.md §7
// equals the kernel's single-patch rules of §2 (oracles/smt/contract_proof.hpp).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bpf/util/json.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "oracles/smt/contract_proof.hpp"

namespace patchfuzz::cli {

int cmd_prove_contract(Args args) {
    oracles::smt::ContractProofOptions o;
    bool json = false;
    const VerbFlags spec{
        .verb = "prove-contract",
        .usage = {"patchfuzz prove-contract [--max-patches K] [--max-len N] [--max-patch-len L]",
                  "                        [--timeout-ms T] [--seed S] [--json]"},
        .about = "Proves with Z3, for every program of at most N insns and up to K patches of at most L insns\n"
                 "each (all symbolic: positions, lengths, jump position, displacement and target, program\n"
                 "length around the s16 limit), that the batched closed form of docs/patching.md §7 equals the\n"
                 "composition of the kernel's single-patch rules (bpf_patch_insn_single / bpf_adj_branches),\n"
                 "including the -ERANGE condition, the first failing patch and the side tables.",
        .flags = {whole_flag({"--max-patches"}, "K", "1..6 (default 4)", o.max_patches, 1, 6),
                  whole_flag({"--max-len"}, "N", "bound on the program length, 1..1048576 (default 131072)", o.max_len, 1, 1u << 20),
                  whole_flag({"--max-patch-len"}, "L", "bound on each patch length, 1..1048576 (default 8192)", o.max_patch_len, 1,
                             1u << 20),
                  whole_flag({"--timeout-ms"}, "T", "per solver query (default 60000)", o.smt.timeout_ms),
                  whole_flag({"--seed"}, "S", "Z3 random seed (default 0)", o.smt.seed),
                  switch_flag({"--json"}, "one JSON object: verdict and the obligations", json)},
        .exit = "exit: 0 proved, 1 refuted, 2 bad usage, 3 some obligation unknown (timeout)"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<oracles::smt::ContractObligation> details;
    const oracles::Verdict v = oracles::smt::prove_contract(o, &details);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (json) {
        std::printf("{\"verdict\": %s, \"reason\": %s, \"counterexample\": %s, \"ms\": %.1f, \"seed\": %u, \"obligations\": [",
                    json_str(oracles::to_string(v.outcome)).c_str(), json_str(v.reason).c_str(), json_str(v.counterexample).c_str(),
                    ms, o.smt.seed);
        for (size_t k = 0; k < details.size(); ++k)
            std::printf("%s\n  {\"name\": %s, \"verdict\": %s, \"ms\": %.1f, \"counterexample\": %s}", k ? "," : "",
                        json_str(details[k].name).c_str(), json_str(oracles::to_string(details[k].outcome)).c_str(), details[k].ms,
                        json_str(details[k].counterexample).c_str());
        std::printf("]}\n");
    } else {
        for (const auto& d : details)
            std::printf("%-8s %-72s %8.1f ms%s%s\n", std::string(oracles::to_string(d.outcome)).c_str(), d.name.c_str(), d.ms,
                        d.counterexample.empty() ? "" : "  ", d.counterexample.c_str());
        std::printf("%s: %s (%.1f ms, z3 seed %u)\n", std::string(oracles::to_string(v.outcome)).c_str(), v.reason.c_str(), ms,
                    o.smt.seed);
        if (!v.counterexample.empty()) std::printf("counterexample: %s\n", v.counterexample.c_str());
    }
    switch (v.outcome) {
        case oracles::Outcome::Pass: return 0;
        case oracles::Outcome::Fail: return 1;
        case oracles::Outcome::Unknown: return 3;
        case oracles::Outcome::Skip: return 2;
    }
    return 2;
}

}  // namespace patchfuzz::cli
