#pragma once
// Raw bytes <-> instructions: the little-endian `struct bpf_insn` layout the kernel and libbpf use
// on x86-64 and arm64 (code, dst_reg in the low nibble and src_reg in the high nibble of byte 1,
// off as s16 LE, imm as s32 LE). Independent of the host byte order.
#include <cstdint>
#include <span>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::isa {

std::vector<uint8_t> encode(std::span<const Insn> insns);

// Fails when the size is not a multiple of 8: "byte 16: 3 trailing bytes, not a whole insn".
// Any 8 bytes decode (legality is validate_insns' job).
Expected<std::vector<Insn>> decode(std::span<const uint8_t> bytes);

}  // namespace patchfuzz::isa
