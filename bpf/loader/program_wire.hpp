#pragma once
// A compact binary form of Program (and of a loaded object) for the loader's child -> parent
// pipe. Little-endian, length-prefixed, versioned by a magic word; decoding checks every length
// so a truncated or corrupted stream is an Error, never a crash.
#include <cstdint>
#include <string>
#include <string_view>

#include "bpf/loader/loader.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::loader {

std::string encode_program(const Program& p);
Expected<Program> decode_program(std::string_view bytes);

// The whole result of an open: either an object or an error (both travel through the pipe).
std::string encode_result(const Expected<LoadedObject>& r);
Expected<LoadedObject> decode_result(std::string_view bytes);

}  // namespace patchfuzz::loader
