// The interpreter's reuse paths run as fresh ones: an Executable run on many inputs into one
// reused result, map models kept from earlier runs, and a decode shared by Executables of two
// profiles. No RapidCheck (runs on arm64 under qemu).
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
