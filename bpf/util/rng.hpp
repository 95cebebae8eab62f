#pragma once
// Rng: a small, fast, explicitly seeded generator (SplitMix64). Every random run prints its seed;
// no RNG in patchfuzz is ever seeded implicitly.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace patchfuzz {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() { return step(state_); }
    // Uniform in [lo, hi] (inclusive); hi >= lo.
    uint64_t range(uint64_t lo, uint64_t hi) {
        uint64_t span = hi - lo + 1;
        return span == 0 ? next() : lo + next() % span;
    }
    bool chance(uint32_t num, uint32_t den) { return range(0, den - 1) < num; }
    [[nodiscard]] uint64_t state() const { return state_; }
    // Passes over the next n draws: the state is a counter that every draw steps by kStep, so
    // this is where n calls of next() would leave it, at the cost of one multiply-add.
    void discard(uint64_t n) { state_ += n * kStep; }
    // Random bytes, eight per draw (little-endian), for inputs of hundreds of bytes. The state
    // is kept in a local meanwhile: stores through a byte pointer may alias the member, which
    // would be reloaded and stored again for every word.
    void fill(std::vector<uint8_t>& bytes) {
        uint64_t s = state_;
        fill_bytes(bytes, [&s] { return step(s); });
        state_ = s;
    }

    template <class Next>
    static void fill_bytes(std::vector<uint8_t>& bytes, Next&& next) {
        const size_t n = bytes.size();
        uint8_t* p = bytes.data();
        size_t i = 0;
        for (; i + 8 <= n; i += 8) put_le64(p + i, next());  // whole words, then the tail
        if (i < n) {
            const uint64_t v = next();
            for (size_t k = 0; i + k < n; ++k) p[i + k] = static_cast<uint8_t>(v >> (8 * k));
        }
    }

    // The eight bytes of `v` at `p`, little-endian whatever the host's: one store on a
    // little-endian host (g++ 12 keeps a byte loop as eight shifts and eight stores).
    static void put_le64(uint8_t* p, uint64_t v) {
        if constexpr (std::endian::native == std::endian::little) {
            std::memcpy(p, &v, sizeof v);
        } else {
            for (size_t k = 0; k < 8; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
        }
    }

private:
    static constexpr uint64_t kStep = 0x9e3779b97f4a7c15ULL;  // SplitMix64's gamma

    // One SplitMix64 step of `state`.
    static uint64_t step(uint64_t& state) {
        uint64_t z = (state += kStep);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    uint64_t state_;
};

}  // namespace patchfuzz
