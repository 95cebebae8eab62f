// Opcode table invariants and the raw byte codec.
#include "bpf/isa/opcode_table.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "bpf/isa/raw_codec.hpp"
#include "bpf/isa/validate.hpp"

namespace patchfuzz::isa {
namespace {

TEST(OpcodeTable, MnemonicsUniqueAndRowsIndexedByCode) {
    std::set<std::string> names;
    for (const OpcodeRow& r : opcode_table()) {
        EXPECT_TRUE(names.insert(r.mnemonic).second) << "duplicate mnemonic " << r.mnemonic;
        bool found = false;
        for (const OpcodeRow* p : rows_for_code(r.code)) found |= p == &r;
        EXPECT_TRUE(found) << r.mnemonic;
        EXPECT_GE(r.cpu, 1);
        EXPECT_LE(r.cpu, 4);
        EXPECT_EQ(r.imm2.rule == Rule::Zero || r.imm2.rule == Rule::Any, true);
        if (r.group != Group::LdImm64) {
            EXPECT_EQ(r.imm2.rule, Rule::Zero) << r.mnemonic;
        }
    }
}

// The legal code bytes, written out from the ISA (RFC 9669 + kernel-internal modes), compared with
// the table: a missing or extra opcode shows up here.
TEST(OpcodeTable, LegalCodeBytes) {
    std::set<int> want;
    for (int cls : {BPF_ALU, BPF_ALU64}) {
        for (int op = 0x00; op <= 0xc0; op += 0x10) {
            want.insert(cls | op | BPF_K);
            if (op != BPF_NEG) want.insert(cls | op | BPF_X);
        }
    }
    want.insert(BPF_ALU | BPF_END | BPF_TO_LE);
    want.insert(BPF_ALU | BPF_END | BPF_TO_BE);
    want.insert(BPF_ALU64 | BPF_END | BPF_K);
    for (int cls : {BPF_JMP, BPF_JMP32})
        for (int op : {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT, BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE})
            for (int s : {BPF_K, BPF_X}) want.insert(cls | op | s);
    for (int c : {0x05, 0x06, 0x0d, 0x85, 0x95, 0xe5, 0xf5, 0x18, 0xc2}) want.insert(c);
    for (int sz : {BPF_B, BPF_H, BPF_W, BPF_DW}) {
        for (int m : {BPF_MEM, int(kModeProbeMem), int(kModeProbeMem32)}) want.insert(BPF_LDX | m | sz);
        for (int m : {BPF_MEM, int(kModeProbeMem32)}) want.insert(BPF_ST | m | sz), want.insert(BPF_STX | m | sz);
        want.insert(BPF_STX | BPF_ATOMIC | sz);
        if (sz != BPF_DW) {
            want.insert(BPF_LDX | BPF_MEMSX | sz), want.insert(BPF_LDX | kModeProbeMemSx | sz);
            want.insert(BPF_LD | BPF_ABS | sz), want.insert(BPF_LD | BPF_IND | sz);
        }
        if (sz == BPF_W || sz == BPF_DW) want.insert(BPF_STX | kModeProbeAtomic | sz);
    }
    std::set<int> got;
    for (int c = 0; c < 256; ++c)
        if (!rows_for_code(uint8_t(c)).empty()) got.insert(c);
    EXPECT_EQ(got, want);
}

// Every random legal encoding of a row matches exactly that row (rows are disjoint) and passes the
// validator's encoding check; r10 never lands in a written register.
TEST(OpcodeTable, RandomEncodingsMatchTheirRow) {
    const uint64_t seed = 0x15a2026;
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    Rng rng(seed);
    for (int round = 0; round < 200; ++round) {
        for (const OpcodeRow& row : opcode_table()) {
            const bool ax = rng.chance(1, 4);
            auto v = random_encoding(row, rng, ax);
            ASSERT_EQ(v.size(), row.group == Group::LdImm64 ? 2u : 1u);
            ASSERT_EQ(match_row(v[0], true), &row) << row.mnemonic;
            if (!row.internal && v[0].dst_reg != kRegAx && v[0].src_reg != kRegAx) {
                EXPECT_EQ(match_row(v[0], false), &row) << row.mnemonic;
            }
            EXPECT_TRUE(validate_encoding(v[0], 0, true).ok()) << row.mnemonic;
        }
    }
}

TEST(RawCodec, KnownBytes) {
    const std::vector<Insn> insns = {make(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 42), make(BPF_JMP | BPF_JNE | BPF_X, 2, 3, -2, 0),
                                     make(BPF_LD | BPF_IMM | BPF_DW, 4, 1, 0, -1)};
    const std::vector<uint8_t> want = {0xb7, 0x01, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00,   //
                                       0x5d, 0x32, 0xfe, 0xff, 0x00, 0x00, 0x00, 0x00,   //
                                       0x18, 0x14, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff};
    EXPECT_EQ(encode(insns), want);
    // The host struct has the same layout (x86-64 / arm64 are little-endian).
    EXPECT_EQ(std::memcmp(insns.data(), want.data(), want.size()), 0);
    auto back = decode(want);
    ASSERT_TRUE(back.ok());
    for (size_t i = 0; i < insns.size(); ++i) EXPECT_TRUE(same((*back)[i], insns[i]));
    std::vector<uint8_t> odd(19, 0);
    auto bad = decode(odd);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().to_string(), "byte 16: 3 trailing bytes, not a whole insn");
}

RC_GTEST_PROP(RawCodec, DecodeEncodeIsIdentity, (std::vector<uint8_t> bytes)) {
    bytes.resize(bytes.size() - bytes.size() % 8);
    auto insns = decode(bytes);
    RC_ASSERT(insns.ok());
    RC_ASSERT(encode(*insns) == bytes);
}

RC_GTEST_PROP(RawCodec, EncodeDecodeIsIdentity, (std::vector<std::tuple<uint8_t, uint8_t, int16_t, int32_t>> fields)) {
    std::vector<Insn> insns;
    for (auto [c, r, o, i] : fields) insns.push_back(make(c, r & 0xf, r >> 4, o, i));
    auto back = decode(encode(insns));
    RC_ASSERT(back.ok());
    RC_ASSERT(back->size() == insns.size());
    for (size_t k = 0; k < insns.size(); ++k) RC_ASSERT(same((*back)[k], insns[k]));
}

}  // namespace
}  // namespace patchfuzz::isa
