#pragma once
// The Debian kernels the oracle boots (issue 9): fetched with `apt-get download` (never
// installed), only ./boot unpacked with dpkg-deb, and the ELF vmlinux taken out of the bzImage so
// qemu boots it through PVH (skipping the in-guest decompressor, ~3 s of xz under TCG on 6.1).
//
// Cache layout: <cache>/kernels/<tag>/{manifest, boot/vmlinuz-R, boot/config-R, vmlinux-R, *.deb}
// where the manifest holds "package=", "release=", "vmlinux=" lines.
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::kernel {

struct KernelImage {
    std::string tag;      // "6.1" | "6.12"
    std::string package;  // the image package after following the meta-package
    std::string release;  // uname -r, e.g. "6.12.117+deb12-amd64"
    std::string vmlinux;  // unpacked ELF (PVH boot)
    std::string vmlinuz;  // the bzImage as shipped
};

// "6.1" -> linux-image-amd64 (Debian 12's default kernel), "6.12" -> linux-image-6.12-amd64.
std::vector<std::string_view> kernel_tags();
Expected<std::string> meta_package_for(std::string_view tag);

// $XDG_CACHE_HOME/patchfuzz, else $HOME/.cache/patchfuzz.
std::string default_cache_dir();

// The cached image for `tag`, without network access; an Error says how to fetch it.
Expected<KernelImage> find_cached_kernel(std::string_view tag, const std::string& cache_dir);

// Downloads (apt-get download), unpacks ./boot and the vmlinux; progress lines go to `log`.
Expected<KernelImage> fetch_kernel(std::string_view tag, const std::string& cache_dir, std::ostream& log);

// Takes the ELF payload out of a bzImage (xz, zstd or gzip streams are tried at every magic
// offset; the first that decompresses to an ELF wins) and writes it to `out_path`.
Status unpack_vmlinux(const std::string& bzimage, const std::string& out_path);

}  // namespace patchfuzz::kernel
