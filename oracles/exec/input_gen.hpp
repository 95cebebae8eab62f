#pragma once
// Seeded generator of execution inputs for the execution differential (until gen/ provides its
// own): ctx bytes whose first 8 bytes are often an edge (start, end) pair of the numeric iterator
// (docs/iterator-isa-arch.md §1.7, §2.3 grid, §2.4 triggers), registers with garbage upper halves
// (all-ones, zero, sign-extension-breaking, random), stale stack bytes, map contents (map-in-map
// slots about half filled with inner maps), CPU id.
#include <cstdint>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::oracles::exec {

struct InputGenOptions {
    uint32_t ctx_size = 64;          // at least; the program type's ctx_size_for() when larger
    uint32_t packet_size = 64;
    uint32_t max_map_entries = 8;   // per hash map
    uint64_t step_budget = 1u << 20;
};

interp::ExecInput generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts = {});

// An input generated into again and again (the execution oracle's, one per thread), with the map
// entries and entry lists that the inputs before it had and it has not: programs differ in their
// maps, so the lists shrink and grow from one case to the next, and the entries a list gives up
// are taken back later with their key and value storage instead of being allocated again.
struct InputBuffer {
    interp::ExecInput input;
    std::vector<interp::MapEntry> spare_entries;
    std::vector<std::vector<interp::MapEntry>> spare_lists;  // empty, with their capacity
};
// generate_input() into `buf.input`, reusing its buffers (and map entries) from an earlier input:
// the same draws, the same input.
void generate_input(const Program& prog, Rng& rng, const InputGenOptions& opts, InputBuffer& buf);

// One edge value of a signed 32-bit iterator bound (the §2.3 grid); `rng` picks.
int32_t edge_int(Rng& rng);

}  // namespace patchfuzz::oracles::exec
