// Rng: the fills give the bytes a byte-at-a-time little-endian loop gives (the draws in order,
// each draw's lowest byte first, a partial last draw), so generated inputs are the same on every
// host and do not change when the fill gets faster.
#include "bpf/util/rng.hpp"

#include <gtest/gtest.h>

namespace patchfuzz {
namespace {

// The reference: each draw's bytes, lowest first.
std::vector<uint8_t> bytes_of_draws(Rng& r, size_t n) {
    std::vector<uint8_t> out;
    while (out.size() < n) {
        const uint64_t v = r.next();
        for (size_t k = 0; k < 8 && out.size() < n; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
    }
    return out;
}

TEST(Rng, FillGivesEachDrawsBytesLowestFirst) {
    for (uint64_t seed = 0; seed < 50; ++seed) {
        for (size_t n = 0; n <= 70; ++n) {
            Rng a(seed), b(seed);
            std::vector<uint8_t> x(n, 0xaa);
            a.fill(x);
            ASSERT_EQ(x, bytes_of_draws(b, n)) << "seed " << seed << ", " << n << " bytes";
            ASSERT_EQ(a.state(), b.state()) << "seed " << seed << ", " << n << " bytes";
        }
    }
}

TEST(Rng, FillBytesTakesAnyDrawSource) {
    std::vector<uint8_t> z(11);
    uint64_t calls = 0;
    Rng::fill_bytes(z, [&calls] { return ++calls == 1 ? uint64_t{0x0807060504030201} : uint64_t{0x00000000000c0b0a}; });
    EXPECT_EQ(z, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c}));
    EXPECT_EQ(calls, 2u);
}

TEST(Rng, DiscardLeavesTheStateWhereTheDrawsWould) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{3}, ~uint64_t{0}})
        for (uint64_t n : {0u, 1u, 5u, 1000u}) {
            Rng drawn(seed), discarded(seed);
            for (uint64_t k = 0; k < n; ++k) drawn.next();
            discarded.discard(n);
            EXPECT_EQ(discarded.state(), drawn.state()) << "seed " << seed << ", " << n << " draws";
            EXPECT_EQ(discarded.next(), drawn.next());
        }
}

}  // namespace
}  // namespace patchfuzz
