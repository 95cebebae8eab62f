#include "harness/cli/input_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

#include "bpf/isa/raw_codec.hpp"

namespace patchfuzz::cli {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Expected<std::string> read_file(const std::string& path) {
    // A directory opens as a stream on Linux and reads as empty: say what it is instead.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Error{path, std::string("cannot read: ") + std::strerror(EISDIR)};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{path, std::string("cannot open: ") + std::strerror(errno)};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
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
