#pragma once
// One program as the kernel oracle sends it to the guest: the Program (its prog_type, insns with
// ld_imm64 map imms as indexes into Program::maps, kfunc call imms naming Program::kfuncs) and
// the inputs to test-run it on.
#include <string>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

struct KernelCase {
    std::string name;                         // file name or generator seed, for reports
    Program program;
    std::vector<interp::ExecInput> inputs;    // BPF_PROG_TEST_RUN inputs (packet = data_in)
};

}  // namespace patchfuzz::kernel
