#pragma once
// What an external patcher says about itself: its name (patchfuzz_patcher_name, required) and its
// version (patchfuzz_patcher_version, optional since ABI version 1 plugins predate it). Read with
// dlsym, so a plugin without the version query stays loadable and is shown as "(no version)".
#include <string>

#include "bpf/util/error.hpp"

namespace patchfuzz::harness {

struct PluginInfo {
    std::string name;
    std::string version;  // "(no version)" when the plugin does not export the query
};

// Errors: the library cannot be loaded or has no patchfuzz_patcher_name (path and reason).
Expected<PluginInfo> read_plugin_info(const std::string& path);

}  // namespace patchfuzz::harness
