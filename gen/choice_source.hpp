#pragma once
// ChoiceSource: the only way the program generator (program_gen.hpp) makes a decision. Three
// back ends drive the same generator: RapidCheck (rc_source.hpp: integrated shrinking and
// `reproduce=` strings), libFuzzer bytes (byte_source.hpp: every byte string decodes to a valid
// program) and a seeded Rng (rng_source.hpp: campaigns and the CLI).
//
// Conventions every back end relies on, so that "smaller choice" means "simpler program":
//  * draw(lo, hi) is inclusive; lo is the simplest value (RapidCheck shrinks towards it, an
//    exhausted byte string returns it).
//  * more(have, want) asks whether a block gets another item; false is the simple answer.
//  * enter()/leave() bracket one item (a statement of the generated program). The byte back end
//    frames each item with its length so that a mutation inside one item never changes how the
//    following items decode; the other back ends ignore the brackets.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "bpf/util/rng.hpp"

namespace patchfuzz::gen {

// What a choice decides; lets the mutator find e.g. the jump-distance choices in a trace.
enum class Tag : uint8_t { Kind, Reg, Imm, Off, Len, Jump, Flag, Map, More, Misc };

class ChoiceSource {
public:
    virtual ~ChoiceSource() = default;
    // A back end is one object: a copy would share (seeded) or duplicate (recorded) its state.
    ChoiceSource(const ChoiceSource&) = delete;
    ChoiceSource& operator=(const ChoiceSource&) = delete;

    // An integer in [lo, hi] (inclusive, lo <= hi). Not virtual: the seeded back end, which every
    // campaign case uses for a few hundred choices, is answered here inline (a virtual call cost
    // about as much as the choice); every other back end through choose(). Always inline: g++
    // kept a few dozen draws per case as calls (in block(), map_of()), each costing half a draw.
    [[gnu::always_inline]] uint64_t draw(uint64_t lo, uint64_t hi, Tag tag) {
        if (seeded_ == nullptr) return choose(lo, hi, tag);
        // Multiply-shift instead of `%` (Lemire): the generator draws several times per insn.
        const uint64_t span = hi - lo + 1;
        const uint64_t r = seeded_->next();
        if (span == 0) return r;
        return lo + static_cast<uint64_t>((static_cast<unsigned __int128>(r) * span) >> 64);
    }
    // Whether a block with `have` items gets one more; `want` is the length the generator aims at.
    virtual bool more(uint32_t have, uint32_t want) = 0;
    // more() as the generator asks it: the seeded back end's answer (have < want, as its more()
    // gives) inline, like draw()'s, instead of a virtual call for every item of every block.
    bool another(uint32_t have, uint32_t want) { return seeded_ != nullptr ? have < want : more(have, want); }
    // Size budget in [0, 100] (RapidCheck's size); scales lengths.
    [[nodiscard]] virtual uint32_t size() const { return 100; }
    virtual void enter() {}
    virtual void leave() {}

    // Draws a caller may end up not using, passed over where that is cheap: the seeded back end
    // skips its next n draws (its Rng's state is a counter, stepped once per draw: one addition
    // for all n) and returns the state before them, from which an RngSource makes exactly those
    // n draws if they are wanted after all. Every other back end records or reads its choices in
    // order: std::nullopt, and the caller makes the n draws at once, itself.
    std::optional<uint64_t> skip_draws(uint32_t n) {
        if (seeded_ == nullptr) return std::nullopt;
        const uint64_t before = seeded_->state();
        seeded_->discard(n);
        return before;
    }

    // Helpers in terms of draw().
    uint32_t pick(uint32_t n, Tag tag = Tag::Kind) { return n <= 1 ? 0 : static_cast<uint32_t>(draw(0, n - 1, tag)); }
    bool flag(Tag tag = Tag::Flag) { return draw(0, 1, tag) != 0; }
    // true with probability about num/den under random back ends (false is the simple answer).
    bool chance(uint32_t num, uint32_t den) { return draw(0, den - 1, Tag::Flag) >= den - num; }
    int64_t draw_signed(int64_t lo, int64_t hi, Tag tag) {
        // Shrinks towards the value closest to zero inside [lo, hi].
        const int64_t zero = lo > 0 ? lo : (hi < 0 ? hi : 0);
        const uint64_t up = static_cast<uint64_t>(hi - zero), down = static_cast<uint64_t>(zero - lo);
        const uint64_t v = draw(0, up + down, tag);
        // interleave: 0, +1, -1, +2, -2 ... restricted to the available sides
        if (v <= 2 * std::min(up, down)) {
            if (v == 0) return zero;
            const int64_t m = static_cast<int64_t>((v + 1) / 2);
            return (v % 2) ? zero + m : zero - m;
        }
        const uint64_t rest = v - 2 * std::min(up, down);
        return up > down ? zero + static_cast<int64_t>(std::min(up, down) + rest)
                         : zero - static_cast<int64_t>(std::min(up, down) + rest);
    }

protected:
    ChoiceSource() = default;
    // The seeded back end (rng_source.hpp): draw() takes every choice from `seeded`.
    explicit ChoiceSource(Rng* seeded) : seeded_(seeded) {}
    // Every other back end's choice: an integer in [lo, hi] (inclusive, lo <= hi).
    virtual uint64_t choose(uint64_t lo, uint64_t hi, Tag tag) = 0;

private:
    Rng* seeded_ = nullptr;
};

// RAII bracket for one item.
class ItemScope {
public:
    explicit ItemScope(ChoiceSource& s) : s_(s) { s_.enter(); }
    ~ItemScope() { s_.leave(); }
    ItemScope(const ItemScope&) = delete;
    ItemScope& operator=(const ItemScope&) = delete;

private:
    ChoiceSource& s_;
};

}  // namespace patchfuzz::gen
