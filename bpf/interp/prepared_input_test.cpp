// PreparedInput and what it rests on (Memory::save/restore, MapModel states): the runs of several
// programs on one input start from the set-up the first run saved. Every run must give exactly
// what a fresh execution gives, whatever the runs before it wrote, and a saved set-up must never
// serve another input or a program whose set-up differs.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bpf/interp/interp.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/interp/same_result.hpp"
#include "bpf/isa/insn.hpp"

namespace patchfuzz::interp {
namespace {
using namespace isa;
using S = ExecResult::Status;

// Reads ctx[0], the stack's u64 at fp-24, array map 0's element 0 and whether hash map 1 holds key
// 7, then overwrites each of them (ctx[0] = 0x33, fp-24 = 0x2222, element 0 = 0x1111, key 7
// inserted); r0 = the sum of what it read (key 7 counting 0x1000000). A run that started from what
// an earlier run left would read the written values.
std::vector<Insn> read_then_write() {
    return {ldx(BPF_B, 9, 1, 0), st(BPF_B, 1, 0, 0x33), ldx(BPF_DW, 8, 10, -24), st(BPF_DW, 10, -24, 0x2222),
            // array element 0
            st(BPF_W, 10, -4, 0), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4),
            call_helper(BPF_FUNC_map_lookup_elem), mov64_imm(6, 0), jmp_imm(BPF_JEQ, 0, 0, 2), ldx(BPF_DW, 6, 0, 0),
            st(BPF_DW, 0, 0, 0x1111),
            // hash key 7: looked up, then inserted
            st(BPF_W, 10, -4, 7), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 1), ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4),
            call_helper(BPF_FUNC_map_lookup_elem), mov64_imm(7, 0), jmp_imm(BPF_JEQ, 0, 0, 1), mov64_imm(7, 0x1000000),
            st(BPF_DW, 10, -16, 0x77), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 1), ldimm64_hi(0), mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -4),
            mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0), call_helper(BPF_FUNC_map_update_elem),
            mov64_reg(0, 6), alu64_reg(BPF_ADD, 0, 7), alu64_reg(BPF_ADD, 0, 8), alu64_reg(BPF_ADD, 0, 9), exit_insn()};
}

Program with_maps(std::vector<Insn> insns) {
    Program p = make_program(std::move(insns));
    p.maps = {MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4},
              MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 8},
              // Not used by the program: its per-element regions are part of the set-up too.
              MapDef{.type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 12, .max_entries = 3}};
    return p;
}

// ctx[0] = c, stack u64 at fp-24 = s << 16, array element 0 = a << 8, hash holding key 3.
ExecInput input(uint8_t c, uint8_t s, uint8_t a) {
    ExecInput in;
    in.ctx = {c, 0, 0, 0, 0, 0, 0, 0};
    in.stack.assign(kStackSize, 0);
    in.stack[kStackSize - 24 + 2] = s;
    in.packet = {1, 2, 3};
    in.maps = {{MapEntry{{0, 0, 0, 0}, {0, a, 0, 0, 0, 0, 0, 0}}},
               {MapEntry{{3, 0, 0, 0}, {9, 9, 9, 9, 9, 9, 9, 9}}},
               {MapEntry{{1, 0, 0, 0}, std::vector<uint8_t>(12, 0x5a)}}};
    in.cpu = 1;
    return in;
}
uint64_t expected_r0(uint8_t c, uint8_t s, uint8_t a) { return c + (uint64_t{s} << 16) + (uint64_t{a} << 8); }

TEST(InterpPreparedInput, RunsAfterARunThatWroteEverythingSeeTheInput) {
    const Program writer = with_maps(read_then_write());
    // Another program with the same set-up (one more insn in front): it restores what the first
    // run saved.
    std::vector<Insn> shifted = read_then_write();
    shifted.insert(shifted.begin(), mov64_imm(5, 0));
    const Program other = with_maps(shifted);
    const ExecInput in = input(5, 2, 1);
    const ExecResult fresh = execute(writer, in, arch_x86_64());
    ASSERT_EQ(fresh.status, S::Ok) << fresh.reason;
    ASSERT_EQ(fresh.r0, expected_r0(5, 2, 1));
    const Executable w(writer, arch_x86_64()), o(other, arch_x86_64());
    PreparedInput prepared(in);
    EXPECT_FALSE(prepared.has_setup());
    ExecResult r;
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        execute(w, prepared, {}, r);
        EXPECT_TRUE(prepared.has_setup());
        expect_same_result(r, fresh);
        execute(o, prepared, {}, r);
        EXPECT_EQ(r.r0, expected_r0(5, 2, 1));
        expect_same_result(r, execute(other, in, arch_x86_64()));
    }
    // What the runs wrote is in their results (so a leak would have shown above).
    EXPECT_EQ(r.ctx[0], 0x33);
    ASSERT_EQ(r.maps.size(), 3u);
    EXPECT_EQ(r.maps[1].size(), 2u);  // keys 3 and 7
}

TEST(InterpPreparedInput, AnotherInputIsNeverServedTheSavedSetUp) {
    const Program writer = with_maps(read_then_write());
    const Executable w(writer, arch_x86_64());
    ExecInput in = input(5, 2, 1);
    PreparedInput prepared(in);
    ExecResult r;
    execute(w, prepared, {}, r);
    ASSERT_EQ(r.r0, expected_r0(5, 2, 1));
    // A second input object, then the first one changed in place (as the oracle reuses one
    // generated input): each reset makes the next run build from what the input now holds.
    const ExecInput second = input(7, 3, 4);
    prepared.reset(second);
    EXPECT_FALSE(prepared.has_setup());
    execute(w, prepared, {}, r);
    EXPECT_EQ(r.r0, expected_r0(7, 3, 4));
    expect_same_result(r, execute(writer, second, arch_x86_64()));
    in = input(9, 6, 8);
    in.cpu = 3;
    in.maps[1].clear();
    in.maps[1].push_back(MapEntry{{7, 0, 0, 0}, {1, 1, 1, 1, 1, 1, 1, 1}});  // key 7 present from the start
    prepared.reset(in);
    for (int round = 0; round < 2; ++round) {
        execute(w, prepared, {}, r);
        EXPECT_EQ(r.r0, expected_r0(9, 6, 8) + 0x1000000);
        expect_same_result(r, execute(writer, in, arch_x86_64()));
    }
}

TEST(InterpPreparedInput, ProgramsWithAnotherSetUpBuildTheirOwn) {
    ExecInput in = input(5, 2, 1);
    in.maps[0][0].value[5] = 0x77;  // beyond the 4 bytes a narrower map 0 takes
    const Program writer = with_maps(read_then_write());
    // Map 0 a hash instead of an array (same sizes): other regions, other entries.
    Program rehashed = writer;
    rehashed.maps[0].type = BPF_MAP_TYPE_HASH;
    // Map 2 with more elements: more per-CPU regions.
    Program grown = writer;
    grown.maps[2].max_entries = 5;
    // Map 0 with shorter values (what its input entry holds beyond them is dropped), map 1 with
    // longer keys (its input entry no longer fits: the set-up fails).
    Program narrower = writer;
    narrower.maps[0].value_size = 4;
    Program rekeyed = writer;
    rekeyed.maps[1].key_size = 8;
    // Only names and flags differ: the set-up is the same (the models read the flags from their
    // own program's definitions).
    Program renamed = writer;
    renamed.maps[0].name = "other";
    renamed.maps[1].map_flags = BPF_F_NO_PREALLOC;
    renamed.maps[0].bypass_spec_v1 = true;
    // Tracing programs: the ctx starts after the trampoline words, ctx[-8] = the argument count.
    auto tracing = [](uint8_t vlen) {
        Program p = make_program({ldx(BPF_DW, 0, 1, -8), exit_insn()});
        p.prog_type = BPF_PROG_TYPE_TRACING;
        p.attach = TraceAttach::Fentry;
        p.attach_btf_vlen = vlen;
        return p;
    };
    const Program two = tracing(2), three = tracing(3);
    const std::vector<const Program*> order = {&writer, &rehashed, &writer, &grown, &two,     &three, &two,
                                               &writer, &three,    &narrower,  &writer, &rekeyed, &renamed, &writer};
    std::vector<Executable> exes;
    for (const Program* p : order) exes.emplace_back(*p, arch_x86_64());
    PreparedInput prepared(in);
    ExecResult r;
    for (size_t k = 0; k < order.size(); ++k) {
        SCOPED_TRACE("run " + std::to_string(k));
        execute(exes[k], prepared, {}, r);
        const ExecResult fresh = execute(*order[k], in, arch_x86_64());
        ASSERT_EQ(fresh.status, order[k] == &rekeyed ? S::Unsupported : S::Ok) << fresh.reason;
        expect_same_result(r, fresh);
    }
    // The differences the set-ups carry show in the results.
    EXPECT_EQ(execute(two, in, arch_x86_64()).r0, 2u);
    EXPECT_EQ(execute(three, in, arch_x86_64()).r0, 3u);
    EXPECT_NE(execute(rehashed, in, arch_x86_64()).maps[0], execute(writer, in, arch_x86_64()).maps[0]);
    EXPECT_NE(execute(grown, in, arch_x86_64()).maps[2], execute(writer, in, arch_x86_64()).maps[2]);
}

// A run that leaves the maps as set up takes their digests from the saved set-up, noted there by
// the first such run. Each of these programs changes the maps in one way only (or not at all), so
// a change that went unnoticed gives a stale digest: every run, in any order, must still give
// exactly what a fresh execution gives.
TEST(InterpPreparedInput, MapDigestsOfRunsThatChangeNoMap) {
    // r0 = lookup(map m, key k) (0 when absent: then straight to the exit), then `tail`.
    auto after_lookup = [](int32_t m, int32_t k, std::vector<Insn> tail) {
        std::vector<Insn> v = {st(BPF_W, 10, -4, k), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, m), ldimm64_hi(0), mov64_reg(2, 10),
                               alu64_imm(BPF_ADD, 2, -4), call_helper(BPF_FUNC_map_lookup_elem),
                               jmp_imm(BPF_JEQ, 0, 0, static_cast<int16_t>(tail.size()))};
        v.insert(v.end(), tail.begin(), tail.end());
        v.push_back(exit_insn());
        return with_maps(v);
    };
    // r1 = map m, r2 = fp-4 holding key k.
    auto map_and_key = [](int32_t m, int32_t k) {
        return std::vector<Insn>{st(BPF_W, 10, -4, k), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, m), ldimm64_hi(0), mov64_reg(2, 10),
                                 alu64_imm(BPF_ADD, 2, -4)};
    };
    std::vector<Insn> update = map_and_key(1, 5);
    for (Insn i : {st(BPF_DW, 10, -16, 0x55), mov64_reg(3, 10), alu64_imm(BPF_ADD, 3, -16), mov64_imm(4, 0),
                   call_helper(BPF_FUNC_map_update_elem), exit_insn()})
        update.push_back(i);
    std::vector<Insn> remove = map_and_key(1, 3);
    remove.push_back(call_helper(BPF_FUNC_map_delete_elem));
    remove.push_back(exit_insn());
    const std::vector<Program> programs = {
        with_maps({mov64_imm(0, 0), exit_insn()}),                   // changes nothing
        after_lookup(0, 0, {st(BPF_DW, 0, 0, 0x1234)}),               // array element 0, through its pointer
        after_lookup(2, 1, {st(BPF_B, 0, 11, 0x77)}),                 // per-CPU array element 1
        after_lookup(1, 3, {mov64_imm(6, 1), make(BPF_STX | BPF_DW | BPF_ATOMIC, 0, 6, 0, BPF_ADD)}),  // hash value, atomic add
        after_lookup(0, 0, {ldx(BPF_DW, 0, 0, 0)}),                   // reads only
        with_maps(update),                                            // inserts key 5
        with_maps(remove),                                            // deletes key 3
    };
    const ExecInput in = input(5, 2, 1);
    std::vector<ExecResult> fresh;
    for (const Program& p : programs) {
        fresh.push_back(execute(p, in, arch_x86_64()));
        ASSERT_EQ(fresh.back().status, S::Ok) << fresh.back().reason;
    }
    for (size_t k = 1; k < programs.size(); ++k) {
        const bool reader = k == 4;
        EXPECT_EQ(fresh[k].map_digests == fresh[0].map_digests, reader) << "program " << k;
    }
    std::vector<Executable> exes;
    for (const Program& p : programs) exes.emplace_back(p, arch_x86_64());
    // Each program first, the others after it, every one twice.
    for (size_t first = 0; first < programs.size(); ++first) {
        PreparedInput prepared(in);
        ExecResult r;
        for (size_t n = 0; n < 2 * programs.size(); ++n) {
            const size_t k = (first + n) % programs.size();
            SCOPED_TRACE("first " + std::to_string(first) + ", run " + std::to_string(n) + ": program " + std::to_string(k));
            execute(exes[k], prepared, {}, r);
            expect_same_result(r, fresh[k]);
        }
    }
}

// A set-up saved for a program of fewer maps keeps the saved state of the maps beyond them (their
// storage, for a later set-up of more maps): it must never be read, by a program of more maps
// either. Here it is the hash map 2 of an earlier input, whose keys differ from this input's.
TEST(InterpPreparedInput, ASetUpOfFewerMapsServesNoProgramOfMore) {
    Program three = make_program({mov64_imm(0, 0), exit_insn()});
    three.maps = {MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2},
                  MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2},
                  MapDef{.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 4}};
    Program two = three;
    two.maps.resize(2);
    auto with_hash_key = [](uint8_t key) {
        ExecInput in;
        in.ctx.assign(8, 0);
        in.maps = {{}, {}, {MapEntry{{key, 0, 0, 0}, std::vector<uint8_t>(8, key)}}};
        return in;
    };
    const ExecInput first = with_hash_key(1), second = with_hash_key(2);
    const Executable three_exe(three, arch_x86_64()), two_exe(two, arch_x86_64());
    PreparedInput prepared(first);
    ExecResult r;
    execute(three_exe, prepared, {}, r);
    expect_same_result(r, execute(three, first, arch_x86_64()));
    prepared.reset(second);
    execute(two_exe, prepared, {}, r);
    expect_same_result(r, execute(two, second, arch_x86_64()));
    execute(three_exe, prepared, {}, r);
    expect_same_result(r, execute(three, second, arch_x86_64()));
    ASSERT_EQ(r.maps.size(), 3u);
    ASSERT_EQ(r.maps[2].size(), 1u);
    EXPECT_EQ(r.maps[2][0].key[0], 2);
}

// A set-up bigger than the first chunk of the thread's storage (a 32 KiB array) is saved region
// by region: restored, it must be the same.
TEST(InterpPreparedInput, SetUpsBeyondOneChunk) {
    Program p = with_maps(read_then_write());
    p.maps[0].max_entries = 4096;
    ExecInput in = input(5, 2, 1);
    in.maps[0].push_back(MapEntry{{0xff, 0x0f, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8}});  // element 4095
    const Executable exe(p, arch_x86_64());
    PreparedInput prepared(in);
    ExecResult r;
    const ExecResult fresh = execute(p, in, arch_x86_64());
    ASSERT_EQ(fresh.status, S::Ok) << fresh.reason;
    ASSERT_EQ(fresh.maps[0].size(), 4096u);
    EXPECT_EQ(fresh.maps[0][4095].value, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
    for (int round = 0; round < 3; ++round) {
        execute(exe, prepared, {}, r);
        expect_same_result(r, fresh);
    }
}

// Memory::restore makes a fresh memory equal to the saved one, region for region (size, kind,
// writability, laziness, bytes), with storage of its own: what a restored memory's run writes
// never reaches the image, nor a memory restored after it. Both ways of saving: within the first
// chunk, and across chunks (a region bigger than a chunk); restored where the saved memory was
// (rounds 0 and 1) and elsewhere (round 2: another memory is alive, so this one has other storage).
TEST(InterpPreparedInput, MemoryRestoresWhatWasSaved) {
    for (uint32_t big : {1000u, 40000u}) {
        SCOPED_TRACE("big region " + std::to_string(big));
        Memory::Image img;
        std::vector<Region> saved;
        std::vector<std::vector<uint8_t>> bytes;
        {
            Memory m;
            const uint8_t init[3] = {1, 2, 3};
            m.add_copy(64, 8, init, 3, RegionKind::Ctx);
            const uint32_t lazy = m.add_lazy(512, RegionKind::Stack);
            const uint32_t b = m.add(big, RegionKind::MapValue);
            const uint32_t many = m.add_many(3, 24, RegionKind::MapValue);
            m.add(16, RegionKind::Ctx, false);
            m.add(0, RegionKind::Packet);
            for (uint32_t k = 0; k < big; ++k) m.region(b).data[k] = static_cast<uint8_t>(k * 7 + 1);
            m.region(many + 1).data[23] = 0x99;
            m.save(img);
            for (uint32_t r = 0; r < m.count(); ++r) {
                saved.push_back(m.region(r));
                bytes.emplace_back(m.region(r).data, m.region(r).data + m.region(r).size);
            }
            EXPECT_EQ(saved[lazy].size, 0u);  // still lazy
        }
        for (int round = 0; round < 3; ++round) {
            SCOPED_TRACE("round " + std::to_string(round));
            std::optional<Memory> other;
            if (round == 2) other.emplace();
            Memory m;
            m.restore(img);
            if (round == 2) {
                for (uint32_t r = 0; r < m.count(); ++r) {
                    if (m.region(r).data != nullptr) {
                        EXPECT_NE(m.region(r).data, saved[r].data) << "region " << r;
                    }
                }
            }
            ASSERT_EQ(m.count(), saved.size());
            for (uint32_t r = 0; r < m.count(); ++r) {
                SCOPED_TRACE("region " + std::to_string(r));
                const Region& reg = m.region(r);
                EXPECT_EQ(reg.size, saved[r].size);
                EXPECT_EQ(reg.kind, saved[r].kind);
                EXPECT_EQ(reg.writable, saved[r].writable);
                EXPECT_EQ(std::vector<uint8_t>(reg.data, reg.data + reg.size), bytes[r]);
            }
            // The lazy region comes to life zeroed, with its size, on its first use.
            uint8_t* p = m.translate(Memory::addr(1, 504), 8, true);
            ASSERT_NE(p, nullptr);
            EXPECT_EQ(m.region(1).size, 512u);
            for (uint32_t k = 0; k < 512; ++k) ASSERT_EQ(m.region(1).data[k], 0) << k;
            // Scribble over everything: the next round must see the saved bytes again.
            for (uint32_t r = 0; r < m.count(); ++r) std::memset(m.region(r).data, 0xee, m.region(r).size);
        }
    }
}

}  // namespace
}  // namespace patchfuzz::interp
