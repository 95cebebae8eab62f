#pragma once
// Reader for the bpf_conformance `.data` test format:
//   -- asm      program in ubpf/bpf_conformance mnemonic syntax (bpf/conformance/ubpf_asm.hpp)
//   -- raw      program as bytes: 8 hex bytes per line, or one 0x<64-bit> value per line (low byte
//               = opcode)
//   -- mem      input memory as hex bytes
//   -- result   expected r0 (hex or decimal)
//   -- error    the program must be rejected (optional text: expected message, informative only)
//   -- c        C source the asm came from (kept, not used)
//   -- no register offset   note of the suite's harness (kept, not used)
// `#` starts a comment line. Any other `-- x` section is an error located at its line, never a
// silent skip. A file with neither asm nor raw is an error.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::conformance {

struct DataFile {
    std::string path;
    std::vector<isa::Insn> insns;
    std::vector<uint8_t> mem;
    std::optional<uint64_t> result;
    std::optional<std::string> error;  // present: rejection expected (text may be empty)
    bool has_asm = false, has_raw = false;
};

Expected<DataFile> read_data_file(const std::string& path);
Expected<DataFile> parse_data_file(std::string_view text, const std::string& path);

}  // namespace patchfuzz::conformance
