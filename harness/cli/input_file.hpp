#pragma once
// Reading the CLI's input files: whole files, and raw little-endian struct bpf_insn bytes (through
// isa::decode), with the located messages every verb prints.
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::cli {

bool ends_with(std::string_view s, std::string_view suffix);
// The whole file; Error{path, "cannot open: <errno text>"}.
Expected<std::string> read_file(const std::string& path);
// Raw instruction bytes; Error{path, "length N is not a multiple of 8"}.
Expected<std::vector<isa::Insn>> read_raw_insns(const std::string& path);

}  // namespace patchfuzz::cli
