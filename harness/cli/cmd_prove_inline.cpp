// patchfuzz prove-inline: Z3 equivalence proofs of the inline sequences the passes emit
// (oracles/smt/inline_equiv.hpp): numeric iterator kfuncs, div/mod guards, map lookups.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/util/json.hpp"
#include "bpf/arch/arch_profile.hpp"
#include "harness/cli/cli_numbers.hpp"
#include "harness/cli/commands.hpp"
#include "oracles/smt/inline_equiv.hpp"
#include "oracles/smt/smt_options.hpp"

namespace patchfuzz::cli {
namespace {

constexpr const char* kUsage =
    "usage: patchfuzz prove-inline [--arch x86_64|arm64|jit32] [--iter-inline v1|v3|v4]\n"
    "                              [--family iter,div,map,helpers] [--loop-inline buggy|fixed]\n"
    "                              [--func-arg-inline buggy|fixed] [--timeout-ms T] [--seed S] [--json]\n\n"
    "Proves with Z3, over all inputs, that every inline sequence the rewrite passes emit computes\n"
    "what the call or insn it replaces computes, under each arch profile's execution semantics\n"
    "(jit32: MOVSX decoded as MOV, 32-bit defs keep garbage upper halves unless the zext pass's\n"
    "marker follows). One verdict per sequence and arch: pass (proved), fail (counterexample),\n"
    "unknown (solver timeout/resource), skip (not inlined there / not modelled).\n\n"
    "  --arch A          only this profile (default: all three)\n"
    "  --iter-inline V   numeric-iterator variant (default v4)\n"
    "  --family LIST     comma list of iter, div, map, helpers (default iter,div,map; helpers = the\n"
    "                    bpf_loop entry and bpf_get_func_arg inlines, included by the two flags below)\n"
    "  --loop-inline V   bpf_loop inline to prove: buggy (the kernel's, refuted: findings 0007,\n"
    "                    0001-0006) or fixed (bpf/passes/pass.hpp InlineFix)\n"
    "  --func-arg-inline V  bpf_get_func_arg inline: buggy (the kernel's, refuted: finding 0008) or fixed\n"
    "  --timeout-ms T    per solver query (default 10000)\n"
    "  --seed S          Z3 random seed (default 0)\n"
    "  --json            a JSON list of {sequence, arch, verdict, reason, counterexample, ms}\n\n"
    "exit: 0 all proved (skips allowed), 1 something refuted, 2 bad usage, 3 unknown only\n";


bool parse_u32(const char* s, uint32_t& out) {
    const auto v = parse_whole<uint32_t>(s);
    if (v) out = *v;
    return v.has_value();
}

}  // namespace

int cmd_prove_inline(Args args) {
    using oracles::smt::InlineFamily;
    oracles::smt::InlineProofOptions o;
    bool json = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "patchfuzz prove-inline: %s needs a value\n", args[i]);
                return nullptr;
            }
            return args[++i];
        };
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--arch") {
            const char* v = next();
            if (!v) return 2;
            auto p = arch_by_name(v);
            if (!p) {
                std::fprintf(stderr, "patchfuzz prove-inline: --arch: unknown arch '%s' (expected %s)\n", v, arch_name_list().c_str());
                return 2;
            }
            o.arches.push_back(*p);
        } else if (a == "--iter-inline") {
            const char* v = next();
            if (!v) return 2;
            const std::string_view s = v;
            if (s == "v4") o.iter = passes::IterInline::V4;
            else if (s == "v1") o.iter = passes::IterInline::V1;
            else if (s == "v3") o.iter = passes::IterInline::V3;
            else {
                std::fprintf(stderr, "patchfuzz prove-inline: --iter-inline: unknown variant '%s' (expected v1, v3 or v4)\n", v);
                return 2;
            }
        } else if (a == "--family") {
            const char* v = next();
            if (!v) return 2;
            o.families = 0;
            std::string_view rest = v;
            while (!rest.empty()) {
                const auto comma = rest.find(',');
                const std::string_view f = rest.substr(0, comma);
                if (f == "iter") o.families |= static_cast<unsigned>(InlineFamily::Iter);
                else if (f == "div") o.families |= static_cast<unsigned>(InlineFamily::DivMod);
                else if (f == "map") o.families |= static_cast<unsigned>(InlineFamily::MapLookup);
                else if (f == "helpers") o.families |= static_cast<unsigned>(InlineFamily::Helpers);
                else {
                    std::fprintf(stderr, "patchfuzz prove-inline: --family: unknown family '%.*s' (expected iter, div, map, helpers)\n",
                                 static_cast<int>(f.size()), f.data());
                    return 2;
                }
                rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            }
        } else if (a == "--loop-inline" || a == "--func-arg-inline") {
            const char* v = next();
            if (!v) return 2;
            auto f = passes::inline_fix_named(v);
            if (!f) {
                std::fprintf(stderr, "patchfuzz prove-inline: %s: unknown variant '%s' (expected buggy or fixed)\n", args[i - 1], v);
                return 2;
            }
            (a == "--loop-inline" ? o.loop : o.func_arg) = *f;
            o.families |= static_cast<unsigned>(InlineFamily::Helpers);
        } else if (a == "--timeout-ms" || a == "--seed") {
            const char* v = next();
            if (!v) return 2;
            uint32_t n = 0;
            if (!parse_u32(v, n)) {
                std::fprintf(stderr, "patchfuzz prove-inline: %s: '%s' is not a non-negative integer\n", args[i - 1], v);
                return 2;
            }
            (a == "--seed" ? o.smt.seed : o.smt.timeout_ms) = n;
        } else {
            std::fprintf(stderr, "patchfuzz prove-inline: unknown option '%s' (see --help)\n", args[i]);
            return 2;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    oracles::smt::reset_smt_stats();
    const auto proofs = oracles::smt::prove_inlines(o);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    size_t pass = 0, fail = 0, unknown = 0, skip = 0;
    for (const auto& p : proofs) {
        switch (p.verdict.outcome) {
            case oracles::Outcome::Pass: ++pass; break;
            case oracles::Outcome::Fail: ++fail; break;
            case oracles::Outcome::Unknown: ++unknown; break;
            case oracles::Outcome::Skip: ++skip; break;
        }
    }
    if (json) {
        std::printf("[");
        for (size_t k = 0; k < proofs.size(); ++k) {
            const auto& p = proofs[k];
            std::printf("%s\n  {\"sequence\": %s, \"arch\": %s, \"verdict\": %s, \"reason\": %s, \"counterexample\": %s, \"ms\": %.1f}",
                        k ? "," : "", json_str(p.sequence).c_str(), json_str(p.arch).c_str(),
                        json_str(oracles::to_string(p.verdict.outcome)).c_str(), json_str(p.verdict.reason).c_str(),
                        json_str(p.verdict.counterexample).c_str(), p.ms);
        }
        std::printf("\n]\n");
    } else {
        for (const auto& p : proofs) {
            std::printf("%-7s %-7s %-28s %7.1f ms  %s\n", std::string(oracles::to_string(p.verdict.outcome)).c_str(), p.arch.c_str(),
                        p.sequence.c_str(), p.ms, p.verdict.reason.c_str());
            if (!p.verdict.counterexample.empty()) std::printf("        counterexample: %s\n", p.verdict.counterexample.c_str());
        }
        std::printf("%zu sequences: %zu proved, %zu refuted, %zu unknown, %zu skipped in %.1f ms (z3 seed %u; %s)\n", proofs.size(),
                    pass, fail, unknown, skip, ms, o.smt.seed, oracles::smt::to_string(oracles::smt::smt_stats()).c_str());
    }
    if (fail) return 1;
    if (unknown) return 3;
    return 0;
}

}  // namespace patchfuzz::cli
