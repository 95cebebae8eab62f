#pragma once
// The Debian kernels the oracle boots (issues 9 and 22): fetched with `apt-get download` (never
// installed), only the image unpacked with dpkg-deb, and the ELF vmlinux taken out of the bzImage
// so qemu boots it through PVH (skipping the in-guest decompressor, ~3 s of xz under TCG on 6.1).
//
// Where the packages come from:
// - 6.1 and 6.12 are in Debian 12's own suites: the machine's apt lists are used as they are.
// - 7.3 (trixie-backports) and 7.2 (sid) are not in the machine's sources. They are fetched
//   through an apt state folder of our own (<cache>/apt/<suite>/: sources file, lists, package
//   cache) whose sources file is written at run time: the Debian mirror the machine's own sources
//   name (/etc/apt/sources.list, sources.list.d/*.list and *.sources), the suite, and
//   [signed-by=<Debian's archive keyring>], so every index is signature-checked. The machine's apt
//   configuration is never changed, and no mirror host name is written into this repository.
// - From 7.x, `linux-image-<abi>` is a meta package; the image is in `linux-binary-<abi>` at
//   usr/lib/modules/<abi>/vmlinuz. It is copied to boot/vmlinuz-<abi> (every version's file is
//   called `vmlinuz`, so each input gets a name of its own) before unpacking.
//
// Each tag is pinned to the build its model profile (bpf/passes/pass.hpp) was measured against:
// a 7.x fetch downloads exactly the pinned linux-binary package (refused when the suite no longer
// has it); a 6.x fetch follows the suite's meta package and warns when it lands on another build.
//
// Cache layout: <cache>/kernels/<tag>/{manifest, boot/vmlinuz-R, vmlinux-R, *.deb}, the manifest
// holding "package=", "version=", "release=", "vmlinux=", "vmlinuz=" lines.
//
// Other architectures (issue 23): the same tags built for Debian's arm64 and armhf, cached in
// <cache>/kernels/<tag>-<arch>/ and always fetched through an apt state folder of our own
// (<cache>/apt/<suite>-<arch>/) run with -o APT::Architecture=<arch> -o APT::Architectures::=<arch>,
// so the machine never gains a foreign architecture. Their images are booted as shipped (qemu
// -kernel takes arm64's uncompressed `Image` and armhf's self-decompressing zImage), so "vmlinux="
// names the image itself. Suites ending in -security come from the security archive that the
// machine's own sources name.
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::kernel {

// One kernel the oracle knows how to fetch, and the build it is pinned to.
struct KernelSpec {
    std::string_view tag;             // "6.1" | "6.12" | "7.2" | "7.3"; also the model profile's name
    std::string_view suite;           // empty: the machine's own apt lists; else fetched via our apt state
    std::string_view package;         // what is downloaded: a meta package (followed) or linux-binary-<abi>
    std::string_view pinned_release;  // the ABI (uname -r) the profile was measured on
    std::string_view pinned_version;  // its Debian package version
    bool exact_pin = false;           // true: download exactly the pinned package (7.x)
    std::string_view arch = "amd64";  // Debian architecture of the build
    // Its verifier and JIT take gotox through jump tables (BPF_MAP_TYPE_INSN_ARRAY): measured on
    // 7.2.13 and 7.3.4 (x86-64 and arm64); the generator then makes such programs (at root).
    bool gotox = false;
};

// How a Debian architecture's kernels are booted and judged.
struct ArchBoot {
    std::string_view debian_arch;    // "amd64" | "arm64" | "armhf"
    std::string_view qemu;           // qemu-system-x86_64 | qemu-system-aarch64 | qemu-system-arm
    std::string_view qemu_package;   // the Debian package shipping it
    std::string_view model_arch;     // the model's ArchProfile (bpf/arch): x86_64 | arm64 | arm32
    std::string_view cross_cc;       // C compiler for the static guest loader ("" = the host's cc)
};
// nullopt for an unknown architecture; arch_boot_list() = "amd64, arm64, armhf".
std::optional<ArchBoot> arch_boot(std::string_view debian_arch);
std::string arch_boot_list();

struct KernelImage {
    std::string tag;      // as KernelSpec::tag
    std::string package;  // the package the image came from
    std::string version;  // its Debian version ("" when unknown, caches of older builds)
    std::string release;  // uname -r, e.g. "6.12.117+deb12-amd64"
    std::string vmlinux;  // unpacked ELF (PVH boot); on arm64/armhf the image booted as shipped
    std::string vmlinuz;  // the bzImage as shipped
    std::string arch = "amd64";  // as KernelSpec::arch
};

// Every kernel tag, oldest first, and the spec of one (nullopt for an unknown tag, or a tag that
// has no build for `arch`).
const std::vector<KernelSpec>& kernel_specs();
std::optional<KernelSpec> kernel_spec(std::string_view tag, std::string_view arch = "amd64");
// "6.1, 6.12, 7.2, 7.3" (for error messages and --help): the tags built for `arch`.
std::string kernel_tag_list(std::string_view arch = "amd64");

// Empty when `img` is the build `tag` is pinned to; else a one-line warning naming both builds.
std::string pin_warning(const KernelImage& img);

// $XDG_CACHE_HOME/patchfuzz, else $HOME/.cache/patchfuzz.
std::string default_cache_dir();

// The cached image for `tag`, without network access; an Error says how to fetch it.
Expected<KernelImage> find_cached_kernel(std::string_view tag, const std::string& cache_dir,
                                         std::string_view arch = "amd64");

// Downloads (apt-get download), unpacks the image and the vmlinux; progress lines and pin
// warnings go to `log`.
Expected<KernelImage> fetch_kernel(std::string_view tag, const std::string& cache_dir, std::ostream& log,
                                   std::string_view arch = "amd64");

// The Debian archive mirror (a URI such as "http://<host>/debian") named by the apt sources
// `files` (path, contents): one-line `deb [opts] URI suite comp...` lines in *.list files and
// deb822 stanzas (Types/URIs/Suites) in *.sources files. The first `deb` entry whose suites include
// a Debian release suite (a codename or stable/testing/unstable, optionally -updates or
// -backports; security suites are a different archive) wins. An Error names what was searched.
// With `security`, the same for the security archive (the first `deb` entry with a -security suite).
Expected<std::string> debian_mirror_from_sources(const std::vector<std::pair<std::string, std::string>>& files,
                                                 bool security = false);
// The same over the machine's own /etc/apt/sources.list and sources.list.d/ (read, never changed).
Expected<std::string> system_debian_mirror(bool security = false);

// Takes the ELF payload out of a bzImage (xz, zstd or gzip streams are tried at every magic
// offset; the first that decompresses to an ELF wins) and writes it to `out_path`.
Status unpack_vmlinux(const std::string& bzimage, const std::string& out_path);

}  // namespace patchfuzz::kernel
