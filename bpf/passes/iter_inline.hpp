#pragma once
// Numeric open-coded iterator inlining (docs/iterator-isa-arch.md §2): bpf_iter_num_new/next/destroy
// kfunc calls replaced by straight-line BPF. V4 is the sequence Linux 7.3.4 emits (its xlated code,
// measured under qemu: harness/kernel/README.md "Linux 7.x"); V1 and V3 reconstruct the bug
// classes the review found (B3, B2) on the same skeleton.
//
// Call-site convention (the kfunc ABI): R1 = pointer to the 8-byte iterator slot (struct
// bpf_iter_num_kern: s32 cur at +0, s32 end at +4), R2 = start, R3 = end (only their low 32 bits
// count); result in R0. The sequences clobber only R0, R2, R3 (never AX, R4, R5, R6-R10), write only
// the 8 slot bytes, and contain no outgoing jumps (every jump lands inside the sequence or on its
// end), so they can be spliced anywhere. No other assumption.
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"

namespace patchfuzz::passes {

// new: R0 (low 32 bits) = 0 / -EINVAL (start > end, signed 32-bit) / -E2BIG (end - start >
// BPF_MAX_LOOPS as u32); on success the slot holds (start - 1, end), on error (0, 0). R0's upper
// half is 0xffffffff on an error (64-bit moves, as 7.3.4): the kfunc ABI leaves it undefined.
//  V4: 14 insns: `if w2 s> w3`, the u32 distance in w0 compared as the zero-extended r0 (correct).
//  V1: 16 insns, sign-extends start/end with ALU64 MOVSX off 32, then 64-bit signed compare and
//      64-bit distance: correct on a MOVSX-aware JIT, wrong where MOVSX decodes as MOV (B3).
//  V3: as V4 but compares the distance signed (JMP32 JSGT): accepts distances >= 2^31 (B2).
//  Off: empty.
std::vector<isa::Insn> emit_iter_num_new(IterInline v);
// next: 9 insns for every variant but Off (7.3.4's: cur in R0, end in R2): cur+1 (32-bit wrap)
// s>= end -> slot (0,0), R0 = 0; else cur += 1, R0 = R1 (64-bit pointer to cur).
std::vector<isa::Insn> emit_iter_num_next(IterInline v);
// destroy: a single `ja +0` placeholder (a fixup that returns 0 insns keeps the call; nop removal
// ran before do_misc_fixups, so the placeholder survives, as docs/iterator-isa-arch.md §2.1 says).
std::vector<isa::Insn> emit_iter_num_destroy(IterInline v);

}  // namespace patchfuzz::passes
