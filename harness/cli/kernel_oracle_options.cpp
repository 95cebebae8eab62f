#include "harness/cli/kernel_oracle_options.hpp"

#include "harness/kernel/kernel_image.hpp"
#include "harness/kernel/process.hpp"

namespace patchfuzz::cli {

Expected<kernel::CheckOptions> kernel_oracle_options(const std::string& tag, const std::string& debian_arch) {
    if (!kernel::kernel_spec(tag, debian_arch))
        return Error{"", "--kernel takes one of " + kernel::kernel_tag_list(debian_arch) + " (for " + debian_arch + ")"};
    auto co = kernel::default_check_options(tag, kernel::default_cache_dir(), PATCHFUZZ_SOURCE_ROOT, debian_arch);
    if (!co) return Error{"", "kernel oracle: " + co.error().to_string()};
    if (!kernel::find_in_path(co->vm.qemu))
        return Error{"", "kernel oracle: '" + co->vm.qemu + "' not found (install " +
                             std::string(kernel::arch_boot(debian_arch)->qemu_package) + ")"};
    co->run = true;
    return co;
}

}  // namespace patchfuzz::cli
