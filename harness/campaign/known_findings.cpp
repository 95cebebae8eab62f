#include "harness/campaign/known_findings.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "bpf/arch/arch_profile.hpp"
#include "harness/triage/root_cause.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::harness {

namespace fs = std::filesystem;

std::string finding_key(const OracleVerdict& v) { return root_cause_key(v); }

KnownFindings KnownFindings::load(const std::string& dir, const RunConfig& campaign_cfg) {
    KnownFindings kf;
    // The filed findings are behaviour of the kernel model; an external patcher under test never
    // contributes known keys (its failures must all be seen).
    RunConfig cfg = campaign_cfg;
    cfg.external = nullptr;
    cfg.external_name.clear();
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec)) return kf;
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".case") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        auto c = read_case(f.string());
        if (!c) {
            kf.notes_.push_back("unreadable known finding: " + c.error().to_string());
            continue;
        }
        ++kf.files_;
        // Only the failure the file was filed for (its `-- expect fail SIG`, on any arch profile)
        // becomes known: a filed case that also fails some other way under this configuration
        // (a broken inline fails the smt-inline proofs on every case) must still be reported.
        const std::string expected = c->expect.rfind("fail ", 0) == 0 ? c->expect.substr(5) : "";
        const std::string expected_sans_arch = expected.substr(0, expected.rfind('/') + 1);
        if (expected_sans_arch.empty()) {
            kf.notes_.push_back("known finding " + f.string() + " has no '-- expect fail SIGNATURE': ignored");
            continue;
        }
        const CaseReport r = run_case(*c, cfg);
        bool any = false;
        for (const auto& v : r.verdicts) {
            if (v.verdict.outcome != oracles::Outcome::Fail) continue;
            const std::string sig = signature_of(v);
            if (sig.compare(0, expected_sans_arch.size(), expected_sans_arch) != 0) continue;
            kf.keys_.insert(finding_key(v));
            any = true;
        }
        if (any) continue;
        // Not failing is only news when the oracle that filed it runs ("fail <oracle>/...") on the
        // profile it was filed on (the signature's last part, "-" for none): a jit32 finding
        // does not fail under --arch x86_64, fixed or not.
        const std::string oracle = expected.substr(0, expected.find('/'));
        const std::string filed_arch = expected.substr(expected.rfind('/') + 1);
        const bool arch_runs = filed_arch == "-" || std::any_of(cfg.arches.begin(), cfg.arches.end(),
                                                                [&](const ArchProfile& a) { return a.name == filed_arch; });
        const auto filed_oracle = oracles::parse_oracle(oracle);
        if (arch_runs && filed_oracle && cfg.oracles.has(*filed_oracle))
            kf.notes_.push_back("known finding " + f.string() + " no longer fails (fixed? then move it to a regression suite)");
    }
    return kf;
}

bool KnownFindings::is_known(const OracleVerdict& v) const {
    return v.verdict.outcome == oracles::Outcome::Fail && keys_.count(finding_key(v)) != 0;
}

CaseReport KnownFindings::without_known(const CaseReport& report) const {
    CaseReport out = report;
    std::erase_if(out.verdicts, [&](const OracleVerdict& v) { return is_known(v); });
    return out;
}

}  // namespace patchfuzz::harness
