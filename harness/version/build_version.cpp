#include "harness/version/build_version.hpp"

// Defined in the build-time generated build_revision.cpp (cmake/write_revision.cmake).
extern const char patchfuzz_build_revision[];

namespace patchfuzz::build {
namespace {

std::string& plugin_part() {
    static std::string s;
    return s;
}

}  // namespace

std::string version_string() {
    const std::string rev = patchfuzz_build_revision;
    std::string s = std::string("patchfuzz ") + PATCHFUZZ_VERSION + " (" + (rev == "unknown revision" ? rev : "git " + rev) + ")";
    return s + plugin_part();
}

void set_plugin(const std::string& name, const std::string& version) { plugin_part() = "; plugin " + name + " " + version; }

}  // namespace patchfuzz::build
