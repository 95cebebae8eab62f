#include "harness/kernel/kernel_oracle.hpp"

#include <sstream>
#include <utility>

#include "bpf/util/check.hpp"

namespace patchfuzz::kernel {
namespace {

constexpr const char* kOracle = "kernel";

class KernelOracle final : public oracles::Oracle {
public:
    KernelOracle(KernelChecker checker, const ArchProfile& model_arch) : checker_(std::move(checker)), arch_(model_arch) {}
    oracles::OracleId id() const override { return oracles::OracleId::Kernel; }
    oracles::Scope scope() const override { return oracles::Scope::Case; }
    bool applies_to(const oracles::Evidence& e) const override { return e.program != nullptr; }
    std::vector<oracles::Verdict> judge(const oracles::Evidence& e) override {
        PATCHFUZZ_CHECK(applies_to(e), "the kernel oracle is given the case's program");
        KernelCase kc;
        kc.name = "case";
        kc.program = *e.program;
        kc.inputs.assign(e.inputs.begin(), e.inputs.end());
        kc.test_rnd_hi32 = e.options != nullptr && e.options->test_rnd_hi32;
        kc.privilege = e.privilege;
        auto report = checker_({kc});
        if (!report) {
            oracles::Verdict v = oracles::Verdict::unknown(kOracle, "the kernel could not be run: " + report.error().to_string());
            v.arch = std::string(arch_.name);
            return {std::move(v)};
        }
        PATCHFUZZ_CHECK(report->cases.size() == 1, "a kernel check of one case reports one outcome");
        return {kernel_verdict(*report, report->cases[0], arch_)};
    }

private:
    KernelChecker checker_;
    ArchProfile arch_;
};

}  // namespace

oracles::Verdict kernel_verdict(const CheckReport& report, const CaseOutcome& o, const ArchProfile& model_arch) {
    const std::string kernel = "Linux " + report.release;
    oracles::Verdict v;
    if (const char* divergence = divergence_of(o); divergence != nullptr) {
        std::ostringstream shown;
        print_case_outcome(shown, o);
        std::string reason = kernel + ": " + std::string(divergence);
        if (!o.key.empty()) reason += " (" + o.key + ")";
        if (!o.rewrite_class.empty()) reason += " [" + o.rewrite_class + "]";
        v = oracles::Verdict::fail(kOracle, divergence, reason, shown.str());
    } else if (o.agreement == Agreement::Rejected) {
        std::string why = o.log.empty() ? "rc " + std::to_string(o.rc) : o.log.back();
        v = oracles::Verdict::skip(kOracle, kernel + " rejected the program: " + why);
    } else {
        std::string reason = kernel + ": the xlated program is the model's (" + std::to_string(o.kernel_len) + " insns, " +
                             std::to_string(o.masked) + " masked)";
        if (!o.runs.empty()) reason += ", " + std::to_string(o.runs.size()) + " test runs agree with the interpreter";
        v = oracles::Verdict::pass_(kOracle, std::move(reason));
    }
    v.arch = std::string(model_arch.name);
    return v;
}

std::unique_ptr<oracles::Oracle> make_kernel_oracle(const CheckOptions& opts) {
    return make_kernel_oracle([opts](const std::vector<KernelCase>& cases) { return check_cases(cases, opts); }, opts.arch);
}

std::unique_ptr<oracles::Oracle> make_kernel_oracle(KernelChecker checker, const ArchProfile& model_arch) {
    return std::make_unique<KernelOracle>(std::move(checker), model_arch);
}

}  // namespace patchfuzz::kernel
