#pragma once
// The two foreign forms of a reproducer: a bpf_conformance `.data` file (execution findings) and
// a kernel selftest snippet in the style of tools/testing/selftests/bpf/progs/verifier_*.c: a
// __naked program in the kernel's inline-asm syntax with __xlated("…") lines giving the rewritten
// code the kernel model (incremental patcher) expects.
#include <string>

#include "bpf/program/program.hpp"
#include "harness/case/case_file.hpp"

namespace patchfuzz::harness {

// `-- raw` program bytes, `-- mem` = the first input's ctx bytes, `-- result` = the reference r0.
std::string to_conformance_data(const Case& c, uint64_t expected_r0, const std::string& signature);

// `rewritten` is the kernel model's output for this case (what __xlated must match).
std::string to_selftest_snippet(const Case& c, const Program& rewritten, const std::string& signature,
                                const std::string& func_name);

}  // namespace patchfuzz::harness
