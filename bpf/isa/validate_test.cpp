// Validator tests. The 256-opcode sweep compares validate_encoding() against an independent
// reference written here class by class from the kernel's rules (verifier.c check_alu_op,
// check_mem_insn/check_atomic, do_check's reserved-field checks, filter.h internal encodings), so
// a wrong row in the opcode table or a wrong message shows up as a mismatch with its exact text.
#include "bpf/isa/validate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bpf/isa/opcode_table.hpp"

namespace patchfuzz::isa {
namespace {

// ---------------------------------------------------------------------------------------------
// Independent reference for one insn's encoding.
// ---------------------------------------------------------------------------------------------
using Msg = std::optional<std::string>;  // nullopt = legal

std::string set_msg(const char* name, int64_t v, std::set<int64_t> allowed) {
    if (allowed == std::set<int64_t>{0}) return std::string("reserved field ") + name + " is " + std::to_string(v) + ", must be 0";
    std::string s = std::string(name) + " is " + std::to_string(v) + ", must be ";
    if (allowed.size() == 1) return s + std::to_string(*allowed.begin());
    s += "one of ";
    bool first = true;
    for (auto a : allowed) {
        s += (first ? "" : ", ") + std::to_string(a);
        first = false;
    }
    return s;
}

struct Checker {
    const Insn& in;
    bool ai;
    Msg err;

    bool ok() const { return !err; }
    void set(int64_t v, const char* name, std::set<int64_t> allowed) {
        if (err || allowed.count(v)) return;
        err = set_msg(name, v, allowed);
    }
    void zero(int64_t v, const char* name) { set(v, name, {0}); }
    void reg(int64_t v, const char* name, bool write) {
        if (err) return;
        if (write && v == 10) err = "r10 is read-only";
        else if (v == 11 && !ai) err = std::string(name) + " r11 (BPF_REG_AX) only allowed in kernel-internal code";
        else if (v > 11) err = std::string(name) + " r" + std::to_string(v) + " out of range (r0..r10)";
    }
    void dst_w() { reg(in.dst_reg, "dst_reg", true); }
    void dst_r() { reg(in.dst_reg, "dst_reg", false); }
    void src_r() { reg(in.src_reg, "src_reg", false); }
    void src_w() { reg(in.src_reg, "src_reg", true); }
    void dst_z() { zero(in.dst_reg, "dst_reg"); }
    void src_z() { zero(in.src_reg, "src_reg"); }
    void off_z() { zero(in.off, "off"); }
    void imm_z() { zero(in.imm, "imm"); }
};

const char* size_name(uint8_t code) {
    switch (code & 0x18) {
        case BPF_B: return "b";
        case BPF_H: return "h";
        case BPF_W: return "w";
        default: return "dw";
    }
}

struct RefResult {
    bool unknown = false;
    Msg err;
    std::string internal_name;  // non-empty: the encoding (as checked) is kernel-internal
};

// The rules, with internal encodings accepted (ai decides only about r11 and internal choices).
RefResult check(const Insn& in, bool ai) {
    RefResult r;
    Checker c{in, ai, std::nullopt};
    const uint8_t code = in.code, cls = code & 7, op = code & 0xf0, mode = code & 0xe0, sz = code & 0x18;
    const bool x = code & BPF_X;
    const int32_t imm = in.imm;
    switch (cls) {
        case BPF_ALU:
        case BPF_ALU64: {
            const bool is64 = cls == BPF_ALU64;
            if (op == 0xe0 || op == 0xf0 || (op == BPF_NEG && x) || (op == BPF_END && is64 && x)) {
                r.unknown = true;
                return r;
            }
            if (op == BPF_END) {
                c.set(imm, "imm", {16, 32, 64});
                c.dst_w(), c.src_z(), c.off_z();
            } else if (op == BPF_NEG) {
                c.dst_w(), c.src_z(), c.off_z(), c.imm_z();
            } else if (op == BPF_MOV && x) {
                if (is64) {
                    std::set<int64_t> offs{0, 1, 8, 16, 32};
                    if (ai) offs.insert(-1);
                    c.set(in.off, "off", offs);
                    if (in.off == 1) c.set(imm, "imm", {1, 65536});
                    else c.imm_z();
                    c.dst_w(), c.src_r();
                    if (in.off == -1) r.internal_name = "mov64_percpu";
                } else {
                    c.set(in.off, "off", {0, 8, 16});
                    if (in.off == 0 && ai) c.set(imm, "imm", {0, 1});
                    else c.imm_z();
                    c.dst_w(), c.src_r();
                    if (c.ok() && in.off == 0 && imm == 1) {
                        if (in.dst_reg != in.src_reg)
                            c.err = "zext marker needs dst_reg == src_reg, got r" + std::to_string(in.dst_reg) + " and r" +
                                    std::to_string(in.src_reg);
                        r.internal_name = "zext";
                    }
                }
            } else if (op == BPF_DIV || op == BPF_MOD) {
                c.set(in.off, "off", {0, 1});
                c.dst_w();
                if (x) c.src_r(), c.imm_z();
                else c.src_z();
            } else {
                c.dst_w();
                if (x) c.src_r();
                else c.src_z();
                c.off_z();
                if (x) c.imm_z();
            }
            break;
        }
        case BPF_JMP:
        case BPF_JMP32: {
            const bool j32 = cls == BPF_JMP32;
            const bool cond = op != BPF_JA && op != BPF_CALL && op != BPF_EXIT && op != 0xe0 && op != 0xf0;
            if (cond) {
                c.dst_r();
                if (x) c.src_r(), c.imm_z();
                else c.src_z();
            } else if (op == BPF_JA && !j32 && !x) {
                c.dst_z(), c.src_z(), c.imm_z();
            } else if (op == BPF_JA && j32 && !x) {
                c.dst_z(), c.src_z(), c.off_z();
            } else if (op == BPF_JA && !j32 && x) {
                c.dst_r(), c.src_z(), c.off_z(), c.imm_z();
            } else if (op == BPF_CALL && !j32 && !x) {
                c.set(in.src_reg, "src_reg", {0, 1, 2});
                c.dst_z();
                if (in.src_reg != 2) c.off_z();
            } else if (op == BPF_EXIT && !j32 && !x) {
                c.dst_z(), c.src_z(), c.off_z(), c.imm_z();
            } else if (op == 0xe0 && !j32 && !x) {  // may_goto
                c.set(in.src_reg, "src_reg", {0});
                c.dst_z(), c.imm_z();
            } else if (op == 0xf0 && !j32 && !x) {  // internal tail call
                c.dst_z(), c.src_z(), c.off_z();
                r.internal_name = "tail_call";
            } else {
                r.unknown = true;
                return r;
            }
            break;
        }
        case BPF_LD: {
            if (code == (BPF_LD | BPF_IMM | BPF_DW)) {
                c.set(in.src_reg, "src_reg", {0, 1, 2, 3, 4, 5, 6});
                c.dst_w(), c.off_z();
            } else if ((mode == BPF_ABS || mode == BPF_IND) && sz != BPF_DW) {
                c.dst_z();
                if (mode == BPF_ABS) c.src_z();
                else c.src_r();
                c.off_z();
            } else {
                r.unknown = true;
                return r;
            }
            break;
        }
        case BPF_LDX: {
            const bool sx = mode == BPF_MEMSX || mode == kModeProbeMemSx;
            if (!(mode == BPF_MEM || mode == BPF_MEMSX || mode == kModeProbeMem || mode == kModeProbeMemSx ||
                  mode == kModeProbeMem32) ||
                (sx && sz == BPF_DW)) {
                r.unknown = true;
                return r;
            }
            c.dst_w(), c.src_r(), c.imm_z();
            if (mode == kModeProbeMem) r.internal_name = std::string("probe_mem_ldx") + size_name(code);
            if (mode == kModeProbeMemSx) r.internal_name = std::string("probe_mem_ldxs") + size_name(code);
            if (mode == kModeProbeMem32) r.internal_name = std::string("probe_mem32_ldx") + size_name(code);
            break;
        }
        case BPF_ST: {
            if (code == (BPF_ST | kModeNospec)) {
                c.dst_z(), c.src_z(), c.off_z(), c.imm_z();
                r.internal_name = "nospec";
            } else if (mode == BPF_MEM || mode == kModeProbeMem32) {
                c.dst_r(), c.src_z();
                if (mode == kModeProbeMem32) r.internal_name = std::string("probe_mem32_st") + size_name(code);
            } else {
                r.unknown = true;
                return r;
            }
            break;
        }
        case BPF_STX: {
            if (mode == BPF_MEM || mode == kModeProbeMem32) {
                c.dst_r(), c.src_r(), c.imm_z();
                if (mode == kModeProbeMem32) r.internal_name = std::string("probe_mem32_stx") + size_name(code);
                break;
            }
            const bool wide = sz == BPF_W || sz == BPF_DW;
            if (!(mode == BPF_ATOMIC || (mode == kModeProbeAtomic && wide))) {
                r.unknown = true;
                return r;
            }
            std::set<int64_t> ops;
            if (wide) ops = {0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1};
            if (mode == BPF_ATOMIC) ops.insert({0x100, 0x110});
            if (ops.empty()) {
                r.unknown = true;
                return r;
            }
            c.set(imm, "imm", ops);
            if (imm == 0x100) c.dst_w();
            else c.dst_r();
            if ((imm & BPF_FETCH) && imm != BPF_CMPXCHG) c.src_w();
            else c.src_r();
            if (mode == kModeProbeAtomic) {
                std::string suffix;
                switch (imm) {
                    case 0x00: suffix = "add"; break;
                    case 0x01: suffix = "fetch_add"; break;
                    case 0x40: suffix = "or"; break;
                    case 0x41: suffix = "fetch_or"; break;
                    case 0x50: suffix = "and"; break;
                    case 0x51: suffix = "fetch_and"; break;
                    case 0xa0: suffix = "xor"; break;
                    case 0xa1: suffix = "fetch_xor"; break;
                    case 0xe1: suffix = "xchg"; break;
                    case 0xf1: suffix = "cmpxchg"; break;
                    default: suffix = "add";  // not an op: the code's first row names it
                }
                r.internal_name = std::string("probe_atomic") + size_name(code) + "_" + suffix;
            }
            break;
        }
    }
    r.err = c.err;
    return r;
}

Msg reference(const Insn& in, bool ai) {
    RefResult full = check(in, true);
    if (full.unknown) {
        char b[32];
        std::snprintf(b, sizeof b, "unknown opcode 0x%02x", in.code);
        return std::string(b);
    }
    if (ai) return full.err;
    // Codes whose every encoding is internal.
    const uint8_t code = in.code, cls = code & 7, mode = code & 0xe0;
    const bool all_internal = code == (BPF_JMP | kOpTailCall) || code == (BPF_ST | kModeNospec) ||
                              (cls == BPF_LDX && (mode == kModeProbeMem || mode == kModeProbeMemSx || mode == kModeProbeMem32)) ||
                              ((cls == BPF_ST || cls == BPF_STX) && mode == kModeProbeMem32) ||
                              (cls == BPF_STX && mode == kModeProbeAtomic);
    // Legal only as an internal encoding (rows never overlap, so no user row matches it either).
    if (!full.err && !full.internal_name.empty()) return "kernel-internal insn '" + full.internal_name + "' not allowed";
    if (all_internal) {
        // Named by the code's first table row.
        std::string first;
        if (code == (BPF_JMP | kOpTailCall)) first = "tail_call";
        else if (code == (BPF_ST | kModeNospec)) first = "nospec";
        else if (cls == BPF_LDX && mode == kModeProbeMem) first = std::string("probe_mem_ldx") + size_name(code);
        else if (cls == BPF_LDX && mode == kModeProbeMemSx) first = std::string("probe_mem_ldxs") + size_name(code);
        else if (cls == BPF_LDX) first = std::string("probe_mem32_ldx") + size_name(code);
        else if (cls == BPF_ST) first = std::string("probe_mem32_st") + size_name(code);
        else if (mode == kModeProbeMem32) first = std::string("probe_mem32_stx") + size_name(code);
        else first = std::string("probe_atomic") + size_name(code) + "_add";
        return "kernel-internal insn '" + first + "' not allowed";
    }
    RefResult user = check(in, false);
    return user.err;
}

TEST(ValidateSweep, AllOpcodesTimesFieldClassesMatchReference) {
    // Field classes: zero, legal, the frame pointer, AX, out of range; pseudo sources; movsx / sdiv /
    // arena offsets and reserved non-zero; endian widths, atomic ops, acquire/release, cast imm.
    const int dsts[] = {0, 1, 10, 11, 12};
    const int srcs[] = {0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12};
    const int offs[] = {0, 1, -1, 8, 16, 32, 5};
    const int imms[] = {0, 1, 5, 16, 64, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1, 0x100, 0x110, 65536, -1};
    size_t cases = 0, illegal = 0;
    std::set<const OpcodeRow*> hit;
    for (int code = 0; code < 256; ++code)
        for (int d : dsts)
            for (int s : srcs)
                for (int o : offs) {
                    // pseudo sources 3, 5, 6 only mean something to ldimm64
                    if ((s == 3 || s == 5 || s == 6) && code != (BPF_LD | BPF_IMM | BPF_DW)) continue;
                    for (int i : imms)
                        for (bool ai : {true, false}) {
                            const Insn in = make(uint8_t(code), uint8_t(d), uint8_t(s), int16_t(o), i);
                            const Msg want = reference(in, ai);
                            const Status got = validate_encoding(in, 3, ai);
                            ++cases;
                            if (want) {
                                ++illegal;
                                ASSERT_FALSE(got.ok()) << "code " << code << " d" << d << " s" << s << " off " << o
                                                       << " imm " << i << " ai " << ai << ": expected '" << *want << "'";
                                ASSERT_EQ(got.error().to_string(), "pc 3: " + *want)
                                    << "code " << code << " d" << d << " s" << s << " off " << o << " imm " << i << " ai " << ai;
                            } else {
                                ASSERT_TRUE(got.ok()) << "code " << code << " d" << d << " s" << s << " off " << o
                                                      << " imm " << i << " ai " << ai << ": " << got.error().to_string();
                                hit.insert(match_row(in, ai));
                            }
                        }
                }
    // Every row of the table is legal for at least one swept combination (no dead rows).
    for (const OpcodeRow& r : opcode_table()) EXPECT_TRUE(hit.count(&r)) << "row never reached: " << r.mnemonic;
    std::printf("sweep: %zu cases, %zu illegal, %zu rows reached\n", cases, illegal, hit.size());
}

// ---------------------------------------------------------------------------------------------
// Program-level error kinds, exact texts.
// ---------------------------------------------------------------------------------------------
std::string err(std::vector<Insn> v, ValidateOptions o = {}) {
    auto s = validate_insns(v, o);
    return s.ok() ? "ok" : s.error().to_string();
}

TEST(ValidateInsns, ErrorKinds) {
    const Insn ld_lo = ldimm64_lo(1, 0, 7), ld_hi = ldimm64_hi(0);
    // jump into the second half of an ldimm64
    EXPECT_EQ(err({mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), jmp_imm(BPF_JEQ, 1, 0, 8),
                   mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0),
                   mov64_imm(0, 0), mov64_imm(0, 0), ld_lo, ld_hi, exit_insn()}),
              "pc 4: jump to pc 13 lands in the second half of ldimm64 at pc 12");
    EXPECT_EQ(err({ja(5), exit_insn()}), "pc 0: jump to pc 6 out of range (2 insns)");
    EXPECT_EQ(err({ja(-2), exit_insn()}), "pc 0: jump to pc -1 out of range (2 insns)");
    EXPECT_EQ(err({gotol(-2), exit_insn()}), "pc 0: jump to pc -1 out of range (2 insns)");
    EXPECT_EQ(err({call_pseudo(3), exit_insn()}), "pc 0: call to pc 4 out of range (2 insns)");
    EXPECT_EQ(err({ldimm64_lo(1, BPF_PSEUDO_FUNC, 0), ldimm64_hi(0), exit_insn()}),
              "pc 0: function reference to pc 1 lands in the second half of ldimm64 at pc 0");
    // reserved field / registers
    EXPECT_EQ(err({mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), make(BPF_ALU64 | BPF_ADD | BPF_K, 1, 2, 0, 1), exit_insn()}),
              "pc 3: reserved field src_reg is 2, must be 0");
    EXPECT_EQ(err({mov64_imm(10, 0), exit_insn()}), "pc 0: r10 is read-only");
    EXPECT_EQ(err({ldx(BPF_W, 10, 1, 0), exit_insn()}), "pc 0: r10 is read-only");
    EXPECT_EQ(err({make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 10, 0, BPF_ADD | BPF_FETCH), exit_insn()}), "pc 0: r10 is read-only");
    EXPECT_EQ(err({mov64_reg(1, 12), exit_insn()}), "pc 0: src_reg r12 out of range (r0..r10)");
    EXPECT_EQ(err({mov64_reg(11, 1), exit_insn()}), "ok");
    EXPECT_EQ(err({mov64_reg(11, 1), exit_insn()}, {.allow_internal = false}),
              "pc 0: dst_reg r11 (BPF_REG_AX) only allowed in kernel-internal code");
    EXPECT_EQ(err({nospec(), exit_insn()}, {.allow_internal = false}), "pc 0: kernel-internal insn 'nospec' not allowed");
    EXPECT_EQ(err({zext_marker(3), exit_insn()}, {.allow_internal = false}), "pc 0: kernel-internal insn 'zext' not allowed");
    EXPECT_EQ(err({make(0x8e, 0, 0, 0, 0), exit_insn()}), "pc 0: unknown opcode 0x8e");
    EXPECT_EQ(err({mov64_imm(0, 0), mov64_imm(0, 0), make(0x8e, 0, 0, 0, 0), exit_insn()}), "pc 2: unknown opcode 0x8e");
    EXPECT_EQ(err({make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 7, 0), exit_insn()}),
              "pc 0: off is 7, must be one of -1, 0, 1, 8, 16, 32");
    EXPECT_EQ(err({make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 7, 0), exit_insn()}, {.allow_internal = false}),
              "pc 0: off is 7, must be one of 0, 1, 8, 16, 32");
    EXPECT_EQ(err({make(BPF_ALU | BPF_END | BPF_TO_BE, 1, 0, 0, 8), exit_insn()}), "pc 0: imm is 8, must be one of 16, 32, 64");
    EXPECT_EQ(err({make(BPF_JMP | BPF_CALL, 0, 5, 0, 1), exit_insn()}), "pc 0: src_reg is 5, must be one of 0, 1, 2");
    // ldimm64 shape
    EXPECT_EQ(err({mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0),
                   mov64_imm(0, 0), mov64_imm(0, 0), mov64_imm(0, 0), exit_insn(), ld_lo}),
              "pc 9: ldimm64 truncated");
    EXPECT_EQ(err({ld_lo, mov64_imm(0, 0), exit_insn()}),
              "pc 1: reserved field code is 0xb7, must be 0 (second slot of ldimm64 at pc 0)");
    EXPECT_EQ(err({ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 0), ldimm64_hi(4), exit_insn()}),
              "pc 1: reserved field imm is 4, must be 0 (second slot of ldimm64 at pc 0)");
    EXPECT_EQ(err({ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0), ldimm64_hi(4), exit_insn()}), "ok");
    // fall-through
    std::vector<Insn> ft(12, mov64_imm(0, 0));
    ft.push_back(mov64_imm(0, 1));
    EXPECT_EQ(err(ft), "pc 12: last insn falls through off the end");
    EXPECT_EQ(err(ft, {.require_exit_at_end = false}), "ok");
    EXPECT_EQ(err({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, -2)}), "pc 1: last insn falls through off the end");
    EXPECT_EQ(err({mov64_imm(0, 0), ja(-2)}), "ok");
    EXPECT_EQ(err({mov64_imm(0, 0), make(BPF_JMP | BPF_JA | BPF_X, 1, 0, 0, 0)}), "ok");  // gotox ends a block
    EXPECT_EQ(err({mov64_imm(0, 0), make(BPF_JMP | kOpTailCall, 0, 0, 0, 0)}), "pc 1: last insn falls through off the end");
    EXPECT_EQ(err({mov64_imm(0, 0), ldimm64_lo(0, 0, 0), ldimm64_hi(0)}), "pc 1: last insn falls through off the end");
    EXPECT_EQ(err({}), "empty program");
}

TEST(ValidateProgram, SideTables) {
    // 0: call pc+2 -> 3; 1: exit-ish; subprog 1 at 3.
    std::vector<Insn> insns = {mov64_imm(0, 0), call_pseudo(1), exit_insn(), mov64_imm(0, 1), exit_insn()};
    Program p = make_program(insns);
    ASSERT_EQ(p.subprogs.size(), 3u);
    EXPECT_TRUE(validate_program(p).ok()) << validate_program(p).error().to_string();

    auto e = [](const Program& q) {
        auto s = validate_program(q);
        return s.ok() ? std::string("ok") : s.error().to_string();
    };
    Program q = p;
    q.subprogs[1].start = 4;
    EXPECT_EQ(e(q), "pc 1: call to pc 3 which is not a subprog start");
    q = p;
    q.aux.pop_back();
    EXPECT_EQ(e(q), "aux: has 4 entries, program has 5 insns");
    q = p;
    q.subprogs.back().start = 4;
    EXPECT_EQ(e(q), "subprog 2: fake exit entry starts at pc 4, must be 5 (program length)");
    q = p;
    q.subprogs[0].start = 1;
    EXPECT_EQ(e(q), "subprog 0: starts at pc 1, must start at pc 0");
    q = p;
    q.subprogs[1].start = 0;
    EXPECT_EQ(e(q), "subprog 1: start pc 0 not after subprog 0 start pc 0");
    q = p;
    q.linfo = {{.insn_off = 0}, {.insn_off = 3}, {.insn_off = 3}};
    EXPECT_EQ(e(q), "linfo 2: insn_off 3 not after previous 3");
    q.linfo = {{.insn_off = 0}, {.insn_off = 9}};
    EXPECT_EQ(e(q), "linfo 1: insn_off 9 out of range (5 insns)");
    q = p;
    q.insn_arrays = {InsnArray{.map_index = 0, .entries = {{0, 2}, {1, kInsnDeleted}, {2, 5}}}};
    EXPECT_EQ(e(q), "insn_array 0 entry 2: xlated_off 5 out of range (5 insns)");
    q = p;
    q.pokes = {PokeDesc{.insn_idx = 7}};
    EXPECT_EQ(e(q), "poke 0: insn_idx 7 out of range (5 insns)");
    // A jump that leaves its subprog, and a subprog that falls into the next one.
    Program r = make_program({mov64_imm(0, 0), call_pseudo(1), ja(1), mov64_imm(0, 1), exit_insn()});
    EXPECT_EQ(e(r), "pc 2: jump to pc 4 leaves subprog 0 (into subprog 1)");
    Program f = make_program({call_pseudo(1), mov64_imm(0, 0), mov64_imm(0, 1), exit_insn()});
    EXPECT_EQ(e(f), "pc 1: last insn of subprog 0 falls through into subprog 1");
    // linfo on the second slot of an ldimm64
    Program l = make_program({ldimm64_lo(1, 0, 1), ldimm64_hi(0), exit_insn()});
    l.linfo = {{.insn_off = 0}, {.insn_off = 1}};
    EXPECT_EQ(e(l), "linfo 1: insn_off 1 is the second half of ldimm64 at pc 0");
}

}  // namespace
}  // namespace patchfuzz::isa
