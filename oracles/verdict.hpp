#pragma once
// Verdict: what every oracle returns. `Unknown` (solver timeout, step budget, resource limit) is
// never counted as a pass; every summary shows it.
#include <cstdint>
#include <string>
#include <string_view>

namespace patchfuzz::oracles {

enum class Outcome : uint8_t { Pass, Fail, Unknown, Skip };

inline std::string_view to_string(Outcome o) {
    switch (o) {
        case Outcome::Pass: return "pass";
        case Outcome::Fail: return "fail";
        case Outcome::Unknown: return "unknown";
        case Outcome::Skip: return "skip";
    }
    return "?";
}

struct Verdict {
    Outcome outcome = Outcome::Skip;
    std::string oracle;          // "structural", "smt-jump", "smt-inline", "exec", "kernel"
    std::string reason;          // one line: why (for fail: the broken rule; for unknown: timeout...)
    std::string counterexample;  // fail: concrete values (original index, expected/actual target, inputs)
    // Triage signature parts (issue 7): which pass / patch kind / divergence class / arch.
    std::string pass;
    std::string patch_kind;
    std::string divergence;      // e.g. "wrong-jump-target", "aux-slot", "erange-mismatch", "r0-mismatch"
    std::string arch;

    static Verdict pass_(std::string oracle, std::string reason = {}) {
        return Verdict{.outcome = Outcome::Pass, .oracle = std::move(oracle), .reason = std::move(reason)};
    }
    static Verdict skip(std::string oracle, std::string reason) {
        return Verdict{.outcome = Outcome::Skip, .oracle = std::move(oracle), .reason = std::move(reason)};
    }
    static Verdict unknown(std::string oracle, std::string reason) {
        return Verdict{.outcome = Outcome::Unknown, .oracle = std::move(oracle), .reason = std::move(reason)};
    }
    static Verdict fail(std::string oracle, std::string divergence, std::string reason, std::string cex) {
        return Verdict{.outcome = Outcome::Fail,
                       .oracle = std::move(oracle),
                       .reason = std::move(reason),
                       .counterexample = std::move(cex),
                       .divergence = std::move(divergence)};
    }
};

}  // namespace patchfuzz::oracles
