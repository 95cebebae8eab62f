#pragma once
// What the opcode byte of an instruction says about it: one row for each of the 256 code bytes,
// the one place that knows an opcode's class, operation, operand and access width, its control
// flow, its relative displacement and the registers it reads and defines. The interpreter's
// decoder, the zero-extension liveness, the patchers' branch adjustment and def32 marks, and
// misc_fixups' opcode filter all read this table (each may keep a packed view of its own, computed
// from it); opcode_table.hpp says which encodings are legal, this says what an opcode means.
//
// Rows exist for all 256 bytes, illegal ones included: the kernel's walkers (bpf_adj_branches,
// insn_def_regno, is_reg64, ...) look at the class and op bits of whatever they are given, and so
// do we. Where the code byte alone does not decide a fact, the row says so instead of guessing
// (DispField::ImmIfSrc, Target::CalleeIfSrc, Def::ByImm, Def32::ByImm, RegsBy), and the function
// named at the marker gives the answer for a whole insn. insn_facts_test.cpp holds every row to
// hand-written expectations and to the rows of opcode_table.
#include <array>
#include <cstdint>

#include "bpf/isa/encoding.hpp"

namespace patchfuzz::isa {

// The field holding a relative displacement that bpf_adj_branches() (kernel/bpf/core.c) adjusts
// when insns are inserted or removed. Not the same as where control goes (Target): the kernel
// also adjusts the `off` of a tail call, a callx and an exit-less JMP32 call, which jump nowhere.
enum class DispField : uint8_t {
    None,
    Off,       // off (16 bits): conditional jumps, ja, may_goto, gotox, ...
    Imm,       // imm (32 bits): gotol (JMP32 | JA | K)
    ImmIfSrc,  // imm when src_reg == InsnFacts::disp_src, else none: JMP | CALL (src BPF_PSEUDO_CALL)
               // and ld_imm64 (src BPF_PSEUDO_FUNC). disp_field() resolves it.
};

// Where an insn may jump besides falling through (insn_successors() in bpf/program/cfg.hpp).
enum class Target : uint8_t {
    None,
    Off,          // pc + 1 + off
    Imm,          // pc + 1 + imm (gotol)
    Tables,       // an entry of the program's jump tables (gotox)
    CalleeIfSrc,  // JMP | CALL with src BPF_PSEUDO_CALL enters pc + 1 + imm and comes back to pc + 1;
                  // with any other src it is a helper or kfunc call (no jump)
};

// The register an insn defines: insn_def_regno() of kernel/bpf/verifier.c.
enum class Def : uint8_t {
    None,   // jumps, calls, ST, plain STX
    Dst,    // dst_reg
    ByImm,  // STX atomics: the operation in imm decides (R0, dst, src or none): insn_def_regno()
};

// Whether the definition writes only the low 32 bits: insn_has_def32() of kernel/bpf/verifier.c.
enum class Def32 : uint8_t {
    No,
    Yes,
    ByImm,  // END (the swap width in imm) and STX atomics (the operation): insn_has_def32()
};

// Whether the 64-bit reads below are all there is, or further fields add to them.
enum class RegsBy : uint8_t {
    Code,    // the row decides
    Imm,     // END: a 64-bit swap reads all of dst; atomics: the operation in imm
    SrcImm,  // JMP | CALL (and callx): a helper call (src 0) reads the helper's argument registers (by
             // the helper id in imm); bpf-to-bpf and kfunc calls read none of their own
};

// Register roles of the fields: bit set = the register named by that field.
inline constexpr uint8_t kRoleDst = 1;
inline constexpr uint8_t kRoleSrc = 2;
// R0-R5: the registers a call clobbers.
inline constexpr uint16_t kCallerSaved = 0x3f;

struct InsnFacts {
    // ---- the code byte's fields -----------------------------------------------------------------
    uint8_t cls = 0;    // BPF_CLASS
    uint8_t op = 0;     // BPF_OP for ALU/ALU64/JMP/JMP32, else 0
    uint8_t mode = 0;   // BPF_MODE for LD/LDX/ST/STX, else 0
    uint8_t bytes = 0;  // memory access width (BPF_SIZE in bytes: 1, 2, 4, 8) for LD/LDX/ST/STX, else 0
    // ALU/JMP classes: the second operand is src_reg (BPF_X), not imm (BPF_K). False for END, whose
    // BPF_X bit is the byte order (BPF_TO_BE), not an operand.
    bool x = false;
    bool wide = false;  // ALU64 and JMP: the operation works on 64 bits (ALU and JMP32: 32)
    uint8_t slots = 1;  // insn slots: 2 for ld_imm64 (LD | IMM | DW)
    // ---- control flow -----------------------------------------------------------------------------
    uint8_t fall = 1;   // execution goes on at pc + fall; 0: never (exit, ja, gotol, gotox)
    Target target = Target::None;
    bool compares = false;   // a conditional jump comparing dst with src/imm (JEQ .. JSLE, JSET)
    bool cond_jump = false;  // bpf_insn_is_cond_jump() (fixups.c): also may_goto, tail call, ...
    DispField disp = DispField::None;
    uint8_t disp_src = 0;    // for DispField::ImmIfSrc: the src_reg that makes imm relative
    // ---- registers --------------------------------------------------------------------------------
    // Read as 64-bit values (is_reg64(..., SRC_OP) of verifier.c): the fields' registers by role
    // (kRoleDst/kRoleSrc) and fixed registers (R0 at exit, R6 for LD_ABS/IND), plus what RegsBy says.
    uint8_t read64_roles = 0;
    uint16_t read64_fixed = 0;
    RegsBy regs_by = RegsBy::Code;
    Def def = Def::None;
    Def32 def32 = Def32::No;
    bool clobbers_caller_saved = false;  // a call: R0-R5 hold nothing of the caller's after it
};

namespace facts_detail {

constexpr bool is_comparison(uint8_t op) {
    switch (op) {
        case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET: case BPF_JNE: case BPF_JSGT:
        case BPF_JSGE: case BPF_JLT: case BPF_JLE: case BPF_JSLT: case BPF_JSLE: return true;
        default: return false;
    }
}

constexpr InsnFacts alu_facts(uint8_t code) {
    InsnFacts f;
    f.op = BPF_OP(code);
    f.x = BPF_SRC(code) == BPF_X && f.op != BPF_END;
    f.wide = BPF_CLASS(code) == BPF_ALU64;
    f.def = Def::Dst;
    const uint8_t src = f.x ? kRoleSrc : 0;
    if (f.op == BPF_END) {
        f.regs_by = RegsBy::Imm;  // a 64-bit swap reads dst, a 16/32-bit one only its low half
        f.def32 = Def32::ByImm;
    } else if (f.wide) {
        f.read64_roles = f.op == BPF_MOV ? src : f.op == BPF_NEG ? kRoleDst : static_cast<uint8_t>(kRoleDst | src);
    } else {
        f.def32 = Def32::Yes;  // 32-bit ALU reads nothing as 64 bits
    }
    return f;
}

constexpr InsnFacts jmp_facts(uint8_t code) {
    InsnFacts f;
    f.op = BPF_OP(code);
    f.x = BPF_SRC(code) == BPF_X;
    f.wide = BPF_CLASS(code) == BPF_JMP;
    const uint8_t o = f.op;
    // bpf_insn_is_cond_jump(): JMP32 but JA; JMP but JA, EXIT and CALL.
    f.cond_jump = o != BPF_JA && (!f.wide || (o != BPF_EXIT && o != BPF_CALL));
    // bpf_adj_branches(): every JMP/JMP32 insn but EXIT by off, gotol by imm, JMP | CALL by imm
    // only for a bpf-to-bpf call.
    if (code == (BPF_JMP | BPF_CALL)) {
        f.disp = DispField::ImmIfSrc;
        f.disp_src = BPF_PSEUDO_CALL;
    } else if (code == (BPF_JMP32 | BPF_JA | BPF_K)) {
        f.disp = DispField::Imm;
    } else if (o != BPF_EXIT) {
        f.disp = DispField::Off;
    }
    f.compares = is_comparison(o);
    const uint8_t src = f.x ? kRoleSrc : 0;
    if (o == BPF_EXIT) {
        f.fall = 0;
        if (f.wide) f.read64_fixed = 1u << BPF_REG_0;  // the return value
    } else if (o == BPF_CALL) {
        f.clobbers_caller_saved = true;
        if (f.wide) {
            f.regs_by = RegsBy::SrcImm;
            if (!f.x) f.target = Target::CalleeIfSrc;
        }
    } else if (o == BPF_JA) {
        f.fall = 0;
        if (f.wide) {
            f.target = f.x ? Target::Tables : Target::Off;  // gotox reads dst, a PTR_TO_INSN
            f.read64_roles = f.x ? kRoleDst : 0;
        } else {
            f.target = f.x ? Target::Off : Target::Imm;  // gotol: JMP32 | JA | K
        }
    } else if (f.wide && code == (BPF_JMP | kOpTailCall)) {
        // the internal tail call: falls through when it fails, jumps nowhere in the program
    } else {
        f.target = Target::Off;  // conditional jumps and may_goto (JCOND)
        // A 64-bit compare reads both operands as 64 bits (not may_goto: it reads no register).
        if (f.wide && o != BPF_JCOND) f.read64_roles = static_cast<uint8_t>(kRoleDst | src);
    }
    return f;
}

constexpr InsnFacts mem_facts(uint8_t code) {
    InsnFacts f;
    f.mode = BPF_MODE(code);
    const uint8_t size = BPF_SIZE(code);
    f.bytes = size == BPF_B ? 1 : size == BPF_H ? 2 : size == BPF_W ? 4 : 8;
    switch (BPF_CLASS(code)) {
        case BPF_LDX:
            f.read64_roles = kRoleSrc;  // the address
            f.def = Def::Dst;
            f.def32 = size != BPF_DW && f.mode != BPF_MEMSX ? Def32::Yes : Def32::No;
            break;
        case BPF_ST:
            f.read64_roles = kRoleDst;  // the address
            break;
        case BPF_STX:
            if (f.mode == BPF_ATOMIC || f.mode == kModeProbeAtomic) {
                f.regs_by = RegsBy::Imm;
                f.def = Def::ByImm;
                f.def32 = Def32::ByImm;
            } else {
                // the address, and the stored value when all 64 bits of it are stored
                f.read64_roles = size == BPF_DW ? static_cast<uint8_t>(kRoleDst | kRoleSrc) : kRoleDst;
            }
            break;
        default:  // BPF_LD
            f.def = Def::Dst;
            if (f.mode == BPF_IMM) {
                // ld_imm64 (and, as code 0, its second slot) reads nothing, defines all of dst
                if (code == (BPF_LD | BPF_IMM | BPF_DW)) {
                    f.slots = 2;
                    f.fall = 2;
                    f.disp = DispField::ImmIfSrc;
                    f.disp_src = BPF_PSEUDO_FUNC;
                }
            } else {
                // LD_ABS / LD_IND: the skb in R6, the offset register for IND; the low half of R0
                f.def32 = Def32::Yes;
                f.read64_fixed = 1u << BPF_REG_6;
                f.read64_roles = f.mode == BPF_IND ? kRoleSrc : 0;
            }
            break;
    }
    return f;
}

constexpr InsnFacts facts_of(uint8_t code) {
    InsnFacts f;
    switch (BPF_CLASS(code)) {
        case BPF_ALU: case BPF_ALU64: f = alu_facts(code); break;
        case BPF_JMP: case BPF_JMP32: f = jmp_facts(code); break;
        default: f = mem_facts(code); break;
    }
    f.cls = BPF_CLASS(code);
    return f;
}

}  // namespace facts_detail

// The table: kInsnFacts[code].
inline constexpr std::array<InsnFacts, 256> kInsnFacts = [] {
    std::array<InsnFacts, 256> t{};
    for (unsigned code = 0; code < t.size(); ++code) t[code] = facts_detail::facts_of(static_cast<uint8_t>(code));
    return t;
}();

constexpr const InsnFacts& insn_facts(uint8_t code) { return kInsnFacts[code]; }

// The displacement field of an insn with this code and src_reg: DispField::ImmIfSrc resolved.
constexpr DispField disp_field(uint8_t code, uint8_t src_reg) {
    const InsnFacts& f = kInsnFacts[code];
    if (f.disp != DispField::ImmIfSrc) return f.disp;
    return src_reg == f.disp_src ? DispField::Imm : DispField::None;
}

}  // namespace patchfuzz::isa
