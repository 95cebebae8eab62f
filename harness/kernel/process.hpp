#pragma once
// Running host tools (apt-get, dpkg-deb, zstd, xz, cc, qemu) without a shell: argv vectors, no
// quoting pitfalls, optional stdin/stdout files, a timeout that kills the whole child.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::kernel {

struct ProcessResult {
    int exit_code = -1;      // exit status, or 128 + signal when killed
    bool timed_out = false;
    std::string out;         // captured stdout (when no stdout_file was given)
    std::string err;         // captured stderr (last 64 KiB)
};

struct ProcessOptions {
    std::string stdin_file;   // empty: /dev/null
    std::string stdout_file;  // empty: captured into ProcessResult::out
    int timeout_s = 0;        // 0: none
    std::string cwd;          // empty: inherit
};

// Runs argv[0] (looked up in PATH). An Error only when the program could not be started.
Expected<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// The first executable called `name` in PATH, or nullopt.
std::optional<std::string> find_in_path(const std::string& name);

}  // namespace patchfuzz::kernel
