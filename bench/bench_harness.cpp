#include "bench/bench_harness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "bpf/patch/index_map.hpp"

namespace patchfuzz::patch {
namespace {

Timing summarize(std::vector<double> ns) {
    Timing t;
    t.measured = true;
    t.reps = static_cast<uint32_t>(ns.size());
    std::sort(ns.begin(), ns.end());
    auto median = [](const std::vector<double>& v) {
        const size_t n = v.size();
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    };
    t.median_ns = median(ns);
    t.min_ns = ns.front();
    t.max_ns = ns.back();
    std::vector<double> dev;
    for (double x : ns) dev.push_back(std::fabs(x - t.median_ns));
    std::sort(dev.begin(), dev.end());
    t.mad_ns = median(dev);
    return t;
}

double now_ns() {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

const Timing* BenchResult::timing(const std::string& name) const {
    for (const auto& [n, t] : patchers)
        if (n == name) return &t;
    return nullptr;
}

BenchResult run_workload(const Workload& w, const BenchOptions& opt) {
    BenchResult res;
    res.workload = w.name;
    res.insns = w.prog.len();
    res.patches = static_cast<uint32_t>(w.batch.patches.size());
    res.new_insns = index_map(w.prog.len(), w.batch).back();
    res.moved_bytes = moved_bytes(w.prog, w.batch);
    const uint32_t reps = std::max<uint32_t>(1, opt.reps);

    bool have_ref = false;
    Program ref;
    PatchOutcome ref_out;
    res.verified = opt.verify;
    for (const auto& name : opt.patchers) {
        Timing t;
        // The incremental patcher at the kernel's cost: every branch walk visits every insn.
        auto patcher = name == "incremental" ? make_incremental_patcher(BranchWalk::EveryInsn) : make_patcher(name);
        if (!patcher) continue;
        if (name == "incremental" && w.prog.len() > opt.max_incremental_insns) {
            t.note = "skipped: O(N*M) above " + std::to_string(opt.max_incremental_insns) + " insns";
            res.patchers.emplace_back(name, t);
            continue;
        }
        // Warm-up run, also the verification run.
        Program p = w.prog;
        const double t0 = now_ns();
        const PatchOutcome out = patcher->apply(p, w.batch);
        const double first = now_ns() - t0;
        if (opt.verify) {
            if (!have_ref) {
                ref = std::move(p);
                ref_out = out;
                have_ref = true;
            } else if (!(out == ref_out) || (out.ok() && !(p == ref))) {
                res.verified = false;
                if (res.verify_error.empty()) res.verify_error = name + " differs from " + opt.patchers.front();
            }
        }
        uint32_t n = reps;
        if (first * reps > opt.budget_s * 1e9) {
            n = std::max<uint32_t>(1, static_cast<uint32_t>(opt.budget_s * 1e9 / std::max(first, 1.0)));
            t.note = "reps reduced to " + std::to_string(n) + " to fit a " + std::to_string(static_cast<int>(opt.budget_s)) + " s budget";
        }
        std::vector<double> ns;
        for (uint32_t i = 0; i < n; ++i) {
            Program q = w.prog;  // fresh input, copied outside the clock
            const double a = now_ns();
            (void)patcher->apply(q, w.batch);
            ns.push_back(now_ns() - a);
        }
        Timing s = summarize(std::move(ns));
        s.note = t.note;
        res.patchers.emplace_back(name, s);
    }

    // memcpy baseline: the same bytes into freshly allocated memory (the patchers allocate their
    // output too, so page faults are part of both).
    std::vector<std::byte> src(res.moved_bytes, std::byte{0x5a});
    volatile unsigned char sink = 0;
    std::vector<double> ns;
    for (uint32_t i = 0; i < reps + 1; ++i) {
        const double a = now_ns();
        std::unique_ptr<std::byte[]> dst(new std::byte[src.size()]);
        std::memcpy(dst.get(), src.data(), src.size());
        sink = sink + static_cast<unsigned char>(dst[src.size() / 2]);
        const double b = now_ns() - a;
        if (i > 0) ns.push_back(b);  // the first is the warm-up
    }
    res.memcpy_baseline = summarize(std::move(ns));
    return res;
}

double fit_exponent(const std::vector<std::pair<double, double>>& xy) {
    if (xy.size() < 2) return std::nan("");
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : xy) {
        const double lx = std::log(x), ly = std::log(y);
        sx += lx;
        sy += ly;
        sxx += lx * lx;
        sxy += lx * ly;
    }
    const double n = static_cast<double>(xy.size());
    const double den = n * sxx - sx * sx;
    return den == 0 ? std::nan("") : (n * sxy - sx * sy) / den;
}

}  // namespace patchfuzz::patch
