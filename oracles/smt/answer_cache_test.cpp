// The solver-answer cache answers by the whole question: questions whose hashes collide keep their
// own answers, a full cache starts over, and a view of a question finds its entry.
#include "oracles/smt/answer_cache.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace patchfuzz::oracles::smt {
namespace {

// Every question in one bucket: only the key's equality can tell them apart.
struct Colliding {
    using is_transparent = void;
    size_t operator()(std::string_view) const { return 42; }
};

TEST(AnswerCache, CollidingQuestionsKeepTheirOwnAnswers) {
    AnswerCache<std::string, int, Colliding> cache(16);
    cache.put("D[1] - D[0] + 5 fits s16", 1);
    cache.put("D[1] - D[0] + 7 fits s16", 2);
    EXPECT_EQ(cache.find(std::string_view("D[1] - D[0] + 5 fits s16")), 1);
    EXPECT_EQ(cache.find(std::string_view("D[1] - D[0] + 7 fits s16")), 2);
    EXPECT_EQ(cache.find(std::string_view("D[1] - D[0] + 9 fits s16")), std::nullopt);
}

TEST(AnswerCache, AFullCacheStartsOver) {
    AnswerCache<std::string, int, Colliding> cache(2);
    cache.put("a", 1);
    cache.put("b", 2);
    EXPECT_EQ(cache.size(), 2u);
    cache.put("c", 3);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.find(std::string_view("a")), std::nullopt);
    EXPECT_EQ(cache.find(std::string_view("c")), 3);
}

}  // namespace
}  // namespace patchfuzz::oracles::smt
