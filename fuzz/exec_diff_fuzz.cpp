// The original program (kfunc and helper calls run by reference models) against its rewrite under
// x86-64, arm64 and 32-bit-JIT semantics, on the generated inputs.
#include "fuzz/fuzz_common.hpp"
#include "gen/mutator.hpp"

PATCHFUZZ_GENERATOR_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const patchfuzz::harness::RunConfig cfg = [] {
        patchfuzz::harness::RunConfig c;
        c.oracles = {"exec"};
        c.exec_inputs = 2;
        return c;
    }();
    patchfuzz::fuzz::check_case(patchfuzz::fuzz::case_from_bytes(data, size), cfg);
    return 0;
}
