#include "bpf/util/json.hpp"

#include <cstdio>

namespace patchfuzz {

std::string json_escape(std::string_view s) {
    std::string o;
    o.reserve(s.size());
    for (char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (c == '\n') {
            o += "\\n";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            o += b;
        } else {
            o += c;
        }
    }
    return o;
}

}  // namespace patchfuzz
