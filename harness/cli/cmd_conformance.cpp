// patchfuzz conformance DIR [--expect-fail] [--json] [--verbose]: runs the bpf_conformance .data
// suite on the interpreter (bpf/interp/conformance_run.hpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bpf/util/json.hpp"
#include "bpf/interp/conformance_run.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"

namespace patchfuzz::cli {
namespace {

const char* stage_name(interp::ConformanceOutcome::Stage s) {
    using St = interp::ConformanceOutcome::Stage;
    switch (s) {
        case St::Read: return "read";
        case St::Validate: return "validate";
        case St::Execute: return "execute";
        case St::Compare: return "compare";
        case St::Done: return "done";
    }
    return "?";
}

}  // namespace

int cmd_conformance(Args args) {
    bool expect_fail = false, json = false, verbose = false;
    std::vector<std::string> inputs;
    const VerbFlags spec{
        .verb = "conformance",
        .usage = {"patchfuzz conformance DIR|FILE.data... [--expect-fail] [--json] [--verbose]"},
        .about = "Runs bpf_conformance .data tests on the interpreter (x86_64 semantics): r1 = the\n"
                 "'-- mem' bytes, r2 = their length, r10 = top of a 512-byte stack; a test passes when\n"
                 "its full 64-bit r0 equals '-- result' (or, with '-- error', when it is rejected).\n"
                 "Prints 'N passed, M failed'.",
        .flags = {switch_flag({"--expect-fail"},
                              "every test must fail (negative suite): rejected by the parser or the validator with a "
                              "located error, or a result that differs",
                              expect_fail),
                  switch_flag({"--json"}, "one JSON object per line per test, then the summary object", json),
                  switch_flag({"--verbose", "-v"}, "print every outcome, not only the unexpected ones", verbose)},
        .positionals = Positionals{.name = "DIR", .noun = "input", .required = true, .many = true,
                                   .take = [&](const std::string& a) { inputs.push_back(a); }},
        .exit = "exit: 0 when every outcome is as expected, 1 otherwise, 2 on usage errors or a file that cannot be\n"
                "read (outside --expect-fail). A FILE named on the command line that does not parse is bad input\n"
                "too (exit 2, the located error on stderr); inside a DIR it is a failed test (the suite's negatives\n"
                "are such files)."};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    std::vector<std::string> files;
    std::vector<bool> named;  // per file: given on the command line (not found in a directory)
    for (const std::string& in : inputs) {
        std::error_code ec;
        if (std::filesystem::is_directory(in, ec)) {
            std::vector<std::string> found;
            for (const auto& e : std::filesystem::directory_iterator(in, ec))
                if (e.path().extension() == ".data") found.push_back(e.path().string());
            if (ec) return spec.error(in + ": " + ec.message());
            std::sort(found.begin(), found.end());
            if (found.empty()) return spec.error(in + ": no .data files");
            files.insert(files.end(), found.begin(), found.end());
            named.resize(files.size(), false);
        } else if (std::filesystem::exists(in, ec)) {
            files.push_back(in);
            named.push_back(true);
        } else {
            return spec.error(in + ": no such file or directory");
        }
    }
    size_t passed = 0, failed = 0, unexpected = 0;
    bool unreadable = false;
    for (size_t k = 0; k < files.size(); ++k) {
        const std::string& f = files[k];
        interp::ConformanceOutcome o = interp::run_conformance_file(f);
        const bool parse_error = named[k] && o.stage == interp::ConformanceOutcome::Stage::Read;
        if ((o.unreadable || parse_error) && !expect_fail) {
            std::fprintf(stderr, "patchfuzz conformance: %s\n", o.detail.c_str());
            unreadable = true;
        }
        (o.passed ? passed : failed)++;
        const bool as_expected = o.passed != expect_fail;
        if (!as_expected) ++unexpected;
        if (json) {
            std::printf("{\"file\":\"%s\",\"passed\":%s,\"expected\":%s,\"stage\":\"%s\",\"detail\":\"%s\"}\n",
                        json_escape(f).c_str(), o.passed ? "true" : "false", as_expected ? "true" : "false",
                        stage_name(o.stage), json_escape(o.detail).c_str());
        } else if (!as_expected || verbose) {
            std::printf("%s %s%s%s\n", o.passed ? "PASS" : "FAIL", f.c_str(), o.detail.empty() ? "" : ": ",
                        o.detail.empty() ? "" : o.detail.c_str());
        }
    }
    if (json)
        std::printf("{\"passed\":%zu,\"failed\":%zu,\"unexpected\":%zu,\"expect_fail\":%s}\n", passed, failed, unexpected,
                    expect_fail ? "true" : "false");
    std::printf("%zu passed, %zu failed\n", passed, failed);
    if (unreadable) return 2;
    return unexpected == 0 ? 0 : 1;
}

}  // namespace patchfuzz::cli
