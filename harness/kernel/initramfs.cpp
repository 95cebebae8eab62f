#include "harness/kernel/initramfs.hpp"

#include <cstdio>

namespace patchfuzz::kernel {
namespace {

void put_hex8(std::vector<uint8_t>& out, uint32_t v) {
    char b[9];
    std::snprintf(b, sizeof(b), "%08X", v);
    out.insert(out.end(), b, b + 8);
}
void pad4(std::vector<uint8_t>& out) {
    while (out.size() % 4) out.push_back(0);
}
void put_entry(std::vector<uint8_t>& out, uint32_t ino, const CpioEntry& e) {
    const char magic[] = "070701";
    out.insert(out.end(), magic, magic + 6);
    const uint32_t fields[13] = {ino, e.mode, 0, 0, (e.mode & 0040000) ? 2u : 1u, 0,
                                 static_cast<uint32_t>(e.data.size()), 0, 0, 0, 0,
                                 static_cast<uint32_t>(e.name.size() + 1), 0};
    for (uint32_t f : fields) put_hex8(out, f);
    out.insert(out.end(), e.name.begin(), e.name.end());
    out.push_back(0);
    pad4(out);
    out.insert(out.end(), e.data.begin(), e.data.end());
    pad4(out);
}

}  // namespace

std::vector<uint8_t> make_cpio_newc(const std::vector<CpioEntry>& entries) {
    std::vector<uint8_t> out;
    uint32_t ino = 1;
    for (const auto& e : entries) put_entry(out, ino++, e);
    put_entry(out, 0, CpioEntry{"TRAILER!!!", 0, {}});
    return out;
}

std::vector<uint8_t> make_guest_initramfs(const std::vector<uint8_t>& loader, const std::vector<uint8_t>& batch) {
    return make_cpio_newc({
        {"proc", 0040555, {}},
        {"sys", 0040555, {}},
        {"init", 0100755, loader},
        {"batch.bin", 0100644, batch},
    });
}

}  // namespace patchfuzz::kernel
