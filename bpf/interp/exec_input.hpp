#pragma once
// ExecInput: what one execution of a program starts from. The generators (gen/) make these, the
// interpreter (bpf/interp) consumes them, .case files store them (section `-- input`).
#include <array>
#include <cstdint>
#include <vector>

namespace patchfuzz::interp {

struct MapEntry {
    std::vector<uint8_t> key;
    std::vector<uint8_t> value;
    bool operator==(const MapEntry&) const = default;
};

struct ExecInput {
    std::vector<uint8_t> ctx;     // context bytes; r1 points at them on entry
    // Packet bytes: what ctx data/data_end delimit, and the (linear) skb data that LD_ABS/LD_IND
    // and the skb load helpers read (skb->len = headlen = packet.size()).
    std::vector<uint8_t> packet;
    // Initial r0..r9 (r1 is then overwritten with the ctx pointer). Values other than r1 are what a
    // JIT would leave there: garbage the verifier forbids reading, but which exposes inline code
    // that wrongly relies on upper halves (e.g. R2/R3 of bpf_iter_num_new).
    std::array<uint64_t, 10> regs{};
    // Initial contents, per Program::maps index, as user space writes them (BPF_ANY updates in
    // order). Map-in-map outer maps (ARRAY_OF_MAPS, HASH_OF_MAPS; value_size 4, the fd in the
    // kernel): the 4-byte little-endian value names an inner map by number, 0 = none (an empty
    // array slot; for a hash, the key is absent). Inner map n is a distinct opaque pointer that
    // programs can only compare (interp/map_model.hpp).
    std::vector<std::vector<MapEntry>> maps;
    uint32_t cpu = 0;             // bpf_get_smp_processor_id()
    uint64_t prandom_seed = 0;    // bpf_get_prandom_u32() stream
    uint64_t step_budget = 1u << 24;  // exhausted -> result "unknown: step budget", never a pass
    // Initial bytes of the main frame's 512-byte stack, stored from its bottom (fp-512) upwards;
    // shorter is zero-padded. Stale bytes expose code that reads a slot it should have written
    // (bug class B7: error paths of bpf_iter_num_new that leave the old state).
    std::vector<uint8_t> stack;
};

}  // namespace patchfuzz::interp
