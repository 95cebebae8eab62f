#pragma once
// RngSource: the generator driven by a seeded Rng (campaigns, `patchfuzz gen`, benchmarks).
// Same seed, same options -> same program, bit for bit.
#include <cstdint>

#include "bpf/util/rng.hpp"
#include "gen/choice_source.hpp"

namespace patchfuzz::gen {

// The draws themselves are ChoiceSource::draw()'s inline seeded path, from rng_.
class RngSource final : public ChoiceSource {
public:
    explicit RngSource(uint64_t seed) : ChoiceSource(&rng_), rng_(seed) {}
    bool more(uint32_t have, uint32_t want) override { return have < want; }

private:
    // Never called: draw() does not dispatch for a seeded source.
    uint64_t choose(uint64_t lo, uint64_t hi, Tag tag) override { return draw(lo, hi, tag); }
    Rng rng_;
};

}  // namespace patchfuzz::gen
