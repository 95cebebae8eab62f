// patchfuzz replay PATH...: run stored .case files (the regression corpus, findings) and check
// each against the verdict written inside it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/runner/expectation.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {
namespace {

void replay_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz replay PATH... [--oracles LIST] [--times N] [--verbose]\n\n"
                 "Replay .case files (a directory is searched recursively for *.case; other files in it are\n"
                 "listed as ignored) and compare each outcome with the case's `-- expect` section (`pass`\n"
                 "or `fail <signature>`). Each case runs under its own arch. --times N replays every case N\n"
                 "times and requires the same outcome each time (determinism).\n\n"
                 "exit: 0 every case as expected, 1 an unexpected outcome, 2 an unreadable or malformed file\n");
}

int bad(const std::string& m) {
    std::fprintf(stderr, "patchfuzz replay: %s\n", m.c_str());
    return 2;
}

}  // namespace

int cmd_replay(Args args) {
    namespace fs = std::filesystem;
    std::vector<std::string> paths;
    harness::RunConfig base;
    unsigned times = 1;
    bool verbose = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        if (a == "--help" || a == "-h") {
            replay_usage(stdout);
            return 0;
        } else if (a == "--verbose") {
            verbose = true;
        } else if (a == "--times") {
            if (i + 1 >= args.size()) return bad("--times needs a number");
            const std::string v = args[++i];
            if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 1)
                return bad("--times takes a whole number from 1 to 999");
            times = static_cast<unsigned>(std::stoi(v));
        } else if (a == "--oracles") {
            if (i + 1 >= args.size()) return bad("--oracles needs a list");
            base.oracles.clear();
            std::stringstream ss(args[++i]);
            std::string o;
            while (std::getline(ss, o, ',')) {
                const auto id = oracles::parse_oracle(o);
                if (!id || *id == oracles::OracleId::Kernel) return bad("unknown oracle '" + o + "' (structural, smt-jump, smt-inline, exec)");
                base.oracles.push_back(o);
            }
        } else if (!a.empty() && a[0] == '-') {
            return bad("unknown option '" + a + "' (see --help)");
        } else {
            paths.push_back(a);
        }
    }
    if (paths.empty()) {
        replay_usage(stderr);
        return 2;
    }
    std::vector<std::string> files;
    for (const auto& p : paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<std::string> found;
            for (const auto& e : fs::recursive_directory_iterator(p, ec)) {
                if (!e.is_regular_file()) continue;
                if (e.path().extension() == ".case")
                    found.push_back(e.path().string());
                else if (verbose)
                    std::fprintf(stderr, "patchfuzz replay: ignoring %s (not a .case file)\n", e.path().c_str());
            }
            if (ec) return bad(p + ": " + ec.message());
            // An empty corpus is a wrong path, not a passing run.
            if (found.empty()) return bad(p + ": no .case files");
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::exists(p, ec)) {
            files.push_back(p);
        } else {
            return bad(p + ": no such file or directory");
        }
    }
    unsigned passed = 0, failed = 0, unreadable = 0;
    for (const auto& f : files) {
        auto c = harness::read_case(f);
        if (!c) {
            std::fprintf(stderr, "patchfuzz replay: %s\n", c.error().to_string().c_str());
            ++unreadable;
            continue;
        }
        const auto cfg = harness::replay_config(*c, base);
        std::string first_actual;
        bool ok = true;
        for (unsigned t = 0; t < times; ++t) {
            const auto report = harness::run_case(*c, cfg);
            const auto e = harness::check_expectation(*c, report);
            if (t == 0) first_actual = e.actual;
            if (!e.met || e.actual != first_actual) {
                ok = false;
                std::printf("FAIL %s: expected '%s', got '%s'%s\n", f.c_str(), c->expect.c_str(), e.actual.c_str(),
                            t > 0 ? " (not deterministic)" : "");
                if (const auto* v = report.first_failure())
                    std::printf("  %s\n  %s\n", v->verdict.reason.c_str(), v->verdict.counterexample.c_str());
                break;
            }
        }
        if (ok) {
            ++passed;
            if (verbose) std::printf("ok   %s (%s)\n", f.c_str(), first_actual.c_str());
        } else {
            ++failed;
        }
    }
    std::printf("%u passed, %u failed\n", passed, failed + unreadable);
    if (unreadable) return 2;
    return failed ? 1 : 0;
}

}  // namespace patchfuzz::cli
