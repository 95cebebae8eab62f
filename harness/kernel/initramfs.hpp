#pragma once
// A newc cpio archive written in process (no cpio(1) needed): the guest loader as /init and the
// batch as /batch.bin. /dev/console comes from the kernel's built-in initramfs, so no device nodes
// and no root are needed on the host.
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::kernel {

struct CpioEntry {
    std::string name;           // path inside the archive, without leading '/'
    uint32_t mode = 0100644;    // full st_mode (S_IFREG/S_IFDIR | permissions)
    std::vector<uint8_t> data;  // empty for directories
};

// The archive bytes, ending with the TRAILER!!! record.
std::vector<uint8_t> make_cpio_newc(const std::vector<CpioEntry>& entries);

// init (the static loader, mode 0755), batch.bin, and the mount points the loader uses.
std::vector<uint8_t> make_guest_initramfs(const std::vector<uint8_t>& loader, const std::vector<uint8_t>& batch);

}  // namespace patchfuzz::kernel
