// The batch layout of guest/pfk_batch.h, read back field by field at hand-computed offsets.
#include "harness/kernel/batch_writer.hpp"

#include <gtest/gtest.h>

#include <linux/bpf.h>

#include <cstring>

namespace patchfuzz::kernel {
namespace {

uint32_t u32(const std::vector<uint8_t>& b, size_t off) {
    uint32_t v;
    std::memcpy(&v, b.data() + off, 4);
    return v;
}
uint16_t u16(const std::vector<uint8_t>& b, size_t off) {
    uint16_t v;
    std::memcpy(&v, b.data() + off, 2);
    return v;
}

TEST(BatchWriter, LayoutMatchesTheGuestFormat) {
    KernelCase c;
    c.name = "ab";
    c.program = make_program({isa::mov64_imm(0, 7), isa::exit_insn()});
    c.program.prog_type = 6;
    c.program.maps.push_back(MapDef{.name = "m", .type = 2, .key_size = 4, .value_size = 8, .max_entries = 3});
    c.program.kfuncs.push_back(KfuncDesc{.btf_id = 70001, .name = "bpf_iter_num_new"});
    interp::ExecInput in;
    in.packet = {1, 2, 3};
    in.maps = {{{{0, 0, 0, 0}, {9, 9, 9, 9, 9, 9, 9, 9}}}};
    c.inputs.push_back(in);
    c.privilege = passes::Privilege::Unpriv;
    auto b = encode_batch({c}, BatchFlags{.test_run = true});
    ASSERT_TRUE(b.ok());
    const auto& v = *b;
    EXPECT_EQ(std::string(v.begin(), v.begin() + 4), "PFKB");
    EXPECT_EQ(u32(v, 4), 4u);   // version
    EXPECT_EQ(u32(v, 8), 1u);   // cases
    EXPECT_EQ(u32(v, 12), 1u);  // flags: test run
    size_t r = 16;
    EXPECT_EQ(u32(v, r), v.size() - 16);  // record size
    EXPECT_EQ(u32(v, r + 4), 6u);         // prog type
    EXPECT_EQ(u32(v, r + 12), 2u);        // privilege: unpriv
    EXPECT_EQ(u32(v, r + 16), 2u);        // insns
    EXPECT_EQ(u16(v, r + 20), 1u);        // maps
    EXPECT_EQ(u16(v, r + 22), 1u);        // kfuncs
    EXPECT_EQ(u16(v, r + 24), 1u);        // runs
    EXPECT_EQ(u16(v, r + 26), 2u);        // name length
    size_t p = r + 28 + 2;
    EXPECT_EQ(u32(v, p), 0u);             // expected attach type: none
    EXPECT_EQ(u16(v, p + 4), 0u);         // attach target name length
    p += 6;
    EXPECT_EQ(u32(v, p), 2u);             // map type
    EXPECT_EQ(u32(v, p + 12), 3u);        // max entries
    p += 20;
    EXPECT_EQ(u32(v, p), 70001u);
    EXPECT_EQ(u16(v, p + 4), 16u);
    EXPECT_EQ(std::string(v.begin() + static_cast<long>(p) + 6, v.begin() + static_cast<long>(p) + 22), "bpf_iter_num_new");
    p += 22;
    EXPECT_EQ(v[p], 0xb7);                // mov64 imm
    EXPECT_EQ(u32(v, p + 4), 7u);
    p += 16;
    EXPECT_EQ(u32(v, p), 3u);             // data length
    p += 4 + 3;
    EXPECT_EQ(u32(v, p), 0u);             // ctx length
    EXPECT_EQ(u32(v, p + 4), 1u);         // entries
    EXPECT_EQ(u16(v, p + 8), 0u);         // map 0
    EXPECT_EQ(u16(v, p + 10), 4u);        // key length
    EXPECT_EQ(u32(v, p + 12), 8u);        // value length
    EXPECT_EQ(p + 16 + 4 + 8, v.size());
}

TEST(BatchWriter, TracingProgramsNameTheirTargetAndAreNotTestRun) {
    KernelCase c;
    c.name = "t";
    c.program = make_program({isa::mov64_imm(0, 0), isa::exit_insn()});
    c.program.prog_type = BPF_PROG_TYPE_TRACING;
    c.program.attach = TraceAttach::Fexit;
    c.program.attach_btf_vlen = 2;
    c.inputs.resize(3);
    auto b = encode_batch({c}, BatchFlags{.test_run = true});
    ASSERT_TRUE(b.ok());
    const auto& v = *b;
    const size_t r = 16;
    EXPECT_EQ(u16(v, r + 24), 0u);  // runs: none (the kernel runs it with bpf_fentry_test2's own arguments)
    const size_t p = r + 28 + 1;     // after the 1-byte name
    EXPECT_EQ(u32(v, p), static_cast<uint32_t>(BPF_TRACE_FEXIT));
    EXPECT_EQ(u16(v, p + 4), 16u);
    EXPECT_EQ(std::string(v.begin() + static_cast<long>(p) + 6, v.begin() + static_cast<long>(p) + 22), "bpf_fentry_test2");
    EXPECT_EQ(p + 22 + 16, v.size());  // then the two insns, and no run records
}

TEST(BatchWriter, InstructionArraysCarryTheirEntriesOrigOff) {
    KernelCase c;
    c.name = "j";
    c.program = make_program({isa::mov64_imm(0, 0), isa::mov64_imm(0, 1), isa::exit_insn()});
    c.program.maps.push_back(MapDef{.name = "jt", .type = isa::kMapTypeInsnArray, .key_size = 4, .value_size = 8, .max_entries = 2});
    c.program.insn_arrays.push_back(InsnArray{.map_index = 0, .entries = {{.orig_off = 1, .xlated_off = 1}, {.orig_off = 2, .xlated_off = 2}}});
    auto b = encode_batch({c}, {});
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    const auto& v = *b;
    const size_t p = 16 + 28 + 1 + 6;  // the map record, after the 1-byte name and no attach target
    EXPECT_EQ(u32(v, p), 34u);         // BPF_MAP_TYPE_INSN_ARRAY in the kernel's enum
    EXPECT_EQ(u32(v, p + 12), 2u);     // max entries
    EXPECT_EQ(u32(v, p + 20), 1u);     // entry 0's orig_off
    EXPECT_EQ(u32(v, p + 24), 2u);     // entry 1's
    EXPECT_EQ(p + 28 + 3 * 8, v.size());

    c.program.insn_arrays[0].entries.pop_back();  // an entry per max_entries, or no batch
    auto short_table = encode_batch({c}, {});
    ASSERT_FALSE(short_table.ok());
    EXPECT_EQ(short_table.error().where, "j");
}

TEST(BatchWriter, RejectsEmptyProgramWithItsName) {
    KernelCase c;
    c.name = "empty.case";
    auto b = encode_batch({c}, {});
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().where, "empty.case");
}

}  // namespace
}  // namespace patchfuzz::kernel
