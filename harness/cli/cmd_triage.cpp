// patchfuzz triage CASE...|DIR --out DIR: bucket failing cases by semantic signature, minimize one
// per bucket, write its reproducers.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/runner/expectation.hpp"
#include "harness/triage/triage.hpp"

namespace patchfuzz::cli {

int cmd_triage(Args args) {
    namespace fs = std::filesystem;
    std::vector<std::string> inputs;
    std::string out;
    const VerbFlags spec{
        .verb = "triage",
        .usage = {"patchfuzz triage CASE.case|DIR... --out DIR"},
        .about = "Run each case (a directory is searched recursively for *.case), and put every failing one\n"
                 "into a bucket named after its semantic signature (oracle/pass/patch-kind/divergence/arch)\n"
                 "under DIR/findings/. A new bucket gets the minimized case (.case), a bpf_conformance .data\n"
                 "for execution findings, a kernel selftest snippet, the verdict, and a replay line.",
        .flags = {text_flag({"--out"}, "DIR", "where the buckets go (DIR/findings/<bucket>/)", out).require()},
        .positionals = Positionals{.name = "CASE.case", .noun = "input", .required = true, .many = true,
                                   .take = [&](const std::string& a) { inputs.push_back(a); }},
        .exit = "exit: 0 nothing failed, 1 findings were bucketed, 2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    std::vector<std::string> files;
    for (const auto& p : inputs) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::recursive_directory_iterator(p, ec))
                if (e.is_regular_file() && e.path().extension() == ".case") files.push_back(e.path().string());
        } else if (fs::exists(p, ec)) {
            files.push_back(p);
        } else {
            return spec.error(p + ": no such file or directory");
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
