#pragma once
// Whole numbers as the command line writes them, one reading for every verb: decimal, or hex after
// 0x; no sign, no spaces, nothing after the digits, and within the type's range.
#include <charconv>
#include <optional>
#include <string_view>

namespace patchfuzz::cli {

template <class T>
std::optional<T> parse_whole(std::string_view s) {
    int base = 10;
    if (s.size() > 2 && (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X")) {
        s.remove_prefix(2);
        base = 16;
    }
    T out{};
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
    if (s.empty() || s[0] == '-' || s[0] == '+' || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return out;
}

}  // namespace patchfuzz::cli
