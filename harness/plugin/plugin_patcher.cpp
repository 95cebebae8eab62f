#include "harness/plugin/plugin_patcher.hpp"

#include <dlfcn.h>
#include <elf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "harness/plugin/fault_guard.hpp"
#include "harness/plugin/pf_convert.hpp"
#include "harness/plugin/plugin_host.hpp"

namespace patchfuzz::harness {

struct PluginPatcher::Impl {
    void* handle = nullptr;
    uint32_t (*abi_version)() = nullptr;
    const char* (*name)() = nullptr;
    int (*apply)(const pf_program*, const pf_patch*, uint32_t, pf_program*, pf_result*) = nullptr;
    void (*free_out)(pf_program*) = nullptr;
    double timeout_seconds = 0;
    bool isolated = false;  // calls go to the host process (after the plugin first misbehaved here)
    std::unique_ptr<plugin::PluginHost> host;
    plugin::PfProgramStorage in;  // kept from call to call for their storage
    std::vector<unsigned char> before, after;  // the input's bytes around an in-process call
    plugin::PfBatchStorage patches;
    std::mutex mu;
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

Expected<std::unique_ptr<PluginPatcher>> PluginPatcher::open(const std::string& path, double timeout_seconds, bool isolated) {
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
    i.timeout_seconds = timeout_seconds;
    i.isolated = isolated;
    i.host = std::make_unique<plugin::PluginHost>(plugin::PluginEntryPoints{.apply = i.apply, .free_out = i.free_out}, timeout_seconds);
    return pp;
}

PluginPatcher::~PluginPatcher() {
    if (impl_) impl_->host.reset();  // the host runs the library's code: it ends first
    if (impl_ && impl_->handle) dlclose(impl_->handle);
}

namespace {

void append_bytes(std::vector<unsigned char>& out, const void* p, size_t n) {
    if (n == 0) return;
    const auto* b = static_cast<const unsigned char*>(p);
    out.insert(out.end(), b, b + n);
}

// Every byte a call of apply may only read (the program view and its arrays, the patch list and
// each patch's insns), appended to `out`: taken before and after a call, they must be equal.
void input_bytes(const plugin::PfProgramStorage& in, const plugin::PfBatchStorage& b, std::vector<unsigned char>& out) {
    out.clear();
    const pf_program& v = in.view;
    append_bytes(out, &v, sizeof v);
    append_bytes(out, v.insns, v.len * sizeof(bpf_insn));
    append_bytes(out, v.aux, v.len * sizeof(pf_insn_aux));
    append_bytes(out, v.subprogs, v.nr_subprogs * sizeof(pf_subprog));
    append_bytes(out, v.linfo, v.nr_linfo * sizeof(pf_line_info));
    append_bytes(out, v.finfo, v.nr_finfo * sizeof(pf_func_info));
    append_bytes(out, v.insn_array_entries, v.nr_insn_array_entries * sizeof(pf_insn_array_entry));
    append_bytes(out, v.pokes, v.nr_pokes * sizeof(pf_poke));
    append_bytes(out, b.patches.data(), b.patches.size() * sizeof(pf_patch));
    for (const auto& p : b.patches) append_bytes(out, p.insns, p.nr_insns * sizeof(bpf_insn));
}

}  // namespace

// The plugin runs in this process under run_guarded (fault_guard.hpp) until it first crashes,
// hangs or writes into its input; from then on every call goes to a host process
// (plugin_host.hpp), where whatever it does stays contained. Either way such a call becomes an
// outcome naming the plugin: a finding about the plugin, with the case that triggered it, never a
// dead campaign.
patch::PatchOutcome PluginPatcher::apply(Program& prog, const patch::PatchBatch& batch) {
    const std::lock_guard<std::mutex> one_call_at_a_time(impl_->mu);
    auto failure = [&](const std::string& why) {
        return patch::PatchOutcome{.err = -EFAULT, .raw_err = -EFAULT, .log = name_ + ": " + why};
    };
    plugin::to_pf(prog, impl_->in);
    plugin::to_pf(batch, impl_->patches);
    if (impl_->isolated) {
        const auto call = impl_->host->call(impl_->in.view, impl_->patches.patches.data(),
                                            static_cast<uint32_t>(impl_->patches.patches.size()));
        if (call.status != plugin::PluginHost::Status::ran) return failure(call.why);
        patch::PatchOutcome o{.err = call.result.err, .raw_err = call.result.raw_err, .log = std::string(call.result.log)};
        if (o.err == 0) prog = plugin::from_pf(*call.out, prog);
        return o;
    }
    pf_program out{};
    out.struct_size = sizeof out;
    pf_result res{};
    res.struct_size = sizeof res;
    int rc = 0;
    auto run = [&] {
        rc = impl_->apply(&impl_->in.view, impl_->patches.patches.data(), static_cast<uint32_t>(impl_->patches.patches.size()),
                          &out, &res);
    };
    input_bytes(impl_->in, impl_->patches, impl_->before);
    const auto g = plugin::run_guarded(run, impl_->timeout_seconds);
    const char* const later = "; its later calls run in an isolated host process";
    if (g.kind == plugin::GuardOutcome::Kind::crashed) {
        impl_->isolated = true;
        return failure("crashed (signal " + std::to_string(g.signal) + ", " + strsignal(g.signal) + ")" + later);
    }
    if (g.kind == plugin::GuardOutcome::Kind::hung) {
        impl_->isolated = true;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", impl_->timeout_seconds);
        return failure(std::string("hung (no answer within ") + secs + " s; abandoned)" + later);
    }
    input_bytes(impl_->in, impl_->patches, impl_->after);
    if (impl_->before != impl_->after) {
        impl_->isolated = true;
        impl_->free_out(&out);
        return failure(std::string("wrote into its input (the program and patches are read-only to apply)") + later);
    }
    patch::PatchOutcome o{.err = res.err, .raw_err = res.raw_err, .log = {}};
    if (rc != 0) {
        o = failure("apply returned " + std::to_string(rc));
    } else {
        res.log[sizeof res.log - 1] = 0;
        o.log = res.log;
        if (o.err == 0) {
            if ((out.len && (!out.insns || !out.aux)) || (out.nr_subprogs && !out.subprogs) || (out.nr_linfo && !out.linfo) ||
                (out.nr_finfo && !out.finfo) || (out.nr_insn_array_entries && !out.insn_array_entries) ||
                (out.nr_pokes && !out.pokes))
                o = failure("returned a malformed program (a count without its array)");
            else
                plugin::from_pf_into(out, prog);
        }
    }
    impl_->free_out(&out);
    return o;
}

}  // namespace patchfuzz::harness
