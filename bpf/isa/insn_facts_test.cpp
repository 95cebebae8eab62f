// The opcode facts held to definitions that do not read the table: hand-written rows for a sample
// of codes from every class, the legal encodings of opcode_table (which mark their displacement
// fields on their own), and the kernel functions the facts stand for, written out plainly below
// (bpf_adj_branches, insn_def_regno, is_reg64, bpf_insn_is_cond_jump) and compared over every code
// byte with registers and the imm values those functions test.
#include "bpf/isa/insn_facts.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"
#include "bpf/isa/opcode_table.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::isa {
namespace {

// ---- reference definitions, from the kernel functions' rules -------------------------------------

// bpf_adj_branches() (kernel/bpf/core.c): ld_imm64 PSEUDO_FUNC -> imm; JMP/JMP32 but EXIT; of
// JMP | CALL only a PSEUDO_CALL (imm); gotol imm; every other jump off.
RelField ref_relative_field(const Insn& i) {
    const uint8_t c = i.code & 0x07, o = i.code & 0xf0;
    if (i.code == (BPF_LD | BPF_IMM | BPF_DW)) return i.src_reg == BPF_PSEUDO_FUNC ? RelField::Imm32 : RelField::None;
    if ((c != BPF_JMP && c != BPF_JMP32) || o == BPF_EXIT) return RelField::None;
    if (i.code == (BPF_JMP | BPF_CALL)) return i.src_reg == BPF_PSEUDO_CALL ? RelField::Imm32 : RelField::None;
    if (i.code == (BPF_JMP32 | BPF_JA)) return RelField::Imm32;
    return RelField::Off16;
}

// insn_def_regno() (kernel/bpf/verifier.c).
int ref_def_regno(const Insn& i) {
    switch (i.code & 0x07) {
        case BPF_JMP: case BPF_JMP32: case BPF_ST: return -1;
        case BPF_STX:
            if ((i.code & 0xe0) == BPF_ATOMIC || (i.code & 0xe0) == kModeProbeAtomic) {
                if (i.imm == BPF_CMPXCHG) return BPF_REG_0;
                if (i.imm == BPF_LOAD_ACQ) return i.dst_reg;
                if (i.imm & BPF_FETCH) return i.src_reg;
            }
            return -1;
        default: return i.dst_reg;
    }
}

// is_reg64(insn, regno, NULL, DST_OP) (kernel/bpf/verifier.c).
bool ref_dst_is_reg64(const Insn& i) {
    const uint8_t c = i.code & 0x07, o = i.code & 0xf0, m = i.code & 0xe0, sz = i.code & 0x18;
    if (c == BPF_JMP && (o == BPF_EXIT)) return true;
    if (c == BPF_JMP && o == BPF_CALL) return false;
    if (c == BPF_ALU64 && o == BPF_END && (i.imm == 16 || i.imm == 32)) return false;
    if (c == BPF_ALU64 || c == BPF_JMP || (c == BPF_ALU && o == BPF_END && i.imm == 64)) return true;
    if (c == BPF_ALU || c == BPF_JMP32) return false;
    if (c == BPF_LDX) return sz == BPF_DW || m == BPF_MEMSX;
    if (c == BPF_STX) return sz == BPF_DW;
    if (c == BPF_LD) return m == BPF_IMM;
    return true;
}
bool ref_has_def32(const Insn& i) { return ref_def_regno(i) != -1 && !ref_dst_is_reg64(i); }

// bpf_insn_is_cond_jump() (kernel/bpf/fixups.c).
bool ref_is_cond_jump(const Insn& i) {
    const uint8_t c = i.code & 0x07, o = i.code & 0xf0;
    if (c == BPF_JMP32) return o != BPF_JA;
    if (c == BPF_JMP) return o != BPF_JA && o != BPF_EXIT && o != BPF_CALL;
    return false;
}

TEST(InsnFacts, AsTheKernelFunctionsForEveryCodeRegisterAndTellingImm) {
    std::vector<int32_t> imms{0, 1, -1, 8, 16, 32, 64, BPF_LOAD_ACQ, BPF_STORE_REL, BPF_FETCH, 0x7fffffff};
    for (int32_t op : {BPF_ADD, BPF_AND, BPF_OR, BPF_XOR, BPF_XCHG, BPF_CMPXCHG}) {
        imms.push_back(op);
        imms.push_back(op | BPF_FETCH);
    }
    for (unsigned code = 0; code < 256; ++code)
        for (uint8_t dst = 0; dst < 16; dst = static_cast<uint8_t>(dst + 3))
            for (uint8_t src = 0; src < 16; ++src)
                for (const int32_t imm : imms) {
                    const Insn i = make(static_cast<uint8_t>(code), dst, src, -3, imm);
                    const auto what = [&] {
                        return "code 0x" + std::to_string(code) + " dst " + std::to_string(dst) + " src " +
                               std::to_string(src) + " imm " + std::to_string(imm);
                    };
                    ASSERT_EQ(relative_field(i), ref_relative_field(i)) << what();
                    ASSERT_EQ(insn_def_regno(i), ref_def_regno(i)) << what();
                    ASSERT_EQ(insn_has_def32(i), ref_has_def32(i)) << what();
                    ASSERT_EQ(is_cond_jump(i), ref_is_cond_jump(i)) << what();
                }
}

// ---- hand-written rows ---------------------------------------------------------------------------

struct Want {
    uint8_t code;
    uint8_t cls, op, mode, bytes;
    bool x, wide;
    uint8_t slots, fall;
    Target target;
    bool compares, cond_jump;
    DispField disp;
    uint8_t read64_roles;
    uint16_t read64_fixed;
    RegsBy regs_by;
    Def def;
    Def32 def32;
    bool clobbers;
};

constexpr uint8_t D = kRoleDst, S = kRoleSrc;
constexpr uint16_t kR0 = 1u << 0, kR6 = 1u << 6;

// clang-format off
const Want kWant[] = {
    //  code  cls        op        mode             bytes x      wide   slots fall target              cmp    cond   disp                   read64 fixed  regs_by          def         def32         clobbers
    {0x07, BPF_ALU64, BPF_ADD,  0,               0, false, true,  1, 1, Target::None,        false, false, DispField::None,     D | 0, 0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // r += imm
    {0x0f, BPF_ALU64, BPF_ADD,  0,               0, true,  true,  1, 1, Target::None,        false, false, DispField::None,     D | S, 0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // r += r
    {0x0c, BPF_ALU,   BPF_ADD,  0,               0, true,  false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Code,   Def::Dst,   Def32::Yes,   false},  // w += w
    {0xb7, BPF_ALU64, BPF_MOV,  0,               0, false, true,  1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // r = imm
    {0xbf, BPF_ALU64, BPF_MOV,  0,               0, true,  true,  1, 1, Target::None,        false, false, DispField::None,     S,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // r = r
    {0x87, BPF_ALU64, BPF_NEG,  0,               0, false, true,  1, 1, Target::None,        false, false, DispField::None,     D,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // r = -r
    {0xd4, BPF_ALU,   BPF_END,  0,               0, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Imm,    Def::Dst,   Def32::ByImm, false},  // le16/32/64
    {0xdc, BPF_ALU,   BPF_END,  0,               0, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Imm,    Def::Dst,   Def32::ByImm, false},  // be16/32/64
    {0xd7, BPF_ALU64, BPF_END,  0,               0, false, true,  1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Imm,    Def::Dst,   Def32::ByImm, false},  // bswap
    {0x15, BPF_JMP,   BPF_JEQ,  0,               0, false, true,  1, 1, Target::Off,         true,  true,  DispField::Off,      D,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // if r == imm
    {0x2d, BPF_JMP,   BPF_JGT,  0,               0, true,  true,  1, 1, Target::Off,         true,  true,  DispField::Off,      D | S, 0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // if r > r
    {0x1e, BPF_JMP32, BPF_JEQ,  0,               0, true,  false, 1, 1, Target::Off,         true,  true,  DispField::Off,      0,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // if w == w
    {0x05, BPF_JMP,   BPF_JA,   0,               0, false, true,  1, 0, Target::Off,         false, false, DispField::Off,      0,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // goto
    {0x06, BPF_JMP32, BPF_JA,   0,               0, false, false, 1, 0, Target::Imm,         false, false, DispField::Imm,      0,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // gotol
    {0x0d, BPF_JMP,   BPF_JA,   0,               0, true,  true,  1, 0, Target::Tables,      false, false, DispField::Off,      D,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // gotox
    {0xe5, BPF_JMP,   BPF_JCOND,0,               0, false, true,  1, 1, Target::Off,         false, true,  DispField::Off,      0,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // may_goto
    {0x85, BPF_JMP,   BPF_CALL, 0,               0, false, true,  1, 1, Target::CalleeIfSrc, false, false, DispField::ImmIfSrc, 0,     0,    RegsBy::SrcImm, Def::None,  Def32::No,    true},   // call
    {0x95, BPF_JMP,   BPF_EXIT, 0,               0, false, true,  1, 0, Target::None,        false, false, DispField::None,     0,     kR0,  RegsBy::Code,   Def::None,  Def32::No,    false},  // exit
    {0xf5, BPF_JMP,   0xf0,     0,               0, false, true,  1, 1, Target::None,        false, true,  DispField::Off,      0,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // tail call
    {0x18, BPF_LD,    0,        BPF_IMM,         8, false, false, 2, 2, Target::None,        false, false, DispField::ImmIfSrc, 0,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // ld_imm64
    {0x00, BPF_LD,    0,        BPF_IMM,         4, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // (2nd slot)
    {0x20, BPF_LD,    0,        BPF_ABS,         4, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     kR6,  RegsBy::Code,   Def::Dst,   Def32::Yes,   false},  // ld_abs w
    {0x48, BPF_LD,    0,        BPF_IND,         2, false, false, 1, 1, Target::None,        false, false, DispField::None,     S,     kR6,  RegsBy::Code,   Def::Dst,   Def32::Yes,   false},  // ld_ind h
    {0x61, BPF_LDX,   0,        BPF_MEM,         4, false, false, 1, 1, Target::None,        false, false, DispField::None,     S,     0,    RegsBy::Code,   Def::Dst,   Def32::Yes,   false},  // ldxw
    {0x79, BPF_LDX,   0,        BPF_MEM,         8, false, false, 1, 1, Target::None,        false, false, DispField::None,     S,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // ldxdw
    {0x91, BPF_LDX,   0,        BPF_MEMSX,       1, false, false, 1, 1, Target::None,        false, false, DispField::None,     S,     0,    RegsBy::Code,   Def::Dst,   Def32::No,    false},  // ldxsb
    {0x62, BPF_ST,    0,        BPF_MEM,         4, false, false, 1, 1, Target::None,        false, false, DispField::None,     D,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // stw
    {0xc2, BPF_ST,    0,        kModeNospec,     4, false, false, 1, 1, Target::None,        false, false, DispField::None,     D,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // nospec
    {0x63, BPF_STX,   0,        BPF_MEM,         4, false, false, 1, 1, Target::None,        false, false, DispField::None,     D,     0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // stxw
    {0x7b, BPF_STX,   0,        BPF_MEM,         8, false, false, 1, 1, Target::None,        false, false, DispField::None,     D | S, 0,    RegsBy::Code,   Def::None,  Def32::No,    false},  // stxdw
    {0xdb, BPF_STX,   0,        BPF_ATOMIC,      8, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Imm,    Def::ByImm, Def32::ByImm, false},  // atomic dw
    {0xc3, BPF_STX,   0,        BPF_ATOMIC,      4, false, false, 1, 1, Target::None,        false, false, DispField::None,     0,     0,    RegsBy::Imm,    Def::ByImm, Def32::ByImm, false},  // atomic w
};
// clang-format on

TEST(InsnFacts, HandWrittenRowsFromEveryClass) {
    bool seen_class[8] = {};
    for (const Want& w : kWant) {
        const InsnFacts& f = insn_facts(w.code);
        SCOPED_TRACE("code 0x" + std::to_string(w.code));
        seen_class[w.cls] = true;
        EXPECT_EQ(f.cls, w.cls);
        EXPECT_EQ(f.op, w.op);
        EXPECT_EQ(f.mode, w.mode);
        EXPECT_EQ(f.bytes, w.bytes);
        EXPECT_EQ(f.x, w.x);
        EXPECT_EQ(f.wide, w.wide);
        EXPECT_EQ(f.slots, w.slots);
        EXPECT_EQ(f.fall, w.fall);
        EXPECT_EQ(f.target, w.target);
        EXPECT_EQ(f.compares, w.compares);
        EXPECT_EQ(f.cond_jump, w.cond_jump);
        EXPECT_EQ(f.disp, w.disp);
        EXPECT_EQ(f.read64_roles, w.read64_roles);
        EXPECT_EQ(f.read64_fixed, w.read64_fixed);
        EXPECT_EQ(f.regs_by, w.regs_by);
        EXPECT_EQ(f.def, w.def);
        EXPECT_EQ(f.def32, w.def32);
        EXPECT_EQ(f.clobbers_caller_saved, w.clobbers);
    }
    for (int c = 0; c < 8; ++c) EXPECT_TRUE(seen_class[c]) << "no sample of class " << c;
}

// The src_reg-dependent displacements resolve as the kernel has them, and only for their src.
TEST(InsnFacts, SrcRegDecidesOnlyTheCallAndLdImm64Displacement) {
    EXPECT_EQ(disp_field(BPF_JMP | BPF_CALL, BPF_PSEUDO_CALL), DispField::Imm);
    EXPECT_EQ(disp_field(BPF_JMP | BPF_CALL, 0), DispField::None);
    EXPECT_EQ(disp_field(BPF_JMP | BPF_CALL, BPF_PSEUDO_KFUNC_CALL), DispField::None);
    EXPECT_EQ(disp_field(BPF_LD | BPF_IMM | BPF_DW, BPF_PSEUDO_FUNC), DispField::Imm);
    EXPECT_EQ(disp_field(BPF_LD | BPF_IMM | BPF_DW, BPF_PSEUDO_MAP_FD), DispField::None);
    EXPECT_EQ(disp_field(BPF_LD | BPF_IMM | BPF_DW, 0), DispField::None);
    for (unsigned code = 0; code < 256; ++code) {
        const bool by_src = code == (BPF_JMP | BPF_CALL) || code == (BPF_LD | BPF_IMM | BPF_DW);
        EXPECT_EQ(insn_facts(static_cast<uint8_t>(code)).disp == DispField::ImmIfSrc, by_src) << "code " << code;
        EXPECT_EQ(insn_facts(static_cast<uint8_t>(code)).target == Target::CalleeIfSrc, code == (BPF_JMP | BPF_CALL))
            << "code " << code;
    }
}

// Where control goes, by fall and target, is what the CFG's own walk (insn_successors(), which
// reads no facts) finds, for every code byte and displacements inside and outside the program.
TEST(InsnFacts, FallAndTargetAsTheCfgSuccessors) {
    constexpr uint32_t kPc = 4;
    Program p = make_program(std::vector<Insn>(12, mov64_imm(0, 0)));
    for (unsigned code = 0; code < 256; ++code)
        for (const uint8_t src : {0, 1, 3})
            for (const int32_t rel : {-5, -1, 0, 2, 6, 9}) {
                const Insn i = make(static_cast<uint8_t>(code), 2, src, static_cast<int16_t>(rel), rel);
                p.insns[kPc] = i;
                const InsnFacts& f = insn_facts(i.code);
                std::vector<uint32_t> want;  // as insn_successors() orders them: the jump, then the fall-through
                const auto add = [&](int64_t t) {
                    if (t >= 0 && t < static_cast<int64_t>(p.len())) want.push_back(static_cast<uint32_t>(t));
                };
                bool tables = false;
                switch (f.target) {
                    case Target::None: case Target::CalleeIfSrc: break;  // a call comes back to pc + 1
                    case Target::Off: add(int64_t{kPc} + 1 + i.off); break;
                    case Target::Imm: add(int64_t{kPc} + 1 + i.imm); break;
                    case Target::Tables: tables = true; break;
                }
                if (f.fall) add(int64_t{kPc} + f.fall);
                const InsnSuccessors s = insn_successors(p, kPc);
                SCOPED_TRACE("code " + std::to_string(code) + " src " + std::to_string(src) + " rel " + std::to_string(rel));
                EXPECT_EQ(s.through_tables, tables);
                EXPECT_EQ(std::vector<uint32_t>(s.pcs.begin(), s.pcs.begin() + s.count), want);
            }
}

// ---- the legal encodings ---------------------------------------------------------------------------

// The row's src_reg when the row fixes it (calls, ld_imm64 kinds), else 0.
uint8_t row_src(const OpcodeRow& r) { return r.src.rule == Rule::OneOf ? static_cast<uint8_t>(r.src.values[0]) : 0; }

TEST(InsnFacts, AgreeWithEveryOpcodeTableRow) {
    for (const OpcodeRow& r : opcode_table()) {
        const InsnFacts& f = insn_facts(r.code);
        SCOPED_TRACE(r.mnemonic);
        const DispField disp = disp_field(r.code, row_src(r));
        // The fields opcode_table marks as jump targets are the ones the facts call relative.
        if (r.off.rule == Rule::Target) {
            EXPECT_EQ(disp, DispField::Off);
        }
        if (r.imm.rule == Rule::Target) {
            EXPECT_EQ(disp, DispField::Imm);
        }
        // Any other relative field is an `off` the encoding reserves (gotox, the tail call).
        if (r.off.rule != Rule::Target && r.imm.rule != Rule::Target && disp != DispField::None) {
            EXPECT_EQ(disp, DispField::Off);
            EXPECT_EQ(r.off.rule, Rule::Zero);
        }
        // A register the row writes is the dst the facts define (load-acquire and fetching
        // atomics write through imm's operation; LD_ABS/IND write R0 with dst reserved).
        if (r.dst.rule == Rule::RegWrite && r.group != Group::Atomic) {
            EXPECT_EQ(f.def, Def::Dst);
        }
        EXPECT_EQ(f.slots, r.group == Group::LdImm64 ? 2 : 1);
        switch (r.group) {
            case Group::Alu:
                EXPECT_TRUE(f.cls == BPF_ALU || f.cls == BPF_ALU64);
                EXPECT_EQ(f.def, Def::Dst);
                break;
            case Group::Jump:
                EXPECT_NE(f.target, Target::None);
                EXPECT_EQ(f.compares, r.code != (BPF_JMP | BPF_JCOND) && f.op != BPF_JA);
                break;
            case Group::Call:
                EXPECT_TRUE(f.clobbers_caller_saved);
                EXPECT_EQ(f.fall, 1);
                EXPECT_EQ(f.def, Def::None);
                break;
            case Group::Exit:
                EXPECT_EQ(f.fall, 0);
                EXPECT_EQ(f.target, Target::None);
                break;
            case Group::Load:
                EXPECT_EQ(f.cls, BPF_LDX);
                EXPECT_EQ(f.def, Def::Dst);
                break;
            case Group::Store:
            case Group::Nospec:
                EXPECT_TRUE(f.cls == BPF_ST || f.cls == BPF_STX);
                EXPECT_EQ(f.def, Def::None);
                break;
            case Group::Atomic:
                EXPECT_EQ(f.def, Def::ByImm);
                EXPECT_EQ(f.def32, Def32::ByImm);
                break;
            case Group::LdImm64:
                EXPECT_EQ(f.fall, 2);
                break;
            case Group::LdPacket:
                EXPECT_EQ(f.def32, Def32::Yes);
                EXPECT_EQ(f.read64_fixed, kR6);
                break;
            case Group::TailCall:
                EXPECT_EQ(f.fall, 1);
                EXPECT_EQ(f.target, Target::None);
                break;
        }
        // Memory classes: the width the code's size bits name.
        if (f.cls != BPF_ALU && f.cls != BPF_ALU64 && f.cls != BPF_JMP && f.cls != BPF_JMP32) {
            const uint8_t size = r.code & 0x18;
            EXPECT_EQ(f.bytes, size == BPF_B ? 1 : size == BPF_H ? 2 : size == BPF_W ? 4 : 8);
        }
    }
}

}  // namespace
}  // namespace patchfuzz::isa
