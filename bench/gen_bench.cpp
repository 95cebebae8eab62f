// Generator throughput (not a ctest): valid 100-insn programs per second on one core, a 1M-insn
// program, byte decoding, mutation. Times are CPU seconds of this process (one core).
// Run: build*/bench/gen_bench [cpu-seconds-per-figure]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bpf/util/rng.hpp"
#include "gen/mutator.hpp"
#include "gen/program_gen.hpp"
#include "gen/profiles.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"

using namespace patchfuzz;
// CPU time of this process: the figures are "per core" even on a shared, loaded machine.
struct Clock {
    using time_point = double;
    static double now() {
        timespec ts{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }
};

static double secs(double a) { return Clock::now() - a; }

int main(int argc, char** argv) {
    const double budget = argc > 1 ? std::atof(argv[1]) : 2.0;
    gen::GenOptions o;
    o.min_insns = o.max_insns = 100;
    o.inputs = 0;
    {
        uint64_t n = 0, insns = 0;
        const auto t0 = Clock::now();
        while (secs(t0) < budget) {
            for (int k = 0; k < 1000; ++k, ++n) {
                gen::RngSource src(n);
                insns += generate(src, o).program.len();
            }
        }
        const double s = secs(t0);
        std::printf("generate 100-insn programs:            %10.0f programs/s (%.1f insns avg)\n", n / s, double(insns) / n);
    }
    {
        uint64_t n = 0, bad = 0;
        const auto t0 = Clock::now();
        while (secs(t0) < budget) {
            for (int k = 0; k < 1000; ++k, ++n) {
                gen::RngSource src(n);
                bad += !gen::check_shape(generate(src, o).program).ok();
            }
        }
        const double s = secs(t0);
        std::printf("generate + validate 100-insn programs: %10.0f programs/s (%llu invalid)\n", n / s,
                    static_cast<unsigned long long>(bad));
    }
    {
        gen::GenOptions big;
        big.min_insns = big.max_insns = 1000000;
        big.inputs = 1;
        const auto t0 = Clock::now();
        gen::RngSource src(1);
        const auto c = generate(src, big);
        const double s = secs(t0);
        const auto t1 = Clock::now();
        const bool ok = gen::check_shape(c.program).ok();
        std::printf("1M-insn program:                       %10.3f s to generate (%u insns, %u subprogs), %.3f s to validate (%s)\n",
                    s, c.program.len(), c.stats.subprogs, secs(t1), ok ? "valid" : "INVALID");
    }
    for (auto name : gen::profile_names()) {
        const auto t0 = Clock::now();
        const auto p = gen::generate_profile(name, 1);
        std::printf("profile %-12s                  %10.3f s (%u insns)\n", std::string(name).c_str(), secs(t0), p.len());
    }
    {
        Rng rng(1);
        std::vector<uint8_t> buf(8192);
        size_t size = 256;
        for (auto& b : buf) b = static_cast<uint8_t>(rng.next());
        uint64_t n = 0;
        const auto t0 = Clock::now();
        while (secs(t0) < budget) {
            for (int k = 0; k < 100; ++k, ++n) size = gen::mutate_bytes(buf.data(), size, buf.size(), static_cast<unsigned>(n));
        }
        std::printf("mutate_bytes (decode+mutate+encode):   %10.0f mutations/s (final input %zu bytes)\n", n / secs(t0), size);
    }
    return 0;
}
