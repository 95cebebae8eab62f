// patchfuzz minimize CASE -o OUT.case: shrink one failing case while its signature holds.
#include <cstdio>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/runner/expectation.hpp"
#include "harness/triage/minimize.hpp"

namespace patchfuzz::cli {
namespace {

void minimize_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz minimize CASE.case -o OUT.case [--signature SIG] [--max-runs N] [--seconds S]\n\n"
                 "Run CASE (under its own arch), take its first failure's semantic signature (or --signature),\n"
                 "and shrink the program, its side tables, explicit patches and inputs with BPF-aware steps\n"
                 "while the signature holds. OUT records the signature as its expected verdict.\n\n"
                 "exit: 0 minimized, 1 the case does not fail (nothing to minimize), 2 bad input or usage\n");
}

int bad(const std::string& m) {
    std::fprintf(stderr, "patchfuzz minimize: %s\n", m.c_str());
    return 2;
}

}  // namespace

int cmd_minimize(Args args) {
    std::string in, out, sig;
    harness::MinimizeOptions mo;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        auto num = [&](double& v, double lo, double hi) {
            if (i + 1 >= args.size()) return false;
            char* end = nullptr;
            v = std::strtod(args[++i], &end);
            return end && *end == 0 && v >= lo && v <= hi;
        };
        double v = 0;
        if (a == "--help" || a == "-h") {
            minimize_usage(stdout);
            return 0;
        } else if (a == "-o") {
            if (i + 1 >= args.size()) return bad("-o needs a file");
            out = args[++i];
        } else if (a == "--signature") {
            if (i + 1 >= args.size()) return bad("--signature needs a value");
            sig = args[++i];
        } else if (a == "--max-runs") {
            if (!num(v, 1, 1e7)) return bad("--max-runs takes a number from 1 to 10000000");
            mo.max_runs = static_cast<uint32_t>(v);
        } else if (a == "--seconds") {
            if (!num(v, 0.1, 86400)) return bad("--seconds takes a number from 0.1 to 86400");
            mo.max_seconds = v;
        } else if (!a.empty() && a[0] == '-') {
            return bad("unknown option '" + a + "' (see --help)");
        } else if (in.empty()) {
            in = a;
        } else {
            return bad("more than one case given");
        }
    }
    if (in.empty() || out.empty()) {
        minimize_usage(stderr);
        return 2;
    }
    auto c = harness::read_case(in);
    if (!c) return bad(c.error().to_string());
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
    if (auto s = harness::write_case_file_atomic(m, out); !s) return bad(s.error().to_string());
    std::printf("%s: %u -> %u insns in %u steps (%u runs), signature %s\n", out.c_str(), c->program.len(),
                m.program.len(), r.steps, r.runs, signature.c_str());
    return 0;
}

}  // namespace patchfuzz::cli
