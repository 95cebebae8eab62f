#pragma once
// Rng: a small, fast, explicitly seeded generator (SplitMix64). Every random run prints its seed;
// no RNG in patchfuzz is ever seeded implicitly.
#include <cstdint>

namespace patchfuzz {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi] (inclusive); hi >= lo.
    uint64_t range(uint64_t lo, uint64_t hi) {
        uint64_t span = hi - lo + 1;
        return span == 0 ? next() : lo + next() % span;
    }
    bool chance(uint32_t num, uint32_t den) { return range(0, den - 1) < num; }
    [[nodiscard]] uint64_t state() const { return state_; }

private:
    uint64_t state_;
};

}  // namespace patchfuzz
