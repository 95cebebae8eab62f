// Raw instruction bytes: validation never crashes; every valid program disassembles and
// assembles back bit-exactly.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bpf/asm/assemble.hpp"
#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace patchfuzz;
    if (size % 8 != 0 || size == 0) return -1;
    std::vector<isa::Insn> insns(size / 8);
    std::memcpy(insns.data(), data, size);
    if (!isa::validate_insns(insns)) return -1;
    auto again = assembly::assemble(assembly::disassemble(insns), "roundtrip.s");
    if (!again || again->size() != insns.size()) std::abort();
    for (size_t i = 0; i < insns.size(); ++i)
        if (!isa::same(insns[i], (*again)[i])) std::abort();
    return 0;
}
