// patchfuzz prove-contract: the bounded proof that the batched closed form of docs/patching.md §7
// equals the kernel's single-patch rules of §2 (oracles/smt/contract_proof.hpp).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/util/json.hpp"
#include "harness/cli/cli_numbers.hpp"
#include "harness/cli/commands.hpp"
#include "oracles/smt/contract_proof.hpp"

namespace patchfuzz::cli {
namespace {

constexpr const char* kUsage =
    "usage: patchfuzz prove-contract [--max-patches K] [--max-len N] [--max-patch-len L]\n"
    "                                [--timeout-ms T] [--seed S] [--json]\n\n"
    "Proves with Z3, for every program of at most N insns and up to K patches of at most L insns\n"
    "each (all symbolic: positions, lengths, jump position, displacement and target, program\n"
    "length around the s16 limit), that the batched closed form of docs/patching.md §7 equals the\n"
    "composition of the kernel's single-patch rules (bpf_patch_insn_single / bpf_adj_branches),\n"
    "including the -ERANGE condition, the first failing patch and the side tables.\n\n"
    "  --max-patches K    1..6 (default 4)\n"
    "  --max-len N        bound on the program length (default 131072)\n"
    "  --max-patch-len L  bound on each patch length (default 8192)\n"
    "  --timeout-ms T     per solver query (default 60000)\n"
    "  --seed S           Z3 random seed (default 0)\n"
    "  --json             one JSON object: verdict and the obligations\n\n"
    "exit: 0 proved, 1 refuted, 2 bad usage, 3 some obligation unknown (timeout)\n";


bool parse_u32(const char* s, uint32_t& out) {
    const auto v = parse_whole<uint32_t>(s);
    if (v) out = *v;
    return v.has_value();
}

}  // namespace

int cmd_prove_contract(Args args) {
    oracles::smt::ContractProofOptions o;
    bool json = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&](uint32_t& out) -> bool {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "patchfuzz prove-contract: %s needs a value\n", args[i]);
                return false;
            }
            if (!parse_u32(args[i + 1], out)) {
                std::fprintf(stderr, "patchfuzz prove-contract: %s: '%s' is not a non-negative integer\n", args[i], args[i + 1]);
                return false;
            }
            ++i;
            return true;
        };
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--max-patches") {
            if (!value(o.max_patches)) return 2;
        } else if (a == "--max-len") {
            if (!value(o.max_len)) return 2;
        } else if (a == "--max-patch-len") {
            if (!value(o.max_patch_len)) return 2;
        } else if (a == "--timeout-ms") {
            if (!value(o.smt.timeout_ms)) return 2;
        } else if (a == "--seed") {
            if (!value(o.smt.seed)) return 2;
        } else {
            std::fprintf(stderr, "patchfuzz prove-contract: unknown option '%s' (see --help)\n", args[i]);
            return 2;
        }
    }
    if (o.max_patches < 1 || o.max_patches > 6) {
        std::fprintf(stderr, "patchfuzz prove-contract: --max-patches must be in 1..6 (got %u)\n", o.max_patches);
        return 2;
    }
    if (o.max_len < 1 || o.max_len > (1u << 20) || o.max_patch_len < 1 || o.max_patch_len > (1u << 20)) {
        std::fprintf(stderr, "patchfuzz prove-contract: --max-len and --max-patch-len must be in 1..1048576\n");
        return 2;
    }
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
