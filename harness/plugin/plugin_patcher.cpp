#include "harness/plugin/plugin_patcher.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "bpf/loader/program_wire.hpp"
#include "harness/plugin/pf_convert.hpp"

namespace patchfuzz::harness {

struct PluginPatcher::Impl {
    void* handle = nullptr;
    uint32_t (*abi_version)() = nullptr;
    const char* (*name)() = nullptr;
    int (*apply)(const pf_program*, const pf_patch*, uint32_t, pf_program*, pf_result*) = nullptr;
    void (*free_out)(pf_program*) = nullptr;
};

namespace {

// The host's ELF machine: a plugin is a shared library for the machine patchfuzz runs on.
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE;  // not checked
#endif

// What dlopen would say less clearly ("cannot open shared object file" for a BPF object, say):
// the file must be a 64-bit little-endian ELF shared object for this machine.
std::optional<std::string> not_a_plugin(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return "is a directory, not a shared library";
    std::ifstream in(path, std::ios::binary);
    unsigned char h[EI_NIDENT + 4] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return "too short for an ELF header: not a shared library";
    if (std::memcmp(h, ELFMAG, SELFMAG) != 0) return "not an ELF file: a plugin is a shared library (.so)";
    if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB) return "not a 64-bit little-endian ELF file";
    const uint16_t type = static_cast<uint16_t>(h[EI_NIDENT] | h[EI_NIDENT + 1] << 8);
    const uint16_t machine = static_cast<uint16_t>(h[EI_NIDENT + 2] | h[EI_NIDENT + 3] << 8);
    if (machine == EM_BPF) return "a BPF object (ELF machine eBPF), not a shared library: give it to `patchfuzz load` or `rewrite`";
    if (type != ET_DYN)
        return "ELF type " + std::to_string(type) + (type == ET_REL ? " (relocatable object)" : type == ET_EXEC ? " (executable)" : "") +
               ", not a shared library: build the plugin with -shared -fPIC";
    if (kHostMachine != EM_NONE && machine != kHostMachine)
        return "ELF machine " + std::to_string(machine) + ", but this patchfuzz runs on machine " + std::to_string(kHostMachine);
    return std::nullopt;
}

}  // namespace

Expected<std::unique_ptr<PluginPatcher>> PluginPatcher::open(const std::string& path) {
    if (!std::filesystem::exists(path)) return Error{path, "no such file"};
    if (auto why = not_a_plugin(path)) return Error{path, *why};
    // dlopen needs a path with a slash to avoid searching the library path.
    const std::string p = path.find('/') == std::string::npos ? "./" + path : path;
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return Error{path, std::string("cannot load: ") + dlerror()};
    std::unique_ptr<PluginPatcher> pp(new PluginPatcher());
    pp->impl_ = std::make_unique<Impl>();
    auto& i = *pp->impl_;
    i.handle = h;
    i.abi_version = reinterpret_cast<uint32_t (*)()>(dlsym(h, "patchfuzz_patcher_abi_version"));
    i.name = reinterpret_cast<const char* (*)()>(dlsym(h, "patchfuzz_patcher_name"));
    i.apply = reinterpret_cast<int (*)(const pf_program*, const pf_patch*, uint32_t, pf_program*, pf_result*)>(
        dlsym(h, "patchfuzz_patcher_apply"));
    i.free_out = reinterpret_cast<void (*)(pf_program*)>(dlsym(h, "patchfuzz_patcher_free"));
    for (auto [sym, name] : {std::pair<void*, const char*>{reinterpret_cast<void*>(i.abi_version), "patchfuzz_patcher_abi_version"},
                             {reinterpret_cast<void*>(i.name), "patchfuzz_patcher_name"},
                             {reinterpret_cast<void*>(i.apply), "patchfuzz_patcher_apply"},
                             {reinterpret_cast<void*>(i.free_out), "patchfuzz_patcher_free"}})
        if (sym == nullptr) return Error{path, std::string("missing symbol '") + name + "' (include/patchfuzz/patcher.h)"};
    const uint32_t v = i.abi_version();
    if (v != PATCHFUZZ_PATCHER_ABI_VERSION)
        return Error{path, "ABI version " + std::to_string(v) + ", patchfuzz speaks version " +
                               std::to_string(PATCHFUZZ_PATCHER_ABI_VERSION)};
    const char* n = i.name();
    pp->name_ = std::string("plugin:") + (n ? n : "unnamed");
    return pp;
}

PluginPatcher::~PluginPatcher() {
    if (impl_ && impl_->handle) dlclose(impl_->handle);
}

// The plugin runs in a forked child: a crash, a hang or memory corruption in it becomes an
// outcome naming the plugin (a finding about the plugin), never a dead campaign.
patch::PatchOutcome PluginPatcher::apply(Program& prog, const patch::PatchBatch& batch) {
    auto failure = [&](const std::string& why) {
        return patch::PatchOutcome{.err = -EFAULT, .raw_err = -EFAULT, .log = name_ + ": " + why};
    };
    int fds[2];
    if (pipe(fds) != 0) return failure("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) return failure("fork failed");
    if (pid == 0) {
        close(fds[0]);
        alarm(10);
        plugin::PfProgramStorage in;
        plugin::to_pf(prog, in);
        plugin::PfBatchStorage b;
        plugin::to_pf(batch, b);
        pf_program out{};
        out.struct_size = sizeof out;
        pf_result res{};
        res.struct_size = sizeof res;
        const int rc = impl_->apply(&in.view, b.patches.data(), static_cast<uint32_t>(b.patches.size()), &out, &res);
        std::string msg;
        if (rc != 0) {
            msg = "E" + std::string("apply returned ") + std::to_string(rc);
        } else {
            res.log[sizeof res.log - 1] = 0;
            const Program result = res.err == 0 ? plugin::from_pf(out, prog) : prog;
            msg = "O" + std::to_string(res.err) + " " + std::to_string(res.raw_err) + " " + std::to_string(std::strlen(res.log)) +
                  " " + std::string(res.log) + loader::encode_program(result);
        }
        impl_->free_out(&out);
        size_t done = 0;
        while (done < msg.size()) {
            const ssize_t w = write(fds[1], msg.data() + done, msg.size() - done);
            if (w <= 0) _exit(3);
            done += static_cast<size_t>(w);
        }
        _exit(0);
    }
    close(fds[1]);
    std::string buf;
    char tmp[65536];
    ssize_t r;
    while ((r = read(fds[0], tmp, sizeof tmp)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) buf.append(tmp, static_cast<size_t>(r));
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st))
        return failure(std::string("crashed (signal ") + std::to_string(WTERMSIG(st)) + ", " + strsignal(WTERMSIG(st)) + ")");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || buf.empty()) return failure("child exited abnormally");
    if (buf[0] == 'E') return failure(buf.substr(1));
    // "O<err> <raw_err> <loglen> <log><program wire bytes>"
    size_t pos = 1;
    auto next_num = [&](long& v) {
        const size_t sp = buf.find(' ', pos);
        if (sp == std::string::npos) return false;
        v = std::strtol(buf.c_str() + pos, nullptr, 10);
        pos = sp + 1;
        return true;
    };
    long err = 0, raw = 0, loglen = 0;
    if (!next_num(err) || !next_num(raw) || !next_num(loglen) || pos + static_cast<size_t>(loglen) > buf.size())
        return failure("garbled result");
    patch::PatchOutcome o{.err = int(err), .raw_err = int(raw), .log = buf.substr(pos, static_cast<size_t>(loglen))};
    pos += static_cast<size_t>(loglen);
    auto decoded = loader::decode_program(std::string_view(buf).substr(pos));
    if (!decoded) return failure("returned a program patchfuzz cannot decode: " + decoded.error().to_string());
    if (o.err == 0) prog = std::move(*decoded);
    return o;
}

}  // namespace patchfuzz::harness
