#pragma once
// The kernel's xlated program (xlated_program.hpp) run in our interpreter against the original
// program on the same inputs (issue 22 item 5). A disagreement needs no model to be a kernel
// finding: the real verifier's rewrite changed what the program computes. It is located in the
// xlated program: the two programs are aligned on the instructions the rewrite kept (a longest
// common subsequence, jump offsets and call targets aside), both runs are traced, and the first
// executed xlated insn after the last kept insn on which the two runs still agreed (same
// position, same result) is where the kernel's code took another way: for an inline that
// decides differently, its first insn.
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/exec_input.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

struct XlatedExecution {
    bool agree = true;        // on every input
    uint32_t input = 0;       // the first input they disagree on
    std::string detail;       // what differs there ("retval: xlated 4294967289, original 3")
    int64_t diverging_pc = -1;  // in the xlated program, -1 when not located
    std::string diverging_insn; // its disassembly
    std::string located;        // how (or why not) it was located
};

// The original program as the reference of what a rewrite must compute on `arch`: as it is, or,
// for a JIT that needs the verifier's zext (bpf_jit_needs_zext: arm32), with the zext_dst marks
// applied after each marked def (interp::ZextMarks::Apply), as the execution oracle runs it:
// such a JIT leaves a 32-bit def's upper half as it was unless the verifier asks for a zext.
struct OriginalReference {
    Program program;
    interp::ZextMarks marks = interp::ZextMarks::Ignore;
    OriginalReference(const Program& original, const ArchProfile& arch);
};

// The observable results of one run that a rewrite must keep: status, the u32 return value
// (what the program type returns), array/hash map contents and the packet. "" when equal. The
// contents of instruction arrays (`maps`: the program's) are code addresses of each program's own
// layout, not results: not compared.
std::string result_difference(const interp::ExecResult& xlated, const interp::ExecResult& original, const std::vector<MapDef>& maps);

XlatedExecution run_xlated_vs_original(const Program& xlated, const Program& original,
                                       const std::vector<interp::ExecInput>& inputs, const ArchProfile& arch);

// The alignment used to locate a divergence: for each xlated insn the original insn it keeps, -1
// for code the kernel inserted.
std::vector<int32_t> align_xlated(const std::vector<isa::Insn>& xlated, const std::vector<isa::Insn>& original);

}  // namespace patchfuzz::kernel
