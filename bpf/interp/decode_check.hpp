#pragma once
// Test support for the interpreter's decode: the decode a run uses takes shortcuts (an opcode
// table, shortcuts for common insns the table leaves out) that must give exactly what the
// general decoder gives, insn by insn, invalid insns and their reasons included.
#include <string>

#include "bpf/program/program.hpp"

namespace patchfuzz::interp {

// Decodes `prog` as an Executable under a profile with this movsx_as_mov does, and again insn by
// insn with the general decoder; describes the first insn the two decode differently, "" when
// none does. The second slot of a decoded ld_imm64 is not compared (only the pair decodes it).
std::string decode_mismatch(const Program& prog, bool movsx_as_mov);

}  // namespace patchfuzz::interp
