#pragma once
// Known findings: the genuine divergences already filed as regression cases
// (corpus/regression/findings/*.case). A campaign (and the exec fuzz target) counts a failure that
// matches one as "known" instead of writing a new bucket, so a default campaign on a clean tree
// shows 0 new findings unless something new appears.
//
// A filed case is run once under the campaign's RunConfig (every arch profile of it, not only the
// case's own), and each failing verdict with its `-- expect` signature (on any arch) contributes
// its key: the root cause the campaign files buckets under (harness/triage/root_cause.hpp), so a
// known bug seen through another symptom or on another arch profile is still known, and a symptom
// caused by a different pass is still new. A filed case that no longer fails contributes nothing (and,
// when the oracle named by its `-- expect` runs, is listed in notes()): the bug is fixed, and
// seeing it again would be news. An external patcher (--patcher-lib) is left out of the loading
// run: its failures are never masked.
#include <set>
#include <string>
#include <vector>

#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

// root_cause_key(v) (harness/triage/root_cause.hpp): the key buckets are filed under.
std::string finding_key(const OracleVerdict& v);

class KnownFindings {
public:
    // Loads every *.case under `dir` (recursively; a missing dir gives an empty set), running each
    // under `cfg` without its external patcher. Unreadable files and files that no longer fail are
    // reported in notes(), never fatal.
    static KnownFindings load(const std::string& dir, const RunConfig& cfg);

    [[nodiscard]] bool empty() const { return keys_.empty(); }
    [[nodiscard]] bool is_known(const OracleVerdict& v) const;
    // `report` without the failing verdicts that are known (what is left is new).
    [[nodiscard]] CaseReport without_known(const CaseReport& report) const;
    [[nodiscard]] const std::set<std::string>& keys() const { return keys_; }
    [[nodiscard]] uint32_t files() const { return files_; }
    [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

    void add_key(std::string key) { keys_.insert(std::move(key)); }

private:
    std::set<std::string> keys_;
    uint32_t files_ = 0;
    std::vector<std::string> notes_;
};

}  // namespace patchfuzz::harness
