// patchfuzz triage CASE...|DIR --out DIR: bucket failing cases by semantic signature, minimize one
// per bucket, write its reproducers.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/runner/expectation.hpp"
#include "harness/triage/triage.hpp"

namespace patchfuzz::cli {
namespace {

void triage_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz triage CASE.case|DIR... --out DIR\n\n"
                 "Run each case (a directory is searched recursively for *.case), and put every failing one\n"
                 "into a bucket named after its semantic signature (oracle/pass/patch-kind/divergence/arch)\n"
                 "under DIR/findings/. A new bucket gets the minimized case (.case), a bpf_conformance .data\n"
                 "for execution findings, a kernel selftest snippet, the verdict, and a replay line.\n\n"
                 "exit: 0 nothing failed, 1 findings were bucketed, 2 bad input or usage\n");
}

int bad(const std::string& m) {
    std::fprintf(stderr, "patchfuzz triage: %s\n", m.c_str());
    return 2;
}

}  // namespace

int cmd_triage(Args args) {
    namespace fs = std::filesystem;
    std::vector<std::string> inputs;
    std::string out;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        if (a == "--help" || a == "-h") {
            triage_usage(stdout);
            return 0;
        } else if (a == "--out") {
            if (i + 1 >= args.size()) return bad("--out needs a directory");
            out = args[++i];
        } else if (!a.empty() && a[0] == '-') {
            return bad("unknown option '" + a + "' (see --help)");
        } else {
            inputs.push_back(a);
        }
    }
    if (inputs.empty() || out.empty()) {
        triage_usage(stderr);
        return 2;
    }
    std::vector<std::string> files;
    for (const auto& p : inputs) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::recursive_directory_iterator(p, ec))
                if (e.is_regular_file() && e.path().extension() == ".case") files.push_back(e.path().string());
        } else if (fs::exists(p, ec)) {
            files.push_back(p);
        } else {
            return bad(p + ": no such file or directory");
        }
    }
    std::sort(files.begin(), files.end());
    unsigned failing = 0, buckets = 0, bad_files = 0;
    for (const auto& f : files) {
        auto c = harness::read_case(f);
        if (!c) {
            std::fprintf(stderr, "patchfuzz triage: %s\n", c.error().to_string().c_str());
            ++bad_files;
            continue;
        }
        const auto cfg = harness::replay_config(*c, harness::RunConfig{});
        const auto report = harness::run_case(*c, cfg);
        if (!report.failed()) continue;
        ++failing;
        const auto tr = harness::triage_failure(*c, report, cfg, out);
        buckets += tr.new_bucket;
        std::printf("%s: %s -> %s%s (%u -> %u insns)\n", f.c_str(), tr.signature.c_str(), tr.bucket_dir.c_str(),
                    tr.new_bucket ? " [new]" : "", tr.original_insns, tr.minimized_insns);
    }
    std::printf("%zu cases, %u failing, %u new bucket(s)\n", files.size(), failing, buckets);
    if (bad_files) return 2;
    return failing ? 1 : 0;
}

}  // namespace patchfuzz::cli
