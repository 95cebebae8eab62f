#pragma once
// RapidCheck back end: every choice is a `*rc::gen::inRange(lo, hi + 1)` inside rc::gen::exec, so
// RapidCheck records, shrinks (towards lo: the simple choice) and replays (`reproduce=`) the
// decisions of the one generator core. Use inside RC_GTEST_PROP:
//     const auto c = *gen::rc_case(opts);
// Link into executables only (librapidcheck.a is not PIC).
#include <rapidcheck.h>

#include "gen/program_gen.hpp"

namespace patchfuzz::gen {

class RcSource final : public ChoiceSource {
public:
    explicit RcSource(int size) : size_(size < 0 ? 0 : static_cast<uint32_t>(std::min(size, 100))) {}
    bool more(uint32_t have, uint32_t want) override { return have < want; }
    [[nodiscard]] uint32_t size() const override { return size_; }

private:
    uint64_t choose(uint64_t lo, uint64_t hi, Tag tag) override;
    uint32_t size_;
};

// A generated case; RapidCheck's size (0..100) scales max_insns between min_insns and
// opts.max_insns, so early tests are small and shrinking reaches tiny programs.
rc::Gen<GeneratedCase> rc_case(const GenOptions& opts);

}  // namespace patchfuzz::gen
