#include "harness/triage/root_cause.hpp"

#include <string_view>
#include <utility>

#include "oracles/exec/exec_diff.hpp"

namespace patchfuzz::harness {

std::string root_cause_key(const OracleVerdict& v) {
    const std::string sig = signature_of(v);
    // The signature's parts: oracle/pass/patch-kind/divergence/arch.
    const size_t last = sig.rfind('/');
    const std::string sans_arch = sig.substr(0, last);
    // A plugin that crashed, hung or wrote into its input: that is the cause, whatever patch shape
    // the case had (the supervisor's words are in the counterexample; harness/plugin/).
    if (v.verdict.oracle == "structural") {
        const std::string& cex = v.verdict.counterexample;
        static constexpr std::pair<std::string_view, std::string_view> kMisbehaviour[] = {
            {": crashed (", "crashed"}, {": hung (", "hung"}, {": wrote into its input", "wrote-input"}};
        if (cex.find("plugin:") != std::string::npos)
            for (const auto& [said, key] : kMisbehaviour)
                if (cex.find(said) != std::string::npos) return "structural/plugin-" + std::string(key);
    }
    if (v.verdict.oracle != "exec") return sans_arch;
    std::string cause = oracles::exec::exec_cause(v.verdict);
    // Without a cause (the oracle could not pin one pass), the pass and patch kind are all there
    // is: still no symptom in the key.
    if (cause.empty()) return sans_arch.substr(0, sans_arch.rfind('/'));
    for (char& c : cause)
        if (c == '/') c = ':';
    return "exec/" + cause;
}

}  // namespace patchfuzz::harness
