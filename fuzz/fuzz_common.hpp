#pragma once
// Shared pieces of the libFuzzer targets. The targets are engine-agnostic: plain
// LLVMFuzzerTestOneInput (AFL++ and Centipede can drive them too); replay_main.cpp runs them over
// files and directories for compilers without libFuzzer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/case/case_file.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::fuzz {

// A generated case from fuzzer bytes (gen/byte_source.hpp: every byte string is a valid program).
harness::Case case_from_bytes(const uint8_t* data, size_t size);

// A property failed: write the case atomically as crash-<signature>.case into $PATCHFUZZ_FUZZ_OUT
// (default: the current directory), print its replay line, and abort() so the engine keeps the
// input and its stack.
[[noreturn]] void report_failure(const harness::Case& c, const harness::CaseReport& report);

// Runs a case under `cfg` and bumps the relocation-coverage counters (below) of the cells its
// batches hit.
harness::CaseReport run_counted(const harness::Case& c, const harness::RunConfig& cfg);

// Runs a case under `cfg` (run_counted); any Fail verdict goes to report_failure().
void check_case(const harness::Case& c, const harness::RunConfig& cfg);

}  // namespace patchfuzz::fuzz

// Structure-aware mutation for the generator-backed targets: decode the bytes to a program,
// mutate it (gen/mutator.hpp), re-encode. Put PATCHFUZZ_GENERATOR_MUTATOR() in such a target.
#define PATCHFUZZ_GENERATOR_MUTATOR()                                                                      \
    extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) { \
        return patchfuzz::gen::mutate_bytes(data, size, max_size, seed);                                    \
    }
