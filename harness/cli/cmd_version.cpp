// patchfuzz --version (also `patchfuzz version`): which build this is, and with --patcher-lib
// which plugin, in the same words campaign summaries, verdicts and reports use.
#include <cstdio>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/plugin/plugin_info.hpp"
#include "harness/plugin/plugin_patcher.hpp"
#include "harness/version/build_version.hpp"

namespace patchfuzz::cli {

int cmd_version(Args args) {
    std::string plugin;
    const VerbFlags spec{
        .verb = "--version",
        .usage = {"patchfuzz --version [--patcher-lib X.so]"},
        .about = "Print the patchfuzz version and the git revision it was built from (\", dirty\" when the\n"
                 "tree had uncommitted changes, \"unknown revision\" for a build outside a git checkout).\n"
                 "The same string is the \"version\" of `fuzz --json`, summary.json, each verdict.txt\n"
                 "and the HTML report.",
        .flags = {text_flag({"--patcher-lib"}, "X.so",
                            "also load an external patcher (include/patchfuzz/patcher.h) and name it with its version, "
                            "as a campaign with that plugin records it",
                            plugin)},
        .exit = "exit: 0 printed, 2 bad usage or a plugin that does not load"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (!plugin.empty()) {
        // The same checks as a campaign's (ABI version, symbols), then the plugin's own words.
        auto loaded = harness::PluginPatcher::open(plugin);
        if (!loaded) return spec.error(loaded.error().to_string());
        auto info = harness::read_plugin_info(plugin);
        if (!info) return spec.error(info.error().to_string());
        build::set_plugin(info->name, info->version);
    }
    std::printf("%s\n", build::version_string().c_str());
    return 0;
}

}  // namespace patchfuzz::cli
