#include "harness/kernel/vm_runner.hpp"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>

#include "bpf/util/atomic_file.hpp"
#include "harness/kernel/initramfs.hpp"
#include "harness/kernel/process.hpp"

namespace patchfuzz::kernel {
namespace fs = std::filesystem;
namespace {

Expected<std::vector<uint8_t>> slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return make_error(path, "cannot read");
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::string make_temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "patchfuzz-kernel-XXXXXX").string();
    std::vector<char> b(tmpl.begin(), tmpl.end());
    b.push_back(0);
    const char* d = mkdtemp(b.data());
    return d ? std::string(d) : std::string();
}

// The first line of a small text file; empty when it cannot be read.
std::string first_line(const std::string& path) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

bool kvm_device_usable() { return access("/dev/kvm", R_OK | W_OK) == 0; }

// A guest with no cases boots to the loader in about 3 s under TCG on a loaded 2-core machine;
// under a KVM that works, faster. A KVM that cannot run guests hangs until killed.
constexpr int kKvmProbeTimeoutS = 45;

}  // namespace

Expected<Accel> resolve_accel(const VmOptions& opts, const std::vector<uint8_t>& loader) {
    if (opts.accel != Accel::Auto) return opts.accel;
    if (opts.arch != "amd64") return Accel::Tcg;  // the host is x86-64: other guests are emulated
    if (const char* e = std::getenv("PATCHFUZZ_QEMU_ACCEL"); e && *e) {
        const std::string v = e;
        if (v == "kvm") return Accel::Kvm;
        if (v == "tcg") return Accel::Tcg;
        return make_error("$PATCHFUZZ_QEMU_ACCEL", "'" + v + "' is neither kvm nor tcg");
    }
    if (!kvm_device_usable()) return Accel::Tcg;
    // Decided once per process (campaigns boot from a second thread too), and remembered for the
    // host's boot in the cache, so that the next processes (ci/kernel runs three) skip the probe.
    static std::mutex mu;
    static std::optional<Accel> decided;
    std::lock_guard<std::mutex> lock(mu);
    if (decided) return *decided;
    const std::string boot_id = first_line("/proc/sys/kernel/random/boot_id");
    const std::string memo = default_cache_dir() + "/qemu-accel";
    if (!boot_id.empty()) {
        std::istringstream m(first_line(memo));
        std::string id, kind;
        if (m >> id >> kind && id == boot_id && (kind == "kvm" || kind == "tcg"))
            return *(decided = kind == "kvm" ? Accel::Kvm : Accel::Tcg);
    }
    auto empty = encode_batch({}, BatchFlags{});
    if (!empty) return empty.error();
    VmOptions probe = opts;
    probe.accel = Accel::Kvm;
    probe.work_dir.clear();
    probe.timeout_s = kKvmProbeTimeoutS;
    auto run = boot_vm(probe, make_guest_initramfs(loader, *empty));
    if (run && run->console.find("@@PFK-BEGIN") != std::string::npos) {
        decided = Accel::Kvm;
    } else {
        std::fprintf(stderr, "patchfuzz kernel: /dev/kvm did not run a guest to its loader in %d s (%s); using TCG\n",
                     kKvmProbeTimeoutS, run ? (run->timed_out ? "timed out" : "no loader output") : run.error().message.c_str());
        decided = Accel::Tcg;
    }
    if (!boot_id.empty()) {
        std::error_code ec;
        fs::create_directories(default_cache_dir(), ec);
        (void)write_file_atomic(memo, boot_id + " " + (*decided == Accel::Kvm ? "kvm" : "tcg") + "\n");  // a memo only
    }
    return *decided;
}

std::vector<std::string> qemu_command(const VmOptions& opts, const std::string& initrd, bool kvm) {
    const bool x86 = opts.arch == "amd64";
    // sysctl.net.core.bpf_jit_enable=1: Debian's armhf build has neither BPF_JIT_ALWAYS_ON nor
    // BPF_JIT_DEFAULT_ON, so its JIT is off until asked (the arm64 build is always-on already);
    // the JIT is what is judged, and without it the verifier refuses callbacks.
    // no_timer_check: under a loaded host, TCG's timer check can fail ("IO-APIC + timer doesn't
    // work!") and panic the boot; the check proves nothing about the verifier (x86 only).
    std::string append = x86 ? "console=ttyS0 panic=-1 quiet nokaslr no_timer_check pfk.guest=1"
                             : "console=ttyAMA0 panic=-1 quiet nokaslr pfk.guest=1 sysctl.net.core.bpf_jit_enable=1";
    if (opts.panic_on_warn) append += " panic_on_warn=1 oops=panic";
    for (const auto& a : opts.append) append += " " + a;
    std::vector<std::string> argv = {opts.qemu};
    if (!x86) {
        argv.insert(argv.end(), {"-M", "virt", "-accel", "tcg", "-cpu", opts.arch == "arm64" ? "max,pauth-impdef=on" : "max"});
    } else if (kvm) {
        argv.insert(argv.end(), {"-enable-kvm", "-cpu", "max"});
    } else {
        argv.insert(argv.end(), {"-accel", "tcg", "-cpu", "max"});
    }
    argv.insert(argv.end(), {"-smp", "1", "-m", std::to_string(opts.mem_mb), "-nographic", "-nodefaults", "-serial", "stdio",
                             "-no-reboot", "-kernel", opts.kernel_image, "-initrd", initrd, "-append", append});
    return argv;
}

Expected<VmRun> boot_vm(const VmOptions& opts, const std::vector<uint8_t>& initramfs) {
    if (!find_in_path(opts.qemu)) {
        auto boot = arch_boot(opts.arch);
        return make_error("", "'" + opts.qemu + "' not found (install " +
                                  (boot ? std::string(boot->qemu_package) : std::string("qemu-system")) + ")");
    }
    if (access(opts.kernel_image.c_str(), R_OK) != 0) return make_error(opts.kernel_image, "kernel image not readable");
    std::string dir = opts.work_dir.empty() ? make_temp_dir() : opts.work_dir;
    if (dir.empty()) return make_error("", "cannot create a temporary folder");
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string cpio = dir + "/initramfs.cpio", console = dir + "/console.log";
    {
        std::ofstream f(cpio, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(initramfs.data()), static_cast<std::streamsize>(initramfs.size()));
        if (!f) return make_error(cpio, "cannot write the initramfs");
    }
    const bool kvm = opts.arch == "amd64" && (opts.accel == Accel::Kvm || (opts.accel == Accel::Auto && kvm_device_usable()));
    const std::vector<std::string> argv = qemu_command(opts, cpio, kvm);
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_process(argv, ProcessOptions{.stdout_file = console, .timeout_s = opts.timeout_s});
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) return r.error();
    auto text = slurp(console);
    VmRun run;
    if (text) run.console.assign(text->begin(), text->end());
    run.exit_code = r->exit_code;
    run.timed_out = r->timed_out;
    run.wall_s = wall;
    if (!run.timed_out && r->exit_code != 0 && run.console.find("@@PFK-BEGIN") == std::string::npos)
        return make_error("qemu", "exited with " + std::to_string(r->exit_code) + ": " + r->err.substr(0, 2000));
    if (opts.work_dir.empty()) fs::remove_all(dir, ec);
    return run;
}

Expected<BatchRun> run_batch(const VmOptions& opts, const std::vector<KernelCase>& cases, BatchFlags flags,
                             size_t max_per_boot) {
    auto loader = slurp(opts.guest_loader);
    if (!loader) return loader.error();
    auto accel = resolve_accel(opts, *loader);
    if (!accel) return accel.error();
    VmOptions vm = opts;
    vm.accel = *accel;
    BatchRun out;
    out.report.case_cnt = static_cast<uint32_t>(cases.size());
    out.report.cases.resize(cases.size());
    for (uint32_t i = 0; i < cases.size(); i++) out.report.cases[i].index = i;
    size_t start = 0;
    uint32_t deaths = 0;
    while (start < cases.size()) {
        size_t end = std::min(cases.size(), start + std::max<size_t>(1, max_per_boot));
        std::vector<KernelCase> chunk(cases.begin() + static_cast<std::ptrdiff_t>(start),
                                      cases.begin() + static_cast<std::ptrdiff_t>(end));
        auto batch = encode_batch(chunk, flags);
        if (!batch) return batch.error();
        auto initramfs = make_guest_initramfs(*loader, *batch);
        auto run = boot_vm(vm, initramfs);
        if (!run) return run.error();
        if (run->console.find("@@PFK-BEGIN") == std::string::npos) {  // the kernel never reached /init: once more
            out.boots++;
            out.wall_s += run->wall_s;
            run = boot_vm(vm, initramfs);
            if (!run) return run.error();
        }
        out.boots++;
        out.wall_s += run->wall_s;
        auto rep = parse_guest_output(run->console);
        if (!rep) return rep.error();
        if (!rep->error.empty()) return make_error("guest", rep->error);
        if (!rep->begun)
            return make_error("guest", "the loader never started (qemu exit " + std::to_string(run->exit_code) +
                                           (run->timed_out ? ", timed out" : "") + "); console tail: " +
                                           run->console.substr(run->console.size() > 1500 ? run->console.size() - 1500 : 0));
        if (out.report.release.empty()) {
            out.report.release = rep->release;
            out.report.jit = rep->jit;
            out.report.facts = rep->facts;
            out.report.uptime_ms = rep->uptime_ms;
            out.report.begun = true;
            out.first_boot_s = static_cast<double>(rep->uptime_ms) / 1000.0;
        }
        out.report.ok += rep->ok;
        out.report.failed += rep->failed;
        out.report.busy_us += rep->busy_us;
        for (auto& a : rep->kernel_alerts) out.alerts.push_back(a);
        size_t next = end;
        for (size_t i = 0; i < chunk.size(); i++) {
            auto& c = rep->cases[i];
            c.index = static_cast<uint32_t>(start + i);
            out.report.cases[start + i] = c;
            if (!c.complete) {  // the VM died here: a kernel finding; resume after it
                out.crashed.push_back(static_cast<uint32_t>(start + i));
                next = start + i + 1;
                break;
            }
        }
        if (next != end && ++deaths > 20) return make_error("guest", "the VM died more than 20 times; giving up");
        start = next;
    }
    out.report.done = true;
    return out;
}

Expected<std::string> locate_guest_loader(const std::string& source_root, const std::string& cache_dir, const std::string& arch) {
    auto boot = arch_boot(arch);
    if (!boot) return make_error("", "unknown architecture '" + arch + "' (" + arch_boot_list() + ")");
    const bool host = arch == "amd64";
    std::string env = host ? "PATCHFUZZ_GUEST" : "PATCHFUZZ_GUEST_" + arch;
    for (auto& ch : env) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (const char* e = std::getenv(env.c_str()); e && *e) {
        if (access(e, R_OK) != 0) return make_error(e, "$" + env + " is not readable");
        return std::string(e);
    }
    const std::string name = host ? "pfk-guest" : "pfk-guest-" + arch;
    std::error_code ec;
    auto self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto cand = self.parent_path() / name;
        if (fs::exists(cand)) return cand.string();
    }
    std::string src = source_root + "/guest/pfk_loader.c";
    if (source_root.empty() || !fs::exists(src))
        return make_error("", "no guest loader: build the " + name + " target or set $" + env);
    std::string out = cache_dir + "/" + name;
    fs::create_directories(cache_dir, ec);
    // Up to date when newer than the loader and every header beside it (the batch format lives in one).
    bool fresh = fs::exists(out);
    for (const auto& f : fs::directory_iterator(source_root + "/guest", ec))
        if (fresh && f.is_regular_file() && fs::last_write_time(out, ec) < f.last_write_time(ec)) fresh = false;
    if (fresh) return out;
    auto cc = !host ? std::string(boot->cross_cc) : find_in_path("cc") ? std::string("cc") : std::string("gcc");
    if (!find_in_path(cc)) return make_error(src, "'" + cc + "' not found: the " + arch + " guest loader cannot be built (ci/setup installs it)");
    auto r = run_process({cc, "-O2", "-static", "-I" + source_root + "/guest", "-o", out, src}, {.timeout_s = 120});
    if (!r || r->exit_code != 0) return make_error(src, "cannot build the static guest loader: " + (r ? r->err : r.error().message));
    return out;
}

}  // namespace patchfuzz::kernel
