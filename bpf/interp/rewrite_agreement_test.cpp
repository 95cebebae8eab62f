// The interpreter's models of what a rewrite replaces (helpers, LD_ABS/LD_IND) and of the internal
// functions the replacement calls must agree, or the execution oracle would report divergences
// of its own making: for every input, the original program (the helper call, the native packet
// load) and the same program with the sequence of bpf/passes in its place end alike, and both give
// the value the kernel's semantics give (written out here, not taken from the interpreter).
// Covers the map-in-map lookup inlines (array_of_map_gen_lookup, htab_of_map_gen_lookup),
// bpf_gen_ld_abs, the get_branch_snapshot inline, and the zext pass against ZextMarks::Apply (the
// execution oracle's reference for a JIT that needs explicit zexts).
//
// Links bpf/passes (see bpf/CMakeLists.txt); host-only like every RapidCheck test, so the BPF-only
// (arm64) build, which has no passes library, never builds it.
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <rapidcheck/gtest.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/passes/helper_call_inlines.hpp"
#include "bpf/passes/ld_abs.hpp"
#include "bpf/passes/map_lookup_inline.hpp"

namespace patchfuzz::interp {
namespace {
using namespace isa;
using S = ExecResult::Status;

// `p` with insn `at` replaced by `with` (a patch-local sequence whose jumps to "end" land on the
// insn after `at`). The programs here have no jumps across `at` and no subprogs.
Program splice(const Program& p, uint32_t at, const std::vector<Insn>& with) {
    std::vector<Insn> insns(p.insns.begin(), p.insns.begin() + at);
    insns.insert(insns.end(), with.begin(), with.end());
    insns.insert(insns.end(), p.insns.begin() + at + 1, p.insns.end());
    Program q = make_program(std::move(insns));
    q.prog_type = p.prog_type;
    q.maps = p.maps;
    return q;
}

const ArchProfile& arch_of(int k) { return k == 0 ? arch_x86_64() : k == 1 ? arch_arm64() : arch_jit32(); }

// ---- map-in-map lookups ------------------------------------------------------------------------
constexpr uint64_t inner(uint32_t n) { return n == 0 ? 0 : 0xffff700000000000ULL + uint64_t{n} * 0x1000; }

// r0 = bpf_map_lookup_elem(outer map, &key); the call is insn 5.
constexpr uint32_t kLookupAt = 5;
Program lookup_program(const MapDef& map, uint32_t key) {
    Program p = make_program({st(BPF_W, 10, -4, static_cast<int32_t>(key)), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0),
                              mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem), exit_insn()});
    p.maps.push_back(map);
    return p;
}

// Runs the helper and the inline on `in` for `key` on every profile; both must give `want`.
void expect_lookup(const MapDef& map, const ExecInput& in, uint32_t key, uint64_t want) {
    const Program orig = lookup_program(map, key);
    const std::vector<Insn> seq = passes::emit_map_lookup_inline(map, arch_x86_64());
    ASSERT_FALSE(seq.empty());
    const Program inl = splice(orig, kLookupAt, seq);
    for (int k = 0; k < 3; ++k) {
        const ExecResult a = execute(orig, in, arch_of(k)), b = execute(inl, in, arch_of(k));
        ASSERT_EQ(a.status, S::Ok) << a.reason;
        ASSERT_EQ(b.status, S::Ok) << b.reason;
        EXPECT_EQ(a.r0, want) << "helper, map type " << map.type << ", key " << key << ", " << arch_of(k).name;
        EXPECT_EQ(b.r0, want) << "inline, map type " << map.type << ", key " << key << ", " << arch_of(k).name;
        EXPECT_EQ(a.map_digests, b.map_digests);
    }
}

TEST(RewriteAgreement, ArrayOfMapsHitEmptyAndOutOfRange) {
    // 5 slots (index mask 7): 0 -> inner 1, 3 -> inner 4, 4 -> inner 1, the rest empty.
    for (bool bypass : {false, true}) {
        const MapDef m{.type = BPF_MAP_TYPE_ARRAY_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 5, .bypass_spec_v1 = bypass};
        ExecInput in;
        in.maps = {{MapEntry{{0, 0, 0, 0}, {1, 0, 0, 0}}, MapEntry{{3, 0, 0, 0}, {4, 0, 0, 0}}, MapEntry{{4, 0, 0, 0}, {1, 0, 0, 0}}}};
        expect_lookup(m, in, 0, 0xffff700000001000ULL);
        expect_lookup(m, in, 1, 0);
        expect_lookup(m, in, 3, 0xffff700000004000ULL);
        expect_lookup(m, in, 4, 0xffff700000001000ULL);
        expect_lookup(m, in, 5, 0);   // == max_entries
        expect_lookup(m, in, 7, 0);   // inside the index mask, outside the map
        expect_lookup(m, in, 13, 0);  // 13 & 7 == 5
        expect_lookup(m, in, 0x80000000u, 0);
    }
}

TEST(RewriteAgreement, HashOfMapsHitAndMiss) {
    const MapDef m{.type = BPF_MAP_TYPE_HASH_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 4};
    ExecInput in;
    in.maps = {{MapEntry{{2, 0, 0, 0}, {3, 0, 0, 0}}, MapEntry{{6, 0, 0, 0}, {9, 0, 0, 0}}}};
    expect_lookup(m, in, 2, 0xffff700000003000ULL);
    expect_lookup(m, in, 6, 0xffff700000009000ULL);
    expect_lookup(m, in, 0, 0);
    expect_lookup(m, in, 3, 0);
}

RC_GTEST_PROP(RewriteAgreement, MapInMapLookupsAgreeOnAnyContents,
              (bool hash, bool bypass, uint8_t max_entries, std::vector<uint8_t> slots, uint32_t key_pick)) {
    MapDef m{.type = hash ? BPF_MAP_TYPE_HASH_OF_MAPS : BPF_MAP_TYPE_ARRAY_OF_MAPS, .key_size = 4, .value_size = 4,
             .max_entries = 1u + max_entries % 9, .bypass_spec_v1 = bypass};
    // Slot k of the input holds inner map slots[k] % 5 (0: none), keys 0..11.
    ExecInput in;
    in.maps.resize(1);
    std::vector<uint32_t> held(12, 0);
    uint32_t in_hash = 0;
    for (uint32_t k = 0; k < slots.size() && k < 12; ++k) {
        const uint32_t n = slots[k] % 5;
        in.maps[0].push_back(MapEntry{{static_cast<uint8_t>(k), 0, 0, 0}, {static_cast<uint8_t>(n), 0, 0, 0}});
        // The kernel's semantics: an array slot past max_entries cannot be written; a hash takes
        // new keys while it has room.
        if (hash ? (n != 0 && in_hash < m.max_entries) : k < m.max_entries) {
            held[k] = n;
            in_hash += hash && n != 0;
        }
    }
    const uint32_t key = key_pick % 4 == 0 ? key_pick : key_pick % 12;
    const uint64_t want = key < 12 ? inner(held[key]) : 0;
    const Program orig = lookup_program(m, key);
    const Program inl = splice(orig, kLookupAt, passes::emit_map_lookup_inline(m, arch_x86_64()));
    for (int k = 0; k < 3; ++k) {
        const ExecResult a = execute(orig, in, arch_of(k)), b = execute(inl, in, arch_of(k));
        RC_ASSERT(a.status == S::Ok);
        RC_ASSERT(b.status == S::Ok);
        RC_ASSERT(a.r0 == want);
        RC_ASSERT(b.r0 == want);
        RC_ASSERT(a.map_digests == b.map_digests);
    }
}

// ---- LD_ABS / LD_IND and bpf_gen_ld_abs --------------------------------------------------------
// r6 = ctx; r7 = x; <ld> (insn 3); r0 += 1; exit.
constexpr uint32_t kLdAt = 3;
Program ld_program(const Insn& ld, uint64_t x) {
    Program p = make_program({mov64_reg(6, 1), ldimm64_lo(7, 0, static_cast<int32_t>(static_cast<uint32_t>(x))),
                              ldimm64_hi(static_cast<int32_t>(x >> 32)), ld, alu64_imm(BPF_ADD, 0, 1), exit_insn()});
    p.prog_type = BPF_PROG_TYPE_SCHED_CLS;
    return p;
}

// Classic BPF: offset k (+ X, a 32-bit sum) as a signed int; in the packet: big-endian bytes,
// then r0 + 1; outside: the program returns 0.
uint64_t ld_want(const std::vector<uint8_t>& pkt, uint32_t bytes, bool ind, int32_t imm, uint64_t x) {
    const int32_t off = static_cast<int32_t>(static_cast<uint32_t>(imm) + (ind ? static_cast<uint32_t>(x) : 0u));
    if (off < 0 || static_cast<int64_t>(off) + bytes > static_cast<int64_t>(pkt.size())) return 0;
    uint64_t v = 0;
    for (uint32_t k = 0; k < bytes; ++k) v = v * 256 + pkt[static_cast<size_t>(off) + k];
    return v + 1;
}

void expect_ld(const std::vector<uint8_t>& pkt, uint8_t size, bool ind, int32_t imm, uint64_t x) {
    const Insn ld = make(BPF_LD | (ind ? BPF_IND : BPF_ABS) | size, 0, ind ? 7 : 0, 0, imm);
    const uint32_t bytes = size == BPF_B ? 1 : size == BPF_H ? 2 : 4;
    const Program orig = ld_program(ld, x);
    const Program rw = splice(orig, kLdAt, passes::emit_gen_ld_abs(ld));
    ExecInput in;
    in.packet = pkt;
    const uint64_t want = ld_want(pkt, bytes, ind, imm, x);
    // 64-bit profiles only: on a 32-bit JIT the sequence's `w0 ^= w0` needs the zero extension
    // the zext pass adds after it (the verifier marks patched 32-bit defs zext_dst), which the
    // pipeline does and a bare splice does not.
    for (int k = 0; k < 2; ++k) {
        const ExecResult a = execute(orig, in, arch_of(k)), b = execute(rw, in, arch_of(k));
        ASSERT_EQ(a.status, S::Ok) << a.reason;
        ASSERT_EQ(b.status, S::Ok) << b.reason;
        EXPECT_EQ(a.r0, want) << "native, " << bytes << " bytes at " << imm << (ind ? " + x" : "") << ", " << arch_of(k).name;
        EXPECT_EQ(b.r0, want) << "rewritten, " << bytes << " bytes at " << imm << (ind ? " + x" : "") << ", " << arch_of(k).name;
    }
}

TEST(RewriteAgreement, LdAbsInAndOutOfThePacket) {
    const std::vector<uint8_t> pkt = {0x01, 0x80, 0xff, 0x7f, 0x00, 0xa5};
    expect_ld(pkt, BPF_B, false, 1, 0);   // 0x80 + 1
    expect_ld(pkt, BPF_H, false, 1, 0);   // 0x80ff + 1
    expect_ld(pkt, BPF_W, false, 2, 0);   // 0xff7f00a5 + 1: top bit set, still a value
    expect_ld(pkt, BPF_W, false, 3, 0);   // one byte short
    expect_ld(pkt, BPF_B, false, 6, 0);   // == len
    expect_ld(pkt, BPF_B, false, -1, 0);
    expect_ld(pkt, BPF_H, false, INT_MIN, 0);
    expect_ld(pkt, BPF_B, false, -0x200000, 0);  // SKF_LL_OFF: no link-layer header in the model
    expect_ld({}, BPF_B, false, 0, 0);
}

TEST(RewriteAgreement, LdIndUsesTheLow32BitsOfTheSum) {
    const std::vector<uint8_t> pkt = {0x01, 0x80, 0xff, 0x7f, 0x00, 0xa5};
    expect_ld(pkt, BPF_H, true, 2, 2);                      // bytes 4, 5
    expect_ld(pkt, BPF_B, true, 0, 0xdeadbeef00000005ULL);  // upper half of X ignored
    expect_ld(pkt, BPF_B, true, 3, 0xffffffffULL);          // -1 + 3 = 2
    expect_ld(pkt, BPF_W, true, -4, 6);                     // 2
    expect_ld(pkt, BPF_B, true, 1, 0x7fffffffULL);          // wraps to INT_MIN: outside
    expect_ld(pkt, BPF_W, true, 0, 0x100000000ULL);         // X = 2^32: offset 0
}

RC_GTEST_PROP(RewriteAgreement, LdAbsNativeAndRewrittenAgree,
              (std::vector<uint8_t> pkt, uint8_t size_pick, bool ind, int32_t imm_raw, uint64_t x_raw, uint8_t shape)) {
    if (pkt.size() > 24) pkt.resize(24);
    const uint8_t size = size_pick % 3 == 0 ? BPF_B : size_pick % 3 == 1 ? BPF_H : BPF_W;
    // Mostly offsets near the packet, sometimes anything.
    const int32_t imm = shape & 1 ? imm_raw : static_cast<int32_t>(imm_raw % 30) - 4;
    const uint64_t x = shape & 2 ? x_raw : (x_raw & 0xffffffff00000000ULL) | (x_raw % 20);
    expect_ld(pkt, size, ind, imm, x);
}

// ---- bpf_get_branch_snapshot ------------------------------------------------------------------
// r1 = fp-32; r2 = size; r3 = flags; call (insn 5, after the two-slot ld_imm64 of r3); exit.
constexpr uint32_t kSnapAt = 5;
Program snapshot_program(uint32_t size, uint64_t flags) {
    return make_program({mov64_reg(1, 10), alu64_imm(BPF_ADD, 1, -32), mov32_imm(2, static_cast<int32_t>(size)),
                         ldimm64_lo(3, 0, static_cast<int32_t>(static_cast<uint32_t>(flags))), ldimm64_hi(static_cast<int32_t>(flags >> 32)),
                         call_helper(BPF_FUNC_get_branch_snapshot), exit_insn()});
}

void expect_snapshot(uint32_t size, uint64_t flags) {
    const Program orig = snapshot_program(size, flags);
    const Program inl = splice(orig, kSnapAt, passes::emit_get_branch_snapshot());
    ExecInput in;
    in.stack.assign(kStackSize, 0x3c);
    const uint64_t want = flags != 0 ? static_cast<uint64_t>(-int64_t{EINVAL}) : static_cast<uint64_t>(-int64_t{ENOENT});
    for (int k = 0; k < 3; ++k) {
        const ExecResult a = execute(orig, in, arch_of(k)), b = execute(inl, in, arch_of(k));
        ASSERT_EQ(a.status, S::Ok) << a.reason;
        ASSERT_EQ(b.status, S::Ok) << b.reason;
        EXPECT_EQ(a.r0, want) << "helper, size " << size << ", flags " << flags << ", " << arch_of(k).name;
        EXPECT_EQ(b.r0, want) << "inline, size " << size << ", flags " << flags << ", " << arch_of(k).name;
        EXPECT_EQ(a.stack, in.stack);  // nothing written: no entries
        EXPECT_EQ(b.stack, in.stack);
    }
}

TEST(RewriteAgreement, GetBranchSnapshotFlagsAndNoEntries) {
    expect_snapshot(32, 0);
    expect_snapshot(0, 0);
    expect_snapshot(24, 1);
    expect_snapshot(32, 0x100000000ULL);  // u64 flags: the upper half counts
    expect_snapshot(0, ~0ULL);
}

RC_GTEST_PROP(RewriteAgreement, GetBranchSnapshotAgrees, (uint32_t size, uint64_t flags, bool zero_flags)) {
    const Program orig = snapshot_program(size, zero_flags ? 0 : flags);
    const Program inl = splice(orig, kSnapAt, passes::emit_get_branch_snapshot());
    for (int k = 0; k < 3; ++k) {
        const ExecResult a = execute(orig, {}, arch_of(k)), b = execute(inl, {}, arch_of(k));
        RC_ASSERT(a.status == S::Ok);
        RC_ASSERT(b.status == S::Ok);
        RC_ASSERT(a.r0 == b.r0);
        RC_ASSERT(a.stack == b.stack);
    }
}

// ---- zext_dst marks ----------------------------------------------------------------------------
// r2 = 0xffffffff00000005; w2 += 1 (marked); r0 = r2: a zext JIT keeps the upper half of a 32-bit
// def unless the verifier's zext follows it, so the mark alone decides r0 there.
TEST(RewriteAgreement, ZextMarksDecideTheUpperHalfOnAZextJit) {
    Program p = make_program({ldimm64_lo(2, 0, 5), ldimm64_hi(-1), alu32_imm(BPF_ADD, 2, 1), mov64_reg(0, 2), exit_insn()});
    ExecInput in;
    EXPECT_EQ(execute(p, in, arch_jit32()).r0, 0xffffffff00000006ULL);
    EXPECT_EQ(execute(p, in, arch_jit32(), {}, ZextMarks::Apply).r0, 0xffffffff00000006ULL);  // no mark yet
    p.aux[2].zext_dst = true;
    EXPECT_EQ(execute(p, in, arch_jit32()).r0, 0xffffffff00000006ULL);
    EXPECT_EQ(execute(p, in, arch_jit32(), {}, ZextMarks::Apply).r0, 6u);
    EXPECT_EQ(execute(p, in, arch_x86_64(), {}, ZextMarks::Apply).r0, 6u);
    // A 32-bit fetch-add defines its source register, whose upper half the JIT keeps as well.
    Program f = make_program({ldimm64_lo(3, 0, 7), ldimm64_hi(-1), st(BPF_DW, 10, -8, 40),
                              make(BPF_STX | BPF_ATOMIC | BPF_W, 10, 3, -8, BPF_ADD | BPF_FETCH), mov64_reg(0, 3), exit_insn()});
    f.aux[4].zext_dst = true;
    EXPECT_EQ(execute(f, in, arch_jit32(), {}, ZextMarks::Apply).r0, 40u);
}

// Straight-line code of 32- and 64-bit defs with random zext_dst marks on the 32-bit ones: the
// zext pass's output run as it is gives what the original gives with the marks applied, on the
// zext JIT; on x86_64 (implicit zero-extension) applying the marks changes nothing.
RC_GTEST_PROP(RewriteAgreement, ZextPassAgreesWithAppliedMarks, ()) {
    std::vector<Insn> code;
    for (uint8_t r = 1; r <= 5; ++r) {
        const auto v = *rc::gen::arbitrary<uint64_t>();
        code.push_back(ldimm64_lo(r, 0, static_cast<int32_t>(static_cast<uint32_t>(v))));
        code.push_back(ldimm64_hi(static_cast<int32_t>(static_cast<uint32_t>(v >> 32))));
    }
    code.push_back(stx(BPF_DW, 10, 1, -8));
    code.push_back(stx(BPF_DW, 10, 2, -16));
    const auto body = *rc::gen::container<std::vector<std::tuple<int, uint8_t, uint8_t, int32_t>>>(
        rc::gen::tuple(rc::gen::inRange(0, 10), rc::gen::inRange<uint8_t>(1, 6), rc::gen::inRange<uint8_t>(1, 6), rc::gen::arbitrary<int32_t>()));
    for (const auto& [kind, d, s, imm] : body) {
        switch (kind) {
            case 0: code.push_back(alu32_imm(BPF_ADD, d, imm)); break;
            case 1: code.push_back(alu32_reg(BPF_XOR, d, s)); break;
            case 2: code.push_back(mov32_reg(d, s)); break;
            case 3: code.push_back(alu32_imm(BPF_LSH, d, imm & 31)); break;
            case 4: code.push_back(alu64_reg(BPF_ADD, d, s)); break;
            case 5: code.push_back(alu64_imm(BPF_RSH, d, imm & 63)); break;
            case 6: code.push_back(ldx(BPF_W, d, 10, -8)); break;
            case 7: code.push_back(ldx(BPF_H, d, 10, -14)); break;
            case 8: code.push_back(make(BPF_STX | BPF_ATOMIC | BPF_W, 10, s, -16, BPF_XOR | BPF_FETCH)); break;
            case 9: code.push_back(make(BPF_ALU | BPF_NEG, d, 0, 0, 0)); break;
            default: code.push_back(make(BPF_ALU | BPF_END | BPF_TO_LE, d, 0, 0, 16)); break;
        }
        code.push_back(stx(BPF_DW, 10, d, -24));  // every def's 64 bits reach the stack
    }
    code.push_back(mov64_reg(0, 1));
    for (uint8_t r = 2; r <= 5; ++r) code.push_back(alu64_reg(BPF_XOR, 0, r));
    code.push_back(exit_insn());
    Program p = make_program(std::move(code));
    for (size_t i = 0; i < p.insns.size(); ++i)
        if (isa::insn_has_def32(p.insns[i])) p.aux[i].zext_dst = *rc::gen::arbitrary<bool>();

    passes::RewriteOptions ro;
    ro.arch = arch_jit32();
    ro.only = {"zext"};
    Program z = p;
    auto patcher = patch::make_patcher("incremental");
    RC_ASSERT(passes::run_pipeline(z, *patcher, ro).outcome.ok());

    ExecInput in;
    const ExecResult marked = execute(p, in, arch_jit32(), {}, ZextMarks::Apply), zexted = execute(z, in, arch_jit32());
    RC_ASSERT(marked.status == S::Ok);
    RC_ASSERT(zexted.status == S::Ok);
    RC_ASSERT(marked.r0 == zexted.r0);
    RC_ASSERT(marked.stack == zexted.stack);
    const ExecResult x86 = execute(p, in, arch_x86_64()), x86_marked = execute(p, in, arch_x86_64(), {}, ZextMarks::Apply);
    RC_ASSERT(x86.r0 == x86_marked.r0);
    RC_ASSERT(x86.stack == x86_marked.stack);
}

}  // namespace
}  // namespace patchfuzz::interp
