#pragma once
// One program as the kernel oracle sends it to the guest: the Program (its prog_type, insns with
// ld_imm64 map imms as indexes into Program::maps, kfunc call imms naming Program::kfuncs) and
// the inputs to test-run it on.
#include <string>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/passes/privilege.hpp"
#include "bpf/program/program.hpp"
#include "harness/case/case_file.hpp"

namespace patchfuzz::kernel {

struct KernelCase {
    std::string name;                         // file name or generator seed, for reports
    Program program;
    std::vector<interp::ExecInput> inputs;    // BPF_PROG_TEST_RUN inputs (packet = data_in)
    // Loaded with BPF_F_TEST_RND_HI32: the verifier poisons the upper half of every 32-bit def it
    // did not mark zext_dst (bpf_opt_subreg_zext_lo32_rnd_hi32), so the real xlated program shows
    // the kernel's zext marks, and the model (RewriteOptions::test_rnd_hi32) is held to them with
    // the marks in the program's aux.
    bool test_rnd_hi32 = false;
    // The level it is loaded at in the guest (its maps are created at the same level); the model
    // rewrites it with RewriteOptions::privileged = bpf_capable(privilege).
    passes::Privilege privilege = passes::Privilege::Root;
};

// The .case a kernel case is written as: its program, its inputs, and rnd-hi32 when it is loaded
// with BPF_F_TEST_RND_HI32 (a .case with the option is loaded so again: `patchfuzz kernel check`).
inline harness::Case as_case(const KernelCase& kc, uint64_t seed, std::vector<std::string> comments) {
    harness::Case c;
    c.program = kc.program;
    c.inputs = kc.inputs;
    c.options.test_rnd_hi32 = kc.test_rnd_hi32;
    c.privilege = kc.privilege;
    c.options.privileged = passes::bpf_capable(kc.privilege);
    c.seed = seed;
    c.comments = std::move(comments);
    return c;
}

}  // namespace patchfuzz::kernel
