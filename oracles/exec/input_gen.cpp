#include "oracles/exec/input_gen.hpp"

#include <linux/bpf.h>

#include <climits>

#include <algorithm>

#include "bpf/interp/interp.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/isa/insn.hpp"

namespace patchfuzz::oracles::exec {
namespace {
constexpr int32_t kL = isa::kMaxLoops;

// Four little-endian bytes at b[at..at+4), as the interpreter stores them.
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) { interp::store_le(b.data() + at, 4, v); }

// A key holding `k` in its low (up to) four bytes, little-endian, and zeros above.
void put_small_key(std::vector<uint8_t>& key, uint32_t k) {
    if (key.size() < 4) {
        for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(k >> (8 * i));
        return;
    }
    put32(key, 0, k);
    std::fill(key.begin() + 4, key.end(), uint8_t{0});
}

uint64_t garbage_upper(Rng& rng, uint32_t low) {
    switch (rng.range(0, 5)) {
        case 0: return low;                                          // zero upper half
        case 1: return 0xffffffff00000000ULL | low;                  // all-ones
        case 2: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(low)));  // sign extension
        case 3: return (static_cast<uint64_t>(~static_cast<uint32_t>(static_cast<int32_t>(low) >> 31)) << 32) | low;  // anti-sign
        case 4: return (1ULL << 32) | low;                           // bit 32 set (B8)
        default: return (rng.next() & 0xffffffff00000000ULL) | low;
    }
}

// Fills one map's entry list from its start, reusing the entries it held for an earlier input and
// then the buffer's spare ones (with their key and value storage); finish() gives the entries it
// did not fill back to the spares.
class EntryFiller {
public:
    EntryFiller(std::vector<interp::MapEntry>& list, std::vector<interp::MapEntry>& spare, size_t expected)
        : list_(list), spare_(spare) {
        list_.reserve(expected);
    }
    interp::MapEntry& next() {
        if (used_ == list_.size()) {
            if (spare_.empty()) {
                list_.emplace_back();
            } else {
                list_.push_back(std::move(spare_.back()));
                spare_.pop_back();
            }
        }
        return list_[used_++];
    }
    void finish() { give_back_from(list_, used_, spare_); }

    // The entries of `list` from `from` on, moved to `spare`.
    static void give_back_from(std::vector<interp::MapEntry>& list, size_t from, std::vector<interp::MapEntry>& spare) {
        while (list.size() > from) {
            spare.push_back(std::move(list.back()));
            list.pop_back();
        }
    }

private:
    std::vector<interp::MapEntry>& list_;
    std::vector<interp::MapEntry>& spare_;
    size_t used_ = 0;
};

// `buf.input` with one (empty or reused) entry list per map of `prog`: the lists it has beyond
// those go to the spares, their entries first, and the missing ones come from there.
void size_map_lists(const Program& prog, InputBuffer& buf) {
    std::vector<std::vector<interp::MapEntry>>& maps = buf.input.maps;
    while (maps.size() > prog.maps.size()) {
        EntryFiller::give_back_from(maps.back(), 0, buf.spare_entries);
        buf.spare_lists.push_back(std::move(maps.back()));
        maps.pop_back();
    }
    maps.reserve(prog.maps.size());
    while (maps.size() < prog.maps.size()) {
        if (buf.spare_lists.empty()) {
            maps.emplace_back();
        } else {
            maps.push_back(std::move(buf.spare_lists.back()));
            buf.spare_lists.pop_back();
        }
    }
}

// Map-in-map outer maps (exec_input.hpp: the value names an inner map, 0 = none): about half of
// the slots / small keys hold one of a few inner maps (shared between slots, as the kernel
// allows), the rest are empty, so that both the NULL and the pointer path of a lookup run.
void outer_map_entries(const MapDef& d, Rng& rng, std::vector<interp::MapEntry>& out, std::vector<interp::MapEntry>& spare) {
    const bool array = d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS;
    // Generated lookups use keys 0..7 on hashes; an array lists every slot, filled or empty.
    const uint32_t keys = array ? std::min<uint32_t>(d.max_entries, 64) : 8;
    EntryFiller entries(out, spare, keys);
    for (uint32_t k = 0; k < keys; ++k) {
        const bool filled = rng.chance(1, 2);
        if (!filled && !array) continue;
        interp::MapEntry& e = entries.next();
        e.key.assign(d.key_size, 0);
        for (size_t i = 0; i < e.key.size() && i < 4; ++i) e.key[i] = static_cast<uint8_t>(k >> (8 * i));
        e.value.assign(d.value_size, 0);
        if (filled && e.value.size() >= 4) put32(e.value, 0, static_cast<uint32_t>(rng.range(1, 4)));
    }
    entries.finish();
}
}  // namespace

int32_t edge_int(Rng& rng) {
    static const int32_t kEdges[] = {INT_MIN, INT_MIN + 1, INT_MIN + 2, INT_MIN + kL - 1, INT_MIN + kL, INT_MIN + kL + 1,
                                     -kL - 1, -kL, -kL + 1, -5, -3, -2, -1, 0, 1, 2, 3, 5, kL - 1, kL, kL + 1,
                                     INT_MAX - kL - 1, INT_MAX - kL, INT_MAX - kL + 1, INT_MAX - 3, INT_MAX - 2, INT_MAX - 1, INT_MAX};
    return kEdges[rng.range(0, sizeof kEdges / sizeof kEdges[0] - 1)];
}

interp::ExecInput generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts) {
    InputBuffer buf;
    generate_input(prog, rng, opts, buf);
    return std::move(buf.input);
}

void generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts, InputBuffer& buf) {
    interp::ExecInput& in = buf.input;
    // At least the context of the program's type: a rewrite that takes another path may read
    // any field of it, which is no fault in the kernel.
    in.ctx.resize(std::max(opts.ctx_size, ctx_size_for(prog.prog_type)));
    rng.fill(in.ctx);
    if (in.ctx.size() >= 8) {
        // (start, end) at ctx+0 / ctx+4: short ranges around an edge, an edge pair, a far pair.
        int32_t s = edge_int(rng), e = 0;
        switch (rng.range(0, 4)) {
            case 0: e = static_cast<int32_t>(static_cast<uint32_t>(s) + static_cast<uint32_t>(rng.range(0, 8))); break;
            case 1: e = edge_int(rng); break;
            case 2: e = static_cast<int32_t>(static_cast<uint32_t>(s) + static_cast<uint32_t>(kL) + static_cast<uint32_t>(rng.range(0, 6)) - 3u); break;
            case 3: s = static_cast<int32_t>(rng.range(0, 20)) - 10; e = static_cast<int32_t>(rng.range(0, 20)) - 10; break;
            default: e = static_cast<int32_t>(rng.next());
        }
        put32(in.ctx, 0, static_cast<uint32_t>(s));
        put32(in.ctx, 4, static_cast<uint32_t>(e));
    }
    in.packet.resize(opts.packet_size);
    rng.fill(in.packet);
    for (size_t r = 0; r < in.regs.size(); ++r) in.regs[r] = garbage_upper(rng, static_cast<uint32_t>(rng.next()));
    in.stack.resize(interp::kStackSize);
    if (rng.chance(1, 4)) {
        for (auto& b : in.stack) b = 0;
    } else {
        rng.fill(in.stack);
    }
    size_map_lists(prog, buf);
    for (size_t m = 0; m < prog.maps.size(); ++m) {
        const MapDef& d = prog.maps[m];
        if (d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS || d.type == BPF_MAP_TYPE_HASH_OF_MAPS) {
            outer_map_entries(d, rng, in.maps[m], buf.spare_entries);
            continue;
        }
        const bool array = d.type == BPF_MAP_TYPE_ARRAY || d.type == BPF_MAP_TYPE_PERCPU_ARRAY;
        const uint32_t n = array ? std::min<uint32_t>(d.max_entries, 64) : static_cast<uint32_t>(rng.range(0, std::min(opts.max_map_entries, d.max_entries)));
        EntryFiller entries(in.maps[m], buf.spare_entries, n);
        for (uint32_t k = 0; k < n; ++k) {
            interp::MapEntry& e = entries.next();
            e.key.resize(d.key_size);
            // Small keys so that program-side lookups hit.
            uint32_t kv = array ? k : static_cast<uint32_t>(rng.range(0, 7));
            put_small_key(e.key, kv);
            e.value.resize(d.value_size);
            rng.fill(e.value);
        }
        entries.finish();
    }
    in.cpu = static_cast<uint32_t>(rng.range(0, 3));
    in.prandom_seed = rng.next();
    in.step_budget = opts.step_budget;
}

}  // namespace patchfuzz::oracles::exec
