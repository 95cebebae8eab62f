#include "harness/plugin/plugin_info.hpp"

#include <dlfcn.h>

namespace patchfuzz::harness {

Expected<PluginInfo> read_plugin_info(const std::string& path) {
    // A path without a slash would be searched on the library path instead of opened.
    const std::string p = path.find('/') == std::string::npos ? "./" + path : path;
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return Error{path, std::string("cannot load: ") + dlerror()};
    const auto name_fn = reinterpret_cast<const char* (*)()>(dlsym(h, "patchfuzz_patcher_name"));
    const auto version_fn = reinterpret_cast<const char* (*)()>(dlsym(h, "patchfuzz_patcher_version"));
    if (!name_fn) {
        dlclose(h);
        return Error{path, "missing symbol 'patchfuzz_patcher_name' (include/patchfuzz/patcher.h)"};
    }
    PluginInfo info;
    const char* n = name_fn();
    info.name = n && *n ? n : "unnamed";
    const char* v = version_fn ? version_fn() : nullptr;
    info.version = v && *v ? v : "(no version)";
    dlclose(h);
    return info;
}

}  // namespace patchfuzz::harness
