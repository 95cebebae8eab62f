// generate_input: the inputs it draws are a function of the program and the seed alone, whatever
// buffers an earlier input left in `in` — checked against a plain, byte-at-a-time reading of the
// same draws (the order of draws is what keeps replayed cases and findings reproducible).
#include "oracles/exec/input_gen.hpp"

#include <gtest/gtest.h>

#include <linux/bpf.h>

#include <algorithm>

#include "bpf/interp/interp.hpp"

namespace patchfuzz::oracles::exec {
namespace {

uint8_t byte_of(uint64_t v, size_t k) { return static_cast<uint8_t>(v >> (8 * k)); }

void reference_fill(Rng& rng, std::vector<uint8_t>& b) {
    uint64_t v = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (i % 8 == 0) v = rng.next();
        b[i] = byte_of(v, i % 8);
    }
}

void reference_put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
    for (size_t k = 0; k < 4; ++k) b[at + k] = byte_of(v, k);
}

// The draws of generate_input() spelled out one by one, into a fresh input.
interp::ExecInput reference_input(const Program& prog, Rng& rng, const InputGenOptions& opts) {
    interp::ExecInput in;
    in.ctx.assign(std::max(opts.ctx_size, ctx_size_for(prog.prog_type)), 0);
    reference_fill(rng, in.ctx);
    if (in.ctx.size() >= 8) {
        constexpr uint32_t kL = isa::kMaxLoops;
        const auto s0 = static_cast<uint32_t>(edge_int(rng));
        uint32_t s = s0, e = 0;
        switch (rng.range(0, 4)) {
            case 0: e = s0 + static_cast<uint32_t>(rng.range(0, 8)); break;
            case 1: e = static_cast<uint32_t>(edge_int(rng)); break;
            case 2: e = s0 + kL + static_cast<uint32_t>(rng.range(0, 6)) - 3u; break;
            case 3:
                s = static_cast<uint32_t>(static_cast<int32_t>(rng.range(0, 20)) - 10);
                e = static_cast<uint32_t>(static_cast<int32_t>(rng.range(0, 20)) - 10);
                break;
            default: e = static_cast<uint32_t>(rng.next());
        }
        reference_put32(in.ctx, 0, s);
        reference_put32(in.ctx, 4, e);
    }
    in.packet.assign(opts.packet_size, 0);
    reference_fill(rng, in.packet);
    for (auto& r : in.regs) {
        const auto low = static_cast<uint32_t>(rng.next());
        const uint64_t sext = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(low)));
        switch (rng.range(0, 5)) {
            case 0: r = low; break;
            case 1: r = 0xffffffff00000000ULL | low; break;
            case 2: r = sext; break;
            case 3: r = (~sext & 0xffffffff00000000ULL) | low; break;
            case 4: r = (1ULL << 32) | low; break;
            default: r = (rng.next() & 0xffffffff00000000ULL) | low; break;
        }
    }
    in.stack.assign(interp::kStackSize, 0);
    if (!rng.chance(1, 4)) reference_fill(rng, in.stack);
    for (const MapDef& d : prog.maps) {
        std::vector<interp::MapEntry>& entries = in.maps.emplace_back();
        const auto small_key = [&d](uint32_t k) {
            std::vector<uint8_t> key(d.key_size, 0);
            for (size_t i = 0; i < key.size() && i < 4; ++i) key[i] = byte_of(k, i);
            return key;
        };
        if (d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS || d.type == BPF_MAP_TYPE_HASH_OF_MAPS) {
            const bool array = d.type == BPF_MAP_TYPE_ARRAY_OF_MAPS;
            const uint32_t keys = array ? std::min<uint32_t>(d.max_entries, 64) : 8;
            for (uint32_t k = 0; k < keys; ++k) {
                const bool filled = rng.chance(1, 2);
                if (!filled && !array) continue;
                interp::MapEntry e{small_key(k), std::vector<uint8_t>(d.value_size, 0)};
                if (filled && e.value.size() >= 4) reference_put32(e.value, 0, static_cast<uint32_t>(rng.range(1, 4)));
                entries.push_back(std::move(e));
            }
            continue;
        }
        const bool array = d.type == BPF_MAP_TYPE_ARRAY || d.type == BPF_MAP_TYPE_PERCPU_ARRAY;
        const auto n = array ? std::min<uint32_t>(d.max_entries, 64)
                             : static_cast<uint32_t>(rng.range(0, std::min(opts.max_map_entries, d.max_entries)));
        for (uint32_t k = 0; k < n; ++k) {
            interp::MapEntry e{small_key(array ? k : static_cast<uint32_t>(rng.range(0, 7))),
                               std::vector<uint8_t>(d.value_size, 0)};
            reference_fill(rng, e.value);
            entries.push_back(std::move(e));
        }
    }
    in.cpu = static_cast<uint32_t>(rng.range(0, 3));
    in.prandom_seed = rng.next();
    in.step_budget = opts.step_budget;
    return in;
}

bool same_input(const interp::ExecInput& a, const interp::ExecInput& b) {
    return a.ctx == b.ctx && a.packet == b.packet && a.regs == b.regs && a.maps == b.maps && a.cpu == b.cpu &&
           a.prandom_seed == b.prandom_seed && a.step_budget == b.step_budget && a.stack == b.stack;
}

// A program with random maps of every kind generate_input() distinguishes, of odd sizes too.
Program random_maps_program(Rng& rng) {
    static constexpr uint32_t kProgTypes[] = {BPF_PROG_TYPE_SOCKET_FILTER, BPF_PROG_TYPE_XDP, BPF_PROG_TYPE_KPROBE,
                                              BPF_PROG_TYPE_TRACING};
    static constexpr uint32_t kMapTypes[] = {BPF_MAP_TYPE_ARRAY,         BPF_MAP_TYPE_PERCPU_ARRAY, BPF_MAP_TYPE_HASH,
                                             BPF_MAP_TYPE_LRU_HASH,      BPF_MAP_TYPE_PROG_ARRAY,
                                             BPF_MAP_TYPE_ARRAY_OF_MAPS, BPF_MAP_TYPE_HASH_OF_MAPS};
    Program p = make_program({isa::mov64_imm(0, 0), isa::exit_insn()});
    p.prog_type = kProgTypes[rng.range(0, 3)];
    for (uint64_t m = rng.range(0, 5); m > 0; --m) {
        MapDef d;
        d.type = kMapTypes[rng.range(0, 6)];
        d.key_size = static_cast<uint32_t>(rng.range(1, 12));
        d.value_size = static_cast<uint32_t>(rng.range(1, 40));
        d.max_entries = static_cast<uint32_t>(rng.range(0, 80));
        p.maps.push_back(d);
    }
    return p;
}

TEST(InputGen, InputsAreTheReferenceDrawsWhateverTheBuffersHeld) {
    Rng programs(7);
    InputBuffer reused;  // carries buffers and map entries from input to input
    for (int i = 0; i < 2000; ++i) {
        const Program p = random_maps_program(programs);
        InputGenOptions opts;
        opts.ctx_size = static_cast<uint32_t>(programs.range(0, 100));
        opts.packet_size = static_cast<uint32_t>(programs.range(0, 100));
        opts.max_map_entries = static_cast<uint32_t>(programs.range(0, 10));
        const uint64_t seed = programs.next();
        Rng ref_rng(seed), fresh_rng(seed), reused_rng(seed);
        const interp::ExecInput want = reference_input(p, ref_rng, opts);
        ASSERT_TRUE(same_input(generate_input(p, fresh_rng, opts), want)) << "program " << i;
        generate_input(p, reused_rng, opts, reused);
        ASSERT_TRUE(same_input(reused.input, want)) << "program " << i;
        // The same number of draws: what the caller draws next is unchanged too.
        ASSERT_EQ(fresh_rng.state(), ref_rng.state()) << "program " << i;
        ASSERT_EQ(reused_rng.state(), ref_rng.state()) << "program " << i;
    }
}

}  // namespace
}  // namespace patchfuzz::oracles::exec
