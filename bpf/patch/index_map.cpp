#include "bpf/patch/index_map.hpp"

#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {

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
        // k in [prev, p.pos]: patches with pos < k are exactly the ones already summed. (A copy
        // of p.pos: the stores into s could alias it, so it would be reloaded every iteration.)
        const uint32_t pos = p.pos;
        for (; k <= pos; ++k) s[k] = static_cast<uint32_t>(k + g);
        g += growth(p);
        any_remove |= p.kind == PatchKind::Remove;
    }
    for (; k <= old_len; ++k) s[k] = static_cast<uint32_t>(k + g);
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
