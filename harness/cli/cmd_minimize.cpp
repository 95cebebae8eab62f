// patchfuzz minimize CASE -o OUT.case: shrink one failing case while its signature holds.
#include <cstdio>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/runner/expectation.hpp"
#include "harness/triage/minimize.hpp"

namespace patchfuzz::cli {

int cmd_minimize(Args args) {
    std::string in, out, sig;
    harness::MinimizeOptions mo;
    const VerbFlags spec{
        .verb = "minimize",
        .usage = {"patchfuzz minimize CASE.case -o OUT.case [--signature SIG] [--max-runs N] [--seconds S]"},
        .about = "Run CASE (under its own arch), take its first failure's semantic signature (or --signature),\n"
                 "and shrink the program, its side tables, explicit patches and inputs with BPF-aware steps\n"
                 "while the signature holds. OUT records the signature as its expected verdict.",
        .flags = {text_flag({"-o"}, "OUT.case", "where the minimized case goes", out).require(),
                  text_flag({"--signature"}, "SIG", "shrink while this failure signature holds (default: the case's first failure's)", sig),
                  real_flag({"--max-runs"}, "N", "at most N runs of the case, 1..10000000", 1, 1e7,
                            [&](double v) { mo.max_runs = static_cast<uint32_t>(v); }),
                  real_flag({"--seconds"}, "S", "stop shrinking after S seconds, 0.1..86400", 0.1, 86400, [&](double v) { mo.max_seconds = v; })},
        .positionals = Positionals{.name = "CASE.case", .noun = "case", .required = true, .take = [&](const std::string& a) { in = a; }},
        .exit = "exit: 0 minimized, 1 the case does not fail (nothing to minimize), 2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    auto c = harness::read_case(in);
    if (!c) return spec.error(c.error().to_string());
    harness::RunConfig cfg = harness::replay_config(*c, harness::RunConfig{});
    const auto report = harness::run_case(*c, cfg);
    const harness::OracleVerdict* f = nullptr;
    for (const auto& v : report.verdicts)
        if (v.verdict.outcome == oracles::Outcome::Fail && (sig.empty() || harness::signature_of(v) == sig)) {
            f = &v;
            break;
        }
    if (!f) {
        std::fprintf(stderr, "patchfuzz minimize: %s does not fail%s\n", in.c_str(),
                     sig.empty() ? "" : (" with " + sig).c_str());
        return 1;
    }
    const std::string signature = harness::signature_of(*f);
    const auto r = harness::minimize(*c, harness::narrowed(cfg, *f), signature, mo);
    harness::Case m = r.minimized;
    m.expect = "fail " + signature;
    if (auto s = harness::write_case_file_atomic(m, out); !s) return spec.error(s.error().to_string());
    std::printf("%s: %u -> %u insns in %u steps (%u runs), signature %s\n", out.c_str(), c->program.len(),
                m.program.len(), r.steps, r.runs, signature.c_str());
    return 0;
}

}  // namespace patchfuzz::cli
