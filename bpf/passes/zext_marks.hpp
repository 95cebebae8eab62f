#pragma once
// The verifier's zext_dst marking: which 32-bit defs get aux.zext_dst. During do_check() every
// read of a register as a 64-bit value (is_reg64() for SRC_OP in kernel/bpf/verifier.c: ALU64
// operands, JMP compares, exit's r0, helper-call arguments, memory bases, 64-bit stored values)
// propagates REG_LIVE_READ64 back to the def that wrote it (mark_reg_read()), and
// mark_insn_zext() sets zext_dst on that def when it only wrote the low 32 bits. A 32-bit def
// without the mark keeps whatever the JIT leaves in the upper half, which is harmless exactly when
// nothing reads it as 64 bits.
//
// Modelled syntactically, as a backward liveness of "read as 64 bits before being redefined" over
// the intra-procedural CFG (bpf/program/cfg.hpp): a path ends where the register is redefined;
// every call (helper, kfunc, bpf-to-bpf) clobbers R0-R5 and keeps R6-R9, so only their paths go on
// past it. Helper calls read their arguments as 64 bits. A bpf-to-bpf call is no 64-bit read
// itself (is_reg64() says so for BPF_PSEUDO_CALL), but the callee gets R1-R5 as they are, with the
// caller's 32-bit defs still on them (set_callee_state() copies the registers, subreg_def
// included): the callee's 64-bit reads of R1-R5 before redefining them mark the caller's defs, as
// the callee's entry being a successor of the call for R1-R5 only. Kfunc calls read none (the
// inlined kfuncs' arguments are int/u32 values their inlines read as 32-bit subregisters).
// Callbacks (bpf_loop and friends) get their R1-R5 from the helper, not the caller's registers:
// not followed.
// The internal tail call reads and clobbers nothing: a failed tail call continues at the next insn
// with every register as it was. A conditional jump that the verifier decides from registers it
// knows (is_branch_taken() in check_cond_jmp_op()) has only the side it takes: a privileged load
// never explores the other (an unprivileged one does, speculatively: not modelled; generated
// programs load privileged). Modelled for registers set to a constant (MOV K, plain ld_imm64) by
// the straight-line code at most 8 insns before the jump, a subset of what the verifier decides:
// `r0 = 0; if r0 != 0 goto l` never reaches l. Like the verifier's liveness this is otherwise
// conservative: a 64-bit read on any path marks the def.
//
// Checked against the real 6.12 verifier with BPF_F_TEST_RND_HI32 (`patchfuzz kernel gen
// --rnd-hi32`, ci/kernel): the xlated code then shows which 32-bit defs it marked.
#include <cstdint>
#include <optional>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/cfg.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

// Does `insn` read register `reg` as a 64-bit value (is_reg64() of verifier.c for SRC_OP)?
// Helpers without a modelled prototype (bpf/isa/helper_protos.hpp) read all five argument
// registers.
bool reads_reg64(const isa::Insn& insn, int reg);

// The insn at `pc` as the liveness below sees it: the registers it reads as 64 bits (reads_reg64()
// above: bit r for register r), the registers whose paths end at it (the one it defines, and
// R0-R5 at any call), def_regno(), has_def32() and insn_successors(). Decoded through a table by
// opcode, which zext_gaps() consults for every insn; public so that a test can hold it against
// those functions for every opcode byte. All zero (def_reg -1) for pc >= len.
struct LivenessInsn {
    uint16_t read = 0;
    uint16_t end = 0;
    int8_t def_reg = -1;
    bool def32 = false;  // has_def32()
    InsnSuccessors succ;
};
LivenessInsn liveness_insn(const Program& prog, uint32_t pc);

// A seen 32-bit def without zext_dst whose register some path reads as 64 bits.
struct ZextGap {
    uint32_t def_pc;
    int reg;
};

// Every such def, in program order: the marks the verifier would add.
std::vector<ZextGap> zext_gaps(const Program& prog);

// A 64-bit read of the gap's register reached from its def (the first a depth-first walk meets),
// to name in a report; nullopt when there is none (not a gap).
std::optional<uint32_t> zext_gap_read(const Program& prog, const ZextGap& gap);

// Sets zext_dst on every def zext_gaps() finds (aux grown to the program's length if short).
// Existing marks stay: more marks only add zero extensions.
void add_zext_marks(Program& prog);

// `prog` with add_zext_marks() applied.
Program with_zext_facts(const Program& prog);

}  // namespace patchfuzz::passes
