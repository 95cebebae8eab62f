#pragma once
// rejected_reads(): the insns whose register reads the verifier rejects, for two syntactic rules:
//  * a register no path from its function's entry has written ("R%d !read_ok", check_reg_arg()
//    in kernel/bpf/verifier.c);
//  * a pointer where a modelled helper wants a scalar ("R%d type=ctx expected=scalar",
//    check_func_arg()): bpf_loop's nr_loops and flags, map_update_elem's flags, tail_call's index.
// Used to keep the triage minimizer from shrinking a program into one no kernel would load (a
// callback whose `r0 = 0` was deleted; bpf_loop left with the ctx pointer in R1 once the def of
// nr_loops was deleted).
//
// Written at entry: r1 (the ctx pointer) and r10 in the main program; r1, r2 and r10 in the
// callback of a bpf_loop call the facts mark fit for inlining (aux.loop_callback_subprogno: the
// helper passes index and ctx alone); r1-r5 and r10 in any other subprog or callback (its
// arguments: a syntactic check cannot tell how many the verifier gives it, nor their types, so
// they count as scalars). Every call writes r0 (a scalar, as far as this check
// goes) and leaves r1-r5 unreadable. Pointers: r10, the ctx at entry, ld_imm64 of a map or
// function, and copies of those moved or offset by a constant. Reads checked: ALU/JMP operands,
// memory bases and stored values, r0 at exit, and the arguments of the helpers with a known count
// (other helpers and kfuncs are not checked: over-approximating their arguments would reject
// valid programs).
#include <cstdint>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

std::vector<uint32_t> rejected_reads(const Program& prog);

}  // namespace patchfuzz::passes
