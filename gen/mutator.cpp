#include "gen/mutator.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include "bpf/util/rng.hpp"
#include "gen/byte_source.hpp"

namespace patchfuzz::gen {
namespace {

struct Span {
    size_t from, to;  // [from, to): optional More choice, Begin ... End
};

std::vector<Span> item_spans(const Trace& t) {
    std::vector<Span> out;
    std::vector<size_t> stack;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i].kind == TraceElem::Kind::Begin) {
            stack.push_back(i);
        } else if (t[i].kind == TraceElem::Kind::End && !stack.empty()) {
            size_t b = stack.back();
            stack.pop_back();
            if (b > 0 && t[b - 1].kind == TraceElem::Kind::Choice && t[b - 1].tag == Tag::More) --b;
            out.push_back({b, i + 1});
        }
    }
    return out;
}

uint64_t random_in(Rng& rng, const TraceElem& e) {
    // Bias to the ends of the range: edge values find more bugs.
    switch (rng.range(0, 3)) {
        case 0: return e.lo;
        case 1: return e.hi;
        default: return rng.range(e.lo, e.hi);
    }
}

// First choice of a kind inside [from, to) with the given tag (and optional range), or npos.
size_t find_choice(const Trace& t, size_t from, size_t to, Tag tag, uint64_t hi = 0) {
    for (size_t i = from; i < to; ++i)
        if (t[i].kind == TraceElem::Kind::Choice && t[i].tag == tag && (hi == 0 || t[i].hi == hi)) return i;
    return static_cast<size_t>(-1);
}

void mutate_once(Trace& t, Rng& rng) {
    const auto spans = item_spans(t);
    const auto pick_span = [&]() -> const Span* { return spans.empty() ? nullptr : &spans[rng.range(0, spans.size() - 1)]; };
    switch (rng.range(0, 7)) {
        case 0: {  // delete an item
            if (const Span* s = pick_span()) t.erase(t.begin() + static_cast<std::ptrdiff_t>(s->from), t.begin() + static_cast<std::ptrdiff_t>(s->to));
            return;
        }
        case 1:    // insert: duplicate an item next to itself
        case 5: {  // grow a subprog / block: several copies
            const Span* s = pick_span();
            if (!s) return;
            const Trace copy(t.begin() + static_cast<std::ptrdiff_t>(s->from), t.begin() + static_cast<std::ptrdiff_t>(s->to));
            const size_t times = rng.range(1, 4);
            for (size_t k = 0; k < times; ++k) t.insert(t.begin() + static_cast<std::ptrdiff_t>(s->to), copy.begin(), copy.end());
            return;
        }
        case 2: {  // replace an item: new kind (its operands re-decode from the same bytes)
            const Span* s = pick_span();
            if (!s) return;
            const size_t site = find_choice(t, s->from, s->to, Tag::Kind, 999);
            if (site != static_cast<size_t>(-1)) t[site].value = rng.range(0, 999);
            const size_t k = find_choice(t, site == static_cast<size_t>(-1) ? s->from : site + 1, s->to, Tag::Kind);
            if (k != static_cast<size_t>(-1)) t[k].value = rng.range(t[k].lo, t[k].hi);
            return;
        }
        case 3: {  // retarget a jump: change a block length or a jump distance
            std::vector<size_t> c;
            for (size_t i = 0; i < t.size(); ++i)
                if (t[i].kind == TraceElem::Kind::Choice && (t[i].tag == Tag::Len || t[i].tag == Tag::Jump)) c.push_back(i);
            if (c.empty()) return;
            auto& e = t[c[rng.range(0, c.size() - 1)]];
            e.value = random_in(rng, e);
            return;
        }
        case 4: {  // an operand: register, immediate, offset, map
            std::vector<size_t> c;
            for (size_t i = 0; i < t.size(); ++i)
                if (t[i].kind == TraceElem::Kind::Choice && t[i].tag != Tag::More && t[i].tag != Tag::Kind) c.push_back(i);
            if (c.empty()) return;
            auto& e = t[c[rng.range(0, c.size() - 1)]];
            e.value = random_in(rng, e);
            return;
        }
        case 6: {  // add a patch site: force an item's site decision
            const Span* s = pick_span();
            if (!s) return;
            const size_t site = find_choice(t, s->from, s->to, Tag::Kind, 999);
            if (site == static_cast<size_t>(-1)) return;
            t[site].value = 999;
            const size_t k = find_choice(t, site + 1, s->to, Tag::Kind);
            if (k != static_cast<size_t>(-1)) t[k].value = rng.range(t[k].lo, t[k].hi);
            return;
        }
        default: {  // splice an item from elsewhere (before another item)
            if (spans.size() < 2) return;
            const Span& a = spans[rng.range(0, spans.size() - 1)];
            const Span& b = spans[rng.range(0, spans.size() - 1)];
            const Trace copy(t.begin() + static_cast<std::ptrdiff_t>(a.from), t.begin() + static_cast<std::ptrdiff_t>(a.to));
            t.insert(t.begin() + static_cast<std::ptrdiff_t>(b.from), copy.begin(), copy.end());
            return;
        }
    }
}

}  // namespace

GenOptions fuzz_gen_options() {
    GenOptions o;
    o.min_insns = 4;
    o.max_insns = 1024;
    o.subprogs_max = 4;
    o.patch_site_density = 0.25;
    o.inputs = 2;
    return o;
}

GeneratedCase decode_bytes(const uint8_t* data, size_t size) {
    ByteSource src(std::span<const uint8_t>(data, size));
    return generate(src, fuzz_gen_options());
}

size_t mutate_bytes(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
    ByteSource src(std::span<const uint8_t>(data, size), true);
    (void)generate(src, fuzz_gen_options());
    Trace t = src.trace();
    Rng rng(seed);
    const uint64_t rounds = rng.range(1, 3);
    for (uint64_t r = 0; r < rounds; ++r) mutate_once(t, rng);
    std::vector<uint8_t> out = encode_trace(t);
    if (out.size() > max_size) out.resize(max_size);  // a prefix still decodes to a valid program
    if (!out.empty()) std::memcpy(data, out.data(), out.size());
    return out.size();
}

}  // namespace patchfuzz::gen
