#pragma once
// Reading the CLI's input files: raw little-endian struct bpf_insn bytes (through isa::decode), with
// the located messages every verb prints. Whole files: bpf/util/read_file.hpp.
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"
#include "bpf/util/read_file.hpp"

namespace patchfuzz::cli {

bool ends_with(std::string_view s, std::string_view suffix);
// Raw instruction bytes; Error{path, "length N is not a multiple of 8"}.
Expected<std::vector<isa::Insn>> read_raw_insns(const std::string& path);

}  // namespace patchfuzz::cli
