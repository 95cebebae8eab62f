// patchfuzz bench: incremental (kernel-faithful, O(N*M)) vs batched (O(N+M)) patching, measured in
// one run on workloads that really patch, with a memcpy baseline of every array the batched
// patcher must write. Harness: bench/bench_harness.hpp (verification + warm-up run, R timed
// repetitions on fresh copies, median and spread). Output: CSV (default) or --json, the fitted
// growth exponent of each patcher over a sweep, the issue's bars, and a gnuplot log-log plot.
#include <malloc.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bpf/util/json.hpp"
#include "bench/bench_harness.hpp"
#include "bench/bench_workload.hpp"
#include "gen/profiles.hpp"
#include "harness/cli/input_format.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"

namespace patchfuzz::cli {
namespace {

using patch::BenchOptions;
using patch::BenchResult;
using patch::Timing;
using patch::Workload;

// Records every batch the rewrite passes emit, with the program it is applied to, while the
// incremental model applies it: the real patch list of a real program, as bench workloads.
class BatchRecorder : public patch::Patcher {
public:
    explicit BatchRecorder(std::string prefix) : prefix_(std::move(prefix)), inner_(patch::make_patcher("incremental")) {}
    [[nodiscard]] std::string_view name() const override { return "recorder"; }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        if (!batch.patches.empty())
            workloads.push_back(Workload{.name = prefix_ + "#" + std::to_string(workloads.size()), .prog = prog, .batch = batch});
        return inner_->apply(prog, batch);
    }
    std::vector<Workload> workloads;

private:
    std::string prefix_;
    std::unique_ptr<patch::Patcher> inner_;
};

struct Row {
    BenchResult r;
    bool sweep = false;
};

std::string num(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}
std::string num3(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}
double med(const Timing* t) { return t && t->measured ? t->median_ns : std::nan(""); }

struct Bar {
    std::string name;
    double value;
    std::string target;
    bool pass;
};

}  // namespace

int cmd_bench(Args args) {
    // Every repetition allocates the patcher's output arrays (and the baseline its fresh buffer).
    // Above the mmap threshold glibc maps them anew each time, and on a VM a first touch of guest
    // memory can cost more than the patching: the sweep's large sizes then measured page faults
    // (the memcpy floor itself grew with exponent 1.7). Served from a heap that keeps what it
    // frees, the warm-up run pays the faults and the timed runs measure the patchers.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    std::vector<std::string> profiles, objects;
    std::string object_arch = "x86_64";
    std::optional<uint64_t> insns, patches;
    bool sweep = false, json = false, check_bars = false;
    std::string plot;
    uint64_t seed = 1, density = 4, sweep_max = 1000000;
    BenchOptions opt;
    opt.max_incremental_insns = 64000;
    opt.budget_s = 20;
    const std::string workloads = "workloads (any combination)", measurement = "measurement", output = "output";
    const VerbFlags spec{
        .verb = "bench",
        .usage = {"patchfuzz bench (--profile NAME[,NAME...] | --object X.bpf.o | --insns N --patches M",
                  "                 | --sweep)...",
                  "                [--patchers LIST] [--reps R] [--seed S] [--json] [--plot FILE]"},
        .about = "Time the incremental patcher (a model of the kernel's bpf_patch_insn_data(), one\n"
                 "patch at a time) against the batched patcher (one pass) on programs that really\n"
                 "patch: every hash-map lookup inlined into 3 insns with an internal jump.",
        .flags = {list_flag({"--profile"}, "NAMES",
                            "generated profiles: " + gen_profile_choices().listing() +
                                " (docs/workloads.md); or synthetic-pyperf180, synthetic-pyperf600: programs of those sizes and lookup counts with our own synthetic shape",
                            std::nullopt, [&](std::vector<std::string> v) { profiles.insert(profiles.end(), v.begin(), v.end()); })
                      .in(workloads)
                      .repeat(),
                  text_flag({"--object"}, "FILE",
                            "every batch the rewrite passes emit on every program of a BPF object (or .case), each timed on "
                            "the program it applies to",
                            [&](const std::string& v) {
                                objects.push_back(v);
                                return std::string();
                            })
                      .in(workloads)
                      .repeat(),
                  choice_flag({"--arch"}, "A", "the arch profile of --object's rewrite (default x86_64)", arch_choices(),
                              [&](const std::string& v) { object_arch = v; })
                      .in(workloads),
                  whole_flag_u64({"--insns"}, "N", "one synthetic program of N insns (16..50000000), with --patches", 16, 50000000,
                                 [&](uint64_t n) { insns = n; })
                      .in(workloads),
                  whole_flag_u64({"--patches"}, "M", "its M lookup sites (0..10000000, at most N/8)", 0, 10000000,
                                 [&](uint64_t n) { patches = n; })
                      .in(workloads),
                  switch_flag({"--sweep"}, "N = 1k ... 1M insns at --density PCT patches", sweep).in(workloads),
                  whole_flag({"--density"}, "PCT", "the sweep's patches per 100 insns, 1..12 (default 4)", density, 1, 12).in(workloads),
                  whole_flag({"--sweep-max"}, "N", "largest sweep size, 1000..50000000 (default 1000000)", sweep_max, 1000, 50000000)
                      .in(workloads),
                  list_flag({"--patchers"}, "LIST", "comma list of incremental, batched (default both)",
                            Choices{"patcher", {"incremental", "batched"}}, [&](std::vector<std::string> v) { opt.patchers = std::move(v); })
                      .in(measurement),
                  whole_flag({"--reps"}, "R", "timed repetitions per patcher, 1..1000 (default 5; median and spread)", opt.reps, 1, 1000)
                      .in(measurement),
                  whole_flag_u64({"--budget"}, "SEC", "per patcher and workload, 1..36000; fewer reps if one run is slower (default 20)", 1,
                                 36000, [&](uint64_t n) { opt.budget_s = static_cast<double>(n); })
                      .in(measurement),
                  whole_flag({"--max-incremental"}, "N", "skip the O(N*M) patcher above N insns (default 64000)", opt.max_incremental_insns, 0,
                             50000000)
                      .in(measurement),
                  switch_flag({"--no-verify"}, "do not compare the patchers' outputs before timing", opt.verify, false).in(measurement),
                  whole_flag({"--seed"}, "S", "workload seed (default 1; printed)", seed).in(measurement),
                  switch_flag({"--json"}, "one JSON document: {\"workloads\": [one object per workload], ...} instead of CSV (the "
                              "default: CSV on stdout, summary lines start with '#')", json)
                      .in(output),
                  text_flag({"--plot"}, "FILE", "gnuplot log-log plot of the sweep (.svg or .png)",
                            [&](const std::string& v) {
                                const auto ext = std::filesystem::path(v).extension().string();
                                if (ext != ".svg" && ext != ".png") return "'" + v + "': the file must end in .svg or .png";
                                plot = v;
                                return std::string();
                            })
                      .in(output),
                  switch_flag({"--check-bars"}, "exit 1 when a measured bar of issue #3 is missed", check_bars).in(output)},
        .exit = "exit: 0 ok, 1 patchers disagree (or --check-bars and a bar missed), 2 bad usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (insns.has_value() != patches.has_value()) return spec.error("--insns and --patches go together");
    if (insns && *patches * 8 > *insns) return spec.error("--patches " + std::to_string(*patches) + ": at most insns/8 lookup sites fit");
    if (profiles.empty() && objects.empty() && !insns && !sweep)
        return spec.error("nothing to measure: give --profile, --object, --insns/--patches or --sweep");
    if (!plot.empty() && !sweep) return spec.error("--plot draws the sweep: add --sweep");

    // Build every workload first (generation is not measured).
    std::vector<std::pair<Workload, bool>> work;
    for (const auto& name : profiles) {
        if (name == "synthetic-pyperf180" || name == "synthetic-pyperf600") {
            // The size and lookup count of the generated profile of the same object (gen/profiles.cpp).
            const auto sized = gen::profile_spec(name.substr(std::string_view("synthetic-").size()));
            Workload w = patch::synthetic_workload(sized->insns, sized->hash_lookups, seed);
            w.name = name;
            work.emplace_back(std::move(w), false);
            continue;
        }
        if (!gen::profile_spec(name)) {
            std::string known;
            for (auto n : gen::profile_names()) known += std::string(n) + ", ";
            return spec.error("--profile: unknown profile '" + name + "' (known: " + known + "synthetic-pyperf180, synthetic-pyperf600)");
        }
        Workload w;
        w.name = name;
        w.prog = gen::generate_profile(name, seed);
        w.batch = patch::hash_lookup_batch(w.prog);
        if (w.batch.patches.empty()) return spec.error("--profile " + name + ": the generated program has no hash-map lookup to inline");
        work.emplace_back(std::move(w), false);
    }
    for (const auto& path : objects) {
        auto cases = read_input_cases(path);
        if (!cases) return spec.error(cases.error().to_string());
        size_t before = work.size();
        for (const auto& c : *cases) {
            BatchRecorder rec(path + ":" + (c.program.name.empty() ? "prog" : c.program.name));
            Program p = c.program;
            passes::RewriteOptions o = c.options;
            o.arch = *arch_by_name(object_arch);
            if (auto r = passes::run_pipeline(p, rec, o); !r.outcome.ok())
                return spec.error(path + ": the rewrite of " + c.program.name + " failed: " + r.outcome.log);
            for (auto& w : rec.workloads) work.emplace_back(std::move(w), false);
        }
        if (work.size() == before && !json) std::fprintf(stderr, "patchfuzz bench: %s: no pass emits a patch on %s\n", path.c_str(), object_arch.c_str());
    }
    if (insns) work.emplace_back(patch::synthetic_workload(static_cast<uint32_t>(*insns), static_cast<uint32_t>(*patches), seed), false);
    if (sweep) {
        static constexpr uint64_t kSizes[] = {1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1000000,
                                              2000000, 4000000, 8000000, 16000000, 32000000};
        for (uint64_t n : kSizes) {
            if (n > sweep_max) break;
            Workload w = patch::synthetic_workload(static_cast<uint32_t>(n), static_cast<uint32_t>(n * density / 100), seed);
            w.name = "sweep-" + std::to_string(n);
            work.emplace_back(std::move(w), true);
        }
    }

    std::vector<Row> rows;
    bool disagree = false;
    for (auto& [w, is_sweep] : work) {
        if (!json) std::fprintf(stderr, "patchfuzz bench: %s (%u insns, %zu patches)...\n", w.name.c_str(), w.prog.len(), w.batch.patches.size());
        rows.push_back(Row{patch::run_workload(w, opt), is_sweep});
        if (opt.verify && !rows.back().r.verified) disagree = true;
    }

    // Growth exponents over the sweep.
    auto fit = [&](const std::string& who) {
        std::vector<std::pair<double, double>> xy;
        for (const auto& row : rows) {
            if (!row.sweep) continue;
            const double t = who == "memcpy" ? row.r.memcpy_baseline.median_ns : med(row.r.timing(who));
            if (std::isfinite(t) && t > 0) xy.emplace_back(row.r.insns, t);
        }
        return patch::fit_exponent(xy);
    };
    const double e_inc = fit("incremental"), e_bat = fit("batched"), e_mem = fit("memcpy");

    std::vector<Bar> bars;
    std::vector<std::string> notes;
    for (const auto& row : rows) {
        const double inc = med(row.r.timing("incremental")), bat = med(row.r.timing("batched"));
        if ((row.r.workload == "pyperf600" || row.r.workload == "synthetic-pyperf600") && std::isfinite(inc) && std::isfinite(bat))
            bars.push_back({"batched >= 100x faster than incremental on " + row.r.workload, inc / bat, ">= 100", inc / bat >= 100});
        if (row.r.insns >= 1000000 && row.r.patches >= 40000 && std::isfinite(bat))
            bars.push_back({"batched <= 3x memcpy on " + row.r.workload + " (" + std::to_string(row.r.patches) + " patches)",
                            bat / row.r.memcpy_baseline.median_ns, "<= 3", bat / row.r.memcpy_baseline.median_ns <= 3});
        for (const auto& [n, t] : row.r.patchers)
            if (!t.note.empty()) notes.push_back(row.r.workload + ": " + n + " " + t.note);
        if (!row.r.verified && opt.verify) notes.push_back(row.r.workload + ": PATCHERS DISAGREE: " + row.r.verify_error);
    }
    if (std::isfinite(e_inc)) bars.push_back({"incremental growth exponent ~2", e_inc, "1.7 .. 2.3", e_inc >= 1.7 && e_inc <= 2.3});
    if (std::isfinite(e_bat)) bars.push_back({"batched growth exponent ~1", e_bat, "0.8 .. 1.25", e_bat >= 0.8 && e_bat <= 1.25});

    if (json) {
        std::printf("{\"seed\": %llu, \"workloads\": [", static_cast<unsigned long long>(seed));
        for (size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i].r;
            const Timing* ti = r.timing("incremental");
            const Timing* tb = r.timing("batched");
            const double inc = med(ti), bat = med(tb), mem = r.memcpy_baseline.median_ns;
            std::printf("%s\n  {\"workload\": %s, \"insns\": %u, \"patches\": %u, \"new_insns\": %u, \"moved_bytes\": %zu, "
                        "\"incremental_ns\": %s, \"incremental_min_ns\": %s, \"incremental_max_ns\": %s, \"incremental_reps\": %u, "
                        "\"batched_ns\": %s, \"batched_min_ns\": %s, \"batched_max_ns\": %s, \"batched_reps\": %u, "
                        "\"memcpy_ns\": %s, \"ratio\": %s, \"batched_over_memcpy\": %s, \"verified\": %s}",
                        i ? "," : "", json_str(r.workload).c_str(), r.insns, r.patches, r.new_insns, r.moved_bytes,
                        num(inc).c_str(), num(ti && ti->measured ? ti->min_ns : NAN).c_str(),
                        num(ti && ti->measured ? ti->max_ns : NAN).c_str(), ti ? ti->reps : 0, num(bat).c_str(),
                        num(tb && tb->measured ? tb->min_ns : NAN).c_str(), num(tb && tb->measured ? tb->max_ns : NAN).c_str(),
                        tb ? tb->reps : 0, num(mem).c_str(), num3(inc / bat).c_str(), num3(bat / mem).c_str(),
                        opt.verify ? (r.verified ? "true" : "false") : "null");
        }
        std::printf("\n], \"exponents\": {\"incremental\": %s, \"batched\": %s, \"memcpy\": %s}, \"bars\": [",
                    num3(e_inc).c_str(), num3(e_bat).c_str(), num3(e_mem).c_str());
        for (size_t i = 0; i < bars.size(); ++i)
            std::printf("%s{\"bar\": %s, \"value\": %s, \"target\": %s, \"pass\": %s}", i ? ", " : "", json_str(bars[i].name).c_str(),
                        num3(bars[i].value).c_str(), json_str(bars[i].target).c_str(), bars[i].pass ? "true" : "false");
        std::printf("], \"notes\": [");
        for (size_t i = 0; i < notes.size(); ++i) std::printf("%s%s", i ? ", " : "", json_str(notes[i]).c_str());
        std::printf("]}\n");
    } else {
        std::printf("# patchfuzz bench, seed %llu, %u reps (median; min/max spread), memcpy baseline = fresh buffer of every array the batched patcher writes\n",
                    static_cast<unsigned long long>(seed), opt.reps);
        std::printf("workload,insns,patches,new_insns,incremental_ns,incremental_min_ns,incremental_max_ns,batched_ns,batched_min_ns,batched_max_ns,memcpy_ns,ratio,batched_over_memcpy,verified\n");
        for (const auto& row : rows) {
            const auto& r = row.r;
            const Timing* ti = r.timing("incremental");
            const Timing* tb = r.timing("batched");
            const double inc = med(ti), bat = med(tb), mem = r.memcpy_baseline.median_ns;
            auto or_empty = [](const std::string& s) { return s == "null" ? std::string() : s; };
            std::printf("%s,%u,%u,%u,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r.workload.c_str(), r.insns, r.patches, r.new_insns,
                        or_empty(num(inc)).c_str(), or_empty(num(ti && ti->measured ? ti->min_ns : NAN)).c_str(),
                        or_empty(num(ti && ti->measured ? ti->max_ns : NAN)).c_str(), or_empty(num(bat)).c_str(),
                        or_empty(num(tb && tb->measured ? tb->min_ns : NAN)).c_str(),
                        or_empty(num(tb && tb->measured ? tb->max_ns : NAN)).c_str(), or_empty(num(mem)).c_str(),
                        or_empty(num3(inc / bat)).c_str(), or_empty(num3(bat / mem)).c_str(),
                        opt.verify ? (r.verified ? "yes" : "NO") : "unchecked");
        }
        if (std::isfinite(e_inc) || std::isfinite(e_bat))
            std::printf("# growth exponent (least squares on log-log over the sweep): incremental %s, batched %s, memcpy %s\n",
                        num3(e_inc).c_str(), num3(e_bat).c_str(), num3(e_mem).c_str());
        for (const auto& b : bars)
            std::printf("# bar: %s: %s (target %s) %s\n", b.name.c_str(), num3(b.value).c_str(), b.target.c_str(), b.pass ? "PASS" : "MISSED");
        for (const auto& n : notes) std::printf("# note: %s\n", n.c_str());
    }

    if (!plot.empty()) {
        namespace fs = std::filesystem;
        const fs::path dir = fs::temp_directory_path();
        const std::string tag = std::to_string(::getpid());
        const fs::path data = dir / ("patchfuzz-bench-" + tag + ".dat");
        const fs::path script = dir / ("patchfuzz-bench-" + tag + ".gp");
        {
            std::ofstream d(data);
            d << "# insns incremental_ns batched_ns memcpy_ns\n";
            for (const auto& row : rows) {
                if (!row.sweep) continue;
                auto col = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string("?"); };
                d << row.r.insns << ' ' << col(med(row.r.timing("incremental"))) << ' ' << col(med(row.r.timing("batched"))) << ' '
                  << col(row.r.memcpy_baseline.median_ns) << '\n';
            }
        }
        {
            const bool svg = fs::path(plot).extension() == ".svg";
            std::ofstream s(script);
            s << (svg ? "set terminal svg size 960,640 dynamic\n" : "set terminal pngcairo size 960,640\n");
            s << "set output '" << plot << "'\n"
              << "set logscale xy\nset grid\nset key left top\nset datafile missing '?'\n"
              << "set xlabel 'program size N (insns); patches = " << density << "% of N'\n"
              << "set ylabel 'time to apply all patches (ns, median)'\n"
              << "set title 'patchfuzz bench: incremental O(N*M) (exponent " << num3(e_inc) << ") vs batched O(N+M) (exponent "
              << num3(e_bat) << ")'\n"
              << "plot '" << data.string() << "' using 1:2 with linespoints lw 2 title 'incremental (kernel model)', "
              << "'' using 1:3 with linespoints lw 2 title 'batched', "
              << "'' using 1:4 with lines dashtype 2 title 'memcpy floor'\n";
        }
        const std::string cmd = "gnuplot '" + script.string() + "'";
        const int rc = std::system(cmd.c_str());
        std::error_code ec;
        fs::remove(data, ec);
        fs::remove(script, ec);
        if (rc != 0) return spec.error("--plot " + plot + ": gnuplot failed (is gnuplot-nox installed?)");
        if (!json) std::printf("# plot: %s\n", plot.c_str());
    }

    if (disagree) {
        std::fprintf(stderr, "patchfuzz bench: the patchers produced different programs (see notes)\n");
        return 1;
    }
    if (check_bars)
        for (const auto& b : bars)
            if (!b.pass) return 1;
    return 0;
}

}  // namespace patchfuzz::cli
