#pragma once
// The kernel oracle's options for `--kernel K --kernel-arch A` (fuzz and check alike): the cached
// kernel and guest loader, a qemu that runs that architecture, and test runs on. The message of an
// Error says what is missing (a kernel to fetch, a qemu package to install), for `spec.error()`.
#include <string>

#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_check.hpp"

namespace patchfuzz::cli {

Expected<kernel::CheckOptions> kernel_oracle_options(const std::string& tag, const std::string& debian_arch);

}  // namespace patchfuzz::cli
