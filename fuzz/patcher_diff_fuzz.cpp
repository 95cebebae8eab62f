// Incremental (kernel model) vs batched patcher on generated programs through every pass and arch:
// the structural oracle must find them identical, batch by batch.
#include "fuzz/fuzz_common.hpp"
#include "gen/mutator.hpp"

PATCHFUZZ_GENERATOR_MUTATOR()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const patchfuzz::harness::RunConfig cfg = [] {
        patchfuzz::harness::RunConfig c;
        c.oracles = {patchfuzz::oracles::OracleId::Structural};
        return c;
    }();
    patchfuzz::fuzz::check_case(patchfuzz::fuzz::case_from_bytes(data, size), cfg);
    return 0;
}
