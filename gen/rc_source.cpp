#include "gen/rc_source.hpp"

namespace patchfuzz::gen {

uint64_t RcSource::choose(uint64_t lo, uint64_t hi, Tag) {
    if (lo >= hi) return lo;
    if (hi == UINT64_MAX) {  // inRange is half-open: split the full range
        const uint64_t top = *rc::gen::inRange<uint64_t>(0, (hi - lo) / 2 + 1);
        const uint64_t bit = *rc::gen::inRange<uint64_t>(0, 2);
        return lo + 2 * top + bit;
    }
    return *rc::gen::inRange<uint64_t>(lo, hi + 1);
}

rc::Gen<GeneratedCase> rc_case(const GenOptions& opts) {
    return rc::gen::withSize([opts](int size) {
        return rc::gen::exec([opts, size] {
            RcSource src(size);
            GenOptions o = opts;
            const uint32_t span = o.max_insns > o.min_insns ? o.max_insns - o.min_insns : 0;
            o.max_insns = o.min_insns + static_cast<uint32_t>(static_cast<uint64_t>(span) * src.size() / 100);
            return generate(src, o);
        });
    });
}

}  // namespace patchfuzz::gen
