#pragma once
// Which build of patchfuzz (and which plugin) produced an output: the project version, the git
// revision of the source tree at build time (refreshed on every build, see
// cmake/write_revision.cmake) and, once a campaign loaded one, the external patcher's own name
// and version. Campaign summaries, finding verdicts and the HTML report carry this string, so a
// finding can be tied to the code that found it long after.
#include <string>

namespace patchfuzz::build {

// "patchfuzz 0.1.0 (git 5faa4fc2d1e0)", "... (git 5faa4fc2d1e0, dirty)" or
// "patchfuzz 0.1.0 (unknown revision)"; followed by "; plugin NAME VERSION" after set_plugin().
[[nodiscard]] std::string version_string();

// Records the loaded external patcher (`fuzz --patcher-lib`). Call before a campaign starts its
// workers: the string is read, never written, while they run.
void set_plugin(const std::string& name, const std::string& version);

}  // namespace patchfuzz::build
