#include "bpf/asm/syntax.hpp"

#include <string>
#include <vector>

namespace patchfuzz::assembly {
namespace {

// The uapi mapper lists the helpers in id order starting at 0 (unspec).
#define PATCHFUZZ_HELPER_NAME(x, ...) "bpf_" #x
const char* const kHelperNames[] = {__BPF_FUNC_MAPPER(PATCHFUZZ_HELPER_NAME)};
#undef PATCHFUZZ_HELPER_NAME
constexpr int32_t kHelperCount = static_cast<int32_t>(sizeof(kHelperNames) / sizeof(kHelperNames[0]));

}  // namespace

std::string_view helper_name(int32_t id) {
    if (id >= 0 && id < kHelperCount) return kHelperNames[id];
    return "unknown";
}

std::optional<int32_t> helper_id(std::string_view name) {
    for (int32_t i = 0; i < kHelperCount; ++i)
        if (name == kHelperNames[i]) return i;
    return std::nullopt;
}

}  // namespace patchfuzz::assembly
