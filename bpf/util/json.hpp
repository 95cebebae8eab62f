#pragma once
// One JSON string encoder for every --json output and summary file: '"' and '\' escaped, '\n' as
// \n, every other control byte as \u00XX (valid JSON whatever the text holds).
#include <string>
#include <string_view>

namespace patchfuzz {

// The escaped contents, without the surrounding quotes.
std::string json_escape(std::string_view s);

// json_escape(s) in double quotes.
inline std::string json_str(std::string_view s) { return "\"" + json_escape(s) + "\""; }

}  // namespace patchfuzz
