// Profiles hit their target insn and hash-lookup counts within 5%, deterministically.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gen/profiles.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {
namespace {

TEST(Profiles, HitTargetsWithinFivePercent) {
    ASSERT_EQ(profile_names().size(), 4u);
    for (auto name : profile_names()) {
        const auto spec = profile_spec(name);
        ASSERT_TRUE(spec.has_value());
        for (uint64_t seed : {1ull, 2ull, 3ull, 4ull}) {
            const Program p = generate_profile(name, seed);
            ASSERT_TRUE(check_shape(p).ok()) << name;
            const auto s = analyze(p);
            std::printf("%-12s seed %llu: %u insns (target %u), %u hash lookups (target %u), %u subprogs, max jump %u\n",
                        std::string(name).c_str(), static_cast<unsigned long long>(seed), s.insns, spec->insns,
                        s.hash_lookups, spec->hash_lookups, s.subprogs, s.max_jump);
            EXPECT_LE(std::abs(static_cast<double>(s.insns) - spec->insns), 0.05 * spec->insns) << name;
            EXPECT_LE(std::abs(static_cast<double>(s.hash_lookups) - spec->hash_lookups), 0.05 * spec->hash_lookups) << name;
            EXPECT_GE(s.max_jump, std::min<uint32_t>(16500, spec->insns / 3) - 600) << name << ": the long jump is missing";
        }
        EXPECT_TRUE(generate_profile(name, 5) == generate_profile(name, 5));
    }
    EXPECT_TRUE(generate_profile("nope", 1).insns.empty());
    EXPECT_FALSE(profile_spec("nope").has_value());
}

}  // namespace
}  // namespace patchfuzz::gen
