#include "bpf/util/json.hpp"
#include "harness/campaign/campaign.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>

#include "bpf/util/rng.hpp"
#include "gen/patch_batch_gen.hpp"
#include "gen/profiles.hpp"
#include "gen/program_gen.hpp"
#include "gen/rng_source.hpp"
#include "gen/seed_case.hpp"
#include "bpf/util/atomic_file.hpp"
#include "bpf/util/check.hpp"
#include "harness/campaign/known_findings.hpp"
#include "harness/case/object_cases.hpp"
#include "harness/triage/triage.hpp"
#include "harness/version/build_version.hpp"

namespace patchfuzz::harness {

std::atomic<bool> g_stop_campaign{false};

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

uint64_t case_seed(uint64_t seed, uint64_t index) {
    Rng r(seed ^ (index * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL));
    r.next();
    return r.next();
}

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


std::optional<passes::IterInline> parse_iter(const std::string& s) {
    if (s == "v4") return passes::IterInline::V4;
    if (s == "v1") return passes::IterInline::V1;
    if (s == "v3") return passes::IterInline::V3;
    if (s == "off") return passes::IterInline::Off;
    return std::nullopt;
}

// Everything one case contributes to the summary, in a form a worker can stream to its parent as
// one line: "C <pass> <fail> <unknown> <skip> <triggers,> <unknown reasons|> <insns> <knob:seconds>
// <relocation cells,>".
struct CaseTally {
    uint64_t pass = 0, fail = 0, unknown = 0, skip = 0;
    uint64_t insns = 0;  // the case's program length
    CaseKnob knob = CaseKnob::Passes;  // what the case was made with (reloc_feedback.hpp)
    double seconds = 0;                // making and judging it
    std::vector<uint32_t> cells;       // relocation-coverage cells its batches hit
    std::vector<std::string> triggers;  // the passes that emitted patches, each once
    std::vector<std::string> unknown_reasons;

    std::string encode() const {
        std::string t, u;
        for (const auto& x : triggers) t += (t.empty() ? "" : ",") + x;
        for (const auto& x : unknown_reasons) {
            std::string r = x;
            for (char& ch : r)
                if (ch == '|' || ch == '\n' || ch == '\t') ch = ' ';
            u += (u.empty() ? "" : "|") + r;
        }
        return "C\t" + std::to_string(pass) + "\t" + std::to_string(fail) + "\t" + std::to_string(unknown) + "\t" +
               std::to_string(skip) + "\t" + (t.empty() ? "-" : t) + "\t" + (u.empty() ? "-" : u) + "\t" + std::to_string(insns) + "\t" +
               encode_reloc(knob, seconds, cells);
    }
};

class Aggregate {
public:
    Aggregate(CampaignSummary& s, Clock::time_point t0) : s_(s), t0_(t0) {}
    void add(const CaseTally& t) {
        ++s_.cases;
        if (verdict_counts_[0] == nullptr) {
            // The summary's four counts, found once: a map's entries stay where they are, and the
            // keys are made as strings (a lookup per case and key would make each anew).
            static constexpr const char* kOutcomes[] = {"pass", "fail", "unknown", "skip"};
            for (size_t i = 0; i < 4; ++i) verdict_counts_[i] = &s_.verdicts[kOutcomes[i]];
        }
        *verdict_counts_[0] += t.pass;
        *verdict_counts_[1] += t.fail;
        *verdict_counts_[2] += t.unknown;
        *verdict_counts_[3] += t.skip;
        s_.insns += t.insns;
        for (const auto& x : t.triggers) ++s_.pass_triggers[x];
        for (const auto& r : t.unknown_reasons) ++s_.unknown_reasons[r];
        s_.reloc.add_case(t.knob, t.cells, t.seconds);
    }
    // What a worker reports: a case's tally (straight from an in-process worker) or a line.
    void take(const CaseTally& t) { add(t); }
    void take(std::string_view line) { add_line(line); }
    // One line of the worker protocol (tab-separated fields, see Worker); a forked worker's
    // tallies arrive as lines too (CaseTally::encode).
    void add_line(std::string_view line) {
        std::vector<std::string_view> f;
        split(line, '\t', f);
        if (f.size() == 10 && f[0] == "C") {
            CaseTally t;
            t.pass = number(f[1]);
            t.fail = number(f[2]);
            t.unknown = number(f[3]);
            t.skip = number(f[4]);
            std::vector<std::string_view> parts;
            if (f[5] != "-") {
                split(f[5], ',', parts);
                for (auto x : parts) t.triggers.emplace_back(x);
            }
            if (f[6] != "-") {
                split(f[6], '|', parts);
                for (auto x : parts) t.unknown_reasons.emplace_back(x);
            }
            t.insns = number(f[7]);
            PATCHFUZZ_CHECK(decode_reloc(f[8], f[9], t.knob, t.seconds, t.cells),
                            "campaign: malformed relocation fields in a worker's report line");
            add(t);
        } else if (f.size() >= 3 && f[0] == "F") {
            add_finding(f[1] == "1", std::string(f[2]));
        } else if (f.size() == 1 && f[0] == "D") {
            // Detected (before triage, which may take a while): time to first detection.
            if (s_.first_finding_s < 0) s_.first_finding_s = since(t0_);
        } else if (f.size() == 2 && f[0] == "N") {
            // A failing case whose failures are all known findings.
            ++s_.known;
            ++s_.known_hits[std::string(f[1])];
        } else if (f.size() == 2 && f[0] == "K") {
            s_.corpus_added += number(f[1]);
        }
    }
    void add_finding(bool new_bucket, const std::string& signature) {
        ++s_.findings;
        (void)new_bucket;
        if (std::find(s_.buckets.begin(), s_.buckets.end(), signature) == s_.buckets.end())
            s_.buckets.push_back(signature);
    }

private:
    // Fields as getline() would give them: a trailing empty field is dropped.
    static void split(std::string_view s, char sep, std::vector<std::string_view>& out) {
        out.clear();
        size_t start = 0;
        while (start < s.size()) {
            const size_t end = std::min(s.find(sep, start), s.size());
            out.push_back(s.substr(start, end - start));
            start = end + 1;
        }
    }
    // A count a worker wrote: anything else is a broken protocol, not input to tolerate.
    static uint64_t number(std::string_view v) {
        uint64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        PATCHFUZZ_CHECK(ec == std::errc() && end == v.data() + v.size(), "campaign: malformed count in a worker's report line");
        return n;
    }

    CampaignSummary& s_;
    Clock::time_point t0_;
    std::array<uint64_t*, 4> verdict_counts_{};  // s_.verdicts' pass, fail, unknown, skip (after the first case)
};

// What a campaign judges its cases with, and loads its known findings with: the configuration
// without failure details (RunConfig::failure_details), which signatures, exec causes and known
// findings do not need; triage runs a new finding again in full.
RunConfig judging(const RunConfig& run) {
    RunConfig brief = run;
    brief.failure_details = false;
    return brief;
}

// Runs cases and reports each through `emit`, called with a case's CaseTally and with the
// protocol's other lines (std::string): a forked worker writes them all as lines to its pipe, an
// in-process one hands them straight to the aggregate (no text for the tally, one per case).
// Returns when the index range, the deadline or the stop flag ends it.
class Worker {
public:
    Worker(const CampaignConfig& cfg, Clock::time_point t0, const KnownFindings* known = nullptr)
        : cfg_(cfg), t0_(t0), known_(known), brief_(judging(cfg.run)), counting_(brief_) {
        counting_.keep_passes = false;
        counting_.coverage = &coverage_;
    }

    template <class Emit>
    void run_indices(uint64_t first, uint64_t step, uint64_t end, Emit&& emit) {
        for (uint64_t i = first; i < end && !stopped(); i += step) {
            case_start_ = Clock::now();
            knob_ = cfg_.profile.empty() ? scheduler_.pick(case_seed(cfg_.seed, i)) : CaseKnob::Passes;
            if (seed_mutant_turn(case_seed(cfg_.seed, i))) knob_ = CaseKnob::Seeds;
            run_one(make_case(i), emit, i);
        }
    }

    // `generated_as`: the index of a case this campaign generated (make_case), which may be saved
    // to the corpus; none for a corpus case.
    template <class Emit>
    void run_one(const Case& c, Emit&& emit, std::optional<uint64_t> generated_as) {
        if (!generated_as) case_start_ = Clock::now();
        coverage_.clear();
        const CaseReport report = run_case(c, counting_);
        CaseTally t;
        t.insns = c.program.len();
        t.knob = generated_as ? knob_ : CaseKnob::Passes;
        const std::vector<uint8_t>& bits = coverage_.bits();
        for (uint32_t cell = 0; cell < bits.size(); ++cell)
            if (bits[cell]) t.cells.push_back(cell);
        t.seconds = std::chrono::duration<double>(Clock::now() - case_start_).count();
        if (generated_as) scheduler_.record(t.knob, t.cells);
        t.pass = report.counted_passes;
        for (const auto& v : report.verdicts) {
            switch (v.verdict.outcome) {
                case oracles::Outcome::Pass: ++t.pass; break;
                case oracles::Outcome::Fail: ++t.fail; break;
                case oracles::Outcome::Unknown:
                    ++t.unknown;
                    t.unknown_reasons.push_back(v.verdict.oracle + ": " + v.verdict.reason);
                    break;
                case oracles::Outcome::Skip: ++t.skip; break;
            }
        }
        bool new_feature = false;
        t.triggers.reserve(report.pass_triggers.size());
        for (const auto& [pass, n] : report.pass_triggers) {
            if (n == 0) continue;
            t.triggers.emplace_back(pass);
            if (seen_features_.find(pass) == seen_features_.end()) {
                seen_features_.emplace(pass);
                new_feature = true;
            }
        }
        emit(t);
        // Known findings are counted, not triaged; triage sees only the new failures.
        std::optional<CaseReport> unknown_failures;  // a copy only when there is something to filter
        if (known_ && report.failed()) unknown_failures = known_->without_known(report);
        const CaseReport& fresh = unknown_failures ? *unknown_failures : report;
        if (report.failed() && !fresh.failed()) emit("N\t" + signature_of(*report.first_failure()));
        if (fresh.failed()) {
            emit("D");
            const TriageResult tr = triage_failure(as_found(c, generated_as), fresh, brief_, cfg_.out_dir, minimize_budget());
            std::fprintf(stderr, "\npatchfuzz fuzz: finding %s%s -> %s\n  replay: %s\n", tr.signature.c_str(),
                         tr.new_bucket ? " (new bucket)" : " (existing bucket)", tr.bucket_dir.c_str(),
                         tr.replay_command.c_str());
            emit("F\t" + std::string(tr.new_bucket ? "1" : "0") + "\t" + tr.bucket);
        }
        if (generated_as && new_feature && !cfg_.corpus_dir.empty()) {
            const std::string path = cfg_.corpus_dir + "/gen-" + std::to_string(c.seed) + ".case";
            if (write_case_file_atomic(as_found(c, generated_as), path)) emit("K\t1");
        }
    }

    // A case as a finding or the corpus keeps it: a generated one with a comment saying how to
    // generate it again. Made only for the few cases written (not in make_case, for every case).
    Case as_found(const Case& c, std::optional<uint64_t> generated_as) const {
        Case found = c;
        if (!generated_as) return found;
        std::string found_by = "found-by: patchfuzz fuzz --seed ";
        const auto append_number = [&found_by](uint64_t v) {
            char digits[24];
            found_by.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
        };
        append_number(cfg_.seed);
        found_by += " (case ";
        append_number(*generated_as);
        found_by += ", case seed ";
        append_number(c.seed);
        found_by += ", knob ";
        found_by += knob_name(knob_);
        found_by += ')';
        if (!cfg_.seeds.empty()) found_by += " --seeds " + cfg_.seeds_from;
        found.comments.push_back(std::move(found_by));
        return found;
    }

    // Half of the cases of a campaign with --seeds are seed mutants (chosen by the case's seed, so
    // that a case replays alone).
    bool seed_mutant_turn(uint64_t seed) const { return !cfg_.seeds.empty() && Rng(seed ^ 0x7365656473ULL).chance(1, 2); }

    // A mutant of one seed program (gen::seed_mutant: structure-aware edits, facts rebuilt), the
    // seed's privilege, arch and kernel profile kept.
    Case seed_mutant(uint64_t seed) const {
        const Case& base = cfg_.seeds[Rng(seed ^ 0x7069636bULL).range(0, cfg_.seeds.size() - 1)];
        gen::GeneratedCase g = gen::seed_mutant(base.program, seed, 2);
        Case c;
        c.options = base.options;
        c.options.only.clear();  // a seed's pass subset is its test's focus; a campaign runs every pass
        c.privilege = base.privilege;
        c.arch = base.arch;
        c.patchers = base.patchers;
        c.program = std::move(g.program);
        c.inputs = std::move(g.inputs);
        return c;
    }

    Case make_case(uint64_t index) const {
        const uint64_t seed = case_seed(cfg_.seed, index);
        gen::RngSource src(seed);
        Case c;
        if (knob_ == CaseKnob::Seeds) {
            c = seed_mutant(seed);
        } else if (!cfg_.profile.empty()) {
            c.program = gen::generate_profile(cfg_.profile, seed);
            c.inputs = gen::make_inputs(c.program, src, 2);
        } else {
            // A case but the passes' (knob_, reloc_feedback.hpp) is patcher-only: explicit random
            // batches that patch the side-table boundaries (a poke's insn, subprog starts, line
            // info, insn arrays, removals, -ERANGE) which the passes rarely or never patch. Such a
            // case is never executed (the runner runs the exec oracle on the passes' rewrites), so
            // it gets no inputs (the generator makes the same choices either way).
            const bool patcher_only = knob_ != CaseKnob::Passes;
            gen::GenOptions go;
            go.max_insns = cfg_.max_insns;
            if (knob_ == CaseKnob::Large) {  // a length around and past 32767
                go.min_insns = 32768;
                go.max_insns = 33500;
            }
            go.compute_stats = false;  // nothing here reads GeneratedCase::stats
            if (patcher_only) go.inputs = 0;
            auto g = gen::generate(src, go);
            c.program = std::move(g.program);
            c.inputs = std::move(g.inputs);
            if (patcher_only) explicit_batches(src, seed, c);
        }
        c.seed = seed;
        c.options.iter_inline = parse_iter(cfg_.iter_inline).value_or(passes::IterInline::V4);
        c.options.loop_inline = cfg_.loop_inline;
        c.options.func_arg_inline = cfg_.func_arg_inline;
        c.options.nop_removal = cfg_.nop_removal;
        // Without its found-by comment: as_found() adds it to the few cases written.
        return c;
    }

    // The explicit batches of a patcher-only case, by knob_.
    void explicit_batches(gen::RngSource& src, uint64_t seed, Case& c) const {
        gen::add_poke_descriptors(src, c.program, 3);
        gen::BatchGenOptions bo;
        // The -ERANGE paths need a patch of > 32767 insns: costly, so rare but for the knobs that
        // are about them (the scheduler bounds their share of the time).
        bo.overflow_pct = Rng(seed ^ 0x6f766572ULL).chance(1, 256) ? 100 : 0;
        if (knob_ == CaseKnob::AimedLimit) {
            bo.overflow_pct = 100;
            bo.aim_limit = true;
        }
        if (knob_ == CaseKnob::Large) {
            // A few patches on a program past 32767 insns (every one probed for -ERANGE): the
            // patchers' cost grows with patches x length. Outgoing transfers of the buffers stay
            // short (BatchGenOptions::max_reach).
            bo.density_pct = 1;
            bo.boundary_pct = 2;
            bo.overflow_pct = 0;
            bo.max_reach = 2048;
        }
        if (knob_ == CaseKnob::TwoBatches) {
            gen::BatchGenOptions second = bo;
            second.overflow_pct = 100;
            second.aim_limit = Rng(seed ^ 0x61696dULL).chance(1, 2);
            // No removals in the first: one can leave a jump naming a removed insn, which then
            // names whatever moved there (another subprog's start), and the second batch would be
            // drawn on a program the verifier rejects.
            bo.overflow_pct = 0;
            bo.remove_pct = 0;
            bo.prologue_call_pct = 50;
            c.patches = gen::generate_patch_batches(src, c.program, bo, second, 2);
            return;
        }
        // Moved in: a braced list would copy the batch, every patch's insns included.
        c.patches.push_back(gen::generate_patch_batch(src, c.program, bo));
    }

    // Minimization stays inside --seconds (with a floor of 2 s, so that a finding made in the last
    // moment is still shrunk a little): a patcher that hangs makes every shrink step cost a watchdog
    // period, and the campaign must still end on time.
    MinimizeOptions minimize_budget() const {
        MinimizeOptions mo;
        if (cfg_.seconds > 0) mo.max_seconds = std::clamp(cfg_.seconds - since(t0_), 2.0, mo.max_seconds);
        return mo;
    }
    bool stopped() const { return g_stop_campaign.load() || (cfg_.seconds > 0 && since(t0_) >= cfg_.seconds); }

private:
    const CampaignConfig& cfg_;
    Clock::time_point t0_;
    const KnownFindings* known_;
    RunConfig brief_;  // judging(cfg_.run): every case is judged with it
    // brief_ with the passes only counted (RunConfig::keep_passes): what the tallies, the known
    // findings and triage read of a report is the same, and passes are most verdicts. Triage runs
    // with brief_ itself: it re-runs a case and reads every verdict.
    RunConfig counting_;
    std::set<std::string, std::less<>> seen_features_;
    // Relocation coverage: the cells of the case being run, the knob it is made with, when it
    // began, and the scheduler that picks the knobs (its feedback is this worker's own cases).
    patch::CoverageSet coverage_;
    CaseKnob knob_ = CaseKnob::Passes;
    Clock::time_point case_start_;
    RareCellScheduler scheduler_;
};

std::string kernel_status(const CampaignSummary& s) {
    if (!s.kernel) return "";
    const auto& k = *s.kernel;
    return " | kernel " + std::to_string(k.agree) + "/" + std::to_string(k.accepted) + " agree of " +
           std::to_string(k.cases) + (k.error.empty() ? "" : " (VM ERROR)");
}

void print_status(const CampaignSummary& s, double elapsed, bool final_line) {
    const size_t npass = passes::pass_names().size();
    size_t covered = 0;
    for (auto name : passes::pass_names()) covered += s.pass_triggers.count(std::string(name)) != 0;
    auto get = [&](const char* k) {
        auto it = s.verdicts.find(k);
        return it == s.verdicts.end() ? 0ull : static_cast<unsigned long long>(it->second);
    };
    std::fprintf(stderr,
                 "\r[%6.1fs] cases %llu (%.0f/s) | pass %llu fail %llu unknown %llu skip %llu | passes triggered "
                 "%zu/%zu | findings %llu buckets %zu known %llu%s   %s",
                 elapsed, static_cast<unsigned long long>(s.cases), elapsed > 0 ? double(s.cases) / elapsed : 0.0,
                 get("pass"), get("fail"), get("unknown"), get("skip"), covered, npass,
                 static_cast<unsigned long long>(s.findings), s.buckets.size(), static_cast<unsigned long long>(s.known),
                 kernel_status(s).c_str(),
                 final_line ? "\n" : "");
    std::fflush(stderr);
}

void replay_corpus(const CampaignConfig& cfg, Worker& w, Aggregate& agg, CampaignSummary& sum) {
    if (cfg.corpus_dir.empty() || !fs::is_directory(cfg.corpus_dir)) return;
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(cfg.corpus_dir))
        if (e.is_regular_file() && (e.path().extension() == ".case" || is_elf_file(e.path().string()))) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        if (w.stopped()) break;
        // A .case, or every program of a BPF object (.bpf.o).
        auto cases = read_corpus_file(f.string());
        if (!cases) {
            std::fprintf(stderr, "patchfuzz fuzz: skipping corpus file %s\n", cases.error().to_string().c_str());
            continue;
        }
        for (const Case& c : *cases) {
            ++sum.corpus_cases;
            w.run_one(c, [&](const auto& item) { agg.take(item); }, std::nullopt);
        }
    }
}

}  // namespace

CampaignSummary run_campaign(const CampaignConfig& cfg) {
    CampaignSummary sum;
    sum.seed = cfg.seed;
    // Loaded before the workers fork, so each inherits it; and before the clock starts: start-up
    // (running every filed finding, seconds) counts neither in --seconds nor in cases/s.
    const KnownFindings known = KnownFindings::load(cfg.known_dir, judging(cfg.run));
    sum.known_files = known.files();
    for (const auto& n : known.notes()) std::fprintf(stderr, "patchfuzz fuzz: %s\n", n.c_str());
    const auto t0 = Clock::now();
    Aggregate agg(sum, t0);
    fs::create_directories(cfg.out_dir);
    if (!cfg.corpus_dir.empty()) fs::create_directories(cfg.corpus_dir);
    // Temp files of writes that a SIGKILL interrupted (write_file_atomic names them .NAME.tmp.*):
    // never visible under a real name, removed here so they do not pile up.
    for (const std::string& dir : {cfg.out_dir, cfg.corpus_dir}) {
        std::error_code ec;
        if (dir.empty() || !fs::is_directory(dir, ec)) continue;
        for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
            const std::string n = e.path().filename().string();
            if (e.is_regular_file() && !n.empty() && n[0] == '.' && n.find(".tmp.") != std::string::npos)
                fs::remove(e.path(), ec);
        }
    }
    // The kernel oracle's thread files its findings here; the main thread drains them into the
    // aggregate (which is not thread-safe) with the status updates.
    std::mutex kernel_mu;
    std::vector<std::string> kernel_lines;
    std::unique_ptr<KernelStream> kernel_stream;
    if (cfg.kernel) {
        KernelStreamConfig kc = *cfg.kernel;
        kc.seed = cfg.seed;
        kc.out_dir = cfg.out_dir;
        kernel_stream = std::make_unique<KernelStream>(
            kc, [&](bool new_bucket, const std::string& sig, const std::string& dir, const std::string& replay) {
                std::fprintf(stderr, "\npatchfuzz fuzz: finding %s%s -> %s\n  replay: %s\n", sig.c_str(),
                             new_bucket ? " (new bucket)" : " (existing bucket)", dir.c_str(), replay.c_str());
                std::lock_guard lk(kernel_mu);
                kernel_lines.push_back("D");
                kernel_lines.push_back("F\t" + std::string(new_bucket ? "1" : "0") + "\t" + sig);
            });
    }
    auto drain_kernel = [&] {
        if (!kernel_stream) return;
        std::vector<std::string> lines;
        {
            std::lock_guard lk(kernel_mu);
            lines.swap(kernel_lines);
        }
        for (const auto& l : lines) agg.add_line(l);
        sum.kernel = kernel_stream->figures();
    };

    Worker main_worker(cfg, t0, &known);
    replay_corpus(cfg, main_worker, agg, sum);

    const uint64_t end = cfg.runs ? cfg.runs : UINT64_MAX;
    const bool tty = isatty(STDERR_FILENO) != 0;
    double last_status = 0;
    // timeline.csv (for `patchfuzz report`): one row a second, rewritten atomically.
    std::string timeline = "elapsed_s,cases,cases_per_s,passes_triggered,unknown,findings,buckets\n";
    double last_row = 0;
    uint64_t last_cases = 0;
    auto add_row = [&](double e) {
        size_t covered = 0;
        for (auto name : passes::pass_names()) covered += sum.pass_triggers.count(std::string(name)) != 0;
        const double rate = e > last_row ? double(sum.cases - last_cases) / (e - last_row) : 0;
        char row[160];
        std::snprintf(row, sizeof row, "%.2f,%llu,%.1f,%zu,%llu,%llu,%zu\n", e, static_cast<unsigned long long>(sum.cases),
                      rate, covered, static_cast<unsigned long long>(sum.verdicts["unknown"]),
                      static_cast<unsigned long long>(sum.findings), sum.buckets.size());
        timeline += row;
        last_row = e;
        last_cases = sum.cases;
        (void)write_file_atomic(cfg.out_dir + "/timeline.csv", timeline);
    };
    auto maybe_status = [&] {
        drain_kernel();
        const double e = since(t0);
        if (cfg.status_line && (e - last_status >= (tty ? 0.5 : 5.0))) {
            print_status(sum, e, !tty);
            last_status = e;
        }
        if (e - last_row >= 1.0) add_row(e);
    };

    // The kernel thread starts after the workers are forked: fork() copies only the calling thread.
    if (cfg.jobs <= 1) {
        if (kernel_stream) kernel_stream->start();
        main_worker.run_indices(0, 1, end, [&](const auto& item) {
            agg.take(item);
            maybe_status();
        });
    } else {
        struct Child {
            pid_t pid;
            int fd;
            std::string buf;
        };
        std::vector<Child> kids;
        for (uint32_t w = 0; w < cfg.jobs; ++w) {
            int p[2];
            PATCHFUZZ_CHECK(pipe(p) == 0, "pipe");
            const pid_t pid = fork();
            PATCHFUZZ_CHECK(pid >= 0, "fork");
            if (pid == 0) {
                close(p[0]);
                Worker wk(cfg, t0, &known);
                FILE* out = fdopen(p[1], "w");
                // Per-case tallies go up in bunches (a write per case, tens of thousands a
                // second, each waking the parent, cost a worker a quarter of its core on two
                // CPUs); anything else (findings, known hits) at once. The parent's figures lag
                // by at most kTallyFlush; findings themselves are on disk before their line.
                constexpr double kTallyFlush = 0.05;
                double last_flush = 0;
                wk.run_indices(w, cfg.jobs, end, [&](const auto& item) {
                    constexpr bool tally = std::is_same_v<std::decay_t<decltype(item)>, CaseTally>;
                    if constexpr (tally) {
                        std::fputs(item.encode().c_str(), out);
                    } else {
                        const std::string_view line = item;
                        std::fwrite(line.data(), 1, line.size(), out);
                    }
                    std::fputc('\n', out);
                    const double now = since(t0);
                    if (!tally || now - last_flush >= kTallyFlush) {
                        std::fflush(out);
                        last_flush = now;
                    }
                });
                std::fclose(out);
                _exit(0);
            }
            close(p[1]);
            kids.push_back({pid, p[0], {}});
        }
        if (kernel_stream) kernel_stream->start();
        size_t open = kids.size();
        while (open > 0) {
            std::vector<pollfd> pfds;
            for (auto& k : kids)
                if (k.fd >= 0) pfds.push_back({k.fd, POLLIN, 0});
            poll(pfds.data(), pfds.size(), 200);
            for (auto& k : kids) {
                if (k.fd < 0) continue;
                pollfd one{k.fd, POLLIN, 0};
                if (poll(&one, 1, 0) <= 0) continue;
                char b[65536];
                const ssize_t n = read(k.fd, b, sizeof b);
                if (n <= 0) {
                    close(k.fd);
                    k.fd = -1;
                    --open;
                    continue;
                }
                k.buf.append(b, static_cast<size_t>(n));
                size_t nl;
                while ((nl = k.buf.find('\n')) != std::string::npos) {
                    agg.add_line(k.buf.substr(0, nl));
                    k.buf.erase(0, nl + 1);
                }
            }
            if (g_stop_campaign.load())
                for (auto& k : kids) kill(k.pid, SIGTERM);
            maybe_status();
        }
        for (auto& k : kids) {
            int st = 0;
            waitpid(k.pid, &st, 0);
            if (WIFSIGNALED(st) && WTERMSIG(st) != SIGTERM) ++sum.workers_crashed;
            if (WIFEXITED(st) && WEXITSTATUS(st) != 0) ++sum.workers_crashed;
        }
    }
    if (kernel_stream) {
        if (cfg.status_line) std::fprintf(stderr, "\npatchfuzz fuzz: waiting for the kernel batch in flight\n");
        sum.kernel = kernel_stream->finish();
        drain_kernel();
    }
    sum.seconds = since(t0);
    add_row(sum.seconds);
    (void)write_file_atomic(cfg.out_dir + "/summary.json", sum.to_json() + "\n");
    (void)write_file_atomic(cfg.out_dir + "/reloc_coverage.csv", sum.reloc.csv());
    if (cfg.status_line) print_status(sum, sum.seconds, true);
    return sum;
}

std::string CampaignSummary::to_json() const {
    std::ostringstream o;
    o << "{\"version\": \"" << json_escape(build::version_string()) << "\", \"seed\": " << seed << ", \"seconds\": " << seconds << ", \"cases\": " << cases
      << ", \"corpus_cases\": " << corpus_cases << ", \"cases_per_sec\": " << cases_per_sec() << ", \"mean_insns\": " << mean_insns()
      << ", \"findings\": " << findings << ", \"first_finding_s\": " << first_finding_s << ", \"unknown\": "
      << (verdicts.count("unknown") ? verdicts.at("unknown") : 0) << ", \"verdicts\": {";
    bool first = true;
    for (const auto& [k, v] : verdicts) {
        o << (first ? "" : ", ") << "\"" << k << "\": " << v;
        first = false;
    }
    o << "}, \"unknown_reasons\": {";
    first = true;
    for (const auto& [k, v] : unknown_reasons) {
        o << (first ? "" : ", ") << "\"" << json_escape(k) << "\": " << v;
        first = false;
    }
    o << "}, \"pass_triggers\": {";
    first = true;
    for (const auto& [k, v] : pass_triggers) {
        o << (first ? "" : ", ") << "\"" << json_escape(k) << "\": " << v;
        first = false;
    }
    o << "}, \"buckets\": [";
    first = true;
    for (const auto& b : buckets) {
        o << (first ? "" : ", ") << "\"" << json_escape(b) << "\"";
        first = false;
    }
    o << "], \"known\": " << known << ", \"known_files\": " << known_files << ", \"known_hits\": {";
    first = true;
    for (const auto& [k, v] : known_hits) {
        o << (first ? "" : ", ") << "\"" << json_escape(k) << "\": " << v;
        first = false;
    }
    o << "}, \"corpus_added\": " << corpus_added << ", \"workers_crashed\": " << workers_crashed << ", "
      << reloc.json_fields();
    if (kernel) {
        const auto& k = *kernel;
        o << ", \"kernel\": {\"release\": \"" << json_escape(k.release) << "\", \"batches\": " << k.batches
          << ", \"cases\": " << k.cases << ", \"accepted\": " << k.accepted << ", \"agree\": " << k.agree
          << ", \"differ\": " << k.differ << ", \"model_failed\": " << k.model_failed << ", \"crashed\": " << k.crashed
          << ", \"run_disagree\": " << k.run_disagree << ", \"xlated_executed\": " << k.xlated_executed
          << ", \"xlated_differ\": " << k.xlated_differ << ", \"xlated_conversion_failed\": " << k.xlated_conversion_failed
          << ", \"boot_s\": " << k.boot_s << ", \"vm_wall_s\": " << k.vm_wall_s << ", \"by_privilege\": {";
        for (size_t lv = 0; lv < k.by_level.size(); lv++) {
            const KernelLevelFigures& l = k.by_level[lv];
            o << (lv ? ", " : "") << "\"" << passes::to_string(static_cast<passes::Privilege>(lv)) << "\": {\"cases\": " << l.cases
              << ", \"accepted\": " << l.accepted << ", \"agree\": " << l.agree << ", \"differ\": " << l.differ
              << ", \"crashed\": " << l.crashed << ", \"run_disagree\": " << l.run_disagree
              << ", \"xlated_differ\": " << l.xlated_differ << "}";
        }
        o << "}"
          << ", \"error\": \"" << json_escape(k.error) << "\"}";
    }
    o << "}";
    return o.str();
}

std::string CampaignSummary::to_text() const {
    std::ostringstream o;
    o << "campaign summary (seed " << seed << ")\n";
    o << "  cases        " << cases << " in " << seconds << " s (" << cases_per_sec() << " cases/s, " << mean_insns()
      << " insns each on average)";
    if (corpus_cases) o << ", " << corpus_cases << " from the corpus";
    o << "\n  verdicts    ";
    for (const auto& [k, v] : verdicts) o << " " << k << " " << v;
    o << "\n  passes that emitted patches (cases):";
    for (auto name : passes::pass_names()) {
        auto it = pass_triggers.find(std::string(name));
        o << " " << name << "=" << (it == pass_triggers.end() ? 0 : it->second);
    }
    o << "\n";
    if (!unknown_reasons.empty()) {
        o << "  unknown verdicts (never counted as pass):\n";
        for (const auto& [k, v] : unknown_reasons) o << "    " << v << " x " << k << "\n";
    }
    o << "  findings     " << findings << " in " << buckets.size() << " bucket(s)\n";
    for (const auto& b : buckets) o << "    " << b << "\n";
    o << "  known        " << known << " failing case(s) matched the " << known_files << " filed finding(s)\n";
    for (const auto& [k, v] : known_hits) o << "    " << v << " x " << k << "\n";
    if (corpus_added) o << "  corpus       +" << corpus_added << " new-coverage cases\n";
    o << reloc.text();
    if (workers_crashed) o << "  WORKERS CRASHED: " << workers_crashed << "\n";
    if (kernel) {
        const auto& k = *kernel;
        o << "  kernel       " << (k.release.empty() ? "(no batch completed)" : k.release) << ": " << k.cases
          << " programs in " << k.batches << " boot(s), " << k.accepted << " accepted, " << k.agree
          << " xlated agree, " << k.differ << " differ, " << k.model_failed << " model failed, " << k.crashed
          << " VM crashes, " << k.run_disagree << " test-run mismatches; xlated executed " << k.xlated_executed
          << " (" << k.xlated_differ << " change the meaning, " << k.xlated_conversion_failed << " not convertible)";
        if (k.boot_s >= 0) o << "; boot " << k.boot_s << " s";
        o << "\n";
        for (size_t lv = 0; lv < k.by_level.size(); lv++) {
            const KernelLevelFigures& l = k.by_level[lv];
            if (!l.cases) continue;
            o << "    " << passes::to_string(static_cast<passes::Privilege>(lv)) << ": " << l.cases << " programs, " << l.accepted
              << " accepted, " << l.agree << " xlated agree, " << l.differ << " differ, " << l.crashed << " VM crashes, "
              << l.run_disagree << " test-run mismatches, " << l.xlated_differ << " xlated change the meaning\n";
        }
        if (!k.error.empty()) o << "  KERNEL ORACLE ERROR: " << k.error << "\n";
    }
    return o.str();
}

}  // namespace patchfuzz::harness
