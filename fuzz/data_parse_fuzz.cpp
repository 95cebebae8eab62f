// The bpf_conformance .data reader (with its ubpf-syntax assembler) on arbitrary text: never
// crashes, and every error it reports carries a location.
#include <cstdlib>
#include <string_view>

#include "bpf/conformance/data_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace patchfuzz;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto d = conformance::parse_data_file(text, "fuzz.data");
    if (!d) {
        if (d.error().to_string().rfind("fuzz.data", 0) != 0) std::abort();
        return -1;
    }
    return 0;
}
