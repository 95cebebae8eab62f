// Interpreter semantics: ISA edge cases (RFC 9669 §4), arch profiles, memory, faults as results,
// calls and frames. Helper, kfunc and map models are in interp_helpers_test.cpp, the reuse of
// Executables, results and set-ups in interp_executable_test.cpp. Expected values come from the
// ISA text and docs/iterator-isa-arch.md tables, not from the interpreter. No RapidCheck (runs on
// arm64 under qemu).
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "bpf/interp/cost_model.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/interp/loop_programs.hpp"
#include "bpf/interp/map_model.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/interp/same_result.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/interp/interp_test_util.hpp"

namespace patchfuzz::interp {
namespace {
using namespace isa;
using namespace interp_test;
using S = ExecResult::Status;

TEST(InterpAlu, DivisionAndModuloAsTheIsaDefines) {
    // x / 0 = 0, x % 0 = x (ALU64), ALU32 % 0 zeroes the upper half.
    EXPECT_EQ(r0_of({mov64_imm(0, 7), mov64_imm(1, 0), alu64_reg(BPF_DIV, 0, 1)}), 0u);
    EXPECT_EQ(r0_of(cat(ld64(0, 0x1234567800000009ULL), {mov64_imm(1, 0), alu64_reg(BPF_MOD, 0, 1)})), 0x1234567800000009ULL);
    EXPECT_EQ(r0_of(cat(ld64(0, 0x1234567800000009ULL), {mov64_imm(1, 0), alu32_reg(BPF_MOD, 0, 1)})), 9u);
    // ALU32: only the low half of the divisor counts (0x100000000 divides as 0, 0x100000004 as 4).
    EXPECT_EQ(r0_of(cat(ld64(1, 0x100000000ULL), {mov64_imm(0, 12), alu32_reg(BPF_DIV, 0, 1)})), 0u);
    EXPECT_EQ(r0_of(cat(ld64(1, 0x100000004ULL), {mov64_imm(0, 12), alu32_reg(BPF_DIV, 0, 1)})), 3u);
    // Unsigned ALU64 DIV K: imm sign-extended, then unsigned: 0xffff..ff / -10 = 1.
    EXPECT_EQ(r0_of({mov64_imm(0, -1), alu64_imm(BPF_DIV, 0, -10)}), 1u);
    // Signed overflow wraps: INT_MIN / -1 = INT_MIN, LLONG_MIN / -1 = LLONG_MIN, remainders 0.
    Insn sdiv32 = make(BPF_ALU | BPF_DIV | BPF_K, 0, 0, 1, -1);
    Insn smod32 = make(BPF_ALU | BPF_MOD | BPF_K, 0, 0, 1, -1);
    Insn sdiv64 = make(BPF_ALU64 | BPF_DIV | BPF_K, 0, 0, 1, -1);
    Insn smod64 = make(BPF_ALU64 | BPF_MOD | BPF_K, 0, 0, 1, -1);
    EXPECT_EQ(r0_of({mov32_imm(0, INT_MIN), sdiv32}), 0x80000000u);
    EXPECT_EQ(r0_of({mov32_imm(0, INT_MIN), smod32}), 0u);
    EXPECT_EQ(r0_of(cat(ld64(0, 0x8000000000000000ULL), {sdiv64})), 0x8000000000000000ULL);
    EXPECT_EQ(r0_of(cat(ld64(0, 0x8000000000000000ULL), {smod64})), 0u);
    // Signed remainder takes the dividend's sign: -13 s% 4 = -1, 13 s% -3 = 1.
    EXPECT_EQ(r0_of({mov64_imm(0, -13), make(BPF_ALU64 | BPF_MOD | BPF_K, 0, 0, 1, 4)}), static_cast<uint64_t>(-1));
    EXPECT_EQ(r0_of({mov64_imm(0, 13), make(BPF_ALU64 | BPF_MOD | BPF_K, 0, 0, 1, -3)}), 1u);
    // INT_MIN s/ 2 in ALU32 = 0xC0000000 (the abs_s32 fix).
    EXPECT_EQ(r0_of({mov32_imm(0, INT_MIN), make(BPF_ALU | BPF_DIV | BPF_K, 0, 0, 1, 2)}), 0xc0000000u);
    // Signed division by zero register: 0; signed mod by zero: dividend.
    EXPECT_EQ(r0_of({mov64_imm(0, -5), mov64_imm(1, 0), make(BPF_ALU64 | BPF_DIV | BPF_X, 0, 1, 1, 0)}), 0u);
    EXPECT_EQ(r0_of({mov64_imm(0, -5), mov64_imm(1, 0), make(BPF_ALU64 | BPF_MOD | BPF_X, 0, 1, 1, 0)}), static_cast<uint64_t>(-5));
}

TEST(InterpAlu, ShiftsAreMasked) {
    EXPECT_EQ(r0_of({mov64_imm(0, 0x11), alu32_imm(BPF_LSH, 0, 60)}), 0x10000000u);
    EXPECT_EQ(r0_of({mov64_imm(0, 1), alu64_imm(BPF_LSH, 0, 68)}), 0x10u);
    EXPECT_EQ(r0_of({mov64_imm(0, 1), mov64_imm(1, 65), alu64_reg(BPF_LSH, 0, 1)}), 2u);
    EXPECT_EQ(r0_of({mov64_imm(0, -16), alu64_imm(BPF_ARSH, 0, 124)}), static_cast<uint64_t>(-1));
    EXPECT_EQ(r0_of({mov32_imm(0, INT_MIN), alu32_imm(BPF_ARSH, 0, 4)}), 0xf8000000u);
}

TEST(InterpAlu, MovSignExtensionAndImmediates) {
    auto v = ld64(2, 0x0123456789abcdefULL);
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU | BPF_MOV | BPF_X, 0, 2, 8, 0)})), 0xffffffefu);
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU | BPF_MOV | BPF_X, 0, 2, 16, 0)})), 0xffffcdefu);
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 2, 32, 0)})), 0xffffffff89abcdefULL);
    EXPECT_EQ(r0_of({mov64_imm(0, -10)}), 0xfffffffffffffff6ULL);
    EXPECT_EQ(r0_of({mov32_imm(0, -10)}), 0xfffffff6u);
    EXPECT_EQ(r0_of(cat(ld64(2, 0xffffff0000000002ULL), {mov32_reg(0, 2)})), 2u);
    EXPECT_EQ(r0_of({mov32_imm(0, INT_MIN), alu32_imm(BPF_NEG, 0, 0)}), 0x80000000u);
    // Byte swaps: ALU TO_BE swaps, TO_LE truncates; ALU64 END swaps unconditionally.
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU | BPF_END | BPF_TO_BE, 2, 0, 0, 16), mov64_reg(0, 2)})), 0xefcdu);
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU | BPF_END | BPF_TO_LE, 2, 0, 0, 32), mov64_reg(0, 2)})), 0x89abcdefu);
    EXPECT_EQ(r0_of(cat(v, {make(BPF_ALU64 | BPF_END, 2, 0, 0, 64), mov64_reg(0, 2)})), 0xefcdab8967452301ULL);
    // ld_imm64 does not sign-extend its low half.
    EXPECT_EQ(r0_of(ld64(0, 0x00000000ffffffffULL)), 0xffffffffu);
}

TEST(InterpArch, Jit32KeepsUpperHalvesAndIgnoresMovsx) {
    // w0 = w0 + 1 with garbage above: zero-extended on x86-64/arm64, kept on jit32 unless zext.
    auto prog = cat(ld64(0, 0xabcd000000000001ULL), {alu32_imm(BPF_ADD, 0, 1), exit_insn()});
    EXPECT_EQ(run(prog, arch_x86_64()).r0, 2u);
    EXPECT_EQ(run(prog, arch_arm64()).r0, 2u);
    EXPECT_EQ(run(prog, arch_jit32()).r0, 0xabcd000000000002ULL);
    auto zext = cat(ld64(0, 0xabcd000000000001ULL), {alu32_imm(BPF_ADD, 0, 1), zext_marker(0), exit_insn()});
    EXPECT_EQ(run(zext, arch_jit32()).r0, 2u);
    // ALU64 MOVSX 32 of 0x00000000_80000000: sign-extends, except where decoded as a plain move.
    auto sx = {mov32_imm(2, INT_MIN), make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 2, 32, 0), exit_insn()};
    EXPECT_EQ(run(sx, arch_x86_64()).r0, 0xffffffff80000000ULL);
    EXPECT_EQ(run(sx, arch_jit32()).r0, 0x80000000u);
}

// arm32 = the 32-bit ARM JIT as Debian's armhf 6.12 kernel ran it (issue 23): jit32's upper halves,
// but MOVSX sign-extends. corpus/arm/movsx-arm32.case is the program the kernel ran: r1 = 0x1ff80,
// r2 = (s8)r1 gave -128 there, where jit32's plain move kept 0x1ff80.
TEST(InterpArch, Arm32KeepsUpperHalvesButSignExtendsMovsx) {
    auto prog = cat(ld64(0, 0xabcd000000000001ULL), {alu32_imm(BPF_ADD, 0, 1), exit_insn()});
    EXPECT_EQ(run(prog, arch_arm32()).r0, 0xabcd000000000002ULL);
    auto s8 = {mov64_imm(1, 0x1ff80), make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 1, 8, 0), exit_insn()};
    EXPECT_EQ(run(s8, arch_arm32()).r0, 0xffffffffffffff80ULL);
    EXPECT_EQ(run(s8, arch_jit32()).r0, 0x1ff80u);
    // ALU32 MOVSX 8: the low half sign-extended, the upper half the JIT's (no zext marker here).
    auto w8 = cat(ld64(0, 0xabcd000000000000ULL), {mov64_imm(1, 0x1ff80), make(BPF_ALU | BPF_MOV | BPF_X, 0, 1, 8, 0), exit_insn()});
    EXPECT_EQ(static_cast<uint32_t>(run(w8, arch_arm32()).r0), 0xffffff80u);
    EXPECT_EQ(static_cast<uint32_t>(run(w8, arch_x86_64()).r0), 0xffffff80u);
}

TEST(InterpMemory, StackLoadsStoresAtomics) {
    // lock cmpxchg32 (conformance lock_cmpxchg32): W compares the low half of r0 only, r0 is
    // zero-extended on success.
    auto p = cat(ld64(0, 0x123456789abcdef0ULL),
                 {stx(BPF_DW, 10, 0, -8), mov32_imm(1, 0x11223344),
                  make(BPF_STX | BPF_ATOMIC | BPF_W, 10, 1, -8, BPF_CMPXCHG), stx(BPF_DW, 10, 0, -16),
                  ldx(BPF_DW, 0, 10, -8), exit_insn()});
    ExecResult r = run(p);
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 0x1234567811223344ULL);
    uint64_t old = 0;
    for (int i = 0; i < 8; ++i) old |= static_cast<uint64_t>(r.stack[512 - 16 + i]) << (8 * i);
    EXPECT_EQ(old, 0x9abcdef0u);
    // fetch-add DW returns the old value in src.
    auto f = {mov64_imm(1, 5), stx(BPF_DW, 10, 1, -8), mov64_imm(2, 3),
              make(BPF_STX | BPF_ATOMIC | BPF_DW, 10, 2, -8, BPF_ADD | BPF_FETCH), ldx(BPF_DW, 0, 10, -8),
              alu64_imm(BPF_LSH, 0, 8), alu64_reg(BPF_OR, 0, 2), exit_insn()};
    EXPECT_EQ(run(f).r0, (8u << 8) | 5u);
    // Sign-extending load.
    auto sx = {st(BPF_W, 10, -4, -2), make(BPF_LDX | BPF_MEMSX | BPF_H, 0, 10, -4, 0), exit_insn()};
    EXPECT_EQ(run(sx).r0, static_cast<uint64_t>(-2));
}

// Memory reuses the thread's chunks and region table from one execution to the next: what one
// wrote must never show through in the regions a later one adds, whatever their size (one bigger
// than a chunk takes a chunk of its own) or kind, and two memories alive at once (the second gets
// storage of its own) must not share any.
TEST(InterpMemory, ReusedStorageComesBackZeroed) {
    auto all_equal = [](const Region& reg, size_t from, size_t to, uint8_t v) {
        for (size_t k = from; k < to; ++k)
            if (reg.data[k] != v) return false;
        return true;
    };
    const uint8_t init[3] = {1, 2, 3};
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        Memory m;
        const uint32_t small = m.add(512, RegionKind::Stack);
        const uint32_t lazy = m.add_lazy(512, RegionKind::Stack);
        const uint32_t big = m.add(40000, RegionKind::MapValue);
        const uint32_t many = m.add_many(3, 24, RegionKind::MapValue);
        const uint32_t copied = m.add_copy(64, 8, init, 3, RegionKind::Ctx);
        ASSERT_NE(m.translate(Memory::addr(lazy, 0), 512, false), nullptr);  // its first access gives it storage
        for (uint32_t r : {small, lazy, big, many, many + 1, many + 2}) {
            EXPECT_TRUE(all_equal(m.region(r), 0, m.region(r).size, 0)) << "region " << r;
            std::memset(m.region(r).data, 0xab, m.region(r).size);
        }
        const Region& c = m.region(copied);
        ASSERT_EQ(c.size, 64u);
        EXPECT_TRUE(all_equal(c, 0, 8, 0));
        EXPECT_EQ(c.data[8], 1);
        EXPECT_EQ(c.data[9], 2);
        EXPECT_EQ(c.data[10], 3);
        EXPECT_TRUE(all_equal(c, 11, 64, 0));
        std::memset(c.data, 0xab, c.size);
        {
            Memory other;
            const uint32_t o = other.add(512, RegionKind::Stack);
            EXPECT_TRUE(all_equal(other.region(o), 0, 512, 0));
            for (uint32_t r = 0; r < m.count(); ++r) {
                const Region& mine = m.region(r);
                EXPECT_TRUE(other.region(o).data + 512 <= mine.data || mine.data + mine.size <= other.region(o).data);
            }
            std::memset(other.region(o).data, 0xcd, 512);
        }
        EXPECT_TRUE(all_equal(m.region(small), 0, 512, 0xab));
    }
}

// fresh() makes a region read as zeros: a lazy one that was never used, or one written before,
// whose storage is cleared at its next access (whether a read or a write, of any byte) and kept.
TEST(InterpMemory, FreshRegionsReadAsZeros) {
    Memory m;
    const uint32_t r = m.add_lazy(512, RegionKind::Stack);
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        m.fresh(r);
        EXPECT_EQ(m.region(r).size, 0u) << "cleared only when used";
        const uint64_t at = Memory::addr(r, round == 1 ? 0 : 504);
        uint8_t* p = m.translate(at, 8, round == 2);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(m.region(r).size, 512u);
        for (uint32_t k = 0; k < 512; ++k) ASSERT_EQ(m.region(r).data[k], 0) << "byte " << k;
        std::memset(m.region(r).data, 0xab, 512);
        uint8_t* const before = m.region(r).data;
        m.fresh(r);
        ASSERT_NE(m.translate(Memory::addr(r, 0), 1, false), nullptr);
        EXPECT_EQ(m.region(r).data, before) << "its storage is kept";
        EXPECT_EQ(load_le(m.region(r).data + 256, 8), 0u);
        std::memset(m.region(r).data, 0xcd, 512);
    }
    // Out of bounds stays out of bounds, before and after the region is used.
    m.fresh(r);
    EXPECT_EQ(m.translate(Memory::addr(r, 508), 8, false), nullptr);
    EXPECT_EQ(m.translate(Memory::addr(r, 504), 8, false)[7], 0);
}

// A run that falls through the last insn, or returns past it, ends in a fault there.
TEST(InterpFaults, RunningPastTheLastInsnIsAFault) {
    ExecResult r = run({mov64_imm(0, 1), mov64_imm(1, 2)});
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_EQ(r.fault_pc, 2u);
    EXPECT_EQ(r.reason, "execution ran past the last insn");
    EXPECT_EQ(r.steps, 3u);
    // A call as the last insn: its callee (insn 1) returns past the end.
    r = run({ja(1), exit_insn(), call_pseudo(-2)});
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_EQ(r.fault_pc, 3u);
    EXPECT_EQ(r.reason, "execution ran past the last insn");
}

// content_digest() stands for entries(): maps of one definition with equal entries have equal
// digests, and changing any bit of any key or value changes it; bytes entries() does not show
// (an array element's padding) do not count.
TEST(InterpMaps, DigestFollowsEveryByteOfTheEntries) {
    const std::vector<MapDef> defs = {
        MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 24, .max_entries = 3},   // values contiguous
        MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 12, .max_entries = 3},   // padded to 16
        MapDef{.type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 7, .max_entries = 2},
        MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 8, .value_size = 20, .max_entries = 4},
    };
    const uint64_t kPinned[] = {0x7bc0e9cc76f9c2e2ULL, 0xeb6ae3676f832c5aULL, 0x78667b11134722b1ULL, 0x21c4baad7faa50f0ULL};
    for (const MapDef& def : defs) {
        SCOPED_TRACE("map type " + std::to_string(def.type) + ", value size " + std::to_string(def.value_size));
        std::vector<MapEntry> entries;
        for (uint32_t k = 0; k < std::min<uint32_t>(def.max_entries, 3); ++k) {
            MapEntry e{std::vector<uint8_t>(def.key_size, 0), std::vector<uint8_t>(def.value_size, 0)};
            e.key[0] = static_cast<uint8_t>(k);
            for (size_t b = 0; b < e.value.size(); ++b) e.value[b] = static_cast<uint8_t>(k * 31 + b);
            entries.push_back(std::move(e));
        }
        auto digest_of = [&](const std::vector<MapEntry>& es, bool touch_padding = false) {
            Memory mem;
            MapModel m(def, mem);
            EXPECT_TRUE(m.user_fill(es));
            uint32_t r = 0, off = 0;
            if (touch_padding && mem.region_of(m.direct_value(0), r, off))
                mem.region(r).data[off + def.value_size] = 0x5a;  // first padding byte of element 0
            std::vector<MapEntry> in_key_order = es;  // how entries() lists them
            std::sort(in_key_order.begin(), in_key_order.end(), [](const MapEntry& a, const MapEntry& b) { return a.key < b.key; });
            EXPECT_EQ(m.entries(), in_key_order);
            // The shortcut for arrays whose values fill their slots digests what the general case does.
            EXPECT_EQ(m.content_digest(), m.content_digest_general());
            return m.content_digest();
        };
        const uint64_t base = digest_of(entries);
        // The digests themselves never change (runs are reproduced and compared across builds).
        EXPECT_EQ(base, kPinned[&def - defs.data()]);
        EXPECT_EQ(digest_of(entries), base);
        for (size_t e = 0; e < entries.size(); ++e) {
            for (size_t b = 0; b < def.value_size; ++b) {
                for (uint8_t bit : {uint8_t{1}, uint8_t{0x80}}) {
                    std::vector<MapEntry> changed = entries;
                    changed[e].value[b] ^= bit;
                    EXPECT_NE(digest_of(changed), base) << "entry " << e << " value byte " << b;
                }
            }
            if (def.type == BPF_MAP_TYPE_HASH) {
                for (size_t b = 0; b < def.key_size; ++b) {
                    std::vector<MapEntry> changed = entries;
                    changed[e].key[b] ^= 0x40;
                    EXPECT_NE(digest_of(changed), base) << "entry " << e << " key byte " << b;
                }
            }
        }
        if (def.type == BPF_MAP_TYPE_ARRAY && def.value_size % 8 != 0) {
            EXPECT_EQ(digest_of(entries, true), base);
        }
    }
}

TEST(InterpFaults, AreResultsWithPcAndReason) {
    ExecResult r = run({ldx(BPF_DW, 0, 10, 0), exit_insn()});  // fp+0 is above the stack
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_EQ(r.fault_pc, 0u);
    EXPECT_NE(r.reason.find("invalid read of 8 bytes"), std::string::npos) << r.reason;
    // A pointer whose upper half was truncated (bug class B9) faults on use.
    r = run({mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -8), mov32_reg(0, 1), ldx(BPF_W, 0, 0, 0), exit_insn()});
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_EQ(r.fault_pc, 3u);
    // Step budget.
    ExecInput in;
    in.step_budget = 1000;
    r = run({ja(-1)}, arch_x86_64(), in);
    EXPECT_EQ(r.status, S::StepBudget);
    EXPECT_EQ(r.steps, 1000u);
    // Invalid opcode, write to a read-only ctx? (ctx is writable); jump into ld_imm64's second slot.
    r = run({make(0xff, 0, 0, 0, 0), exit_insn()});
    EXPECT_EQ(r.status, S::Fault);
    r = run({ja(1), lddw(0, 1), ldimm64_hi(0), exit_insn()});
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_EQ(r.fault_pc, 2u);
    // Unknown helper: unsupported, not a crash.
    r = run({call_helper(9999), exit_insn()});
    EXPECT_EQ(r.status, S::Unsupported);
}

// A plain run tests its step budget only where it jumps, until the steps left come near the end
// (Machine::StepCheck); a traced run tests it at every insn. On every budget, from none to more
// than the run takes, both must end alike: at the same insn, after the same steps, with the
// same memory and effects. The program has what moves forward without a jump (straight-line
// insns, ld_imm64, not-taken branches, helper calls) and what jumps (loops, a local call and its
// return, bpf_loop callbacks), on both upper-half profiles.
TEST(InterpFaults, StepBudgetTestedAtJumpsEndsAsTestedAtEveryInsn) {
    const std::vector<Insn> p = {
        mov64_imm(6, 0),                                   // 0: r6 = counter
        st(BPF_DW, 10, -8, 1),                             // 1
        lddw(7, 0x123456789abcdefULL), ldimm64_hi(0x1234), // 2-3
        alu64_reg(BPF_ADD, 7, 6),                          // 4: loop body
        stx(BPF_DW, 10, 7, -16),                           // 5
        jmp_imm(BPF_JEQ, 6, 100, 0),                       // 6: never taken, falls through
        call_helper(BPF_FUNC_ktime_get_ns),                // 7
        call_pseudo(12),                                   // 8: f at 21
        alu64_imm(BPF_ADD, 6, 1),                          // 9
        jmp_imm(BPF_JLT, 6, 4, -7),                        // 10: back to 4
        mov64_imm(1, 3),                                   // 11: bpf_loop(3, cb, fp-24, 0)
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 11), ldimm64_hi(0), // 12-13: cb at 24
        mov64_reg(3, 10),                                  // 14
        alu64_imm(BPF_ADD, 3, -24),                        // 15
        mov64_imm(4, 0),                                   // 16
        st(BPF_DW, 10, -24, 0),                            // 17
        call_helper(BPF_FUNC_loop),                        // 18
        ldx(BPF_DW, 0, 10, -24),                           // 19
        exit_insn(),                                       // 20
        mov64_imm(7, 9), st(BPF_DW, 10, -8, 3), exit_insn(),            // 21-23: f
        ldx(BPF_DW, 4, 2, 0), alu64_imm(BPF_ADD, 4, 5), stx(BPF_DW, 2, 4, 0),  // 24-26: cb
        mov64_imm(0, 0), exit_insn(),                      // 27-28
    };
    const Program prog = make_program(p);
    for (const ArchProfile* arch : {&arch_x86_64(), &arch_jit32()}) {
        ExecInput in;
        in.step_budget = 1u << 20;
        const ExecResult whole = execute(prog, in, *arch);
        ASSERT_EQ(whole.status, S::Ok) << whole.reason;
        ASSERT_GT(whole.steps, 2 * p.size());  // more steps than the reserve
        ExecOptions traced;
        traced.trace_last = 1;
        for (uint64_t budget = 0; budget <= whole.steps + 2; ++budget) {
            SCOPED_TRACE(std::string(arch->name) + ", budget " + std::to_string(budget));
            in.step_budget = budget;
            const ExecResult plain = execute(prog, in, *arch);
            ExecResult every = execute(prog, in, *arch, traced);
            EXPECT_EQ(every.trace.size(), budget == 0 ? 0u : 1u);
            every.trace.clear();
            expect_same_result(plain, every);
            EXPECT_EQ(plain.status, budget >= whole.steps ? S::Ok : S::StepBudget);
        }
    }
}

// A callback whose code dead-code removal dropped (the verifier never reached it): its PSEUDO_FUNC
// load still yields an address, as in the kernel; only bpf_loop calling it would fault. Found by
// the kernel oracle (6.12 test runs of an inlined bpf_loop with nr_loops 0).
TEST(InterpCalls, PseudoFuncLoadOfARemovedCallbackIsNotAFault) {
    Insn lo = lddw(2, 0), hi = ldimm64_hi(0);
    lo.src_reg = BPF_PSEUDO_FUNC;
    lo.imm = 2;  // pc 0 + 1 + 2 = 3 = len: just past the end
    ExecResult r = run({lo, hi, mov64_imm(0, 7), exit_insn()});
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 7u);
    // Calling it is the fault.
    lo.imm = 6;  // 0 + 1 + 6 = 7 = len
    r = run({lo, hi, mov64_imm(1, 1), mov64_imm(3, 0), mov64_imm(4, 0), call_helper(BPF_FUNC_loop), exit_insn()});
    EXPECT_EQ(r.status, S::Fault);
}

TEST(InterpCalls, LocalCallsHaveOwnFramesAndPreserveR6ToR9) {
    // main: r6 = 1, r7 = 2; call f; r0 = r0*100 + r6 + r7; f clobbers its own r6/r7 and stack.
    auto p = {mov64_imm(6, 1), mov64_imm(7, 2), st(BPF_DW, 10, -8, 77), call_pseudo(6), alu64_imm(BPF_MUL, 0, 100),
              alu64_reg(BPF_ADD, 0, 6), alu64_reg(BPF_ADD, 0, 7), ldx(BPF_DW, 1, 10, -8), alu64_reg(BPF_ADD, 0, 1),
              exit_insn(),
              // f:
              mov64_imm(6, 50), mov64_imm(7, 60), st(BPF_DW, 10, -8, 5), ldx(BPF_DW, 0, 10, -8), exit_insn()};
    ExecResult r = run(p);
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 5u * 100 + 1 + 2 + 77);
    // Unbounded recursion stops at the frame limit with a fault.
    r = run({call_pseudo(-1), exit_insn()});
    EXPECT_EQ(r.status, S::Fault);
    EXPECT_NE(r.reason.find("call depth"), std::string::npos);
}

TEST(InterpCalls, EveryFrameStartsWithAZeroedStack) {
    // main -> f -> g -> h (depth 3), twice. Each callee reads a slot of its own stack before
    // writing it, so it sees a stale value unless its stack is zero on every entry; h returns
    // that slot + 1 and the others pass it on, so a clean run returns 1 per round. Before any
    // call, main reaches frame 3's stack through a pointer made by arithmetic (region 3 of
    // interp.hpp's pointer layout): it reads zeros there and writes 42, which h must not see.
    const std::vector<Insn> forge = cat(ld64(2, uint64_t{3} << 32), {mov64_reg(1, 10), alu64_reg(BPF_ADD, 1, 2)});
    std::vector<Insn> p = cat(forge, {
                                         ldx(BPF_DW, 8, 1, -8),        // r8 = frame 3's fp-8: 0
                                         st(BPF_DW, 1, -8, 42),        //
                                         ldx(BPF_DW, 9, 1, -8),        // r9 = 42
                                         call_pseudo(6),               // f
                                         mov64_reg(6, 0),              //
                                         call_pseudo(4),               // f again
                                         alu64_reg(BPF_ADD, 0, 6),     //
                                         alu64_reg(BPF_ADD, 0, 8),     //
                                         alu64_reg(BPF_ADD, 0, 9),     //
                                         exit_insn(),                  //
                                     });
    const std::vector<Insn> f = {ldx(BPF_DW, 7, 10, -8), st(BPF_DW, 10, -8, 7), call_pseudo(2), alu64_reg(BPF_ADD, 0, 7),
                                 exit_insn()};
    const std::vector<Insn> g = {ldx(BPF_DW, 7, 10, -16), st(BPF_DW, 10, -16, 9), call_pseudo(2), alu64_reg(BPF_ADD, 0, 7),
                                 exit_insn()};
    const std::vector<Insn> h = {ldx(BPF_DW, 0, 10, -8), ldx(BPF_DW, 1, 10, -512), alu64_reg(BPF_ADD, 0, 1),
                                 alu64_imm(BPF_ADD, 0, 1), st(BPF_DW, 10, -8, 5), st(BPF_DW, 10, -512, 6), exit_insn()};
    p = cat(cat(cat(p, f), g), h);
    const ExecResult r = run(p);
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 1u + 1u + 0u + 42u);
    // Frame 3's stack, never entered, is zero where it was not written.
    const ExecResult q = run(cat(forge, {ldx(BPF_DW, 0, 1, -512), ldx(BPF_DW, 2, 1, -1 - 7), alu64_reg(BPF_OR, 0, 2), exit_insn()}));
    ASSERT_EQ(q.status, S::Ok) << q.reason;
    EXPECT_EQ(q.r0, 0u);
    // Beyond the frame, as for any region: a fault.
    const ExecResult o = run(cat(forge, {ldx(BPF_DW, 0, 1, 0), exit_insn()}));
    EXPECT_EQ(o.status, S::Fault);
}

// A callee's stack keeps what it wrote after it returns (a pointer the caller kept reads it) until
// the next call at that depth starts it afresh, whether or not that callee touches its stack.
TEST(InterpCalls, ACalleesStackIsClearedByTheNextCallOnly) {
    const std::vector<Insn> p = {
        call_pseudo(8),            // f: r0 = its fp, fp-8 = 9
        mov64_reg(6, 0),
        ldx(BPF_DW, 7, 6, -8),     // r7 = 9
        call_pseudo(8),            // g: touches no stack
        ldx(BPF_DW, 8, 6, -8),     // r8 = 0
        alu64_imm(BPF_LSH, 7, 8),
        alu64_reg(BPF_OR, 7, 8),
        mov64_reg(0, 7),
        exit_insn(),
        // f:
        st(BPF_DW, 10, -8, 9), mov64_reg(0, 10), exit_insn(),
        // g:
        mov64_imm(0, 1), exit_insn(),
    };
    const ExecResult r = run(p);
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 9u << 8);
}

}  // namespace
}  // namespace patchfuzz::interp
