#pragma once
// ByteSource: the generator driven by a byte string (libFuzzer). Every byte string decodes to a
// valid program: a choice reads as many bytes as its range needs (1, 2, 4 or 8, little endian) and
// takes the value modulo the range; an exhausted string yields the minimal choice; more() reads one
// byte (0 = stop). Each item is framed by a LEB128 length, so a change inside one item leaves the
// decoding of the following items untouched.
//
// The source records the trace of what it decoded (choices and item brackets). encode_trace()
// turns a trace back into bytes that decode to exactly that trace, which is what the structured
// mutator (mutator.hpp) relies on: decode -> edit the trace -> encode.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gen/choice_source.hpp"

namespace patchfuzz::gen {

struct TraceElem {
    enum class Kind : uint8_t { Choice, Begin, End };
    Kind kind = Kind::Choice;
    Tag tag = Tag::Misc;
    uint64_t lo = 0, hi = 0, value = 0;
};
using Trace = std::vector<TraceElem>;

class ByteSource final : public ChoiceSource {
public:
    explicit ByteSource(std::span<const uint8_t> bytes, bool record = false);
    bool more(uint32_t have, uint32_t want) override;
    void enter() override;
    void leave() override;

    [[nodiscard]] const Trace& trace() const { return trace_; }
    [[nodiscard]] size_t consumed() const { return pos_; }

private:
    uint64_t choose(uint64_t lo, uint64_t hi, Tag tag) override;
    uint64_t read_le(unsigned width);
    uint64_t read_leb128();
    std::span<const uint8_t> bytes_;
    size_t pos_ = 0;
    std::vector<size_t> ends_;  // frame ends, innermost last
    bool record_;
    Trace trace_;
};

// Bytes that ByteSource decodes to exactly `trace` (given the same generator options).
std::vector<uint8_t> encode_trace(const Trace& trace);
// Bytes needed to store a choice of range [lo, hi].
unsigned choice_width(uint64_t lo, uint64_t hi);

}  // namespace patchfuzz::gen
