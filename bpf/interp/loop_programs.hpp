#pragma once
// Hand-built programs of the loop shapes the interpreter, the cost model, the execution
// differential and the benchmarks run (docs/iterator-isa-arch.md §1.6, §5.1):
//  * iter_sum: bpf_for-shaped: iterator slot at fp-8, new(start, end), next until NULL summing the
//    values (at most max_iters), one more next after the loop (sticky NULL), destroy.
//  * bpf_for: the inner loop of the seed benchmark (tools/testing/selftests/bpf/progs/
//    bpf_for_bench.c): bpf_for(i, 0, nr_loops) with the bound reloaded from a global every round.
//  * bpf_loop: bpf_loop(nr_loops, empty callback) (progs/bpf_loop_bench.c), either as the helper
//    call or as the verifier's inline_bpf_loop expansion (kernel/bpf/fixups.c), which is what the
//    seed measured.
// Kfunc calls use the BTF ids of bpf/kfunc/kfunc_table.hpp and fill Program::kfuncs.
#include <cstdint>

#include "bpf/program/program.hpp"

namespace patchfuzz::interp {

struct IterSumOptions {
    bool bounds_from_ctx = true;  // start = *(u32 *)(ctx + 0), end = *(u32 *)(ctx + 4)
    int32_t start = 0, end = 0;   // when not from ctx: w2 = start, w3 = end (ALU32 moves)
    int32_t max_iters = 64;       // the body breaks out after this many elements
};
// r0 = (elements << 40) ^ sum of the u32 values read through next's pointer; stack: fp-8 the
// iterator slot, fp-16 (u32) new's rc, fp-24 R0 of the extra next() after the loop, fp-32 the sum,
// fp-40 the element count.
Program iter_sum_program(const IterSumOptions& o = {});

// Global bound in map 0 (array, 1 x u32): set it through ExecInput::maps. r0 = iterations.
Program bpf_for_program();
// bpf_loop(nr_loops, cb, NULL, 0) through the helper (inlined = false) or the inline_bpf_loop
// expansion (inlined = true). nr_loops from map 0 as above. r0 = iterations.
Program bpf_loop_program(bool inlined);

// Map 0 contents that set the global bound to `nr_loops`.
struct ExecInput;
void set_nr_loops(ExecInput& in, uint32_t nr_loops);

}  // namespace patchfuzz::interp
