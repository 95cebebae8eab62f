// patchfuzz replay PATH...: run stored .case files (the regression corpus, findings) and check
// each against the verdict written inside it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/runner/expectation.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {

int cmd_replay(Args args) {
    namespace fs = std::filesystem;
    std::vector<std::string> paths;
    harness::RunConfig base;
    unsigned times = 1;
    bool verbose = false;
    const VerbFlags spec{
        .verb = "replay",
        .usage = {"patchfuzz replay PATH... [--oracles LIST] [--times N] [--verbose]"},
        .about = "Replay .case files (a directory is searched recursively for *.case; other files in it are\n"
                 "listed as ignored) and compare each outcome with the case's `-- expect` section (`pass`\n"
                 "or `fail <signature>`). Each case runs under its own arch.",
        .flags = {list_flag({"--oracles"}, "LIST", "comma list of structural, smt-jump, smt-inline, exec (default: the case's own)",
                            case_oracle_choices(), [&](std::vector<std::string> v) { base.oracles = *oracles::parse_oracle_set(v); }),
                  whole_flag({"--times"}, "N", "replay every case N times, 1..999, and require the same outcome each time (determinism)",
                             times, 1, 999),
                  switch_flag({"--verbose"}, "print every case's outcome, and the files a directory holds besides cases", verbose)},
        .positionals = Positionals{.name = "PATH", .noun = "path", .required = true, .many = true,
                                   .take = [&](const std::string& a) { paths.push_back(a); }},
        .exit = "exit: 0 every case as expected, 1 an unexpected outcome, 2 an unreadable or malformed file"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
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
            if (ec) return spec.error(p + ": " + ec.message());
            // An empty corpus is a wrong path, not a passing run.
            if (found.empty()) return spec.error(p + ": no .case files");
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::exists(p, ec)) {
            files.push_back(p);
        } else {
            return spec.error(p + ": no such file or directory");
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
