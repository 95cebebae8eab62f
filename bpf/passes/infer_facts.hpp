#pragma once
// infer_facts(): the verifier facts the rewrite passes read, inferred syntactically for inputs that
// carry none (a .bpf.o, a .s, a raw .bin), as the verifier would find them for a program it
// accepts:
//  * aux sized to the program, orig_idx = index, every insn seen;
//  * subprogs (if missing) at 0 and every pseudo-call / PSEUDO_FUNC target, plus the fake exit;
//  * kfunc descriptors for calls naming one of our modelled kfuncs (bpf/kfunc/kfunc_table.hpp);
//  * map helpers (lookup/update/delete/push/pop/peek, redirect_map, for_each_map_elem,
//    lookup_percpu_elem) whose R1 comes from an ld_imm64 of a known map, and tail calls whose R2
//    does (with a constant R3 as the key), get aux.map_index (the def is searched backwards inside
//    the basic block, following register moves);
//  * bpf_loop calls with R4 a known constant 0 and R2 a PSEUDO_FUNC ld_imm64 are fit for inlining
//    (callback subprog recorded, marked is_cb);
//  * zext_dst on every insn that defines a 32-bit subregister (a superset of the verifier's
//    liveness-based marking);
//  * each subprog's stack_depth from the lowest fp offset it accesses (directly, or through a
//    register set to fp + constant in the same block);
//  * the ctx accesses of socket filters, tc programs and XDP (infer_ctx.hpp): aux.ptr_type = Ctx
//    and the ctx_field_size of a narrow read.
// Facts already present (a .case) are overwritten only where the brief asks: call this only for
// inputs without facts.
#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

void infer_facts(Program& prog);

}  // namespace patchfuzz::passes
