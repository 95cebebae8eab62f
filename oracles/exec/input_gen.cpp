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

// The next entry of `entries` to fill, reusing one left from an earlier input when there is one
// (with its key and value storage).
interp::MapEntry& next_entry(std::vector<interp::MapEntry>& entries, size_t& used) {
    if (used == entries.size()) entries.emplace_back();
    return entries[used++];
}

// Map-in-map outer maps (exec_input.hpp: the value names an inner map, 0 = none): about half of
// the slots / small keys hold one of a few inner maps (shared between slots, as the kernel
// allows), the rest are empty, so that both the NULL and the pointer path of a lookup run.
void outer_map_entries(const MapDef& d, Rng& rng, std::vector<interp::MapEntry>& out) {
    const bool array = d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS;
    // Generated lookups use keys 0..7 on hashes; an array lists every slot, filled or empty.
    const uint32_t keys = array ? std::min<uint32_t>(d.max_entries, 64) : 8;
    size_t used = 0;
    for (uint32_t k = 0; k < keys; ++k) {
        const bool filled = rng.chance(1, 2);
        if (!filled && !array) continue;
        interp::MapEntry& e = next_entry(out, used);
        e.key.assign(d.key_size, 0);
        for (size_t i = 0; i < e.key.size() && i < 4; ++i) e.key[i] = static_cast<uint8_t>(k >> (8 * i));
        e.value.assign(d.value_size, 0);
        if (filled && e.value.size() >= 4) put32(e.value, 0, static_cast<uint32_t>(rng.range(1, 4)));
    }
    out.resize(used);
}
}  // namespace

int32_t edge_int(Rng& rng) {
    static const int32_t kEdges[] = {INT_MIN, INT_MIN + 1, INT_MIN + 2, INT_MIN + kL - 1, INT_MIN + kL, INT_MIN + kL + 1,
                                     -kL - 1, -kL, -kL + 1, -5, -3, -2, -1, 0, 1, 2, 3, 5, kL - 1, kL, kL + 1,
                                     INT_MAX - kL - 1, INT_MAX - kL, INT_MAX - kL + 1, INT_MAX - 3, INT_MAX - 2, INT_MAX - 1, INT_MAX};
    return kEdges[rng.range(0, sizeof kEdges / sizeof kEdges[0] - 1)];
}

interp::ExecInput generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts) {
    interp::ExecInput in;
    generate_input(prog, rng, opts, in);
    return in;
}

void generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts, interp::ExecInput& in) {
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
    in.maps.resize(prog.maps.size());
    for (size_t m = 0; m < prog.maps.size(); ++m) {
        const MapDef& d = prog.maps[m];
        if (d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS || d.type == BPF_MAP_TYPE_HASH_OF_MAPS) {
            outer_map_entries(d, rng, in.maps[m]);
            continue;
        }
        const bool array = d.type == BPF_MAP_TYPE_ARRAY || d.type == BPF_MAP_TYPE_PERCPU_ARRAY;
        const uint32_t n = array ? std::min<uint32_t>(d.max_entries, 64) : static_cast<uint32_t>(rng.range(0, std::min(opts.max_map_entries, d.max_entries)));
        size_t used = 0;
        for (uint32_t k = 0; k < n; ++k) {
            interp::MapEntry& e = next_entry(in.maps[m], used);
            e.key.resize(d.key_size);
            // Small keys so that program-side lookups hit.
            uint32_t kv = array ? k : static_cast<uint32_t>(rng.range(0, 7));
            put_small_key(e.key, kv);
            e.value.resize(d.value_size);
            rng.fill(e.value);
        }
        in.maps[m].resize(used);
    }
    in.cpu = static_cast<uint32_t>(rng.range(0, 3));
    in.prandom_seed = rng.next();
    in.step_budget = opts.step_budget;
}

}  // namespace patchfuzz::oracles::exec
