#pragma once
// Structure-aware mutation of a libFuzzer input (what LLVMFuzzerCustomMutator calls).
// The bytes are decoded by ByteSource into the generator's choice trace; the trace is edited at
// item granularity (delete an item, duplicate one = insert, replace an item's kind, retarget a
// jump or resize a block, change an operand, grow a subprog's body, turn an item into a rewrite
// site, splice an item from elsewhere), then re-encoded. encode_trace() writes every edited choice
// where the decoder reads it (an item whose kind changed re-reads its remaining operand bytes under
// the new kind, inside its own length frame, so its neighbours are untouched), and every byte string
// decodes to a valid program, so the output always is one; jump targets follow automatically because jumps are generated
// around blocks (a jump over a block whose items changed still lands at the block's end).
#include <cstddef>
#include <cstdint>

#include "gen/program_gen.hpp"

namespace patchfuzz::gen {

// The options fuzz targets decode their bytes with (the mutator must use the same ones).
GenOptions fuzz_gen_options();

// Mutates data[0..size) in place (at most max_size bytes); returns the new size. Deterministic in
// (data, size, max_size, seed).
size_t mutate_bytes(uint8_t* data, size_t size, size_t max_size, unsigned seed);

// Decoding as the fuzz targets do it.
GeneratedCase decode_bytes(const uint8_t* data, size_t size);

}  // namespace patchfuzz::gen
