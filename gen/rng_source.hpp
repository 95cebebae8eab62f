#pragma once
// RngSource: the generator driven by a seeded Rng (campaigns, `patchfuzz gen`, benchmarks).
// Same seed, same options -> same program, bit for bit.
#include <cstdint>

#include "bpf/util/rng.hpp"
#include "gen/choice_source.hpp"

namespace patchfuzz::gen {

class RngSource final : public ChoiceSource {
public:
    explicit RngSource(uint64_t seed) : rng_(seed) {}
    uint64_t draw(uint64_t lo, uint64_t hi, Tag) override {
        // Multiply-shift instead of `%` (Lemire): the generator draws several times per insn.
        const uint64_t span = hi - lo + 1;
        const uint64_t r = rng_.next();
        if (span == 0) return r;
        return lo + static_cast<uint64_t>((static_cast<unsigned __int128>(r) * span) >> 64);
    }
    bool more(uint32_t have, uint32_t want) override { return have < want; }

private:
    Rng rng_;
};

}  // namespace patchfuzz::gen
