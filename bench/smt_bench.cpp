// smt_bench: the figures of issue 5 (not a ctest test; timing belongs here).
//   * jump-target oracle: median ms per random 100-insn case (query cache off), unknown rate;
//   * a pyperf600-sized case (docs/workloads.md): 80.6k insns, 1520 three-insn lookup patches, ~0.45 line-info
//     records per insn, long jumps (up to ~16k), one oracle run (cache off);
//   * the bounded contract proof for K = 4;
//   * every inline proof (all families, all three profiles).
// Outputs come from the real batched patcher; usage: smt_bench [--seed S] [--cases N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/rng.hpp"
#include "oracles/smt/contract_proof.hpp"
#include "oracles/smt/inline_equiv.hpp"
#include "oracles/smt/jump_oracle.hpp"

using namespace patchfuzz;
using oracles::Outcome;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// CPU time of this thread: the machine the figures are taken on may be shared, so both are shown.
double cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A program of `n` insns: main prog and (if n is large enough) one subprog; random forward and
// backward conditional jumps and gotos within +-max_disp, helper calls at `call_every`.
Program random_program(Rng& rng, uint32_t n, uint32_t max_disp, uint32_t jump_pct, double linfo_per_insn) {
    std::vector<isa::Insn> in(n, isa::mov64_imm(0, 0));
    const uint32_t sub = n >= 20 ? n - n / 5 : n;  // subprog start
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t lo = i < sub ? 0 : sub, hi = i < sub ? sub - 1 : n - 1;
        if (i == sub - 1 || i == n - 1) {
            in[i] = isa::exit_insn();
            continue;
        }
        const uint64_t r = rng.range(0, 99);
        if (r < jump_pct) {
            const int64_t tlo = std::max<int64_t>(lo, static_cast<int64_t>(i) - max_disp);
            const int64_t thi = std::min<int64_t>(hi, static_cast<int64_t>(i) + max_disp);
            const auto t = static_cast<int64_t>(rng.range(static_cast<uint64_t>(tlo), static_cast<uint64_t>(thi)));
            in[i] = rng.chance(1, 5) ? isa::ja(static_cast<int16_t>(t - i - 1))
                                     : isa::jmp_imm(BPF_JEQ, static_cast<uint8_t>(rng.range(0, 9)), 0, static_cast<int16_t>(t - i - 1));
        } else if (r < jump_pct + 8) {
            in[i] = isa::call_helper(BPF_FUNC_map_lookup_elem);
        } else {
            in[i] = isa::alu64_imm(BPF_ADD, static_cast<uint8_t>(rng.range(0, 9)), static_cast<int32_t>(rng.range(0, 100)));
        }
    }
    if (sub < n && sub > 2) in[0] = isa::call_pseudo(static_cast<int32_t>(sub - 1));
    Program p = make_program(in);
    for (uint32_t i = 0; i < n; ++i)
        if (rng.range(0, 999) < static_cast<uint64_t>(linfo_per_insn * 1000)) p.linfo.push_back(LineInfo{.insn_off = i, .line_off = i});
    if (p.linfo.empty() || p.linfo[0].insn_off != 0) p.linfo.insert(p.linfo.begin(), LineInfo{.insn_off = 0});
    return p;
}

// Patch every helper call (up to `max`) with the hash-lookup inline shape (3 insns, jump to end),
// plus a few div-guard-shaped 4-insn patches on ALU insns.
patch::PatchBatch random_batch(Rng& rng, const Program& p, uint32_t max, uint32_t pct) {
    patch::PatchBatch b;
    for (uint32_t i = 0; i < p.len() && b.patches.size() < max; ++i) {
        const auto& in = p.insns[i];
        if (isa::is_helper_call(in) && rng.range(0, 99) < pct) {
            b.patches.push_back(patch::Patch{.pos = i,
                                             .insns = {isa::call_helper(0x10001), isa::jmp_imm(BPF_JEQ, 0, 0, 1),
                                                       isa::alu64_imm(BPF_ADD, 0, 56)}});
        } else if (isa::cls(in) == BPF_ALU64 && rng.range(0, 99) < pct / 10) {
            b.patches.push_back(patch::Patch{.pos = i,
                                             .insns = {isa::jmp_imm(BPF_JNE, 3, 0, 2), isa::alu32_reg(BPF_XOR, 2, 2), isa::ja(1), in}});
        }
    }
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = 1;
    uint32_t cases = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 0);
        if (!std::strcmp(argv[i], "--cases")) cases = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
    }
    std::printf("smt_bench: seed %llu, %u cases\n", static_cast<unsigned long long>(seed), cases);
    Rng rng(seed);
    auto batched = patch::make_patcher("batched");
    oracles::smt::SmtOptions nocache;
    nocache.use_cache = false;

    // ---- 100-insn cases ----
    std::vector<double> times, cpu;
    uint32_t counts[4] = {0, 0, 0, 0};
    oracles::smt::reset_smt_stats();
    for (uint32_t c = 0; c < cases; ++c) {
        const Program before = random_program(rng, 100, 40, 15, 0.45);
        const patch::PatchBatch batch = random_batch(rng, before, 8, 60);
        Program after = before;
        const patch::PatchOutcome out = batched->apply(after, batch);
        const double t0 = now_ms(), c0 = cpu_ms();
        const oracles::Verdict v = oracles::smt::check_jump_targets(before, batch, out, after, nocache);
        times.push_back(now_ms() - t0);
        cpu.push_back(cpu_ms() - c0);
        ++counts[static_cast<int>(v.outcome)];
        if (v.outcome == Outcome::Fail && counts[1] <= 3)
            std::printf("  case %u: %s %s | %s\n", c, v.divergence.c_str(), v.reason.c_str(), v.counterexample.c_str());
    }
    std::sort(times.begin(), times.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("jump oracle, 100-insn cases: median %.3f ms, p90 %.3f ms, max %.3f ms; pass %u fail %u unknown %u skip %u "
                "(unknown rate %.4f)\n",
                times[times.size() / 2], times[times.size() * 9 / 10], times.back(), counts[0], counts[1], counts[2], counts[3],
                static_cast<double>(counts[2]) / cases);
    std::printf("  cpu time per case: median %.3f ms, p90 %.3f ms\n", cpu[cpu.size() / 2], cpu[cpu.size() * 9 / 10]);
    std::printf("  smt stats: %s\n", oracles::smt::to_string(oracles::smt::smt_stats()).c_str());

    // ---- pyperf600-sized case ----
    {
        // 80,643 insns and 1520 lookups as pyperf600.bpf.o (docs/workloads.md), jumps reaching ~16k.
        Rng r2(seed ^ 0x600);
        Program before = random_program(r2, 80643, 16000, 12, 0.45);
        uint32_t calls = 0;
        for (uint32_t i = 1; i + 1 < before.len(); ++i) {
            if (isa::is_helper_call(before.insns[i])) ++calls;
        }
        patch::PatchBatch batch = random_batch(r2, before, 1520, 100);
        Program after = before;
        double t0 = now_ms();
        const patch::PatchOutcome out = batched->apply(after, batch);
        const double tp = now_ms() - t0;
        t0 = now_ms();
        const double c0 = cpu_ms();
        const oracles::Verdict v = oracles::smt::check_jump_targets(before, batch, out, after, nocache);
        const double tv = now_ms() - t0, cv = cpu_ms() - c0;
        std::printf("pyperf600-sized: %u insns, %zu patches (of %u calls), %zu linfo -> %u insns; batched patcher %.1f ms; "
                    "jump oracle %.1f ms (cpu %.1f ms): %s %s\n",
                    before.len(), batch.patches.size(), calls, before.linfo.size(), after.len(), tp, tv, cv,
                    std::string(oracles::to_string(v.outcome)).c_str(), v.reason.c_str());
    }

    // ---- contract proof, K = 4 ----
    {
        oracles::smt::ContractProofOptions o;
        o.max_patches = 4;
        const double t0 = now_ms(), c0 = cpu_ms();
        const oracles::Verdict v = oracles::smt::prove_contract(o);
        std::printf("contract proof K=4: %s in %.1f ms (cpu %.1f ms) (%s)\n", std::string(oracles::to_string(v.outcome)).c_str(),
                    now_ms() - t0, cpu_ms() - c0, v.reason.c_str());
    }

    // ---- inline proofs ----
    {
        const double t0 = now_ms(), c0 = cpu_ms();
        oracles::smt::InlineProofOptions o;
        const auto proofs = oracles::smt::prove_inlines(o);
        uint32_t k[4] = {0, 0, 0, 0};
        for (const auto& p : proofs) ++k[static_cast<int>(p.verdict.outcome)];
        std::printf("inline proofs (v4, all families, 3 profiles): %zu sequences in %.1f ms (cpu %.1f ms): pass %u fail %u "
                    "unknown %u skip %u\n",
                    proofs.size(), now_ms() - t0, cpu_ms() - c0, k[0], k[1], k[2], k[3]);
    }
    return 0;
}
