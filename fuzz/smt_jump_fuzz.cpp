// Every batch the passes emit, checked by the SMT jump-target oracle against the docs/patching.md §7 contract.
#include "fuzz/fuzz_common.hpp"
#include "gen/mutator.hpp"

PATCHFUZZ_GENERATOR_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const patchfuzz::harness::RunConfig cfg = [] {
        patchfuzz::harness::RunConfig c;
        c.oracles = {patchfuzz::oracles::OracleId::SmtJump};
        c.arches = {patchfuzz::arch_x86_64(), patchfuzz::arch_arm64()};
        return c;
    }();
    patchfuzz::fuzz::check_case(patchfuzz::fuzz::case_from_bytes(data, size), cfg);
    return 0;
}
