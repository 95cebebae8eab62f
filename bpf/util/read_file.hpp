#pragma once
// Reading a whole input file, with the located message every reader of user input prints. The one
// reader for .case, .data, .s, raw instruction bytes and ELF objects alike.
#include <string>

#include "bpf/util/error.hpp"

namespace patchfuzz {

// The file's bytes. Error{path, "cannot open: <errno text>"}; a directory is
// Error{path, "cannot read: Is a directory"} (on Linux it opens as a stream and reads as empty).
Expected<std::string> read_file(const std::string& path);

}  // namespace patchfuzz
