// Benchmarks (not ctest): interpreter speed on the bpf_for loop (bar: >= 150 M BPF insns/s on one
// core) and execution-differential throughput on generated ~100-insn programs (bar: >= 20k cases/s),
// with the parts of a case alone (BM_Part*: generation, one pipeline, decoding, one run).
// Run: build/bench/interp_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bpf/interp/interp.hpp"
#include "bpf/interp/loop_programs.hpp"
#include "gen/program_gen.hpp"
#include "gen/rng_source.hpp"
#include "oracles/exec/exec_diff.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/passes/pass.hpp"

namespace {
using namespace patchfuzz;

void BM_BpfForLoop(benchmark::State& state) {
    const Program p = interp::bpf_for_program();
    interp::ExecInput in;
    interp::set_nr_loops(in, static_cast<uint32_t>(state.range(0)));
    in.step_budget = 1ULL << 40;
    uint64_t steps = 0;
    for (auto _ : state) {
        interp::ExecResult r = interp::execute(p, in, arch_x86_64());
        if (r.status != interp::ExecResult::Status::Ok) state.SkipWithError(r.reason.c_str());
        steps += r.steps;
        benchmark::DoNotOptimize(r.r0);
    }
    state.counters["insns/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BpfForLoop)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_BpfLoopInlined(benchmark::State& state) {
    // inline_bpf_loop shape: an ALU/branch loop with a BPF-to-BPF call per round.
    const Program p = interp::bpf_loop_program(true);
    interp::ExecInput in;
    interp::set_nr_loops(in, static_cast<uint32_t>(state.range(0)));
    in.step_budget = 1ULL << 40;
    uint64_t steps = 0;
    for (auto _ : state) {
        interp::ExecResult r = interp::execute(p, in, arch_x86_64());
        steps += r.steps;
        benchmark::DoNotOptimize(r.r0);
    }
    state.counters["insns/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BpfLoopInlined)->Arg(1000000)->Unit(benchmark::kMillisecond);

struct Corpus {
    std::vector<gen::GeneratedCase> cases;
    double mean_insns = 0;
};
const Corpus& corpus() {
    static Corpus c = [] {
        Corpus k;
        gen::GenOptions o;
        o.min_insns = 100;  // the bar's "100-insn programs" (the generator may end a little above)
        o.max_insns = 110;
        o.inputs = 1;
        double sum = 0;
        for (uint64_t s = 1; s <= 64; ++s) {
            gen::RngSource src(s);
            k.cases.push_back(gen::generate(src, o));
            sum += k.cases.back().program.len();
        }
        k.mean_insns = sum / static_cast<double>(k.cases.size());
        return k;
    }();
    return c;
}

// One case = the program rewritten by both patchers under x86_64, arm64 and jit32, and the
// original plus each rewrite executed on the case's input and compared. The argument: inputs
// generated per case on top (0: the case's own input only; 4: as a campaign's runner adds).
void BM_ExecDiffCase(benchmark::State& state) {
    const Corpus& c = corpus();
    size_t i = 0, fails = 0;
    for (auto _ : state) {
        const auto& gc = c.cases[i++ % c.cases.size()];
        oracles::exec::ExecDiffOptions o;
        o.given = gc.inputs;
        o.inputs = static_cast<uint32_t>(state.range(0));
        oracles::Verdict v = oracles::exec::exec_diff(gc.program, o);
        fails += v.outcome == oracles::Outcome::Fail;
        benchmark::DoNotOptimize(v.outcome);
    }
    state.counters["cases/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["mean_insns"] = c.mean_insns;
    state.counters["fails"] = static_cast<double>(fails);
}
BENCHMARK(BM_ExecDiffCase)->Arg(0)->Arg(4);

// Execution only (rewrites done once): what the interpreter contributes per case.
void BM_ExecOnlyCase(benchmark::State& state) {
    const Corpus& c = corpus();
    size_t i = 0;
    for (auto _ : state) {
        const auto& gc = c.cases[i++ % c.cases.size()];
        for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64(), &arch_jit32()}) {
            interp::ExecOptions eo;
            eo.collect_maps = true;
            auto r = interp::execute(gc.program, gc.inputs.front(), *a, eo);
            benchmark::DoNotOptimize(r.r0);
        }
    }
    state.counters["cases/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExecOnlyCase);

// Where a case's time goes: its parts alone, on the same ~100-insn programs.
void BM_PartGenerate(benchmark::State& state) {
    gen::GenOptions o;
    o.min_insns = 100;
    o.max_insns = 110;
    o.inputs = 1;
    uint64_t s = 1;
    for (auto _ : state) {
        gen::RngSource src(s++);
        auto gc = gen::generate(src, o);
        benchmark::DoNotOptimize(gc.program.insns.data());
    }
    state.counters["per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PartGenerate);

void BM_PartPipeline(benchmark::State& state) {
    const Corpus& c = corpus();
    const char* patcher = state.range(0) == 0 ? "incremental" : "batched";
    const ArchProfile& arch = state.range(1) == 0 ? arch_x86_64() : arch_jit32();
    size_t i = 0;
    for (auto _ : state) {
        const auto& gc = c.cases[i++ % c.cases.size()];
        Program q = gc.program;
        auto p = patch::make_patcher(patcher);
        passes::RewriteOptions ro;
        ro.arch = arch;
        auto r = passes::run_pipeline(q, *p, ro);
        benchmark::DoNotOptimize(r.outcome);
    }
    state.SetLabel(std::string(patcher) + "/" + std::string(arch.name));
    state.counters["per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PartPipeline)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1});

void BM_PartDecode(benchmark::State& state) {
    const Corpus& c = corpus();
    size_t i = 0;
    for (auto _ : state) {
        const auto& gc = c.cases[i++ % c.cases.size()];
        interp::Executable e(gc.program, arch_x86_64());
        benchmark::DoNotOptimize(&e);
    }
    state.counters["per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PartDecode);

void BM_PartExecute(benchmark::State& state) {
    const Corpus& c = corpus();
    std::vector<interp::Executable> exes;
    for (const auto& gc : c.cases) exes.emplace_back(gc.program, arch_x86_64());
    size_t i = 0;
    uint64_t steps = 0;
    interp::ExecOptions eo;
    eo.collect_maps = false;
    for (auto _ : state) {
        const size_t k = i++ % c.cases.size();
        auto r = interp::execute(exes[k], c.cases[k].inputs.front(), eo);
        steps += r.steps;
        benchmark::DoNotOptimize(r.r0);
    }
    state.counters["per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["steps_per_run"] = static_cast<double>(steps) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PartExecute);

}  // namespace

BENCHMARK_MAIN();
