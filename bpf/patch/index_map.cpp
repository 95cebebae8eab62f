#include "bpf/patch/index_map.hpp"

#include <cstring>

#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {
namespace {

// s[k] = k + g (modulo 2^32) for k in [from, to): the map is this run between patches, over the
// whole program, so four entries are written per step (a vector of four counters).
void fill_shifted(uint32_t* s, size_t from, size_t to, int64_t g) {
    using Four = uint32_t __attribute__((vector_size(16)));
    const auto base = static_cast<uint32_t>(static_cast<uint64_t>(g) + from);
    Four v = Four{0, 1, 2, 3} + base;
    size_t k = from;
    for (; k + 4 <= to; k += 4) {
        std::memcpy(s + k, &v, sizeof v);
        v += 4;
    }
    for (; k < to; ++k) s[k] = static_cast<uint32_t>(k + static_cast<uint64_t>(g));
}

}  // namespace

std::vector<uint32_t> index_map(uint32_t old_len, const PatchBatch& batch) {
    std::vector<uint32_t> s;
    index_map(old_len, batch, s);
    return s;
}

void index_map(uint32_t old_len, const PatchBatch& batch, std::vector<uint32_t>& s) {
    // Every entry is written below: resize() only to get the length, old contents do not matter.
    s.resize(size_t{old_len} + 1);
    int64_t g = 0;
    size_t k = 0;
    bool any_remove = false;
    for (const Patch& p : batch.patches) {
        // k in [prev, p.pos]: patches with pos < k are exactly the ones already summed.
        fill_shifted(s.data(), k, size_t{p.pos} + 1, g);
        k = size_t{p.pos} + 1;
        g += growth(p);
        any_remove |= p.kind == PatchKind::Remove;
    }
    fill_shifted(s.data(), k, size_t{old_len} + 1, g);
    if (any_remove) {
        // Right to left so S[k+c] is final when S[k] reads it (it is kept, or in a later removal).
        for (auto it = batch.patches.rbegin(); it != batch.patches.rend(); ++it) {
            if (it->kind != PatchKind::Remove) continue;
            const uint64_t r = it->pos, c = it->count;
            for (uint64_t x = r + c; x-- > r;) {
                const uint64_t alias = x + c;
                s[x] = alias <= old_len ? s[alias] : static_cast<uint32_t>(s[old_len] + (alias - old_len));
            }
        }
    }
}

}  // namespace patchfuzz::patch
