// patchfuzz prove-inline: Z3 equivalence proofs of the inline sequences the passes emit
// (oracles/smt/inline_equiv.hpp): numeric iterator kfuncs, div/mod guards, map lookups.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bpf/util/json.hpp"
#include "bpf/arch/arch_profile.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "oracles/smt/inline_equiv.hpp"
#include "oracles/smt/smt_options.hpp"

namespace patchfuzz::cli {

int cmd_prove_inline(Args args) {
    using oracles::smt::InlineFamily;
    oracles::smt::InlineProofOptions o;
    bool json = false;
    const VerbFlags spec{
        .verb = "prove-inline",
        .usage = {"patchfuzz prove-inline [--arch x86_64|arm64|jit32] [--iter-inline v1|v3|v4]",
                  "                      [--family iter,div,map,helpers] [--loop-inline buggy|fixed]",
                  "                      [--func-arg-inline buggy|fixed] [--timeout-ms T] [--seed S] [--json]"},
        .about = "Proves with Z3, over all inputs, that every inline sequence the rewrite passes emit computes\n"
                 "what the call or insn it replaces computes, under each arch profile's execution semantics\n"
                 "(jit32: MOVSX decoded as MOV, 32-bit defs keep garbage upper halves unless the zext pass's\n"
                 "marker follows). One verdict per sequence and arch: pass (proved), fail (counterexample),\n"
                 "unknown (solver timeout/resource), skip (not inlined there / not modelled).",
        .flags = {choice_flag({"--arch"}, "A", "only this profile (default: all three)", arch_choices(),
                              [&](const std::string& v) { o.arches.push_back(arch_by_name(v).value()); })
                      .repeat(),
                  choice_flag({"--iter-inline"}, "V", "numeric-iterator variant: v4 (default), v1 or v3",
                              Choices{"variant", {"v1", "v3", "v4"}},
                              [&](const std::string& v) {
                                  o.iter = v == "v1" ? passes::IterInline::V1 : v == "v3" ? passes::IterInline::V3 : passes::IterInline::V4;
                              }),
                  list_flag({"--family"}, "LIST",
                            "comma list of iter, div, map, helpers (default iter,div,map; helpers = the bpf_loop entry and "
                            "bpf_get_func_arg inlines, included by the two flags below)",
                            Choices{"family", {"iter", "div", "map", "helpers"}},
                            [&](std::vector<std::string> v) {
                                o.families = 0;
                                for (const auto& f : v)
                                    o.families |= static_cast<unsigned>(f == "iter"  ? InlineFamily::Iter
                                                                        : f == "div" ? InlineFamily::DivMod
                                                                        : f == "map" ? InlineFamily::MapLookup
                                                                                     : InlineFamily::Helpers);
                            }),
                  choice_flag({"--loop-inline"}, "V",
                              "bpf_loop inline to prove: buggy (the kernel's, refuted: findings 0007, 0001-0006) or fixed "
                              "(bpf/passes/pass.hpp InlineFix)",
                              inline_fix_choices(),
                              [&](const std::string& v) {
                                  o.loop = passes::inline_fix_named(v).value();
                                  o.families |= static_cast<unsigned>(InlineFamily::Helpers);
                              }),
                  choice_flag({"--func-arg-inline"}, "V", "bpf_get_func_arg inline: buggy (the kernel's, refuted: finding 0008) or fixed",
                              inline_fix_choices(),
                              [&](const std::string& v) {
                                  o.func_arg = passes::inline_fix_named(v).value();
                                  o.families |= static_cast<unsigned>(InlineFamily::Helpers);
                              }),
                  whole_flag({"--timeout-ms"}, "T", "per solver query (default 10000)", o.smt.timeout_ms),
                  whole_flag({"--seed"}, "S", "Z3 random seed (default 0)", o.smt.seed),
                  switch_flag({"--json"}, "a JSON list of {sequence, arch, verdict, reason, counterexample, ms}", json)},
        .exit = "exit: 0 all proved (skips allowed), 1 something refuted, 2 bad usage, 3 unknown only"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
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
