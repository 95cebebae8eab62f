#pragma once
// Encodes KernelCases into the guest's batch file (format: guest/pfk_batch.h).
#include <cstdint>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_case.hpp"

namespace patchfuzz::kernel {

struct BatchFlags {
    bool test_run = false;    // PFK_FLAG_TEST_RUN
    bool always_log = false;  // PFK_FLAG_ALWAYS_LOG
};

// Error (located at the case name) when a case exceeds the format's limits.
Expected<std::vector<uint8_t>> encode_batch(const std::vector<KernelCase>& cases, BatchFlags flags);

}  // namespace patchfuzz::kernel
