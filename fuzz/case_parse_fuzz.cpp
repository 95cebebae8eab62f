// The .case reader on arbitrary text: never crashes; whatever it accepts writes back to text that
// reads as the same case.
#include <cstdlib>
#include <string_view>

#include "harness/case/case_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace patchfuzz;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto c = harness::parse_case(text, "fuzz.case");
    if (!c) return -1;
    auto again = harness::parse_case(harness::write_case(*c), "roundtrip.case");
    if (!again || !harness::same_case(*c, *again)) std::abort();
    return 0;
}
