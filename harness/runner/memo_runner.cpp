#include "harness/runner/memo_runner.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>
#include <mutex>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/patch/side_by_side.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/thread_lease.hpp"
#include "oracles/exec/exec_diff.hpp"
#include "oracles/oracle.hpp"
#include "oracles/smt/inline_equiv.hpp"
#include "oracles/smt/jump_oracle.hpp"
#include "oracles/structural.hpp"
#include "harness/runner/runner_parts.hpp"

namespace patchfuzz::harness {
namespace {

using runner_parts::kind_of;
using runner_parts::trigger_names;
using runner_parts::Triggers;
using runner_parts::filed_arch;

// One other patcher's run on a batch the reference was given: made on the same program just
// before the reference applies the batch, and compared with the reference's result at once.
struct OtherRun {
    std::string_view name;  // the recorder's name of it (RecordingPatcher::names_)
    patch::PatchOutcome outcome;
    bool agrees = false;  // the very outcome and program of the reference
    Program out;          // its result; kept only when it disagrees
};

// Per batch a pass hands the reference: the evidence every oracle needs. The programs before and
// after are copies, made only for the oracles that read them (smt-jump, and a disagreement's
// report); the others' agreement is settled while the program is at hand.
struct RecordedBatch {
    std::string_view pass;  // a trigger_names() entry
    std::string_view kind;  // kind_of(batch): what the patches do
    patch::PatchOutcome outcome;
    patch::PatchBatch batch;  // kept with the programs, for smt-jump
    Program before, after;    // empty unless kept (see above)
    size_t after_len = 0;   // the reference's result's length, kept or not
    std::vector<OtherRun> others;
};

// Wraps the reference patcher: every batch is applied by each other patcher to a copy of the
// program and by the reference in place (patch::SideBySide), and recorded.
class RecordingPatcher final : public patch::Patcher {
public:
    RecordingPatcher(patch::Patcher& inner, const std::vector<std::pair<std::string, patch::Patcher*>>& others,
                     bool keep_programs)
        : inner_(inner), side_(pointers(others)), keep_programs_(keep_programs) {
        for (const auto& o : others) names_.push_back(o.first);
    }
    // Where the batches from now on are recorded (one list per arch profile).
    void record_into(std::vector<RecordedBatch>& out) { out_ = &out; }
    std::string_view name() const override { return inner_.name(); }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        if (coverage != nullptr) coverage->add(prog, batch, patch::BatchContext{.batch_index = static_cast<uint32_t>(out_->size())});
        RecordedBatch& r = out_->emplace_back();
        r.pass = current_pass;
        r.kind = kind_of(batch);
        if (keep_programs_) {
            r.batch = batch;
            r.before = prog;
        }
        r.outcome = side_.apply(inner_, prog, batch);
        // Only a disagreeing result is kept (moved out); an agreeing one's storage is reused.
        bool keep_after = keep_programs_;
        for (size_t i = 0; i < side_.size(); ++i) {
            OtherRun& o = r.others.emplace_back();
            o.name = names_[i];
            o.outcome = side_.outcome(i);
            o.agrees = side_.same(i);
            if (!o.agrees) {
                keep_after = true;
                o.out = side_.take_result(i);
            }
        }
        if (keep_after) r.after = prog;
        r.after_len = prog.insns.size();
        return r.outcome;
    }
    std::string_view current_pass;  // a trigger_names() entry
    patch::CoverageSet* coverage = nullptr;  // RunConfig::coverage of the case being run

private:
    static std::vector<patch::Patcher*> pointers(const std::vector<std::pair<std::string, patch::Patcher*>>& others) {
        std::vector<patch::Patcher*> v;
        for (const auto& o : others) v.push_back(o.second);
        return v;
    }

    patch::Patcher& inner_;
    patch::SideBySide side_;
    std::vector<std::string> names_;
    bool keep_programs_;
    std::vector<RecordedBatch>* out_ = nullptr;
};

// The patchers a case runs with (the reference and, when `with_others`, one of each other patcher
// and the external plugin) and the recorder around them. Patchers keep only storage between batches
// (patch.hpp), and so does the recorder (the other patchers' result programs): a thread's set serves
// one case after another, which then start with the storage the earlier cases grew instead of
// allocating it all again.
class CasePatchers {
public:
    CasePatchers(const std::vector<std::string>& names, bool with_others, patch::Patcher* external,
                 const std::string& external_name, bool keep_programs)
        : names_(names), with_others_(with_others), external_(external), keep_programs_(keep_programs) {
        reference_ = patch::make_patcher(names[0]);
        PATCHFUZZ_CHECK(reference_ != nullptr, "runner given an unknown patcher (the CLI validates names)");
        std::vector<std::pair<std::string, patch::Patcher*>> others;
        if (with_others)
            for (size_t i = 1; i < names.size(); ++i) {
                other_patchers_.push_back(patch::make_patcher(names[i]));
                PATCHFUZZ_CHECK(other_patchers_.back() != nullptr, "runner given an unknown patcher (the CLI validates names)");
                others.emplace_back(names[i], other_patchers_.back().get());
            }
        internal_others_ = others.size();  // the external plugin, if any, comes last
        if (external != nullptr) others.emplace_back(external_name, external);
        has_others_ = !others.empty();
        recorder_.emplace(*reference_, others, keep_programs);
    }

    [[nodiscard]] bool serves(const std::vector<std::string>& names, bool with_others, patch::Patcher* external,
                              bool keep_programs) const {
        return names == names_ && with_others == with_others_ && external == external_ && keep_programs == keep_programs_;
    }
    patch::Patcher& reference() { return *reference_; }
    RecordingPatcher& recorder() { return *recorder_; }
    [[nodiscard]] size_t internal_others() const { return internal_others_; }
    [[nodiscard]] bool has_others() const { return has_others_; }

private:
    std::vector<std::string> names_;
    bool with_others_;
    patch::Patcher* external_;
    bool keep_programs_;
    std::unique_ptr<patch::Patcher> reference_;
    std::vector<std::unique_ptr<patch::Patcher>> other_patchers_;
    size_t internal_others_ = 0;
    bool has_others_ = false;
    std::optional<RecordingPatcher> recorder_;
};

// The programs a thread's cases rewrite, kept from one case to the next: a copy assigned into one
// reuses its arrays, and an InsnAux array already as long as the copy is overwritten as bytes
// (std::vector constructs new elements one by one: InsnAux has default member initializers).
// `copy_to_rewrite` also leaves room for what the passes usually add: the incremental patcher makes
// room for a batch's growth up front, and an array without it would move on the first batch that
// grows.
class RewritePrograms {
public:
    static Program copy_to_rewrite(const Program& p) {
        std::vector<Program>& spare = pool();
        Program q;
        if (!spare.empty()) {
            q = std::move(spare.back());
            spare.pop_back();
        }
        const size_t room = p.insns.size() + p.insns.size() / 2 + 64;
        q.insns.reserve(room);
        q.aux.reserve(room);
        q = p;  // a copy assignment keeps the capacity
        return q;
    }
    // Programs a case is done with, for the next cases' copies.
    static void give_back(Program&& p) {
        std::vector<Program>& spare = pool();
        if (spare.size() < kKept) spare.push_back(std::move(p));
    }

private:
    static constexpr size_t kKept = 4;  // a case rewrites at most one program per profile, and keeps one more
    static std::vector<Program>& pool() {
        thread_local std::vector<Program> spare;
        return spare;
    }
};

bool same_batch(const patch::PatchBatch& a, const patch::PatchBatch& b) {
    if (a.patches.size() != b.patches.size()) return false;
    for (size_t i = 0; i < a.patches.size(); ++i) {
        const auto &x = a.patches[i], &y = b.patches[i];
        if (x.kind != y.kind || x.pos != y.pos || x.count != y.count || x.insns.size() != y.insns.size()) return false;
        for (size_t k = 0; k < x.insns.size(); ++k)
            if (!isa::same(x.insns[k], y.insns[k])) return false;
    }
    return true;
}

// The per-batch SMT verdicts are pure functions of (program before, batch, patcher). Under
// another arch profile the passes mostly emit the very same batch on the very same program (x86_64
// and jit32 share all but the zext batches), so those verdicts are reused instead of recomputed.
// Only kept with the SMT jump oracle on: without it a batch's verdicts cost less than the lookup.
struct BatchVerdicts {
    const RecordedBatch* rb;             // lives in run_case's per-arch batch lists
    std::vector<OracleVerdict> verdicts;
    uint32_t counted_passes = 0;         // the passes among them not kept (RunConfig::keep_passes)
};

const BatchVerdicts* find_same(const std::vector<BatchVerdicts>& memo, const RecordedBatch& rb) {
    for (const auto& m : memo)
        if (m.rb->pass == rb.pass && m.rb->before.len() == rb.before.len() && same_batch(m.rb->batch, rb.batch) &&
            m.rb->before == rb.before)
            return &m;
    return nullptr;
}

// A place in a CaseReport being made: the verdicts kept and the passes counted so far. A
// profile's verdicts are the ones between two marks.
struct ReportMark {
    size_t verdicts = 0;
    uint32_t counted_passes = 0;
};

// Inline proofs depend only on (arch, iterator variant): prove once per process.
std::vector<oracles::smt::InlineProof> inline_proofs(const ArchProfile& arch, passes::IterInline iter,
                                                     uint32_t timeout_ms) {
    static std::mutex mu;
    static std::map<std::string, std::vector<oracles::smt::InlineProof>> cache;
    const std::string key = std::string(arch.name) + "/" + std::to_string(int(iter));
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    oracles::smt::InlineProofOptions o;
    o.arches = {arch};
    o.iter = iter;
    o.smt.timeout_ms = timeout_ms;
    return cache[key] = oracles::smt::prove_inlines(o);
}

}  // namespace

CaseReport run_case_memoised(const Case& c, const RunConfig& cfg) {
    CaseReport report;
    // A verdict per batch and profile: room for a usual case's, so that growing the vector does
    // not move them (eleven strings each) again and again. With the passes only counted, most
    // reports keep none.
    if (cfg.keep_passes) report.verdicts.reserve(16);
    const std::vector<std::string> patcher_names = runner_parts::patcher_names_of(c, cfg);
    PATCHFUZZ_CHECK(!patcher_names.empty(), "runner needs at least one patcher");

    // Whether a verdict of this outcome is only counted (RunConfig::keep_passes): then it is
    // counted here, and need not be made at all.
    auto only_counted = [&report, keep_passes = cfg.keep_passes](oracles::Outcome outcome) {
        if (keep_passes || outcome != oracles::Outcome::Pass) return false;
        ++report.counted_passes;
        return true;
    };
    // Verdicts are built in place: a verdict is eleven strings, and this runs for every batch.
    auto keep = [&](oracles::Verdict&& v, const std::string& arch, std::string_view pass, std::string_view patcher) {
        OracleVerdict& added = report.verdicts.emplace_back(std::move(v), arch, pass, patcher);
        added.verdict.arch = arch;
        added.verdict.pass = added.pass;
    };
    auto add = [&](oracles::Verdict&& v, const std::string& arch, std::string_view pass, std::string_view patcher) {
        if (!only_counted(v.outcome)) keep(std::move(v), arch, pass, patcher);
    };
    // The verdicts between two marks again, under another profile's name: room for them first,
    // so that the vector does not move while they are copied from it.
    auto add_again = [&](ReportMark from, ReportMark to, const std::string& arch) {
        report.counted_passes += to.counted_passes - from.counted_passes;
        report.verdicts.reserve(report.verdicts.size() + (to.verdicts - from.verdicts));
        for (size_t k = from.verdicts; k < to.verdicts; ++k) {
            OracleVerdict& again = report.verdicts.emplace_back(report.verdicts[k]);
            again.verdict.arch = arch;
            again.arch = arch;
        }
    };
    auto mark = [&report] { return ReportMark{report.verdicts.size(), report.counted_passes}; };

    const std::vector<std::string_view>& slot_names = trigger_names();
    PATCHFUZZ_CHECK(slot_names.size() <= Triggers::kSlots, "Triggers has a slot for every pass");
    const size_t explicit_slot = slot_names.size() - 1;
    Triggers case_triggers;  // every profile's, for report.pass_triggers
    const oracles::OracleSet& wanted = cfg.oracles;
    const bool structural = wanted.has(oracles::OracleId::Structural), smt_jump = wanted.has(oracles::OracleId::SmtJump),
               exec = wanted.has(oracles::OracleId::Exec);
    // One entry per profile at most: room for all of them first keeps their addresses stable
    // (`memo` points into the batch lists, `given_rewrites` at the programs).
    std::vector<std::vector<RecordedBatch>> batches_per_arch;
    batches_per_arch.reserve(cfg.arches.size());
    std::vector<BatchVerdicts> memo;
    std::vector<ArchProfile> exec_arches;  // profiles whose rewrite succeeded, for the exec oracle
    // Rewrites the exec oracle need not make again: the reference's whole rewrite per profile, and
    // another patcher's when each of its batches gave the reference's very program and outcome
    // (the passes are deterministic functions of the program, so its whole rewrite is the same).
    const bool per_batch = structural || smt_jump;
    std::vector<Program> rewritten_per_arch;
    rewritten_per_arch.reserve(cfg.arches.size());
    std::vector<oracles::exec::GivenRewrite> given_rewrites;
    given_rewrites.reserve(cfg.arches.size() * patcher_names.size());
    exec_arches.reserve(cfg.arches.size());
    // A profile whose rewrite of this program is another's (passes::rewrites_alike: x86_64 and
    // arm64 differ only at PROBE_MEM loads and a few helper calls) gets that profile's per-batch
    // verdicts and rewrites again under its own name instead of rewriting and judging twice.
    struct ArchRun {
        passes::RewriteOptions opts;
        ReportMark verdicts_from, verdicts_to;  // its per-batch verdicts in the report
        uint32_t batches = 0;
        Triggers triggers;
        const Program* rewritten = nullptr;
        bool ok = false;
        std::vector<bool> others_agree;
        // After the passes that read no arch fact (passes::arch_independent_prefix), when they
        // all succeeded: where a later profile with options alike but for the arch starts from,
        // taking these verdicts instead of rewriting and judging the same batches again.
        std::optional<Program> after_prefix;
        uint32_t prefix_batches = 0;
        ReportMark prefix_verdicts_to;
        Triggers prefix_triggers;
        std::vector<bool> prefix_agree;
    };
    std::vector<ArchRun> arch_runs;
    arch_runs.reserve(cfg.arches.size());  // `base` below points into it across emplace_back
    const size_t prefix_passes = passes::arch_independent_prefix();
    auto add_inline_proofs = [&](const ArchProfile& arch) {
        if (!wanted.has(oracles::OracleId::SmtInline) || c.options.iter_inline == passes::IterInline::Off) return;
        for (auto& proof : inline_proofs(arch, c.options.iter_inline, cfg.smt_timeout_ms))
            add(std::move(proof.verdict), std::string(arch.name), "iter_inline", proof.sequence);
    };
    std::vector<ArchProfile> judged_arches;  // every profile whose rewrite succeeded, for the case oracles
    auto add_exec_rewrites = [&](const ArchProfile& arch, const ArchRun& run) {
        if (!run.ok || !c.patches.empty()) return;
        judged_arches.push_back(arch);
        if (!exec) return;
        exec_arches.push_back(arch);
        given_rewrites.push_back({arch.name, patcher_names[0], run.rewritten});
        for (size_t i = 0; i < run.others_agree.size(); ++i)
            if (run.others_agree[i]) given_rewrites.push_back({arch.name, patcher_names[i + 1], run.rewritten});
    };
    // One reference and one of each other patcher serve every profile (and, kept per thread, every
    // case). Every other patcher applies each batch too (to a copy) when an oracle reads their
    // agreement: the per-batch ones, and exec, which then need not rewrite with them again.
    // A case with an external plugin, which may keep state of its own between calls, gets a set
    // of its own; the thread's set is made anew when a case asks for another one.
    patch::Patcher* const external = per_batch ? cfg.external : nullptr;
    ThreadLease<std::optional<CasePatchers>> lease(external != nullptr);
    if (!*lease || !(*lease)->serves(patcher_names, per_batch || exec, external, smt_jump))
        lease->emplace(patcher_names, per_batch || exec, external, cfg.external_name, smt_jump);
    CasePatchers& patchers = **lease;
    const size_t internal_others = patchers.internal_others();
    RecordingPatcher& recorder = patchers.recorder();
    recorder.coverage = cfg.coverage;
    patch::Patcher& driver = per_batch || patchers.has_others() || cfg.coverage != nullptr ? static_cast<patch::Patcher&>(recorder) : patchers.reference();

    for (size_t ai = 0; ai < cfg.arches.size(); ++ai) {
        const std::string arch_name(cfg.arches[ai].name);
        const ArchProfile& arch = cfg.arches[ai];
        passes::RewriteOptions opts = c.options;
        opts.arch = arch;
        const ArchRun* alike = nullptr;
        for (const ArchRun& r : arch_runs)
            // An external plugin that may keep state between calls (!external_pure) is called for
            // every profile. Explicit batches go to the patchers alone, which never read the
            // profile: every profile's run of them is the first one's.
            if ((cfg.external == nullptr || cfg.external_pure) && (!c.patches.empty() || passes::rewrites_alike(c.program, r.opts, opts))) {
                alike = &r;
                break;
            }
        if (alike != nullptr) {
            add_again(alike->verdicts_from, alike->verdicts_to, arch_name);
            case_triggers.add(alike->triggers);
            report.batches += alike->batches;
            add_inline_proofs(arch);
            add_exec_rewrites(arch, *alike);
            continue;
        }
        // An external plugin that may keep state between calls is called for every pass too.
        ArchRun* base = nullptr;
        if (c.patches.empty() && (cfg.external == nullptr || cfg.external_pure))
            for (ArchRun& r : arch_runs)
                if (r.after_prefix && passes::options_alike_but_arch(r.opts, opts)) {
                    base = &r;
                    break;
                }
        ArchRun& run = arch_runs.emplace_back();
        run.opts = opts;
        run.verdicts_from = mark();
        if (base != nullptr) {
            add_again(base->verdicts_from, base->prefix_verdicts_to, arch_name);
            run.triggers = base->prefix_triggers;
        }

        PATCHFUZZ_CHECK(batches_per_arch.size() < batches_per_arch.capacity() && rewritten_per_arch.size() < rewritten_per_arch.capacity(),
                        "runner: one batch list and one rewrite per profile (their addresses must not move)");
        std::vector<RecordedBatch>& batches = batches_per_arch.emplace_back();
        batches.reserve(8);  // the passes emit a few batches per profile: one allocation for them
        recorder.record_into(batches);
        // The last profile takes the shared program itself: no later one starts from it.
        const bool last_arch = ai + 1 == cfg.arches.size();
        Program& rewritten = base == nullptr ? rewritten_per_arch.emplace_back(RewritePrograms::copy_to_rewrite(c.program))
                             : last_arch     ? rewritten_per_arch.emplace_back(std::move(*base->after_prefix))
                                             : rewritten_per_arch.emplace_back(RewritePrograms::copy_to_rewrite(*base->after_prefix));
        if (base != nullptr && last_arch) base->after_prefix.reset();  // moved out: not one to give back
        // Only worth a copy when a later profile may start from it.
        const bool keep_prefix = base == nullptr && c.patches.empty() && ai + 1 < cfg.arches.size();
        patch::PatchOutcome final_outcome;

        if (!c.patches.empty()) {
            recorder.current_pass = slot_names[explicit_slot];
            for (const auto& b : c.patches) {
                final_outcome = driver.apply(rewritten, b);
                run.triggers.add(explicit_slot, static_cast<uint32_t>(b.patches.size()));
                if (!final_outcome.ok()) break;
            }
        } else {
            for (size_t pi = base != nullptr ? prefix_passes : 0; pi < explicit_slot; ++pi) {
                const std::string_view name = slot_names[pi];
                if (pi == prefix_passes && keep_prefix) {
                    run.after_prefix = RewritePrograms::copy_to_rewrite(rewritten);
                    run.prefix_batches = static_cast<uint32_t>(batches.size());
                    run.prefix_triggers = run.triggers;
                }
                if (!c.options.only.empty() &&
                    std::find(c.options.only.begin(), c.options.only.end(), name) == c.options.only.end())
                    continue;
                recorder.current_pass = name;
                passes::PassRun one = passes::run_pass(pi, rewritten, driver, opts);
                run.triggers.add(pi, one.patches);
                final_outcome = std::move(one.outcome);
                if (!final_outcome.ok()) break;
            }
        }
        case_triggers.add(run.triggers);
        run.batches = (base != nullptr ? base->prefix_batches : 0) + static_cast<uint32_t>(batches.size());
        report.batches += run.batches;

        // Per batch: every other patcher's result compared with the reference's; the SMT jump
        // oracle on every patcher's output.
        oracles::smt::SmtOptions so;
        so.timeout_ms = cfg.smt_timeout_ms;
        std::vector<bool> others_agree = base != nullptr ? base->prefix_agree : std::vector<bool>(internal_others, true);
        for (size_t bi = 0; bi < batches.size(); ++bi) {
            const RecordedBatch& rb = batches[bi];
            if (run.after_prefix && bi == run.prefix_batches) {
                run.prefix_verdicts_to = mark();
                run.prefix_agree = others_agree;
            }
            for (size_t i = 0; i < internal_others; ++i) others_agree[i] = others_agree[i] && rb.others[i].agrees;
            if (!per_batch) continue;
            if (smt_jump)
                if (const BatchVerdicts* same = find_same(memo, rb)) {
                    report.counted_passes += same->counted_passes;
                    for (OracleVerdict v : same->verdicts) add(std::move(v.verdict), arch_name, rb.pass, v.patcher);
                    continue;
                }
            const ReportMark first_verdict = mark();
            const std::string_view kind = rb.kind;
            std::optional<oracles::Verdict> reference_jumps;
            if (smt_jump) {
                reference_jumps = oracles::smt::check_jump_targets(rb.before, rb.batch, rb.outcome, rb.after, so);
                reference_jumps->patch_kind = kind;
            }
            for (const OtherRun& o : rb.others) {
                // Equal outputs were established while recording: the comparison's verdict is
                // known, a pass, which need not be made when it is only counted.
                if (structural && !(o.agrees && only_counted(oracles::Outcome::Pass))) {
                    auto v = o.agrees ? oracles::identical_outputs_verdict(rb.outcome, rb.after_len)
                                      : oracles::compare_patcher_outputs({patcher_names[0], &rb.after, rb.outcome},
                                                                         {std::string(o.name), &o.out, o.outcome});
                    v.patch_kind = kind;
                    add(std::move(v), arch_name, rb.pass, o.name);
                }
                if (smt_jump) {
                    // The same input to the same pure check gives the same verdict.
                    if (o.agrees) {
                        if (!only_counted(reference_jumps->outcome))
                            keep(oracles::Verdict(*reference_jumps), arch_name, rb.pass, o.name);
                    } else {
                        auto v = oracles::smt::check_jump_targets(rb.before, rb.batch, o.outcome, o.out, so);
                        v.patch_kind = kind;
                        add(std::move(v), arch_name, rb.pass, o.name);
                    }
                }
            }
            if (reference_jumps) add(std::move(*reference_jumps), arch_name, rb.pass, patcher_names[0]);
            // An external plugin that may keep state between calls: its verdicts are never reused.
            if (smt_jump && (cfg.external == nullptr || cfg.external_pure))
                memo.push_back({&rb,
                                std::vector<OracleVerdict>(report.verdicts.begin() + static_cast<std::ptrdiff_t>(first_verdict.verdicts),
                                                           report.verdicts.end()),
                                report.counted_passes - first_verdict.counted_passes});
        }

        if (run.after_prefix && run.prefix_batches == batches.size()) {
            run.prefix_verdicts_to = mark();
            run.prefix_agree = others_agree;
        }
        run.verdicts_to = mark();
        run.rewritten = &rewritten;
        run.ok = final_outcome.ok();
        run.others_agree = others_agree;
        add_inline_proofs(arch);
        add_exec_rewrites(arch, run);
    }
    case_triggers.add_to(report.pass_triggers);
    if (!exec_arches.empty()) {
        // Original (kfunc and helper calls run by reference models) vs each patcher's rewrite,
        // on the case's own inputs and on generated ones (seeded by the case); one call for every
        // profile, so runs that two profiles share are made once (exec_diff.hpp).
        oracles::exec::ExecDiffOptions eo;
        eo.archs = std::move(exec_arches);
        eo.patchers = patcher_names;
        eo.rewrite = c.options;
        eo.given = c.inputs;
        eo.rewrites = std::move(given_rewrites);
        eo.inputs = cfg.exec_inputs;
        eo.seed = c.seed;
        eo.failure_details = cfg.failure_details;
        oracles::Verdict v = oracles::exec::exec_diff(c.program, eo);
        if (!only_counted(v.outcome)) {
            const std::string arch = filed_arch(v, eo.archs);
            keep(std::move(v), arch, "", "");
        }
    }
    if (c.patches.empty() && !cfg.extra_oracles.empty()) {
        const oracles::Evidence e = runner_parts::case_evidence(c, judged_arches);
        for (oracles::Oracle* oracle : cfg.extra_oracles)
            if (oracle->applies_to(e))
                for (oracles::Verdict& v : oracle->judge(e)) {
                    const std::string arch = filed_arch(v, judged_arches);
                    add(std::move(v), arch, "", "");
                }
    }
    for (Program& p : rewritten_per_arch) RewritePrograms::give_back(std::move(p));
    for (ArchRun& r : arch_runs)
        if (r.after_prefix) RewritePrograms::give_back(std::move(*r.after_prefix));
    return report;
}

}  // namespace patchfuzz::harness
