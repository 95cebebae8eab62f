#pragma once
// Runs one bpf_conformance `.data` test on the interpreter, with the suite's conventions: r1 =
// the `-- mem` bytes (as ctx), r2 = their length, r10 = top of a 512-byte stack, full 64-bit r0
// compared with `-- result`. A test "passes" when it is read, validated and executed without
// fault and its r0 equals the expected value; a rejection (parser, validator, fault) is a failure
// with a located message, which is what the negative files must produce.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "bpf/conformance/data_file.hpp"

namespace patchfuzz::interp {

struct ConformanceOutcome {
    enum class Stage { Read, Validate, Execute, Compare, Done } stage = Stage::Done;  // where it stopped
    bool passed = false;
    bool unreadable = false;  // the file could not be opened at all
    std::string detail;       // located message: parse/validation error, fault, r0 mismatch
    std::optional<uint64_t> r0;
};

ConformanceOutcome run_conformance_file(const std::string& path);
// The validator as the suite needs it: user-space encodings, plus `callx` (RFC 9669, which the
// kernel does not accept) checked as the helper call it performs.
Status validate_for_conformance(std::span<const isa::Insn> insns);
// The same, for an already parsed file (parse errors are the caller's).
ConformanceOutcome run_conformance_data(const conformance::DataFile& f);

}  // namespace patchfuzz::interp
