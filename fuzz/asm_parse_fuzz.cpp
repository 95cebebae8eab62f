// The kernel-syntax assembler on arbitrary text: never crashes; whatever it accepts disassembles
// and assembles back to the same instructions.
#include <cstdlib>
#include <string_view>

#include "bpf/asm/assemble.hpp"
#include "bpf/asm/disassemble.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace patchfuzz;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto insns = assembly::assemble(text, "fuzz.s");
    if (!insns) return -1;
    auto again = assembly::assemble(assembly::disassemble(*insns), "roundtrip.s");
    if (!again || again->size() != insns->size()) std::abort();
    for (size_t i = 0; i < insns->size(); ++i)
        if (!isa::same((*insns)[i], (*again)[i])) std::abort();
    return 0;
}
