#include "harness/cli/input_file.hpp"

#include <cstdint>
#include <span>

#include "bpf/isa/raw_codec.hpp"

namespace patchfuzz::cli {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Expected<std::vector<isa::Insn>> read_raw_insns(const std::string& path) {
    auto bytes = read_file(path);
    if (!bytes) return bytes.error();
    if (bytes->size() % 8) return Error{path, "length " + std::to_string(bytes->size()) + " is not a multiple of 8"};
    auto insns = isa::decode(std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
    if (!insns) return insns.error().with_context(path);
    return insns;
}

}  // namespace patchfuzz::cli
