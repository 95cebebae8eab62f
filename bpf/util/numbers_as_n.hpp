#pragma once
// A message with its numbers (addresses, sizes, pcs, counts) replaced by N, so that messages that
// differ only in them compare equal: how summaries count kinds of faults rather than individual
// ones, and how a minimizer tells "the same failure, on a smaller program" from another one.
#include <cctype>
#include <string>
#include <string_view>

namespace patchfuzz {

// A number starts at a digit that does not continue a word ("r10", "v4" and "u64" are kept) and
// runs over hex digits and 'x' ("0x1f", "4096"); "-" signs are kept, so "-22" becomes "-N".
inline std::string numbers_as_n(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const bool in_word = i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_');
        if (std::isdigit(static_cast<unsigned char>(s[i])) && !in_word) {
            while (i < s.size() && (std::isxdigit(static_cast<unsigned char>(s[i])) || s[i] == 'x')) ++i;
            out += 'N';
        } else {
            out += s[i++];
        }
    }
    return out;
}

}  // namespace patchfuzz
