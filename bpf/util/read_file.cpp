#include "bpf/util/read_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace patchfuzz {

Expected<std::string> read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Error{path, std::string("cannot read: ") + std::strerror(EISDIR)};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{path, std::string("cannot open: ") + std::strerror(errno)};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace patchfuzz
