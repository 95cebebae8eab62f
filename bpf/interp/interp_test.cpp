// Interpreter semantics: ISA edge cases (RFC 9669 §4), arch profiles, faults as results, calls and
// frames, helper and kfunc models, the loop shapes. Expected values come from the ISA text and
// docs/iterator-isa-arch.md tables, not from the interpreter. No RapidCheck (runs on arm64 under qemu).
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
#include "bpf/passes/internal_calls.hpp"

namespace patchfuzz::interp {
namespace {
using namespace isa;
using S = ExecResult::Status;

ExecResult run(std::vector<Insn> insns, const ArchProfile& arch = arch_x86_64(), ExecInput in = {}) {
    return execute(make_program(std::move(insns)), in, arch);
}
// r0 = value of `insns` ending with exit, on every 64-bit profile (they must agree).
uint64_t r0_of(std::vector<Insn> insns) {
    insns.push_back(exit_insn());
    ExecResult a = run(insns, arch_x86_64());
    ExecResult b = run(insns, arch_arm64());
    EXPECT_EQ(a.status, S::Ok) << a.reason;
    EXPECT_EQ(a.r0, b.r0);
    return a.r0;
}
Insn lddw(uint8_t dst, uint64_t v) { return ldimm64_lo(dst, 0, static_cast<int32_t>(static_cast<uint32_t>(v))); }
std::vector<Insn> ld64(uint8_t dst, uint64_t v) { return {lddw(dst, v), ldimm64_hi(static_cast<int32_t>(v >> 32))}; }
std::vector<Insn> cat(std::vector<Insn> a, const std::vector<Insn>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

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

// Every bpf_loop iteration enters its callback with a zeroed stack: the callback adds its fp-8
// (0 on a fresh stack) into the caller's slot, then writes 5 there.
TEST(InterpHelpers, BpfLoopCallbacksStartWithAZeroedStack) {
    const std::vector<Insn> p = {
        st(BPF_DW, 10, -16, 0),
        mov64_imm(1, 3),                      // nr_loops
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 7),    // callback: insn 10
        ldimm64_hi(0),
        mov64_reg(3, 10),
        alu64_imm(BPF_ADD, 3, -16),           // ctx: &fp-16
        mov64_imm(4, 0),
        call_helper(BPF_FUNC_loop),
        ldx(BPF_DW, 0, 10, -16),
        exit_insn(),
        ldx(BPF_DW, 3, 10, -8),               // callback
        ldx(BPF_DW, 4, 2, 0),
        alu64_reg(BPF_ADD, 4, 3),
        stx(BPF_DW, 2, 4, 0),
        st(BPF_DW, 10, -8, 5),
        mov64_imm(0, 0),
        exit_insn(),
    };
    const ExecResult r = run(p);
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 0u);
}

// §1.7 reference vectors: (start, end) -> (rc, element count, sum of elements as u32 values).
struct IterCase {
    int32_t start, end;
    int32_t rc;
    uint64_t count;
};

TEST(InterpKfunc, IterNumVectorsFromTheSpec) {
    const IterCase cases[] = {
        {0, 0, 0, 0},         {INT_MIN, INT_MIN, 0, 0}, {INT_MAX, INT_MAX, 0, 0}, {0, 10, 0, 10}, {-10, 0, 0, 10},
        {INT_MIN, INT_MIN + 2, 0, 2}, {INT_MAX - 2, INT_MAX, 0, 2}, {-3, 3, 0, 6}, {1, 0, -22, 0}, {100, 10, -22, 0},
        {-1, kMaxLoops, -7, 0}, {INT_MIN, 0, -7, 0}, {INT_MIN, INT_MAX, -7, 0},
    };
    for (const auto& c : cases) {
        ExecInput in;
        in.ctx = std::vector<uint8_t>(8);
        for (int i = 0; i < 4; ++i) {
            in.ctx[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<uint32_t>(c.start) >> (8 * i));
            in.ctx[static_cast<size_t>(4 + i)] = static_cast<uint8_t>(static_cast<uint32_t>(c.end) >> (8 * i));
        }
        in.stack.assign(512, 0x5a);  // stale bytes must not leak into a failed new
        in.regs[2] = in.regs[3] = 0xfeedface00000000ULL;
        for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64(), &arch_jit32()}) {
            ExecResult r = execute(iter_sum_program(), in, *a);
            ASSERT_EQ(r.status, S::Ok) << r.reason;
            uint64_t sum = 0;
            for (uint64_t k = 0; k < c.count; ++k) sum += static_cast<uint32_t>(c.start + static_cast<int32_t>(k));
            // (jit32 keeps the upper half of `r1 = *(u32 *)(r0 + 0)` absent a zext: only rc and the slot count there.)
            if (a->bits64) {
                EXPECT_EQ(r.r0, (c.count << 40) ^ sum) << c.start << "," << c.end << " on " << a->name;
            }
            int32_t rc = 0;
            for (int i = 0; i < 4; ++i) rc |= static_cast<int32_t>(r.stack[512 - 16 + static_cast<size_t>(i)]) << (8 * i);
            EXPECT_EQ(rc, c.rc) << c.start << "," << c.end;
            // After the loop ended with NULL, the extra next() is NULL too (sticky) and the slot is (0,0).
            for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r.stack[512 - 24 + i], 0) << i;
            for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r.stack[512 - 8 + i], 0) << i;
        }
    }
}

TEST(InterpKfunc, FullRangeOfBpfMaxLoops) {
    ExecInput in;
    set_nr_loops(in, static_cast<uint32_t>(kMaxLoops));
    in.step_budget = 1ULL << 30;
    ExecResult r = execute(bpf_for_program(), in, arch_x86_64());
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, static_cast<uint64_t>(kMaxLoops));
}

TEST(InterpHelpers, BpfLoopHelperAndItsInlineAgree) {
    for (uint32_t n : {0u, 1u, 7u, 1000u}) {
        ExecInput in;
        set_nr_loops(in, n);
        ExecResult a = execute(bpf_loop_program(false), in, arch_x86_64());
        ExecResult b = execute(bpf_loop_program(true), in, arch_x86_64());
        ASSERT_EQ(a.status, S::Ok) << a.reason;
        ASSERT_EQ(b.status, S::Ok) << b.reason;
        EXPECT_EQ(a.r0, n);
        EXPECT_EQ(b.r0, n);
    }
}

// The clock advances 1000 ns per read from 1e9, and every read is an effect with its value in
// decimal: the same text whether it comes from the table of the first reads or is formatted.
TEST(InterpHelpers, ClockReadsAreEffectsWithTheirValues) {
    constexpr int kReads = 1030;
    const ExecResult r = run({mov64_imm(6, kReads), call_helper(BPF_FUNC_ktime_get_ns), mov64_reg(7, 0), alu64_imm(BPF_SUB, 6, 1),
                              jmp_imm(BPF_JNE, 6, 0, -4), mov64_reg(0, 7), exit_insn()});
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 1000000000u + 1000u * kReads);
    ASSERT_EQ(r.effects.size(), size_t{kReads});
    for (int k = 0; k < kReads; ++k)
        ASSERT_EQ(r.effects[k], "clock() = " + std::to_string(1000000000u + 1000u * (k + 1))) << "read " << k + 1;
}

// The three clock helpers read one clock, return its value in r0 and leave r1-r5 poisoned, as
// every helper does; under the bpf_conformance harness, helper 5 (ktime_get_ns) is the suite's own
// helper instead (returns r1), while the other two still read the clock.
TEST(InterpHelpers, ClockHelpersAndTheConformanceHelper) {
    // Helper k's r1-r5 and r0 after the call go to fp-8*(6k+1) .. fp-8*(6k+6).
    const int32_t ids[3] = {BPF_FUNC_ktime_get_ns, BPF_FUNC_jiffies64, BPF_FUNC_ktime_get_boot_ns};
    auto slot = [](int k, int j) { return static_cast<int16_t>(-8 * (6 * k + j + 1)); };  // j 0-4: r1-r5, 5: r0
    std::vector<Insn> p;
    for (int k = 0; k < 3; ++k) {
        p.push_back(mov64_imm(1, 40 + k));
        p.push_back(call_helper(ids[k]));
        for (int j = 0; j < 5; ++j) p.push_back(stx(BPF_DW, 10, static_cast<uint8_t>(j + 1), slot(k, j)));
        p.push_back(stx(BPF_DW, 10, 0, slot(k, 5)));
    }
    p.push_back(mov64_imm(0, 0));
    p.push_back(exit_insn());
    for (bool conformance : {false, true}) {
        SCOPED_TRACE(conformance ? "conformance helpers" : "kernel helpers");
        ExecOptions opts;
        opts.conformance_helpers = conformance;
        const ExecResult r = execute(make_program(p), ExecInput{}, arch_x86_64(), opts);
        ASSERT_EQ(r.status, S::Ok) << r.reason;
        auto stored = [&](int k, int j) { return load_le(r.stack.data() + kStackSize + slot(k, j), 8); };
        uint64_t clock = 1000000000;
        std::vector<std::string> effects;
        for (int k = 0; k < 3; ++k) {
            for (int j = 0; j < 5; ++j) EXPECT_EQ(stored(k, j), kCallPoison) << "helper " << ids[k] << " r" << j + 1;
            if (conformance && k == 0) {
                EXPECT_EQ(stored(k, 5), 40u) << "the suite's helper returns r1";
                continue;
            }
            clock += 1000;
            EXPECT_EQ(stored(k, 5), clock) << "helper " << ids[k] << " r0";
            effects.push_back("clock() = " + std::to_string(clock));
        }
        EXPECT_EQ(r.effects, effects);
    }
}

TEST(InterpHelpers, HashAndLruMaps) {
    // update key 1 -> 10, key 2 -> 20, key 3 -> 30 into a 2-entry map; lookup key 1; r0 = value or 99.
    auto prog = [](uint32_t type) {
        std::vector<Insn> p;
        for (int k = 1; k <= 3; ++k) {
            p.push_back(st(BPF_W, 10, -4, k));
            p.push_back(st(BPF_DW, 10, -16, k * 10));
            p.push_back(ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0));
            p.push_back(ldimm64_hi(0));
            p.push_back(mov64_reg(2, 10));
            p.push_back(alu64_imm(BPF_ADD, 2, -4));
            p.push_back(mov64_reg(3, 10));
            p.push_back(alu64_imm(BPF_ADD, 3, -16));
            p.push_back(mov64_imm(4, 0));
            p.push_back(call_helper(BPF_FUNC_map_update_elem));
        }
        std::vector<Insn> q = {st(BPF_W, 10, -4, 1), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10),
                               alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem), jmp_imm(BPF_JEQ, 0, 0, 2),
                               ldx(BPF_DW, 0, 0, 0), exit_insn(), mov64_imm(0, 99), exit_insn()};
        p.insert(p.end(), q.begin(), q.end());
        Program pr = make_program(p);
        pr.maps.push_back(MapDef{.type = type, .key_size = 4, .value_size = 8, .max_entries = 2});
        return pr;
    };
    // Hash: the third insert fails with -E2BIG, key 1 stays.
    ExecResult h = execute(prog(BPF_MAP_TYPE_HASH), {}, arch_x86_64());
    ASSERT_EQ(h.status, S::Ok) << h.reason;
    EXPECT_EQ(h.r0, 10u);
    ASSERT_EQ(h.maps.size(), 1u);
    EXPECT_EQ(h.maps[0].size(), 2u);
    EXPECT_EQ(h.effects.back(), "map_update(map 0, flags 0x0) = -7");
    // LRU: the third insert evicts key 1, the least recently used.
    ExecResult l = execute(prog(BPF_MAP_TYPE_LRU_HASH), {}, arch_x86_64());
    ASSERT_EQ(l.status, S::Ok) << l.reason;
    EXPECT_EQ(l.r0, 99u);
    EXPECT_EQ(l.maps[0].size(), 2u);
    // Digests (what the execution oracle compares) follow the contents: hash and LRU end with
    // different keys; the same run twice, and a run that does not collect entries, agree.
    ASSERT_EQ(h.map_digests.size(), 1u);
    ASSERT_EQ(l.map_digests.size(), 1u);
    EXPECT_NE(h.map_digests[0], l.map_digests[0]);
    ExecOptions no_entries;
    no_entries.collect_maps = false;
    ExecResult h2 = execute(prog(BPF_MAP_TYPE_HASH), {}, arch_x86_64(), no_entries);
    EXPECT_TRUE(h2.maps.empty());
    EXPECT_EQ(h2.map_digests, h.map_digests);
    // Array contents given by the input and left alone by the program: one value byte apart,
    // digests apart; same contents, same digest.
    Program untouched = make_program({mov64_imm(0, 0), exit_insn()});
    untouched.maps.push_back(MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4});
    ExecInput in1;
    in1.maps = {{MapEntry{{2, 0, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8}}}};
    ExecInput in2 = in1;
    in2.maps[0][0].value[7] = 9;
    const ExecResult a1 = execute(untouched, in1, arch_x86_64()), a2 = execute(untouched, in1, arch_arm64());
    const ExecResult b1 = execute(untouched, in2, arch_x86_64());
    ASSERT_EQ(a1.status, S::Ok) << a1.reason;
    ASSERT_NE(a1.maps, b1.maps);
    EXPECT_NE(a1.map_digests, b1.map_digests);
    EXPECT_EQ(a1.map_digests, a2.map_digests);
}

TEST(InterpHelpers, TailCallsOutOfRangeHaveNoEffect) {
    // bpf_tail_call(ctx, prog_array, index) for indices 1, 2, 0x100000001 on a 2-slot array, then
    // the same three through the internal tail-call insn (r1 ctx, r2 map, r3 index). The kernel
    // (core.c JMP_TAIL_CALL, the JITs) compares the u32 index with max_entries first: index 2 is
    // out of range and nothing happens; 0x100000001 is index 1. Empty slots fall through, r0 kept.
    std::vector<Insn> p = {mov64_imm(0, 5)};
    for (bool internal : {false, true})
        for (uint64_t idx : {1ULL, 2ULL, 0x100000001ULL}) {
            p.push_back(ldimm64_lo(2, BPF_PSEUDO_MAP_IDX, 0));
            p.push_back(ldimm64_hi(0));
            p.push_back(ldimm64_lo(3, 0, static_cast<int32_t>(static_cast<uint32_t>(idx))));
            p.push_back(ldimm64_hi(static_cast<int32_t>(idx >> 32)));
            p.push_back(internal ? make(BPF_JMP | kOpTailCall, 0, 0, 0, 0) : call_helper(BPF_FUNC_tail_call));
        }
    p.push_back(exit_insn());
    Program pr = make_program(p);
    pr.maps.push_back(MapDef{.type = BPF_MAP_TYPE_PROG_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 2});
    ExecResult r = execute(pr, {}, arch_x86_64());
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 5u);
    const std::vector<std::string> want(4, "tail_call(map 0, index 1)");
    EXPECT_EQ(r.effects, want);
}

TEST(InterpHelpers, PercpuArrayValueLoadOriginalAndRewrittenAgree) {
    // ld_imm64 MAP_VALUE of a PERCPU_ARRAY (bpf-next), value offset 4: this CPU's element 0 bytes
    // 4..7. Original form: the ld_imm64 alone; rewritten (do_misc_fixups row i): followed by
    // r1 = per-cpu(r1). Both read 0x44332211 from the input's element 0 value.
    auto prog = [](bool rewritten) {
        std::vector<Insn> p = {ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0), ldimm64_hi(4)};
        if (rewritten) p.push_back(make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 1, -1, 0));
        p.push_back(ldx(BPF_W, 0, 1, 0));
        p.push_back(exit_insn());
        Program pr = make_program(p);
        pr.maps.push_back(MapDef{.type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2});
        return pr;
    };
    ExecInput in;
    in.maps = {{MapEntry{{0, 0, 0, 0}, {0xaa, 0xbb, 0xcc, 0xdd, 0x11, 0x22, 0x33, 0x44}}}};
    for (bool rw : {false, true}) {
        ExecResult r = execute(prog(rw), in, arch_x86_64());
        ASSERT_EQ(r.status, S::Ok) << rw << ": " << r.reason;
        EXPECT_EQ(r.r0, 0x44332211u) << rw;
    }
}

// Insns reach the current frame's stack without translating each access (Machine::access): the
// view must follow the frames (a callee's stack is fresh, the caller's is reached through a
// pointer, and after the return the caller's is the view again) and end where the stack ends.
TEST(InterpMemory, StackAccessesFollowTheFrames) {
    const Program calls = make_program({
        st(BPF_DW, 10, -8, 0x11), mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -8), call_pseudo(5),
        ldx(BPF_DW, 2, 10, -8),    // the caller's slot, which the callee raised by 0x100
        alu64_reg(BPF_ADD, 0, 2), ldx(BPF_DW, 3, 10, -512), alu64_reg(BPF_ADD, 0, 3), exit_insn(),
        // callee: its own fp-8 is fresh (0), then 0x22; the caller's through r1
        ldx(BPF_DW, 0, 10, -8), st(BPF_DW, 10, -8, 0x22), ldx(BPF_DW, 4, 10, -8), alu64_reg(BPF_ADD, 0, 4),
        ldx(BPF_DW, 5, 1, 0), alu64_imm(BPF_ADD, 5, 0x100), stx(BPF_DW, 1, 5, 0), exit_insn()});
    ExecInput in;
    in.stack.assign(kStackSize, 0);
    in.stack[0] = 0x7;  // fp-512
    const ExecResult r = execute(calls, in, arch_x86_64());
    ASSERT_EQ(r.status, S::Ok) << r.reason;
    EXPECT_EQ(r.r0, 0x22u + 0x111u + 0x7u);
    // The last bytes of the stack, and one beyond (after an access that made the view).
    auto one = [&](Insn i) {
        return execute(make_program({mov64_imm(0, 0), st(BPF_DW, 10, -16, 0), i, exit_insn()}), in, arch_x86_64());
    };
    EXPECT_EQ(one(ldx(BPF_B, 0, 10, -1)).status, S::Ok);
    EXPECT_EQ(one(st(BPF_DW, 10, -8, 1)).status, S::Ok);
    EXPECT_EQ(one(ldx(BPF_DW, 0, 10, -512)).r0, 0x7u);
    for (Insn beyond : {ldx(BPF_B, 0, 10, 0), st(BPF_DW, 10, -4, 1), ldx(BPF_W, 0, 10, -513), stx(BPF_H, 10, 0, -1)}) {
        const ExecResult f = one(beyond);
        EXPECT_EQ(f.status, S::Fault) << f.reason;
        EXPECT_EQ(f.fault_pc, 2u);
    }
    // A bpf_loop callback's stack is fresh in every iteration: each reads 0 where the one
    // before wrote 5, and adds what it read to the caller's fp-16 (through its ctx argument).
    const Program loop = make_program({
        st(BPF_DW, 10, -16, 0), mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 7), ldimm64_hi(0), mov64_reg(3, 10),
        alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0), call_helper(BPF_FUNC_loop), ldx(BPF_DW, 0, 10, -16), exit_insn(),
        // callback(i, ctx)
        ldx(BPF_DW, 3, 10, -8), st(BPF_DW, 10, -8, 5), ldx(BPF_DW, 4, 2, 0), alu64_reg(BPF_ADD, 4, 3), stx(BPF_DW, 2, 4, 0),
        mov64_imm(0, 0), exit_insn()});
    const ExecResult l = execute(loop, in, arch_x86_64());
    ASSERT_EQ(l.status, S::Ok) << l.reason;
    EXPECT_EQ(l.r0, 0u);
}

// The map ld_imm64s a run resolves inline (the map, a value of a plain array) and those it leaves
// to the general path (a per-CPU array's value, a map that has no value address, a map the
// program does not have): each gives its own pointer or fault.
TEST(InterpHelpers, MapLdimm64Forms) {
    const std::vector<MapDef> maps = {MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 16, .max_entries = 2},
                                      MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 2},
                                      MapDef{.type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2}};
    ExecInput in;
    in.maps = {{MapEntry{{0, 0, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}},
               {},
               {MapEntry{{0, 0, 0, 0}, {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}}}};
    // r0 = the value at (ld_imm64 src map `m`, value offset `off`) + `at` when `read`, else the
    // ld_imm64's own value.
    auto run = [&](uint8_t src, int32_t m, int32_t off, bool read) {
        std::vector<Insn> p = {ldimm64_lo(1, src, m), ldimm64_hi(off)};
        p.push_back(read ? ldx(BPF_W, 0, 1, 0) : mov64_reg(0, 1));
        p.push_back(exit_insn());
        Program pr = make_program(p);
        pr.maps = maps;
        return execute(pr, in, arch_x86_64());
    };
    const ExecResult fd = run(BPF_PSEUDO_MAP_FD, 1, 0, false), idx = run(BPF_PSEUDO_MAP_IDX, 1, 0, false);
    ASSERT_EQ(fd.status, S::Ok) << fd.reason;
    EXPECT_EQ(idx.r0, fd.r0);
    EXPECT_NE(run(BPF_PSEUDO_MAP_FD, 0, 0, false).r0, fd.r0);  // another map, another object
    EXPECT_EQ(run(BPF_PSEUDO_MAP_VALUE, 0, 4, true).r0, 0x08070605u);
    EXPECT_EQ(run(BPF_PSEUDO_MAP_IDX_VALUE, 0, 12, true).r0, 0x100f0e0du);
    EXPECT_EQ(run(BPF_PSEUDO_MAP_VALUE, 2, 4, true).r0, 0xa8a7a6a5u);  // this CPU's copy
    const ExecResult hash_value = run(BPF_PSEUDO_MAP_VALUE, 1, 0, true);
    EXPECT_EQ(hash_value.status, S::Fault);
    EXPECT_NE(hash_value.reason.find("not an array"), std::string::npos) << hash_value.reason;
    for (uint8_t src : {BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE}) {
        const ExecResult missing = run(src, 3, 0, false);
        EXPECT_EQ(missing.status, S::Fault);
        EXPECT_EQ(missing.reason, "ld_imm64 names map 3 (program has 3)");
    }
}

TEST(InterpCost, BpfForCyclesFollowTheModel) {
    // Per-iteration cycles from two runs: x86-64 issue-bound, arm64 bound by the 6-cycle chain.
    auto per_iter = [](const Program& p, const CostParams& cp) {
        double c[2];
        for (int k = 0; k < 2; ++k) {
            ExecInput in;
            set_nr_loops(in, 1000u * static_cast<uint32_t>(k + 1));
            CostModel m(cp);
            ExecOptions o;
            o.cost = &m;
            ExecResult r = execute(p, in, arch_x86_64(), o);
            EXPECT_EQ(r.status, S::Ok);
            c[k] = r.cycles;
        }
        return (c[1] - c[0]) / 1000.0;
    };
    double x = per_iter(bpf_for_program(), cost_x86_64());
    double a = per_iter(bpf_for_program(), cost_arm64());
    EXPECT_NEAR(a, 6.0, 0.3);                       // L_sf + L_add
    EXPECT_GT(x, 2.3 + 15.0 / 6);                   // call overhead + issue
    EXPECT_LT(x, 2.3 + 20.0 / 6);
    double l = per_iter(bpf_loop_program(true), cost_x86_64());
    EXPECT_NEAR(l, 3.0 + 8.0 / 6, 0.4);
}

}  // namespace
}  // namespace patchfuzz::interp

namespace patchfuzz::interp {
namespace {

// A tracing program with two arguments (2, 3) and a return value (4) in its ctx: the trampoline
// layout of bpf_trace.c's get_func_* helpers (ctx[-8] = nr_args, ctx[-16] = the traced ip).
Program tracing(std::vector<Insn> insns, TraceAttach attach) {
    Program p = make_program(std::move(insns));
    p.prog_type = BPF_PROG_TYPE_TRACING;
    p.attach = attach;
    p.attach_btf_vlen = 2;
    return p;
}
ExecInput tracing_args() {
    ExecInput in;
    in.ctx.assign(24, 0);
    in.ctx[0] = 2;   // arg 0
    in.ctx[8] = 3;   // arg 1
    in.ctx[16] = 4;  // return value (fexit)
    return in;
}

TEST(InterpTracing, GetFuncArgRetCntIpFromTheTrampolineWords) {
    // r6 = ctx; get_func_arg(ctx, N, fp-8); r7 = r0; r0 = *(fp-8) + r7 * 256
    auto arg = [](uint64_t n) {
        return cat(cat({mov64_reg(6, 1)}, ld64(2, n)),
                   {mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -8), st(BPF_DW, 10, -8, 0), mov64_reg(1, 6),
                    call_helper(BPF_FUNC_get_func_arg), mov64_reg(7, 0), ldx(BPF_DW, 0, 10, -8), alu64_imm(BPF_LSH, 7, 8),
                    alu64_reg(BPF_ADD, 0, 7), exit_insn()});
    };
    ExecResult a1 = execute(tracing(arg(1), TraceAttach::Fentry), tracing_args(), arch_x86_64());
    ASSERT_EQ(a1.status, S::Ok) << a1.reason;
    EXPECT_EQ(a1.r0, 3u);  // argument 1, helper returned 0
    // The helper's n is a u32: bits 32-63 are not part of the index.
    ExecResult a1hi = execute(tracing(arg(0x100000001ULL), TraceAttach::Fentry), tracing_args(), arch_x86_64());
    ASSERT_EQ(a1hi.status, S::Ok) << a1hi.reason;
    EXPECT_EQ(a1hi.r0, 3u);
    // n >= nr_args: -EINVAL, the value untouched (0).
    ExecResult a2 = execute(tracing(arg(2), TraceAttach::Fentry), tracing_args(), arch_x86_64());
    ASSERT_EQ(a2.status, S::Ok) << a2.reason;
    EXPECT_EQ(a2.r0, static_cast<uint64_t>(-int64_t{EINVAL}) << 8);

    auto ret = [](TraceAttach at) {
        return tracing({mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -8), st(BPF_DW, 10, -8, 0), call_helper(BPF_FUNC_get_func_ret),
                        mov64_reg(7, 0), ldx(BPF_DW, 0, 10, -8), alu64_imm(BPF_LSH, 7, 8), alu64_reg(BPF_ADD, 0, 7), exit_insn()},
                       at);
    };
    EXPECT_EQ(execute(ret(TraceAttach::Fexit), tracing_args(), arch_x86_64()).r0, 4u);  // the word after the args
    EXPECT_EQ(execute(ret(TraceAttach::Fentry), tracing_args(), arch_x86_64()).r0,
              static_cast<uint64_t>(-int64_t{EOPNOTSUPP}) << 8);
    EXPECT_EQ(execute(tracing({call_helper(BPF_FUNC_get_func_arg_cnt), exit_insn()}, TraceAttach::Fentry), tracing_args(),
                      arch_x86_64())
                  .r0,
              2u);
    EXPECT_EQ(execute(tracing({call_helper(BPF_FUNC_get_func_ip), exit_insn()}, TraceAttach::Fentry), tracing_args(), arch_x86_64()).r0,
              kTracedFuncIp);
    // The words really are below ctx, where the inlined code reads them.
    EXPECT_EQ(execute(tracing({ldx(BPF_DW, 0, 1, -8), exit_insn()}, TraceAttach::Fentry), tracing_args(), arch_x86_64()).r0, 2u);
    EXPECT_EQ(execute(tracing({ldx(BPF_DW, 0, 1, -16), exit_insn()}, TraceAttach::Fentry), tracing_args(), arch_x86_64()).r0,
              kTracedFuncIp);
    // Outside tracing programs these helpers have no model: the oracle skips, never guesses.
    Program sk = make_program({mov64_reg(6, 1), call_helper(BPF_FUNC_get_func_arg_cnt), exit_insn()});
    EXPECT_EQ(execute(sk, {}, arch_x86_64()).status, S::Unsupported);
}

}  // namespace
}  // namespace patchfuzz::interp

namespace patchfuzz::interp {
namespace {

// ---- map-in-map outer maps ---------------------------------------------------------------------
// Inner map n is the opaque pointer 0xffff700000000000 + n * 0x1000 (map_model.hpp); the input
// names inner maps by number in the 4-byte value (exec_input.hpp).
constexpr uint64_t kInner2 = 0xffff700000002000ULL, kInner3 = 0xffff700000003000ULL;

// r0 = bpf_map_lookup_elem(map 0, &key) for a u32 key.
Program outer_lookup(uint32_t type, uint32_t key, int32_t helper = BPF_FUNC_map_lookup_elem) {
    Program p = make_program({st(BPF_W, 10, -4, static_cast<int32_t>(key)), st(BPF_W, 10, -8, 2), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0),
                              ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -8),
                              mov64_imm(4, 0), call_helper(helper), exit_insn()});
    p.maps.push_back(MapDef{.type = type, .key_size = 4, .value_size = 4, .max_entries = 4});
    return p;
}

TEST(InterpMapInMap, ArrayOfMapsLookupReturnsTheInnerMapPointer) {
    // Slots: 1 -> inner map 3, 2 -> none (explicitly), 0 and 3 not given (empty).
    ExecInput in;
    in.maps = {{MapEntry{{1, 0, 0, 0}, {3, 0, 0, 0}}, MapEntry{{2, 0, 0, 0}, {0, 0, 0, 0}}}};
    const std::pair<uint32_t, uint64_t> want[] = {{0, 0}, {1, kInner3}, {2, 0}, {3, 0}, {4, 0}, {0xffffffffu, 0}};
    for (auto [key, r0] : want) {
        ExecResult r = execute(outer_lookup(BPF_MAP_TYPE_ARRAY_OF_MAPS, key), in, arch_x86_64());
        ASSERT_EQ(r.status, S::Ok) << key << ": " << r.reason;
        EXPECT_EQ(r.r0, r0) << "key " << key;
    }
    // The 8-byte slot lies where array_of_map_gen_lookup reads it: map + 320 + 8 * index.
    Program direct = make_program({ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), ldx(BPF_DW, 0, 1, 320 + 8), exit_insn()});
    direct.maps = outer_lookup(BPF_MAP_TYPE_ARRAY_OF_MAPS, 0).maps;
    ExecResult d = execute(direct, in, arch_x86_64());
    ASSERT_EQ(d.status, S::Ok) << d.reason;
    EXPECT_EQ(d.r0, kInner3);
    // User-space view: every slot, 4-byte inner map numbers.
    const std::vector<MapEntry> entries = {MapEntry{{0, 0, 0, 0}, {0, 0, 0, 0}}, MapEntry{{1, 0, 0, 0}, {3, 0, 0, 0}},
                                           MapEntry{{2, 0, 0, 0}, {0, 0, 0, 0}}, MapEntry{{3, 0, 0, 0}, {0, 0, 0, 0}}};
    ASSERT_EQ(d.maps.size(), 1u);
    EXPECT_EQ(d.maps[0], entries);
    // Another inner map in slot 1: another pointer and another digest.
    ExecInput other = in;
    other.maps[0][0].value[0] = 2;
    ExecResult o = execute(outer_lookup(BPF_MAP_TYPE_ARRAY_OF_MAPS, 1), other, arch_x86_64());
    EXPECT_EQ(o.r0, kInner2);
    EXPECT_NE(o.map_digests, d.map_digests);
}

TEST(InterpMapInMap, HashOfMapsLookupAndElementLayout) {
    // Key 1 -> inner map 2; key 2 given with 0 (no inner map: no element).
    ExecInput in;
    in.maps = {{MapEntry{{1, 0, 0, 0}, {2, 0, 0, 0}}, MapEntry{{2, 0, 0, 0}, {0, 0, 0, 0}}}};
    for (auto [key, r0] : {std::pair<uint32_t, uint64_t>{1, kInner2}, {2, 0}, {3, 0}}) {
        ExecResult r = execute(outer_lookup(BPF_MAP_TYPE_HASH_OF_MAPS, key), in, arch_x86_64());
        ASSERT_EQ(r.status, S::Ok) << r.reason;
        EXPECT_EQ(r.r0, r0) << "key " << key;
        ASSERT_EQ(r.maps.size(), 1u);
        EXPECT_EQ(r.maps[0], (std::vector<MapEntry>{MapEntry{{1, 0, 0, 0}, {2, 0, 0, 0}}}));
    }
    // __htab_map_lookup_elem gives the element; the pointer is 48 + round_up(4, 8) = 56 bytes in.
    Program p = outer_lookup(BPF_MAP_TYPE_HASH_OF_MAPS, 1, passes::kInternalHtabLookup);
    p.insns.back() = ldx(BPF_DW, 0, 0, 56);
    p.insns.push_back(exit_insn());
    p.aux.resize(p.insns.size());
    p.subprogs.back().start = p.len();
    ExecResult e = execute(p, in, arch_x86_64());
    ASSERT_EQ(e.status, S::Ok) << e.reason;
    EXPECT_EQ(e.r0, kInner2);
}

TEST(InterpMapInMap, ProgramsCannotChangeOuterMapsOrUseInnerMaps) {
    ExecInput in;
    in.maps = {{MapEntry{{1, 0, 0, 0}, {3, 0, 0, 0}}}};
    for (uint32_t type : {BPF_MAP_TYPE_ARRAY_OF_MAPS, BPF_MAP_TYPE_HASH_OF_MAPS})
        for (int32_t helper : {BPF_FUNC_map_update_elem, BPF_FUNC_map_delete_elem}) {
            ExecResult r = execute(outer_lookup(type, 1, helper), in, arch_x86_64());
            EXPECT_EQ(r.status, S::Fault) << type << "/" << helper;
            EXPECT_NE(r.reason.find("map-in-map"), std::string::npos) << r.reason;
        }
    // A lookup in the inner map: not modelled (the oracle skips), not a crash.
    Program p = make_program({st(BPF_W, 10, -4, 1), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10),
                              alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem), mov64_reg(1, 0), mov64_reg(2, 10),
                              alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem), exit_insn()});
    p.maps.push_back(MapDef{.type = BPF_MAP_TYPE_ARRAY_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 4});
    ExecResult r = execute(p, in, arch_x86_64());
    EXPECT_EQ(r.status, S::Unsupported);
    EXPECT_NE(r.reason.find("inner map 3"), std::string::npos) << r.reason;
    // Dereferencing an inner map pointer faults.
    Program q = outer_lookup(BPF_MAP_TYPE_ARRAY_OF_MAPS, 1);
    q.insns.back() = ldx(BPF_DW, 0, 0, 0);
    q.insns.push_back(exit_insn());
    q.aux.resize(q.insns.size());
    q.subprogs.back().start = q.len();
    EXPECT_EQ(execute(q, in, arch_x86_64()).status, S::Fault);
}

// ---- LD_ABS / LD_IND ---------------------------------------------------------------------------
Insn ld_abs(uint8_t size, int32_t imm) { return make(BPF_LD | BPF_ABS | size, 0, 0, 0, imm); }
Insn ld_ind(uint8_t size, uint8_t src, int32_t imm) { return make(BPF_LD | BPF_IND | size, 0, src, 0, imm); }
ExecInput packet8() {
    ExecInput in;
    in.packet = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0};
    return in;
}
// r6 = ctx; `prefix`; `ld`; r0 += 0x1000; exit. An in-packet load returns value + 0x1000, an
// out-of-packet one ends the program with 0.
ExecResult run_ld(const Insn& ld, std::vector<Insn> prefix = {}) {
    std::vector<Insn> p = cat(cat({mov64_reg(6, 1)}, prefix), {ld, alu64_imm(BPF_ADD, 0, 0x1000), exit_insn()});
    Program pr = make_program(p);
    pr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    return execute(pr, packet8(), arch_x86_64());
}

TEST(InterpLdAbs, NetworkByteOrderZeroExtended) {
    EXPECT_EQ(run_ld(ld_abs(BPF_B, 0)).r0, 0x1000u + 0x12);
    EXPECT_EQ(run_ld(ld_abs(BPF_B, 7)).r0, 0x1000u + 0xf0);
    EXPECT_EQ(run_ld(ld_abs(BPF_H, 0)).r0, 0x1000u + 0x1234);
    EXPECT_EQ(run_ld(ld_abs(BPF_H, 6)).r0, 0x1000u + 0xdef0);
    EXPECT_EQ(run_ld(ld_abs(BPF_W, 0)).r0, 0x1000u + 0x12345678);
    // Top bit set: zero-extended, not a negative "error".
    EXPECT_EQ(run_ld(ld_abs(BPF_W, 4)).r0, 0x1000u + 0x9abcdef0);
    // r0's old upper half is gone.
    EXPECT_EQ(run_ld(ld_abs(BPF_B, 1), ld64(0, 0xffffffffffffffffULL)).r0, 0x1000u + 0x34);
}

TEST(InterpLdAbs, OutOfPacketReturnsZeroAtOnce) {
    for (const Insn& ld : {ld_abs(BPF_B, 8), ld_abs(BPF_H, 7), ld_abs(BPF_W, 5), ld_abs(BPF_W, -1), ld_abs(BPF_B, INT_MIN),
                           ld_abs(BPF_B, -0x100000), ld_abs(BPF_W, INT_MAX)}) {
        ExecResult r = run_ld(ld);
        ASSERT_EQ(r.status, S::Ok) << r.reason;
        EXPECT_EQ(r.r0, 0u) << "imm " << ld.imm;
    }
    // Only the current function returns: a subprog's load fails, the caller goes on (r0 = 0 + 5).
    Program p = make_program({mov64_reg(6, 1), call_pseudo(2), alu64_imm(BPF_ADD, 0, 5), exit_insn(), ld_abs(BPF_B, 100),
                              mov64_imm(0, 9), exit_insn()});
    ExecResult s = execute(p, packet8(), arch_x86_64());
    ASSERT_EQ(s.status, S::Ok) << s.reason;
    EXPECT_EQ(s.r0, 5u);
    // An empty packet has no byte 0.
    Program e = make_program({mov64_reg(6, 1), ld_abs(BPF_B, 0), alu64_imm(BPF_ADD, 0, 1), exit_insn()});
    EXPECT_EQ(execute(e, {}, arch_x86_64()).r0, 0u);
}

TEST(InterpLdAbs, IndirectOffsetIsA32BitSum) {
    EXPECT_EQ(run_ld(ld_ind(BPF_H, 7, 1), {mov64_imm(7, 3)}).r0, 0x1000u + 0x9abc);          // 3 + 1
    EXPECT_EQ(run_ld(ld_ind(BPF_W, 7, 1), ld64(7, 0x100000002ULL)).r0, 0x1000u + 0x789abcde);  // upper half ignored
    EXPECT_EQ(run_ld(ld_ind(BPF_B, 7, 3), {mov32_imm(7, -1)}).r0, 0x1000u + 0x56);           // 0xffffffff + 3 wraps to 2
    EXPECT_EQ(run_ld(ld_ind(BPF_B, 7, 0), {mov32_imm(7, -1)}).r0, 0u);                       // -1: outside
    EXPECT_EQ(run_ld(ld_ind(BPF_B, 7, -2), {mov64_imm(7, 9)}).r0, 0x1000u + 0xf0);           // 9 - 2 = 7
}

TEST(InterpLdAbs, ScratchRegistersAndTheSkb) {
    // R1-R5 are poisoned after the load, as after a call; R6-R9 survive.
    Program p = make_program({mov64_reg(6, 1), mov64_imm(2, 7), mov64_imm(8, 11), ld_abs(BPF_B, 0), mov64_reg(0, 2), exit_insn()});
    EXPECT_EQ(execute(p, packet8(), arch_x86_64()).r0, kCallPoison);
    Program q = make_program({mov64_reg(6, 1), mov64_imm(8, 11), ld_abs(BPF_B, 0), mov64_reg(0, 8), exit_insn()});
    EXPECT_EQ(execute(q, packet8(), arch_x86_64()).r0, 11u);
    // R6 must be the skb (ctx): anything else is a fault, not a guess.
    Program bad = make_program({mov64_imm(6, 0), ld_abs(BPF_B, 0), exit_insn()});
    ExecResult b = execute(bad, packet8(), arch_x86_64());
    EXPECT_EQ(b.status, S::Fault);
    EXPECT_NE(b.reason.find("r6"), std::string::npos) << b.reason;
    // There is no 8-byte form.
    Program dw = make_program({mov64_reg(6, 1), ld_abs(BPF_DW, 0), exit_insn()});
    EXPECT_EQ(execute(dw, packet8(), arch_x86_64()).status, S::Fault);
}

TEST(InterpLdAbs, SkbLoadHelpersReturnTheValueOrEfault) {
    // bpf_skb_load_helper_{8,16,32}_no_cache(skb = r1, offset = r2): -EFAULT (-14) outside.
    auto call = [](int32_t id, uint64_t off) {
        return execute(make_program(cat(ld64(2, off), {call_helper(id), exit_insn()})), packet8(), arch_x86_64());
    };
    EXPECT_EQ(call(passes::kInternalSkbLoad8, 3).r0, 0x78u);
    EXPECT_EQ(call(passes::kInternalSkbLoad16, 3).r0, 0x789au);
    EXPECT_EQ(call(passes::kInternalSkbLoad32, 4).r0, 0x9abcdef0u);
    EXPECT_EQ(call(passes::kInternalSkbLoad32, 5).r0, static_cast<uint64_t>(-14));
    EXPECT_EQ(call(passes::kInternalSkbLoad8, 0xffffffffULL).r0, static_cast<uint64_t>(-14));  // int offset -1
    EXPECT_EQ(call(passes::kInternalSkbLoad8, 0x100000001ULL).r0, 0x34u);                     // int offset 1
}

// ---- bpf_get_branch_snapshot -------------------------------------------------------------------
TEST(InterpBranchSnapshot, NoEntriesEnoentFlagsEinval) {
    // get_branch_snapshot(fp-32, 32, flags) over a stack of 0x5a bytes: never written.
    auto run_flags = [](int32_t flags) {
        ExecInput in;
        in.stack.assign(kStackSize, 0x5a);
        return execute(make_program({mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -32), mov64_imm(2, 32), mov64_imm(3, flags),
                                     call_helper(BPF_FUNC_get_branch_snapshot), exit_insn()}),
                       in, arch_x86_64());
    };
    for (int32_t flags : {0, 1, -1}) {
        ExecResult r = run_flags(flags);
        ASSERT_EQ(r.status, S::Ok) << r.reason;
        EXPECT_EQ(r.r0, flags == 0 ? 0xfffffffffffffffeULL : 0xffffffffffffffeaULL) << flags;  // -ENOENT, -EINVAL
        EXPECT_EQ(r.stack, std::vector<uint8_t>(kStackSize, 0x5a));
    }
    // perf_snapshot_branch_stack: no LBR, no entries.
    EXPECT_EQ(execute(make_program({mov64_imm(0, 7), call_helper(passes::kInternalPerfSnapshotBranchStack), exit_insn()}), {},
                      arch_x86_64())
                  .r0,
              0u);
}

TEST(InterpExecutable, ReusedResultsEqualFreshRuns) {
    // n = ctx[0] clock reads (each an effect), then a map update (another), r0 = sum of the clock
    // values. One Executable runs inputs with more and fewer effects, maps, stacks, ctx and packet
    // bytes into one reused result; each run must give what a fresh execution of the program
    // gives. So must a run whose set-up fails (an input with a wrong-sized map entry), which has
    // no final memory, and the runs after it.
    std::vector<Insn> p = {ldx(BPF_B, 6, 1, 0), mov64_imm(7, 0), jmp_imm(BPF_JEQ, 6, 0, 4), call_helper(BPF_FUNC_ktime_get_ns),
                           alu64_reg(BPF_ADD, 7, 0), alu64_imm(BPF_ADD, 6, -1), ja(-5), st(BPF_W, 10, -4, 1),
                           st(BPF_DW, 10, -16, 0x77), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 1), ldimm64_hi(0), mov64_reg(2, 10),
                           alu64_imm(BPF_ADD, 2, -4), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0),
                           call_helper(BPF_FUNC_map_update_elem), mov64_reg(0, 7), exit_insn()};
    Program prog = make_program(p);
    prog.maps.push_back(MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 12, .max_entries = 3});
    prog.maps.push_back(MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 4});
    auto entry = [](uint32_t k, std::vector<uint8_t> v) {
        return MapEntry{{static_cast<uint8_t>(k), 0, 0, 0}, std::move(v)};
    };
    std::vector<ExecInput> inputs(5);
    inputs[0].ctx = {3};
    inputs[0].maps = {{entry(1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}, {entry(5, {9, 9, 9, 9, 9, 9, 9, 9})}};
    inputs[1].ctx = {0, 4, 5, 6, 7, 8, 9, 10, 11};
    inputs[1].stack = {1, 2, 3};
    inputs[1].packet = {1, 2, 3, 4, 5};
    inputs[2].ctx = {7};
    inputs[2].maps = {{}, {entry(2, {1, 0, 0, 0, 0, 0, 0, 0}), entry(1, {2, 0, 0, 0, 0, 0, 0, 0})}};
    inputs[3].ctx = {1, 2};
    inputs[3].packet = {7, 7, 7};
    inputs[3].maps = {{entry(2, std::vector<uint8_t>(12, 0xee))}};
    inputs[4].ctx = {0};
    // The hash is full without key 1: the update fails.
    inputs[4].maps = {{}, {entry(2, std::vector<uint8_t>(8, 2)), entry(3, std::vector<uint8_t>(8, 3)),
                           entry(4, std::vector<uint8_t>(8, 4)), entry(5, std::vector<uint8_t>(8, 5))}};
    ExecInput wrong = inputs[1];
    wrong.maps = {{entry(0, {1, 2, 3})}};
    const Executable exe(prog, arch_x86_64());
    ExecResult reused;
    for (int round = 0; round < 2; ++round) {
        execute(exe, wrong, {}, reused);
        const ExecResult failed = execute(prog, wrong, arch_x86_64());
        EXPECT_EQ(failed.status, S::Unsupported);
        EXPECT_TRUE(failed.stack.empty() && failed.ctx.empty() && failed.packet.empty());
        expect_same_result(reused, failed);
        for (size_t k = 0; k < inputs.size(); ++k) {
            execute(exe, inputs[k], {}, reused);
            const ExecResult fresh = execute(prog, inputs[k], arch_x86_64());
            SCOPED_TRACE("input " + std::to_string(k));
            ASSERT_EQ(fresh.status, S::Ok) << fresh.reason;
            EXPECT_EQ(reused.status, fresh.status);
            EXPECT_EQ(reused.r0, fresh.r0);
            EXPECT_EQ(reused.steps, fresh.steps);
            EXPECT_EQ(reused.stack, fresh.stack);
            EXPECT_EQ(reused.ctx, fresh.ctx);
            EXPECT_EQ(reused.packet, fresh.packet);
            EXPECT_EQ(reused.maps, fresh.maps);
            EXPECT_EQ(reused.map_digests, fresh.map_digests);
            EXPECT_EQ(reused.effects, fresh.effects);
            // The effects themselves: the clock reads in order, then the update's result.
            const size_t n = inputs[k].ctx[0];
            ASSERT_EQ(fresh.effects.size(), n + 1);
            for (size_t c = 0; c < n; ++c) EXPECT_EQ(fresh.effects[c], "clock() = " + std::to_string(1000000000ULL + 1000 * (c + 1)));
            EXPECT_EQ(fresh.effects[n], std::string("map_update(map 1, flags 0x0) = ") + (k == 4 ? "-7" : "0"));
            EXPECT_EQ(fresh.r0, n * 1000000000ULL + 1000 * n * (n + 1) / 2);
        }
    }
    // Digests follow contents: the array of input 3 differs from input 1's (empty), the same
    // contents give the same digest.
    const ExecResult a = execute(exe, inputs[1]), b = execute(exe, inputs[3]), c = execute(exe, inputs[3]);
    EXPECT_NE(a.map_digests[0], b.map_digests[0]);
    EXPECT_EQ(b.map_digests, c.map_digests);
}

// A thread keeps its runs' map models for the next runs, which remake them for their own maps:
// a run must give what it gives on a fresh thread whatever maps the runs before it had (per-CPU
// or not, array, hash or LRU, in the same slot), and whatever they inserted.
TEST(InterpExecutable, MapModelsOfEarlierRunsLeaveNothing) {
    // r0 = the u64 of map 0 at key 0 (0 when absent); then key 1 updated to 0x55.
    const std::vector<Insn> lookup_then_update = {
        st(BPF_W, 10, -4, 0), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4),
        call_helper(BPF_FUNC_map_lookup_elem), mov64_imm(6, 0), jmp_imm(BPF_JEQ, 0, 0, 1), ldx(BPF_DW, 6, 0, 0),
        st(BPF_W, 10, -4, 1), st(BPF_DW, 10, -16, 0x55), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10),
        alu64_imm(BPF_ADD, 2, -4), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0),
        call_helper(BPF_FUNC_map_update_elem), mov64_reg(0, 6), exit_insn()};
    // r0 = the u32 at map 0's value 0 (an array's, through ld_imm64).
    const std::vector<Insn> direct_value = {ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0), ldimm64_hi(0), ldx(BPF_W, 0, 1, 0), exit_insn()};
    std::vector<Program> programs;
    for (const uint32_t type : {BPF_MAP_TYPE_PERCPU_ARRAY, BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_PERCPU_HASH, BPF_MAP_TYPE_HASH,
                                BPF_MAP_TYPE_LRU_PERCPU_HASH, BPF_MAP_TYPE_LRU_HASH}) {
        for (const std::vector<Insn>* insns : {&lookup_then_update, &direct_value}) {
            Program p = make_program(*insns);
            p.maps = {MapDef{.type = type, .key_size = 4, .value_size = 8, .max_entries = 2}};
            if (programs.size() % 3 == 0) p.maps.push_back(MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 8, .value_size = 4, .max_entries = 3});
            programs.push_back(std::move(p));
        }
    }
    ExecInput in;
    in.ctx.assign(8, 0);
    in.maps = {{MapEntry{{0, 0, 0, 0}, std::vector<uint8_t>(8, 0x11)}}, {MapEntry{std::vector<uint8_t>(8, 2), {1, 2, 3, 4}}}};
    std::vector<ExecResult> fresh(programs.size());
    for (size_t k = 0; k < programs.size(); ++k) std::thread([&] { fresh[k] = execute(programs[k], in, arch_x86_64()); }).join();
    EXPECT_EQ(fresh[0].status, S::Ok) << fresh[0].reason;
    EXPECT_EQ(fresh[2].r0, 0x1111111111111111u);  // the array's lookup
    EXPECT_EQ(fresh[3].r0, 0x11111111u);          // and its direct value
    for (int round = 0; round < 2; ++round)
        for (size_t k = 0; k < programs.size(); ++k) {
            SCOPED_TRACE("round " + std::to_string(round) + ", program " + std::to_string(k));
            expect_same_result(execute(programs[k], in, arch_x86_64()), fresh[k]);
        }
}

TEST(InterpExecutable, SharedDecodeRunsAsASeparateDecode) {
    // Executable(like, arch, marks) must run exactly as Executable(like.program(), arch, marks):
    // programs whose results differ between the profiles and marks (upper halves of 32-bit defs,
    // zext marks, MOVSX), with maps, invalid insns and ld_imm64; every pair of (profile, marks).
    const auto alu32 = cat(ld64(6, 0xabcd000000000001ULL), {alu32_imm(BPF_ADD, 6, 1), mov64_reg(0, 6), exit_insn()});
    Program marked = make_program(alu32);
    marked.aux[2].zext_dst = true;  // the ALU32 add: zext'ed under ZextMarks::Apply
    const Program movsx = make_program({ldx(BPF_W, 2, 1, 0), make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 2, 16, 0),
                                        make(BPF_ALU | BPF_MOV | BPF_X, 3, 2, 8, 0), alu64_reg(BPF_XOR, 0, 3), exit_insn()});
    // A bad insn on the path of inputs with ctx[0] != 0 (the fault's reason is decoded).
    const Program invalid = make_program({ldx(BPF_B, 2, 1, 0), mov64_imm(0, 1), jmp_imm(BPF_JEQ, 2, 0, 1),
                                          make(BPF_ALU64 | 0xe0 | BPF_K, 0, 0, 0, 0), exit_insn()});
    // An array-map update of a value with a 32-bit sum above an upper half a 32-bit JIT keeps.
    Program mapped = make_program(cat(ld64(7, 0xabcd000000000000ULL),
                                      {ldx(BPF_W, 8, 1, 0), alu32_reg(BPF_ADD, 7, 8), st(BPF_W, 10, -4, 0), stx(BPF_DW, 10, 7, -16),
                                       ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4),
                                       mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0),
                                       call_helper(BPF_FUNC_map_update_elem), mov64_reg(0, 7), exit_insn()}));
    mapped.aux[3].zext_dst = true;
    mapped.maps.push_back(MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2});
    std::vector<ExecInput> inputs(3);
    inputs[0].ctx = {0x80, 0xff, 0x7f, 0x80};
    inputs[1].ctx = {0, 0, 0, 0};
    inputs[1].regs[6] = 0x1234567800000000ULL;
    inputs[2].ctx = {5, 0x80, 0, 0};
    inputs[2].maps = {{MapEntry{{0, 0, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8}}}};
    struct Named {
        const char* name;
        const Program* prog;
        bool has_movsx;
    };
    const std::vector<Named> programs = {{"alu32", &marked, false}, {"movsx", &movsx, true}, {"invalid", &invalid, false},
                                         {"mapped", &mapped, false}};
    const std::vector<const ArchProfile*> arches = {&arch_x86_64(), &arch_arm64(), &arch_jit32()};
    const ZextMarks all_marks[] = {ZextMarks::Ignore, ZextMarks::Apply};
    ExecOptions traced;
    traced.trace_last = 4;
    size_t differing = 0;  // pairs of (profile, marks) whose results differ: the test must see some
    for (const Named& p : programs) {
        for (const ArchProfile* a1 : arches) {
            for (ZextMarks m1 : all_marks) {
                for (const ArchProfile* a2 : arches) {
                    for (ZextMarks m2 : all_marks) {
                        SCOPED_TRACE(std::string(p.name) + ": " + std::string(a1->name) + "/" + std::to_string(int(m1)) + " -> " +
                                     std::string(a2->name) + "/" + std::to_string(int(m2)));
                        auto like = std::make_unique<Executable>(*p.prog, *a1, m1);
                        const Executable shared(*like, *a2, m2);
                        EXPECT_EQ(&shared.program(), p.prog);
                        EXPECT_EQ(shared.arch().name, a2->name);
                        EXPECT_EQ(shared.zext_marks(), m2);
                        // Shared unless MOVSX decodes differently for the two profiles.
                        EXPECT_EQ(shared.shares_code_with(*like), !p.has_movsx || a1->movsx_as_mov == a2->movsx_as_mov);
                        const Executable separate(*p.prog, *a2, m2);
                        like.reset();  // the shared code outlives the Executable it came from
                        for (size_t k = 0; k < inputs.size(); ++k) {
                            SCOPED_TRACE("input " + std::to_string(k));
                            const ExecResult fresh = execute(*p.prog, inputs[k], *a2, {}, m2);
                            expect_same_result(execute(shared, inputs[k]), fresh);
                            expect_same_result(execute(separate, inputs[k]), fresh);
                            expect_same_result(execute(shared, inputs[k], traced), execute(separate, inputs[k], traced));
                            if (execute(*p.prog, inputs[k], *a1, {}, m1).r0 != fresh.r0) ++differing;
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(differing, 0u);
    // The programs do what the comparisons rely on: MOVSX differs on jit32, the mark and the
    // upper half matter, the invalid insn faults with its decoded reason.
    EXPECT_NE(execute(movsx, inputs[0], arch_x86_64()).r0, execute(movsx, inputs[0], arch_jit32()).r0);
    EXPECT_EQ(execute(marked, inputs[0], arch_jit32()).r0, 0xabcd000000000002ULL);
    EXPECT_EQ(execute(marked, inputs[0], arch_jit32(), {}, ZextMarks::Apply).r0, 2u);
    const ExecResult bad = execute(invalid, inputs[0], arch_x86_64());
    EXPECT_EQ(bad.status, S::Fault);
    EXPECT_EQ(bad.fault_pc, 3u);
    EXPECT_EQ(execute(invalid, inputs[1], arch_x86_64()).status, S::Ok);
    const ExecResult mj = execute(mapped, inputs[1], arch_jit32()), mx = execute(mapped, inputs[1], arch_x86_64());
    ASSERT_EQ(mj.status, S::Ok) << mj.reason;
    ASSERT_EQ(mx.status, S::Ok) << mx.reason;
    EXPECT_NE(mj.map_digests, mx.map_digests);
    EXPECT_EQ(mx.map_digests, execute(mapped, inputs[1], arch_jit32(), {}, ZextMarks::Apply).map_digests);
}

}  // namespace
}  // namespace patchfuzz::interp
