#pragma once
// Boots one qemu VM (TCG, or KVM when /dev/kvm runs a guest) with the guest initramfs and returns
// its console. Flags as measured (docs/kernel-in-the-loop.md): PVH boot of the unpacked vmlinux,
// -nodefaults -serial stdio -no-reboot, `quiet nokaslr` (stable addresses), panic=-1 (a dead
// /init ends the VM), and pfk.guest=1 (the loader refuses to run without it).
//
// arm64 and armhf guests (issue 23) run under qemu's `virt` machine, always TCG: arm64 with
// `-cpu max,pauth-impdef=on` (qemu's own pointer-authentication hash instead of emulated QARMA,
// which makes a TCG boot take about 10 s instead of 16 s; the guest still sees pointer
// authentication), armhf with `-cpu max` (a Cortex-A15 class core with LPAE); the console is the
// PL011 at ttyAMA0.
#include <string>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_case.hpp"
#include "harness/kernel/batch_writer.hpp"
#include "harness/kernel/guest_output.hpp"
#include "harness/kernel/kernel_image.hpp"

namespace patchfuzz::kernel {

// qemu's accelerator. /dev/kvm can be present and open yet unable to run a guest (nested
// virtualisation such as kvm-pvm logs "INTERNAL_ERROR in batch emul" and the guest never runs),
// so Auto does not trust the device alone: see run_batch().
enum class Accel { Auto, Kvm, Tcg };

struct VmOptions {
    std::string qemu = "qemu-system-x86_64";
    std::string arch = "amd64";         // Debian architecture of the kernel: amd64 | arm64 | armhf
    // Auto: $PATCHFUZZ_QEMU_ACCEL (kvm or tcg) when set; else TCG without a usable /dev/kvm; else
    // KVM when a guest with no cases boots under it (probed once per process), else TCG.
    Accel accel = Accel::Auto;
    std::string kernel_image;           // vmlinux (PVH) or bzImage
    std::string guest_loader;           // the static pfk-guest binary
    std::string work_dir;               // where initramfs + console.log go (a fresh temp dir if empty)
    std::vector<std::string> append;    // extra kernel command-line words
    int timeout_s = 600;
    int mem_mb = 1024;
    bool panic_on_warn = true;          // a kernel WARN ends the boot; the runner resumes after it
};

struct VmRun {
    std::string console;
    int exit_code = 0;
    bool timed_out = false;
    double wall_s = 0;
};

// One boot over `initramfs` bytes (Accel::Auto is KVM when /dev/kvm is usable, without a probe).
Expected<VmRun> boot_vm(const VmOptions& opts, const std::vector<uint8_t>& initramfs);

// What Accel::Auto comes to for `opts` (the probe boots the guest `loader` with no cases).
Expected<Accel> resolve_accel(const VmOptions& opts, const std::vector<uint8_t>& loader);

struct BatchRun {
    GuestReport report;           // merged over all boots; cases[i] matches the input order
    std::vector<uint32_t> crashed;  // case indexes during which the VM died (kernel findings)
    std::vector<std::string> alerts;
    uint32_t boots = 0;
    double wall_s = 0;            // all boots
    double first_boot_s = -1;     // guest clock at loader start, first boot
};

// Runs all cases, `max_per_boot` per VM boot; when a VM dies in the middle of case k (panic on a
// WARN, oops, timeout) case k is recorded in `crashed` and the next boot resumes at k + 1.
Expected<BatchRun> run_batch(const VmOptions& opts, const std::vector<KernelCase>& cases, BatchFlags flags,
                             size_t max_per_boot = 5000);

// The qemu command line that boots `opts.kernel_image` with `initrd` (without running it).
std::vector<std::string> qemu_command(const VmOptions& opts, const std::string& initrd, bool kvm);

// The guest loader: $PATCHFUZZ_GUEST, else `pfk-guest` next to the running executable, else
// built from <source_root>/guest/pfk_loader.c with `cc -static` into <cache>/pfk-guest. For arm64
// and armhf: $PATCHFUZZ_GUEST_<ARCH> (PATCHFUZZ_GUEST_ARM64, PATCHFUZZ_GUEST_ARMHF), else
// `pfk-guest-<arch>` next to the executable, else cross-compiled with the ArchBoot's cross_cc
// into <cache>/pfk-guest-<arch>.
Expected<std::string> locate_guest_loader(const std::string& source_root, const std::string& cache_dir,
                                          const std::string& arch = "amd64");

}  // namespace patchfuzz::kernel
