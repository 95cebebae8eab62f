#include "gen/byte_source.hpp"

#include "bpf/util/check.hpp"

namespace patchfuzz::gen {

unsigned choice_width(uint64_t lo, uint64_t hi) {
    const uint64_t span = hi - lo;
    if (span < 0x100) return 1;
    if (span < 0x10000) return 2;
    if (span < 0x100000000ULL) return 4;
    return 8;
}

ByteSource::ByteSource(std::span<const uint8_t> bytes, bool record) : bytes_(bytes), record_(record) {}

uint64_t ByteSource::read_le(unsigned width) {
    const size_t end = ends_.empty() ? bytes_.size() : ends_.back();
    uint64_t v = 0;
    for (unsigned k = 0; k < width; ++k) {
        uint64_t b = 0;
        if (pos_ < end) b = bytes_[pos_++];
        v |= b << (8 * k);
    }
    return v;
}

uint64_t ByteSource::read_leb128() {
    const size_t end = ends_.empty() ? bytes_.size() : ends_.back();
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 63 && pos_ < end; shift += 7) {
        const uint8_t b = bytes_[pos_++];
        v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    return v;
}

uint64_t ByteSource::choose(uint64_t lo, uint64_t hi, Tag tag) {
    const uint64_t raw = read_le(choice_width(lo, hi));
    const uint64_t span = hi - lo;
    const uint64_t v = lo + (span == UINT64_MAX ? raw : raw % (span + 1));
    if (record_) trace_.push_back({TraceElem::Kind::Choice, tag, lo, hi, v});
    return v;
}

bool ByteSource::more(uint32_t, uint32_t) {
    const bool v = read_le(1) != 0;
    if (record_) trace_.push_back({TraceElem::Kind::Choice, Tag::More, 0, 1, v ? 1u : 0u});
    return v;
}

void ByteSource::enter() {
    const size_t end = ends_.empty() ? bytes_.size() : ends_.back();
    const uint64_t len = read_leb128();
    const size_t my_end = len > end - pos_ ? end : pos_ + static_cast<size_t>(len);
    ends_.push_back(my_end);
    if (record_) trace_.push_back({TraceElem::Kind::Begin});
}

void ByteSource::leave() {
    PATCHFUZZ_CHECK(!ends_.empty(), "ByteSource::leave without enter");
    pos_ = ends_.back();
    ends_.pop_back();
    if (record_) trace_.push_back({TraceElem::Kind::End});
}

namespace {
void put_leb128(std::vector<uint8_t>& out, uint64_t v) {
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        if (v) b |= 0x80;
        out.push_back(b);
    } while (v);
}

// Encodes trace[i..] up to the End matching the current level; returns the index after it.
size_t encode_level(const Trace& t, size_t i, std::vector<uint8_t>& out) {
    while (i < t.size()) {
        const auto& e = t[i];
        if (e.kind == TraceElem::Kind::End) return i + 1;
        if (e.kind == TraceElem::Kind::Begin) {
            std::vector<uint8_t> body;
            i = encode_level(t, i + 1, body);
            put_leb128(out, body.size());
            out.insert(out.end(), body.begin(), body.end());
            continue;
        }
        if (e.tag == Tag::More) {
            out.push_back(e.value ? 1 : 0);
        } else {
            const uint64_t raw = e.value - e.lo;
            const unsigned w = choice_width(e.lo, e.hi);
            for (unsigned k = 0; k < w; ++k) out.push_back(static_cast<uint8_t>(raw >> (8 * k)));
        }
        ++i;
    }
    return i;
}
}  // namespace

std::vector<uint8_t> encode_trace(const Trace& trace) {
    std::vector<uint8_t> out;
    size_t i = 0;
    while (i < trace.size()) i = encode_level(trace, i, out);
    return out;
}

}  // namespace patchfuzz::gen
