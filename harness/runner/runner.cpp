// The runner's plain loop, "profile x pass x batch x oracle", written out with every oracle called
// through the oracles::Oracle interface and nothing reused between profiles, batches or cases.
// It is the reference: run_case() takes the memoised path (memo_runner.cpp) unless
// RunConfig::memoise is false, and runner_test holds the two to the very same reports.
#include "harness/runner/runner.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/util/check.hpp"
#include "harness/runner/memo_runner.hpp"
#include "harness/runner/runner_parts.hpp"
#include "oracles/builtin_oracles.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::harness {
namespace {

using namespace runner_parts;

// The report being made: verdicts are filed under a profile, a pass and a patcher, and a passing
// one is only counted when RunConfig::keep_passes is false.
class ReportSink {
public:
    ReportSink(CaseReport& report, bool keep_passes) : report_(report), keep_passes_(keep_passes) {}
    void add(oracles::Verdict&& v, const std::string& arch, std::string_view pass, std::string_view patcher) {
        if (!keep_passes_ && v.outcome == oracles::Outcome::Pass) {
            ++report_.counted_passes;
            return;
        }
        v.arch = arch;
        v.pass = std::string(pass);
        report_.verdicts.emplace_back(std::move(v), arch, pass, patcher);
    }

private:
    CaseReport& report_;
    bool keep_passes_;
};

// A patcher under test next to the reference.
struct Candidate {
    std::string name;
    patch::Patcher* patcher = nullptr;
};

// Wraps the reference patcher for one profile's rewrite: every batch a pass hands it is applied by
// each candidate to a copy of the program and by the reference in place, and then judged at once
// by the batch oracles: each candidate's result against the reference's, then the reference's own.
class JudgingPatcher final : public patch::Patcher {
public:
    JudgingPatcher(patch::Patcher& reference, std::string reference_name, std::vector<Candidate> candidates,
                   std::vector<oracles::Oracle*> batch_oracles, ReportSink& sink, const std::string& arch,
                   patch::CoverageSet* coverage)
        : reference_(reference), reference_name_(std::move(reference_name)), candidates_(std::move(candidates)),
          batch_oracles_(std::move(batch_oracles)), sink_(sink), arch_(arch), coverage_(coverage) {}

    std::string_view name() const override { return reference_.name(); }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        if (coverage_ != nullptr) coverage_->add(prog, batch, patch::BatchContext{.batch_index = batches});
        ++batches;
        const Program before = prog;
        std::vector<Program> results(candidates_.size(), before);
        std::vector<patch::PatchOutcome> outcomes;
        for (size_t i = 0; i < candidates_.size(); ++i) outcomes.push_back(candidates_[i].patcher->apply(results[i], batch));
        const patch::PatchOutcome outcome = reference_.apply(prog, batch);

        oracles::Evidence e;
        e.before = &before;
        e.batch = &batch;
        e.reference = {reference_name_, &prog, outcome};
        const std::string_view kind = kind_of(batch);
        auto judge = [&](std::string_view patcher) {
            for (oracles::Oracle* oracle : batch_oracles_)
                if (oracle->applies_to(e))
                    for (oracles::Verdict& v : oracle->judge(e)) {
                        v.patch_kind = kind;
                        sink_.add(std::move(v), arch_, current_pass, patcher);
                    }
        };
        for (size_t i = 0; i < candidates_.size(); ++i) {
            e.candidate = {candidates_[i].name, &results[i], outcomes[i]};
            judge(candidates_[i].name);
        }
        e.candidate = e.reference;
        judge(reference_name_);
        return outcome;
    }

    std::string_view current_pass;  // a trigger_names() entry
    uint32_t batches = 0;

private:
    patch::Patcher& reference_;
    std::string reference_name_;
    std::vector<Candidate> candidates_;
    std::vector<oracles::Oracle*> batch_oracles_;
    ReportSink& sink_;
    const std::string& arch_;
    patch::CoverageSet* coverage_;
};

std::unique_ptr<patch::Patcher> patcher_named(const std::string& name) {
    auto p = patch::make_patcher(name);
    PATCHFUZZ_CHECK(p != nullptr, "runner given an unknown patcher (the CLI validates names)");
    return p;
}

}  // namespace

CaseReport run_case(const Case& c, const RunConfig& cfg) {
    return cfg.memoise ? run_case_memoised(c, cfg) : run_case_plain(c, cfg);
}

CaseReport run_case_plain(const Case& c, const RunConfig& cfg) {
    CaseReport report;
    ReportSink sink(report, cfg.keep_passes);
    const std::vector<std::string> patcher_names = patcher_names_of(c, cfg);
    PATCHFUZZ_CHECK(!patcher_names.empty(), "runner needs at least one patcher");

    // The oracles, by scope, in the order their verdicts are filed (kAllOracles').
    const oracles::OracleSet& wanted = cfg.oracles;
    oracles::smt::SmtOptions so;
    so.timeout_ms = cfg.smt_timeout_ms;
    std::vector<std::unique_ptr<oracles::Oracle>> owned;
    if (wanted.has(oracles::OracleId::Structural)) owned.push_back(oracles::make_structural_oracle());
    if (wanted.has(oracles::OracleId::SmtJump)) owned.push_back(oracles::make_smt_jump_oracle(so));
    if (wanted.has(oracles::OracleId::SmtInline)) owned.push_back(oracles::make_smt_inline_oracle(so));
    if (wanted.has(oracles::OracleId::Exec)) {
        oracles::exec::ExecDiffOptions eo;
        eo.patchers = patcher_names;
        eo.inputs = cfg.exec_inputs;
        eo.seed = c.seed;
        eo.failure_details = cfg.failure_details;
        owned.push_back(oracles::make_exec_oracle(std::move(eo)));
    }
    std::vector<oracles::Oracle*> batch_oracles, arch_oracles, case_oracles;
    for (const auto& o : owned)
        (o->scope() == oracles::Scope::Batch ? batch_oracles : o->scope() == oracles::Scope::Arch ? arch_oracles : case_oracles)
            .push_back(o.get());

    // The reference patcher, and every other one (the external plugin last) when a batch oracle
    // compares them with it.
    const std::unique_ptr<patch::Patcher> reference = patcher_named(patcher_names[0]);
    std::vector<std::unique_ptr<patch::Patcher>> others;
    std::vector<Candidate> candidates;
    if (!batch_oracles.empty()) {
        for (size_t i = 1; i < patcher_names.size(); ++i) {
            others.push_back(patcher_named(patcher_names[i]));
            candidates.push_back({patcher_names[i], others.back().get()});
        }
        if (cfg.external != nullptr) candidates.push_back({cfg.external_name, cfg.external});
    }

    const std::vector<std::string_view>& slots = trigger_names();
    const size_t explicit_slot = slots.size() - 1;
    Triggers triggers;
    std::vector<ArchProfile> rewritten_arches;  // the profiles whose rewrite succeeded, for the case oracles
    for (const ArchProfile& arch : cfg.arches) {
        const std::string arch_name(arch.name);
        passes::RewriteOptions opts = c.options;
        opts.arch = arch;

        JudgingPatcher judging(*reference, patcher_names[0], candidates, batch_oracles, sink, arch_name, cfg.coverage);
        Program prog = c.program;
        patch::PatchOutcome outcome;
        if (!c.patches.empty()) {
            judging.current_pass = slots[explicit_slot];
            for (const patch::PatchBatch& b : c.patches) {
                outcome = judging.apply(prog, b);
                triggers.add(explicit_slot, static_cast<uint32_t>(b.patches.size()));
                if (!outcome.ok()) break;
            }
        } else {
            for (size_t pi = 0; pi < explicit_slot; ++pi) {
                if (!c.options.only.empty() && std::find(c.options.only.begin(), c.options.only.end(), slots[pi]) == c.options.only.end())
                    continue;
                judging.current_pass = slots[pi];
                passes::PassRun one = passes::run_pass(pi, prog, judging, opts);
                triggers.add(pi, one.patches);
                outcome = std::move(one.outcome);
                if (!outcome.ok()) break;
            }
        }
        report.batches += judging.batches;

        oracles::Evidence e;
        e.arch = &arch;
        e.options = &opts;
        for (oracles::Oracle* oracle : arch_oracles)
            if (oracle->applies_to(e))
                for (oracles::Verdict& v : oracle->judge(e)) {
                    const std::string sequence = v.patch_kind;  // the proof's subject stands where a patcher would
                    sink.add(std::move(v), arch_name, "iter_inline", sequence);
                }
        // Runs compare a rewrite by the passes with the original: not a case's explicit batches.
        if (outcome.ok() && c.patches.empty()) rewritten_arches.push_back(arch);
    }
    triggers.add_to(report.pass_triggers);

    // The case oracles: exec when a profile's rewrite succeeded, the ones given from outside (the
    // kernel) whenever the passes ran.
    const oracles::Evidence e = case_evidence(c, rewritten_arches);
    auto judge_case = [&](oracles::Oracle& oracle) {
        if (oracle.applies_to(e))
            for (oracles::Verdict& v : oracle.judge(e)) {
                const std::string arch = filed_arch(v, rewritten_arches);
                sink.add(std::move(v), arch, "", "");
            }
    };
    if (!rewritten_arches.empty())
        for (oracles::Oracle* oracle : case_oracles) judge_case(*oracle);
    if (c.patches.empty())
        for (oracles::Oracle* oracle : cfg.extra_oracles) judge_case(*oracle);
    return report;
}

bool CaseReport::failed() const { return first_failure() != nullptr; }

uint32_t CaseReport::unknown_count() const {
    uint32_t n = 0;
    for (const auto& v : verdicts) n += v.verdict.outcome == oracles::Outcome::Unknown;
    return n;
}

const OracleVerdict* CaseReport::first_failure() const {
    for (const auto& v : verdicts)
        if (v.verdict.outcome == oracles::Outcome::Fail) return &v;
    return nullptr;
}

std::string signature_of(const OracleVerdict& v) {
    // Five '/'-separated parts; a part that itself contains '/' (an inline sequence name such as
    // "bpf_iter_num_new/v3") uses ':' instead, so the shape stays fixed.
    auto part = [](std::string s) {
        if (s.empty()) return std::string("-");
        for (char& c : s)
            if (c == '/') c = ':';
        return s;
    };
    const auto& d = v.verdict;
    return part(d.oracle) + "/" + part(v.pass) + "/" + part(d.patch_kind) + "/" + part(d.divergence) + "/" +
           part(v.arch);
}

}  // namespace patchfuzz::harness
