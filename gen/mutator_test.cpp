// The structured mutator: always a valid program, deterministic in its seed, and it really
// changes programs (insertions, deletions, new rewrite sites).
#include <gtest/gtest.h>

#include <cstring>

#include "bpf/util/rng.hpp"
#include "gen/byte_source.hpp"
#include "gen/mutator.hpp"
#include "gen/rng_source.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {
namespace {

TEST(Mutator, MutantsAreValidDeterministicAndDifferent) {
    Rng rng(3);
    uint32_t changed = 0, grew = 0, shrank = 0, runs = 0;
    for (int n = 0; n < 300; ++n) {
        std::vector<uint8_t> buf(4096);
        size_t size = rng.range(1, 400);
        for (size_t i = 0; i < size; ++i) buf[i] = static_cast<uint8_t>(rng.next());
        for (int round = 0; round < 10; ++round, ++runs) {
            const Program before = decode_bytes(buf.data(), size).program;
            std::vector<uint8_t> copy(buf);
            const unsigned seed = static_cast<unsigned>(rng.next());
            const size_t nsize = mutate_bytes(buf.data(), size, buf.size(), seed);
            const size_t nsize2 = mutate_bytes(copy.data(), size, copy.size(), seed);
            ASSERT_EQ(nsize, nsize2);
            ASSERT_EQ(0, std::memcmp(buf.data(), copy.data(), nsize));
            ASSERT_LE(nsize, buf.size());
            const Program after = decode_bytes(buf.data(), nsize).program;
            const Status st = check_shape(after);
            ASSERT_TRUE(st.ok()) << st.error().to_string();
            changed += !(after == before);
            grew += after.len() > before.len();
            shrank += after.len() < before.len();
            size = nsize;
        }
    }
    std::printf("%u mutations: %u changed the program, %u grew it, %u shrank it\n", runs, changed, grew, shrank);
    EXPECT_GT(changed, runs / 2);
    EXPECT_GT(grew, runs / 10);
    EXPECT_GT(shrank, runs / 10);
}

TEST(Mutator, RespectsMaxSize) {
    std::vector<uint8_t> buf(64, 0x5a);
    for (unsigned seed = 0; seed < 200; ++seed) {
        const size_t n = mutate_bytes(buf.data(), buf.size(), buf.size(), seed);
        ASSERT_LE(n, buf.size());
        EXPECT_TRUE(check_shape(decode_bytes(buf.data(), n).program).ok());
    }
}

}  // namespace
}  // namespace patchfuzz::gen
