#pragma once
// write_file_atomic: temp file in the target's directory + fsync + rename + fsync of the
// directory. A reader (or a campaign restarted after SIGKILL) sees the old file or the whole new
// one, never a partial file.
#include <string>
#include <string_view>

#include "bpf/util/error.hpp"

namespace patchfuzz {

Status write_file_atomic(const std::string& path, std::string_view content);

}  // namespace patchfuzz
