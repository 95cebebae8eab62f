#pragma once
// Lower-case hex texts for reports, errors and .case files, without snprintf (exec verdicts make
// them on every known finding a campaign hits).
#include <charconv>
#include <cstdint>
#include <span>
#include <string>

namespace patchfuzz {

// "0x" and the digits of `v`, no padding: as printf's "0x%llx".
inline std::string hex(uint64_t v) {
    char b[2 + 16] = {'0', 'x'};
    return std::string(b, std::to_chars(b + 2, b + sizeof b, v, 16).ptr);
}

// Two digits per byte, in order, no separators.
inline std::string hex_bytes(std::span<const uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(2 * bytes.size());
    for (const uint8_t x : bytes) {
        s += kDigits[x >> 4];
        s += kDigits[x & 0xf];
    }
    return s;
}

}  // namespace patchfuzz
