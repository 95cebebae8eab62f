// Pass "iter_inline" and its emitters: exact shapes, and the V4 sequence evaluated on the concrete
// vectors of docs/iterator-isa-arch.md §1.7 (plus the bug-class triggers of §2.4 for V1 and V3) with a
// tiny local evaluator (the real interpreter is another module).
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/iter_inline.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

// ---- a tiny evaluator for straight-line sequences with forward jumps ----------------------------
struct Machine {
    uint64_t r[12] = {};
    uint8_t stack[64] = {};
    static constexpr uint64_t kFp = 0xffffc90000010040ULL;  // a kernel-stack-like address > 4 GiB
    bool movsx_as_mov = false;                               // 32-bit JIT decoding (bug class B3)

    uint8_t* at(uint64_t addr, int sz) {
        const uint64_t base = kFp - sizeof stack;
        EXPECT_GE(addr, base);
        EXPECT_LE(addr + static_cast<uint64_t>(sz), kFp);
        return &stack[addr - base];
    }
    static int bytes(uint8_t s) { return s == BPF_B ? 1 : s == BPF_H ? 2 : s == BPF_W ? 4 : 8; }
    uint64_t load(uint64_t a, int sz) {
        uint64_t v = 0;
        std::memcpy(&v, at(a, sz), static_cast<size_t>(sz));
        return v;
    }
    void store(uint64_t a, int sz, uint64_t v) { std::memcpy(at(a, sz), &v, static_cast<size_t>(sz)); }

    void run(const std::vector<Insn>& p) {
        for (size_t pc = 0; pc < p.size();) {
            const Insn& i = p[pc];
            const bool x = src_bit(i) == BPF_X;
            if (cls(i) == BPF_ALU || cls(i) == BPF_ALU64) {
                const bool w = cls(i) == BPF_ALU64;
                uint64_t s = x ? r[i.src_reg] : static_cast<uint64_t>(static_cast<int64_t>(i.imm));
                uint64_t& d = r[i.dst_reg];
                uint64_t v = 0;
                switch (op(i)) {
                    case BPF_MOV:
                        if (x && i.off == 32 && w && !movsx_as_mov)
                            v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(s)));
                        else
                            v = s;
                        break;
                    case BPF_ADD: v = d + s; break;
                    case BPF_SUB: v = d - s; break;
                    default: ADD_FAILURE() << "op " << show(i); return;
                }
                d = w ? v : static_cast<uint32_t>(v);
                ++pc;
                continue;
            }
            if (cls(i) == BPF_JMP || cls(i) == BPF_JMP32) {
                if (op(i) == BPF_JA) {
                    pc += 1 + static_cast<size_t>(static_cast<int64_t>(i.off));
                    continue;
                }
                const bool w = cls(i) == BPF_JMP;
                uint64_t a = r[i.dst_reg];
                uint64_t b = x ? r[i.src_reg] : static_cast<uint64_t>(static_cast<int64_t>(i.imm));
                if (!w) {
                    a = static_cast<uint32_t>(a);
                    b = static_cast<uint32_t>(b);
                }
                const int64_t sa = w ? static_cast<int64_t>(a) : static_cast<int32_t>(a);
                const int64_t sb = w ? static_cast<int64_t>(b) : static_cast<int32_t>(b);
                bool t = false;
                switch (op(i)) {
                    case BPF_JGT: t = a > b; break;
                    case BPF_JSGT: t = sa > sb; break;
                    case BPF_JSGE: t = sa >= sb; break;
                    default: ADD_FAILURE() << "jmp " << show(i); return;
                }
                pc += 1 + (t ? static_cast<size_t>(static_cast<int64_t>(i.off)) : 0);
                continue;
            }
            if (cls(i) == BPF_LDX) {
                r[i.dst_reg] = load(r[i.src_reg] + static_cast<uint64_t>(static_cast<int64_t>(i.off)), bytes(size(i)));
            } else if (cls(i) == BPF_STX) {
                store(r[i.dst_reg] + static_cast<uint64_t>(static_cast<int64_t>(i.off)), bytes(size(i)), r[i.src_reg]);
            } else if (cls(i) == BPF_ST) {
                store(r[i.dst_reg] + static_cast<uint64_t>(static_cast<int64_t>(i.off)), bytes(size(i)),
                      static_cast<uint64_t>(static_cast<int64_t>(i.imm)));
            } else {
                ADD_FAILURE() << "insn " << show(i);
                return;
            }
            ++pc;
        }
    }
};

struct Iter {
    Machine m;
    IterInline v;
    const uint64_t slot = Machine::kFp - 8;
    explicit Iter(IterInline vv, bool movsx_as_mov = false) : v(vv) {
        m.movsx_as_mov = movsx_as_mov;
        m.store(slot, 8, 0x0000000a00000005ULL);  // stale (cur, end) = (5, 10): exposes B7
        for (int k = 6; k <= 9; ++k) m.r[k] = 0x6060606060606060ULL + static_cast<uint64_t>(k);
    }
    int32_t create(int32_t start, int32_t end, uint64_t hi2 = 0, uint64_t hi3 = 0) {
        m.r[0] = 0xdeadbeefdeadbeefULL;
        m.r[1] = slot;
        m.r[2] = (hi2 << 32) | static_cast<uint32_t>(start);
        m.r[3] = (hi3 << 32) | static_cast<uint32_t>(end);
        m.run(emit_iter_num_new(v));
        return static_cast<int32_t>(m.r[0]);
    }
    std::optional<int32_t> next() {
        m.r[0] = 0x1234;
        m.r[1] = slot;
        m.r[2] = m.r[3] = m.r[4] = m.r[5] = 0xababababababababULL;
        m.run(emit_iter_num_next(v));
        if (m.r[0] == 0) return std::nullopt;
        EXPECT_EQ(m.r[0], slot);  // the full 64-bit address of cur (B9, B10)
        return static_cast<int32_t>(m.load(m.r[0], 4));
    }
    std::vector<int32_t> drain(size_t limit = 64) {
        std::vector<int32_t> out;
        while (out.size() < limit) {
            auto e = next();
            if (!e) break;
            out.push_back(*e);
        }
        return out;
    }
    void preserved() {
        for (int k = 6; k <= 9; ++k) EXPECT_EQ(m.r[k], 0x6060606060606060ULL + static_cast<uint64_t>(k));
        for (size_t k = 0; k + 8 < sizeof m.stack; ++k) EXPECT_EQ(m.stack[k], 0) << "stack byte " << k;
    }
};

std::vector<int32_t> seq(int64_t a, int64_t b) {
    std::vector<int32_t> v;
    for (int64_t x = a; x < b; ++x) v.push_back(static_cast<int32_t>(x));
    return v;
}

TEST(IterInline, V4ReferenceVectors) {
    struct Row {
        int32_t start, end, rc;
        std::vector<int32_t> elems;
    };
    const std::vector<Row> rows = {
        {0, 0, 0, {}},
        {INT_MIN, INT_MIN, 0, {}},
        {INT_MAX, INT_MAX, 0, {}},
        {-1, -1, 0, {}},
        {0, 10, 0, seq(0, 10)},
        {-10, 0, 0, seq(-10, 0)},
        {INT_MIN, INT_MIN + 2, 0, {INT_MIN, INT_MIN + 1}},
        {INT_MAX - 2, INT_MAX, 0, {INT_MAX - 2, INT_MAX - 1}},
        {-3, 3, 0, seq(-3, 3)},
        {1, 0, -EINVAL, {}},
        {100, 10, -EINVAL, {}},
        {-1, kMaxLoops, -E2BIG, {}},
        {INT_MIN, 0, -E2BIG, {}},
        {INT_MIN, INT_MAX, -E2BIG, {}},
    };
    for (const auto& row : rows) {
        for (uint64_t hi : {0ULL, 0xffffffffULL, 0x12345678ULL}) {  // upper halves never matter (B8)
            Iter it(IterInline::V4);
            EXPECT_EQ(it.create(row.start, row.end, hi, hi ^ 0xffffffffULL), row.rc) << row.start << ", " << row.end;
            if (row.rc != 0) {
                EXPECT_EQ(it.m.load(it.slot, 8), 0u) << "error paths zero the slot (B7)";
            }
            EXPECT_EQ(it.drain(), row.elems) << row.start << ", " << row.end;
            EXPECT_FALSE(it.next().has_value()) << "sticky NULL";
            it.preserved();
        }
    }
    // (100, 10): 10 further next() calls all NULL
    Iter it(IterInline::V4);
    EXPECT_EQ(it.create(100, 10), -EINVAL);
    for (int k = 0; k < 10; ++k) EXPECT_FALSE(it.next().has_value());
    // (0, 5) with 10 next() calls: 5 elements then NULL x5
    Iter it5(IterInline::V4);
    EXPECT_EQ(it5.create(0, 5), 0);
    for (int k = 0; k < 10; ++k) EXPECT_EQ(it5.next().has_value(), k < 5);
}

TEST(IterInline, V4DistanceLimitIsInclusive) {
    // (0, BPF_MAX_LOOPS) is accepted: check the first and last elements (the full 8388608-element
    // walk belongs to the interpreter's tests).
    Iter it(IterInline::V4);
    EXPECT_EQ(it.create(0, kMaxLoops), 0);
    EXPECT_EQ(it.next(), std::optional<int32_t>(0));
    it.m.store(it.slot, 4, static_cast<uint32_t>(kMaxLoops - 2));
    EXPECT_EQ(it.next(), std::optional<int32_t>(kMaxLoops - 1));
    EXPECT_FALSE(it.next().has_value());
    Iter off_by_one(IterInline::V4);
    EXPECT_EQ(off_by_one.create(-1, kMaxLoops - 1), 0);  // distance == BPF_MAX_LOOPS (B4 trigger)
}

TEST(IterInline, V3AcceptsHugeDistancesB2) {
    Iter it(IterInline::V3);
    EXPECT_EQ(it.create(INT_MIN, 0), 0);  // reference: -E2BIG
    EXPECT_EQ(it.next(), std::optional<int32_t>(INT_MIN));
    Iter ok(IterInline::V3);
    EXPECT_EQ(ok.create(0, 10), 0);
    EXPECT_EQ(ok.drain(), seq(0, 10));
}

TEST(IterInline, V1IsRightWithMovsxAndWrongWhenMovsxDecodesAsMovB3) {
    // MOVSX-aware JIT: matches the reference, also with garbage upper halves
    for (auto [s, e, rc] : std::vector<std::tuple<int32_t, int32_t, int32_t>>{{-1, 1, 0}, {-10, 0, 0}, {INT_MIN, 0, -E2BIG}, {1, 0, -EINVAL}}) {
        Iter it(IterInline::V1);
        EXPECT_EQ(it.create(s, e, 0xffffffffULL, 0x5ULL), rc);
    }
    // 32-bit JIT: MOVSX is a plain copy; zero upper halves -> opposite signs give -EINVAL
    for (auto [s, e] : std::vector<std::pair<int32_t, int32_t>>{{-1, 1}, {-10, 0}, {INT_MIN, 0}}) {
        Iter it(IterInline::V1, /*movsx_as_mov=*/true);
        EXPECT_EQ(it.create(s, e), -EINVAL) << s << ", " << e;
    }
    Iter it(IterInline::V4, /*movsx_as_mov=*/true);  // the correct sequence has no MOVSX
    EXPECT_EQ(it.create(-1, 1), 0);
}

TEST(IterInline, EmitterShapes) {
    // V4 is what Linux 7.3.4 emits: copied by hand from its xlated code of `bpf_for(i, 2, 7)`
    // (`patchfuzz kernel check corpus/kernel7/iter-num-2_7.case --kernel 7.3`, insns 5-18 and 22-30).
    const auto n4 = emit_iter_num_new(IterInline::V4);
    ASSERT_EQ(n4.size(), 14u);
    EXPECT_TRUE(same_insns(n4, {jmp32_reg(BPF_JSGT, 2, 3, 8), mov32_reg(0, 3), alu32_reg(BPF_SUB, 0, 2), jmp_imm(BPF_JGT, 0, kMaxLoops, 8),
                                alu32_imm(BPF_ADD, 2, -1), stx(BPF_W, 1, 2, 0), stx(BPF_W, 1, 3, 4), mov64_imm(0, 0), ja(5),
                                st(BPF_DW, 1, 0, 0), mov64_imm(0, -EINVAL), ja(2), st(BPF_DW, 1, 0, 0), mov64_imm(0, -E2BIG)}));
    const auto n3 = emit_iter_num_new(IterInline::V3);
    ASSERT_EQ(n3.size(), 14u);
    EXPECT_TRUE(same(n3[3], jmp32_imm(BPF_JSGT, 0, kMaxLoops, 8)));
    const auto n1 = emit_iter_num_new(IterInline::V1);
    ASSERT_EQ(n1.size(), 16u);
    EXPECT_TRUE(same_insns({n1[0], n1[1], n1[2], n1[5]}, {make(BPF_ALU64 | BPF_MOV | BPF_X, 2, 2, 32, 0), make(BPF_ALU64 | BPF_MOV | BPF_X, 3, 3, 32, 0),
                                                         jmp_reg(BPF_JSGT, 2, 3, 8), jmp_imm(BPF_JGT, 0, kMaxLoops, 8)}));
    EXPECT_TRUE(same_insns(emit_iter_num_next(IterInline::V4),
                           {ldx(BPF_W, 0, 1, 0), alu32_imm(BPF_ADD, 0, 1), ldx(BPF_W, 2, 1, 4), jmp32_reg(BPF_JSGE, 0, 2, 3), stx(BPF_W, 1, 0, 0),
                            mov64_reg(0, 1), ja(2), st(BPF_DW, 1, 0, 0), mov64_imm(0, 0)}));
    EXPECT_TRUE(same_insns(emit_iter_num_destroy(IterInline::V4), {ja(0)}));
    EXPECT_TRUE(emit_iter_num_new(IterInline::Off).empty());
    EXPECT_TRUE(emit_iter_num_next(IterInline::Off).empty());
    EXPECT_TRUE(emit_iter_num_destroy(IterInline::Off).empty());
    // no AX, no R4/R5, no R6-R9 written anywhere (contract of the header)
    for (auto v : {IterInline::V4, IterInline::V1, IterInline::V3})
        for (const auto& s : {emit_iter_num_new(v), emit_iter_num_next(v)})
            for (const auto& i : s) {
                if (is_jmp_class(i) || cls(i) == BPF_ST || cls(i) == BPF_STX) continue;
                EXPECT_TRUE(i.dst_reg == 0 || i.dst_reg == 2 || i.dst_reg == 3) << show(i);
            }
}

Program bpf_for_program() {
    const int32_t id_new = kfunc::by_kind(kfunc::Kind::IterNumNew)->btf_id;
    const int32_t id_next = kfunc::by_kind(kfunc::Kind::IterNumNext)->btf_id;
    const int32_t id_destroy = kfunc::by_kind(kfunc::Kind::IterNumDestroy)->btf_id;
    Program p = make_program({
        mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -8), mov32_imm(2, 0), mov32_imm(3, 10),  // 0-3
        call_kfunc(id_new),                                                              // 4
        mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -8),                                     // 5-6 loop
        call_kfunc(id_next),                                                             // 7
        jmp_imm(BPF_JEQ, 0, 0, 1),                                                       // 8 -> 10
        ja(-6),                                                                          // 9 -> 4?? -> 4
        mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -8), call_kfunc(id_destroy),             // 10-12
        exit_insn(),                                                                     // 13
    });
    p.insns[9] = ja(-5);  // -> 5, the loop head
    for (auto id : {id_new, id_next, id_destroy}) {
        auto info = kfunc::by_btf_id(id);
        p.kfuncs.push_back({.btf_id = id, .offset = 0, .kind = static_cast<uint32_t>(info->kind), .name = std::string(info->name)});
    }
    p.subprogs[0].stack_depth = 8;
    return p;
}

TEST(IterInlinePass, ReplacesTheThreeCallsAndFixesTheLoop) {
    Program p = bpf_for_program();
    auto r = run(p, opts_for(arch_x86_64(), {"iter_inline"}));
    ASSERT_TRUE(r.outcome.ok());
    // 14 + 13 (new) + 8 (next) + 0 (destroy) = 35
    ASSERT_EQ(p.len(), 35u);
    // loop head (orig 5) now at 5 + 13 = 18; the back jump (orig 9) at 9 + 21 = 30: off 18 - 31 = -13
    EXPECT_TRUE(same(p.insns[30], ja(-13)));
    // the NULL test (orig 8) at 29 jumps over the back jump to orig 10 -> 31: off +1 (unchanged)
    EXPECT_TRUE(same(p.insns[29], jmp_imm(BPF_JEQ, 0, 0, 1)));
    EXPECT_TRUE(same(p.insns[33], ja(0)));  // destroy placeholder
    EXPECT_TRUE(same_insns({p.insns[4], p.insns[20]}, {jmp32_reg(BPF_JSGT, 2, 3, 8), ldx(BPF_W, 0, 1, 0)}));
}

TEST(IterInlinePass, OffLeavesTheCalls) {
    Program p = bpf_for_program();
    const auto before = p.insns;
    auto o = opts_for(arch_x86_64(), {"iter_inline"});
    o.iter_inline = IterInline::Off;
    ASSERT_TRUE(run(p, o).outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, before));
}

// 6.12 keeps the three kfunc calls (measured under qemu, harness/kernel/README.md "Model profiles"): the inline is
// bpf-next only, whatever --iter-inline says.
TEST(IterInlinePass, OnlyBpfNextInlines) {
    for (auto k : {KernelProfile::K6_12, KernelProfile::K6_1}) {
        Program p = bpf_for_program();
        const auto before = p.insns;
        auto o = opts_for(arch_x86_64(), {"iter_inline"});
        o.kernel = k;
        ASSERT_TRUE(run(p, o).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, before));
    }
}

}  // namespace
}  // namespace patchfuzz::passes::testing
