// Round trips between the kernel-syntax disassembler and the assembler, over every legal encoding
// of the opcode table, plus hand-written kernel texts and located assembler errors.
#include "bpf/asm/assemble.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdio>

#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/opcode_table.hpp"

namespace patchfuzz::assembly {
namespace {

using namespace patchfuzz::isa;

std::string show(const std::vector<Insn>& v) {
    std::string s;
    char b[80];
    for (const auto& i : v) {
        std::snprintf(b, sizeof b, "{code=0x%02x dst=%u src=%u off=%d imm=%d} ", i.code, unsigned(i.dst_reg),
                      unsigned(i.src_reg), int(i.off), int(i.imm));
        s += b;
    }
    return s;
}

bool same_insns(const std::vector<Insn>& a, const std::vector<Insn>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
    return true;
}

// RapidCheck generator of one legal encoding: a table row, then a legal value for every field
// (boundary values weighted in by the generators' own size-based distribution).
rc::Gen<std::vector<Insn>> legal_encoding() {
    return rc::gen::mapcat(rc::gen::inRange<size_t>(0, opcode_table().size()), [](size_t idx) {
        const OpcodeRow& row = opcode_table()[idx];
        auto field = [](const FieldRule& r, int64_t lo, int64_t hi) -> rc::Gen<int64_t> {
            switch (r.rule) {
                case Rule::Zero: return rc::gen::just<int64_t>(0);
                case Rule::Any:
                case Rule::Target:
                    return rc::gen::oneOf(rc::gen::elementOf(std::vector<int64_t>{lo, hi, 0, -1, 1}),
                                          rc::gen::inRange<int64_t>(lo, hi + 1), rc::gen::inRange<int64_t>(-40, 40));
                case Rule::Reg: return rc::gen::inRange<int64_t>(0, 12);
                case Rule::RegWrite: return rc::gen::elementOf(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11});
                case Rule::OneOf: {
                    std::vector<int64_t> v(r.values.begin(), r.values.begin() + r.count);
                    return rc::gen::elementOf(v);
                }
            }
            return rc::gen::just<int64_t>(0);
        };
        return rc::gen::apply(
            [&row](int64_t d, int64_t s, int64_t o, int64_t i, int64_t i2) {
                Insn in = make(row.code, uint8_t(d), uint8_t(row.dst_eq_src ? d : s), int16_t(o), int32_t(i));
                std::vector<Insn> v{in};
                if (row.group == Group::LdImm64) v.push_back(ldimm64_hi(int32_t(i2)));
                return v;
            },
            field(row.dst, 0, 15), field(row.src, 0, 15), field(row.off, INT16_MIN, INT16_MAX),
            field(row.imm, INT32_MIN, INT32_MAX), field(row.imm2, INT32_MIN, INT32_MAX));
    });
}

RC_GTEST_PROP(AsmRoundTrip, AssembleDisassembleIsIdentityOnLegalEncodings, ()) {
    const auto insns = *legal_encoding();
    const OpcodeRow* row = match_row(insns[0], true);
    RC_ASSERT(row != nullptr);
    RC_CLASSIFY(row->internal, "internal");
    const std::string text = disassemble(insns);
    auto back = assemble(text);
    if (!back.ok()) RC_FAIL(text + " -> " + back.error().to_string());
    if (!same_insns(*back, insns)) RC_FAIL(text + " -> " + show(*back) + " expected " + show(insns));
}

RC_GTEST_PROP(AsmRoundTrip, DisassembleAssembleIsIdentityOnCanonicalText, ()) {
    // Canonical text = what disassemble prints; re-assembling and printing must give it back.
    const auto a = *legal_encoding();
    const auto b = *legal_encoding();
    std::vector<Insn> prog = a;
    prog.insert(prog.end(), b.begin(), b.end());
    const std::string text = disassemble(prog, DisasmOptions{.numbered = true, .opcodes = true});
    auto back = assemble(text);
    if (!back.ok()) RC_FAIL(text + " -> " + back.error().to_string());
    RC_ASSERT(disassemble(*back, DisasmOptions{.numbered = true, .opcodes = true}) == text);
}

// Deterministic companion: every row at each boundary value of its free fields.
TEST(AsmRoundTrip, EveryRowAtBoundaries) {
    for (const OpcodeRow& row : opcode_table()) {
        for (int corner = 0; corner < 3; ++corner) {
            auto pick = [&](const FieldRule& r, int64_t lo, int64_t hi) -> int64_t {
                switch (r.rule) {
                    case Rule::Zero: return 0;
                    case Rule::Any:
                    case Rule::Target: return corner == 0 ? lo : corner == 1 ? hi : 0;
                    case Rule::Reg: return corner == 0 ? 0 : corner == 1 ? 10 : 11;
                    case Rule::RegWrite: return corner == 0 ? 0 : corner == 1 ? 9 : 11;
                    case Rule::OneOf: return r.values[size_t(corner) % r.count];
                }
                return 0;
            };
            Insn in = make(row.code, uint8_t(pick(row.dst, 0, 0)), uint8_t(pick(row.src, 0, 0)),
                           int16_t(pick(row.off, INT16_MIN, INT16_MAX)), int32_t(pick(row.imm, INT32_MIN, INT32_MAX)));
            if (row.dst_eq_src) in.src_reg = in.dst_reg;
            std::vector<Insn> v{in};
            if (row.group == Group::LdImm64) v.push_back(ldimm64_hi(int32_t(pick(row.imm2, INT32_MIN, INT32_MAX))));
            ASSERT_EQ(match_row(in, true), &row) << row.mnemonic << " " << show(v);
            const std::string text = disassemble(v);
            auto back = assemble(text);
            ASSERT_TRUE(back.ok()) << row.mnemonic << ": " << text << " -> " << back.error().to_string();
            EXPECT_TRUE(same_insns(*back, v)) << row.mnemonic << ": " << text << " -> " << show(*back);
        }
    }
}

// Many random legal encodings of every row (seeded; boundary values weighted), both directions.
TEST(AsmRoundTrip, RandomEncodingsOfEveryRow) {
    const uint64_t seed = 20261130;
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    Rng rng(seed);
    size_t n = 0;
    for (int round = 0; round < 200; ++round) {
        for (const OpcodeRow& row : opcode_table()) {
            const auto v = random_encoding(row, rng, rng.chance(1, 3));
            const std::string text = disassemble(v);
            auto back = assemble(text);
            ASSERT_TRUE(back.ok()) << row.mnemonic << ": " << text << " -> " << back.error().to_string();
            ASSERT_TRUE(same_insns(*back, v)) << row.mnemonic << ": " << text << " -> " << show(*back);
            ASSERT_EQ(disassemble(*back), text);
            ++n;
        }
    }
    std::printf("%zu encodings round-tripped\n", n);
}

// Kernel texts (print_bpf_insn formats) read into the expected encodings, independently built.
TEST(Assemble, KernelSyntaxRows) {
    struct Row {
        const char* text;
        std::vector<Insn> want;
    };
    const Row rows[] = {
        {"r0 = *(u32 *)(r1 +0)", {ldx(BPF_W, 0, 1, 0)}},
        {"if w1 s> 0x5 goto pc+3", {jmp32_imm(BPF_JSGT, 1, 5, 3)}},
        {"if r1 != r2 goto pc-1", {jmp_reg(BPF_JNE, 1, 2, -1)}},
        {"call pc+7", {call_pseudo(7)}},
        {"gotol pc+40000", {gotol(40000)}},
        {"goto pc-32768", {ja(-32768)}},
        {"r1 = map[id:3]", {ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 3), ldimm64_hi(0)}},
        {"r2 = map[id:1][0]+16", {ldimm64_lo(2, BPF_PSEUDO_MAP_VALUE, 1), ldimm64_hi(16)}},
        {"w0 = -w0", {make(BPF_ALU | BPF_NEG, 0, 0, 0, 0)}},
        {"r3 = -r3", {make(BPF_ALU64 | BPF_NEG, 3, 0, 0, 0)}},
        {"lock *(u64 *)(r1 +8) += r2", {make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 8, BPF_ADD)}},
        {"r0 = atomic64_fetch_add((u64 *)(r1 +0), r0)", {make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 0, 0, BPF_ADD | BPF_FETCH)}},
        {"r0 = atomic_cmpxchg((u32 *)(r2 -4), r0, r3)", {make(BPF_STX | BPF_ATOMIC | BPF_W, 2, 3, -4, BPF_CMPXCHG)}},
        {"r4 = atomic64_xchg((u64 *)(r10 -8), r4)", {make(BPF_STX | BPF_ATOMIC | BPF_DW, 10, 4, -8, BPF_XCHG)}},
        {"r1 = load_acquire((u8 *)(r2 +1))", {make(BPF_STX | BPF_ATOMIC | BPF_B, 1, 2, 1, BPF_LOAD_ACQ)}},
        {"store_release((u16 *)(r3 +2), r4)", {make(BPF_STX | BPF_ATOMIC | BPF_H, 3, 4, 2, BPF_STORE_REL)}},
        {"r0 = 1", {mov64_imm(0, 1)}},
        {"w0 = -5", {mov32_imm(0, -5)}},
        {"r1 = 0x100000000", {ldimm64_lo(1, 0, 0), ldimm64_hi(1)}},
        {"r1 = 5 ll", {ldimm64_lo(1, 0, 5), ldimm64_hi(0)}},
        {"r1 = (s8)r2", {make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 8, 0)}},
        {"w1 = (s16)w2", {make(BPF_ALU | BPF_MOV | BPF_X, 1, 2, 16, 0)}},
        {"r1 s/= r2", {make(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 1, 0)}},
        {"w1 s%= 3", {make(BPF_ALU | BPF_MOD | BPF_K, 1, 0, 1, 3)}},
        {"r1 s>>= 3", {alu64_imm(BPF_ARSH, 1, 3)}},
        {"r1 = be16 r1", {make(BPF_ALU | BPF_END | BPF_TO_BE, 1, 0, 0, 16)}},
        {"r1 = le64 r1", {make(BPF_ALU | BPF_END | BPF_TO_LE, 1, 0, 0, 64)}},
        {"r1 = bswap32 r1", {make(BPF_ALU64 | BPF_END, 1, 0, 0, 32)}},
        {"call bpf_map_lookup_elem#1", {call_helper(1)}},
        {"call bpf_tail_call#12", {call_helper(12)}},
        {"exit", {exit_insn()}},
        {"*(u64 *)(r10 -8) = r1", {stx(BPF_DW, 10, 1, -8)}},
        {"*(u8 *)(r1 +3) = 7", {st(BPF_B, 1, 3, 7)}},
        {"r0 = *(s16 *)(r1 +2)", {make(BPF_LDX | BPF_MEMSX | BPF_H, 0, 1, 2, 0)}},
        {"r0 = *(u16 *)skb[12]", {make(BPF_LD | BPF_ABS | BPF_H, 0, 0, 0, 12)}},
        {"r0 = *(u8 *)skb[r3 + 4]", {make(BPF_LD | BPF_IND | BPF_B, 0, 3, 0, 4)}},
        {"may_goto pc+2", {may_goto(2)}},
        {"gotox r3", {make(BPF_JMP | BPF_JA | BPF_X, 3, 0, 0, 0)}},
        {"nospec", {nospec()}},
        {"r1 = addr_space_cast(r2, 0, 1)", {make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 1, 1)}},
        {"r1 = &(void __percpu *)(r2)", {make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, -1, 0)}},
        // bpftool / verifier-log prefixes
        {"   4: (b7) r0 = 0", {mov64_imm(0, 0)}},
        {"12: (85) call pc+2", {call_pseudo(2)}},
    };
    for (const auto& r : rows) {
        auto got = assemble(r.text);
        ASSERT_TRUE(got.ok()) << r.text << ": " << got.error().to_string();
        EXPECT_TRUE(same_insns(*got, r.want)) << r.text << " -> " << show(*got) << " want " << show(r.want);
    }
}

TEST(Assemble, LabelsAndComments) {
    const char* text =
        "; count down\n"
        "    r1 = 3          # init\n"
        "loop:\n"
        "    r1 += -1        // dec\n"
        "    if r1 > 0 goto loop\n"
        "    call sub\n"
        "    r2 = subprog[sub]\n"
        "    goto end\n"
        "end:\n"
        "    exit\n"
        "sub:\n"
        "    r0 = 0\n"
        "    exit\n";
    auto got = assemble(text);
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    const std::vector<Insn> want = {
        mov64_imm(1, 3), alu64_imm(BPF_ADD, 1, -1), jmp_imm(BPF_JGT, 1, 0, -2), call_pseudo(4),
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 3), ldimm64_hi(0), ja(0), exit_insn(), mov64_imm(0, 0), exit_insn(),
    };
    EXPECT_TRUE(same_insns(*got, want)) << show(*got);
}

TEST(Assemble, LocatedErrors) {
    struct Row {
        const char* text;
        const char* error;
    };
    const Row rows[] = {
        {"r0 = 0\nr1 = 1\nr1 += 1\nr1 = 2\nr1 = 3\nr1 = 4\n        ad64 r1, 2\n", "prog.s:7:9: unknown mnemonic 'ad64'"},
        {"r0 = 0\nr1 = 1\nr1 = r0 + r12\n", "prog.s:3:9: unexpected trailing text '+ r12'"},
        {"r0 = 0\nr1 = 1\nr1 += r2\nr3 = r12\n", "prog.s:4:6: register r12 out of range"},
        {"r0 = 0\n\n\ngoto lop\nlop2:\nexit\n", "prog.s:4:6: undefined label 'lop'"},
        {"r0 = 0\n\n\n\nr1 += 4294967296\n", "prog.s:5:7: immediate 4294967296 does not fit in 32 bits"},
        {"r0 = *(u32 *)(r1 +40000)\n", "prog.s:1:18: offset +40000 does not fit in 16 bits"},
        {"goto pc+40000\n", "prog.s:1:8: jump offset +40000 does not fit in 16 bits"},
        {"w1 += r2\n", "prog.s:1:7: expected a 32-bit register wN"},
        {"r1 = 0x10000000000000000\n", "prog.s:1:6: immediate 0x10000000000000000 does not fit in 64 bits"},
        {"call bpf_map_lookup_elem#2\n", "prog.s:1:26: helper 'bpf_map_lookup_elem' is #1, not #2"},
        {"call bpf_nonsense#2\n", "prog.s:1:6: unknown helper or kfunc 'bpf_nonsense'"},
        {"(bf) r0 = 1\n", "prog.s:1:1: opcode prefix (bf) does not match the insn's code 0xb7"},
        {"x:\nx:\n", "prog.s:2:1: label 'x' defined twice"},
        {"if r1 =< 3 goto pc+1\n", "prog.s:1:7: expected a comparison operator, found '=<'"},
        {"r1 = *(u24 *)(r2 +0)\n", "prog.s:1:8: expected a size u8/u16/u32/u64 (or s8/s16/s32 for sign-extending loads)"},
        {"exit 1\n", "prog.s:1:6: unexpected trailing text '1'"},
    };
    for (const auto& r : rows) {
        auto got = assemble(r.text, "prog.s");
        ASSERT_FALSE(got.ok()) << r.text;
        EXPECT_EQ(got.error().to_string(), r.error) << r.text;
    }
}

// Control bytes in the input are quoted as \xHH in messages (a raw NUL used to end up in the
// message and cut the terminal line short; found by the malformed-input catalogue).
TEST(Assemble, ControlBytesInMessagesAreEscaped) {
    const std::string nul("r0 = 0\nr1\0 = 1\n", 15);
    auto a = assemble(nul, "prog.s");
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().to_string(), "prog.s:2:3: expected an assignment operator, found '\\x00'");
    auto b = assemble("exit \x1b[2J\n", "prog.s");
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().to_string(), "prog.s:1:6: unexpected trailing text '\\x1b[2J'");
    auto c = assemble("r0 = 0 \xff\n", "prog.s");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().to_string(), "prog.s:1:8: unexpected trailing text '\\xff'");
}

// Disassembler prints the kernel's own text for hand-built encodings.
TEST(Disassemble, KernelText) {
    struct Row {
        std::vector<Insn> insns;
        const char* text;
    };
    const Row rows[] = {
        {{ldx(BPF_W, 0, 1, 0)}, "r0 = *(u32 *)(r1 +0)"},
        {{jmp32_imm(BPF_JSGT, 1, 5, 3)}, "if w1 s> 0x5 goto pc+3"},
        {{jmp_imm(BPF_JEQ, 1, -1, -2)}, "if r1 == 0xffffffff goto pc-2"},
        {{call_pseudo(7)}, "call pc+7"},
        {{gotol(40000)}, "gotol pc+40000"},
        {{ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 3), ldimm64_hi(0)}, "r1 = map[id:3]"},
        {{make(BPF_ALU | BPF_NEG, 0, 0, 0, 0)}, "w0 = -w0"},
        {{make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 8, BPF_ADD)}, "lock *(u64 *)(r1 +8) += r2"},
        {{make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 0, 0, BPF_ADD | BPF_FETCH)}, "r0 = atomic64_fetch_add((u64 *)(r1 +0), r0)"},
        {{mov64_imm(2, -7)}, "r2 = -7"},
        {{ldimm64_lo(3, 0, -1), ldimm64_hi(0)}, "r3 = 0xffffffff"},
        {{call_helper(1)}, "call bpf_map_lookup_elem#1"},
        {{call_helper(100000)}, "call unknown#100000"},
        {{zext_marker(4)}, "zext w4"},
        {{make(0x8e, 1, 0, 0, 0)}, ".insn code=0x8e dst=1 src=0 off=0 imm=0"},
        {{ldimm64_lo(1, 0, 5)}, ".insn code=0x18 dst=1 src=0 off=0 imm=5"},
    };
    for (const auto& r : rows) EXPECT_EQ(disasm_insn(r.insns, 0), r.text);
    const std::vector<Insn> prog = {mov64_imm(0, 0), ldimm64_lo(1, 0, 1), ldimm64_hi(0), exit_insn()};
    EXPECT_EQ(disassemble(prog, DisasmOptions{.numbered = true, .opcodes = true}),
              "   0: (b7) r0 = 0\n   1: (18) r1 = 0x1\n   3: (95) exit\n");
}

// Arbitrary bytes (legal or not) survive disassemble -> assemble exactly (.insn fallback).
RC_GTEST_PROP(AsmRoundTrip, ArbitraryBytesRoundTrip, (uint8_t code, uint8_t regs, int16_t off, int32_t imm)) {
    std::vector<Insn> v{make(code, regs & 0xf, regs >> 4, off, imm), exit_insn()};
    auto back = assemble(disassemble(v));
    RC_ASSERT(back.ok());
    RC_ASSERT(same_insns(*back, v));
}

}  // namespace
}  // namespace patchfuzz::assembly
