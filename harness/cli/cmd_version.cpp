// patchfuzz --version (also `patchfuzz version`): which build this is, and with --patcher-lib
// which plugin, in the same words campaign summaries, verdicts and reports use.
#include <cstdio>
#include <string>
#include <string_view>

#include "harness/cli/commands.hpp"
#include "harness/plugin/plugin_info.hpp"
#include "harness/plugin/plugin_patcher.hpp"
#include "harness/version/build_version.hpp"

namespace patchfuzz::cli {
namespace {

void version_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz --version [--patcher-lib X.so]\n\n"
                 "Print the patchfuzz version and the git revision it was built from (\", dirty\" when the\n"
                 "tree had uncommitted changes, \"unknown revision\" for a build outside a git checkout).\n"
                 "The same string is the \"version\" of `fuzz --json`, summary.json, each verdict.txt\n"
                 "and the HTML report.\n\n"
                 "  --patcher-lib X  also load an external patcher (include/patchfuzz/patcher.h) and name it\n"
                 "                   with its version, as a campaign with that plugin records it\n");
}

int bad(const std::string& m) {
    std::fprintf(stderr, "patchfuzz --version: %s\n", m.c_str());
    version_usage(stderr);
    return 2;
}

}  // namespace

int cmd_version(Args args) {
    std::string plugin;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h") {
            version_usage(stdout);
            return 0;
        }
        if (a == "--patcher-lib") {
            if (i + 1 >= args.size()) return bad("--patcher-lib needs a path");
            plugin = args[++i];
        } else {
            return bad("unknown option '" + std::string(a) + "'");
        }
    }
    if (!plugin.empty()) {
        // The same checks as a campaign's (ABI version, symbols), then the plugin's own words.
        auto loaded = harness::PluginPatcher::open(plugin);
        if (!loaded) return bad(loaded.error().to_string());
        auto info = harness::read_plugin_info(plugin);
        if (!info) return bad(info.error().to_string());
        build::set_plugin(info->name, info->version);
    }
    std::printf("%s\n", build::version_string().c_str());
    return 0;
}

}  // namespace patchfuzz::cli
