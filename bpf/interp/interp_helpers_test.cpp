// Interpreter models: helpers (bpf_loop, clocks, maps, tail calls, the skb loads), kfuncs (the
// numeric iterator), map ld_imm64 forms, the tracing helpers, map-in-map outer maps, LD_ABS and
// LD_IND, and the cost model's loop charge. Expected values come from the kernel's helper
// semantics and docs/iterator-isa-arch.md tables, not from the interpreter. No RapidCheck (runs on
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
    Program p = outer_lookup(BPF_MAP_TYPE_HASH_OF_MAPS, 1, isa::kInternalHtabLookup);
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
    EXPECT_EQ(call(isa::kInternalSkbLoad8, 3).r0, 0x78u);
    EXPECT_EQ(call(isa::kInternalSkbLoad16, 3).r0, 0x789au);
    EXPECT_EQ(call(isa::kInternalSkbLoad32, 4).r0, 0x9abcdef0u);
    EXPECT_EQ(call(isa::kInternalSkbLoad32, 5).r0, static_cast<uint64_t>(-14));
    EXPECT_EQ(call(isa::kInternalSkbLoad8, 0xffffffffULL).r0, static_cast<uint64_t>(-14));  // int offset -1
    EXPECT_EQ(call(isa::kInternalSkbLoad8, 0x100000001ULL).r0, 0x34u);                     // int offset 1
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
    EXPECT_EQ(execute(make_program({mov64_imm(0, 7), call_helper(isa::kInternalPerfSnapshotBranchStack), exit_insn()}), {},
                      arch_x86_64())
                  .r0,
              0u);
}

}  // namespace
}  // namespace patchfuzz::interp
