// Inline-equivalence proofs on the sequences the passes emit (bpf/passes), and on hand-broken
// variants. Counterexamples are re-checked with small concrete models written here from
// docs/iterator-isa-arch.md §1-§2 (independent of the solver encoding).
#include "oracles/smt/inline_equiv.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "bpf/passes/div_mod_guard.hpp"
#include "bpf/passes/bpf_loop_inline.hpp"
#include "bpf/passes/helper_call_inlines.hpp"
#include "bpf/passes/iter_inline.hpp"
#include "bpf/passes/map_lookup_inline.hpp"

namespace patchfuzz::oracles::smt {
namespace {

using passes::IterInline;

const ArchProfile* kArches[] = {&arch_x86_64(), &arch_arm64(), &arch_jit32()};

// bpf_iter_num_new's return code from the low halves (§1.2).
int32_t ref_rc(uint64_t r2, uint64_t r3) {
    const auto s = static_cast<int32_t>(static_cast<uint32_t>(r2)), e = static_cast<int32_t>(static_cast<uint32_t>(r3));
    if (s > e) return -EINVAL;
    if (static_cast<uint32_t>(e) - static_cast<uint32_t>(s) > static_cast<uint32_t>(isa::kMaxLoops)) return -E2BIG;
    return 0;
}

uint64_t field(const std::string& text, const std::string& name) {
    const auto p = text.find(name + " = 0x");
    EXPECT_NE(p, std::string::npos) << "no '" << name << "' in " << text;
    if (p == std::string::npos) return 0;
    return std::strtoull(text.c_str() + p + name.size() + 3, nullptr, 16);
}

TEST(InlineEquiv, V4IteratorProvedOnAllProfiles) {
    for (const ArchProfile* a : kArches) {
        const auto nw = passes::emit_iter_num_new(IterInline::V4);
        const auto nx = passes::emit_iter_num_next(IterInline::V4);
        const auto ds = passes::emit_iter_num_destroy(IterInline::V4);
        const Verdict v1 = prove_iter_num_new(nw, *a);
        const Verdict v2 = prove_iter_num_next(nx, *a);
        const Verdict v3 = prove_iter_num_destroy(ds, *a);
        EXPECT_EQ(v1.outcome, Outcome::Pass) << a->name << ": " << v1.reason << " | " << v1.counterexample;
        EXPECT_EQ(v2.outcome, Outcome::Pass) << a->name << ": " << v2.reason << " | " << v2.counterexample;
        EXPECT_EQ(v3.outcome, Outcome::Pass) << a->name << ": " << v3.reason << " | " << v3.counterexample;
        EXPECT_EQ(v1.arch, a->name);
    }
}

// V1 sign-extends start/end with ALU64 MOVSX: right where MOVSX is understood, wrong on jit32 (B3).
TEST(InlineEquiv, V1ProvedOnMovsxAwareJitsRefutedOnJit32) {
    const auto nw = passes::emit_iter_num_new(IterInline::V1);
    EXPECT_EQ(prove_iter_num_new(nw, arch_x86_64()).outcome, Outcome::Pass);
    EXPECT_EQ(prove_iter_num_new(nw, arch_arm64()).outcome, Outcome::Pass);
    const Verdict v = prove_iter_num_new(nw, arch_jit32());
    ASSERT_EQ(v.outcome, Outcome::Fail) << v.reason;
    EXPECT_NE(v.counterexample.find("start "), std::string::npos);
    EXPECT_NE(v.counterexample.find("end "), std::string::npos);
    // Re-check: on jit32 MOVSX is a plain copy, so V1 compares and subtracts the raw 64-bit registers.
    const uint64_t r2 = field(v.counterexample, "r2"), r3 = field(v.counterexample, "r3");
    int32_t buggy = 0;
    if (static_cast<int64_t>(r2) > static_cast<int64_t>(r3)) {
        buggy = -EINVAL;
    } else if (r3 - r2 > static_cast<uint64_t>(isa::kMaxLoops)) {
        buggy = -E2BIG;
    }
    if (v.counterexample.find("R0") != std::string::npos) {
        EXPECT_NE(buggy, ref_rc(r2, r3)) << v.counterexample;
    }
}

// V3 compares the distance signed (B2): wrong exactly when end - start >= 2^31, on every profile.
TEST(InlineEquiv, V3RefutedWithConcreteCounterexample) {
    const auto nw = passes::emit_iter_num_new(IterInline::V3);
    for (const ArchProfile* a : kArches) {
        const Verdict v = prove_iter_num_new(nw, *a);
        ASSERT_EQ(v.outcome, Outcome::Fail) << a->name << ": " << v.reason;
        const uint64_t r2 = field(v.counterexample, "r2"), r3 = field(v.counterexample, "r3");
        const auto s = static_cast<int32_t>(static_cast<uint32_t>(r2)), e = static_cast<int32_t>(static_cast<uint32_t>(r3));
        EXPECT_LE(s, e) << v.counterexample;
        EXPECT_GE(static_cast<uint32_t>(e) - static_cast<uint32_t>(s), 1u << 31) << v.counterexample;
        EXPECT_EQ(ref_rc(r2, r3), -E2BIG) << v.counterexample;
    }
}

// B7: error paths that do not write (0, 0) leave stale slot bytes.
TEST(InlineEquiv, NewWithoutErrorZeroingRefuted) {
    auto nw = passes::emit_iter_num_new(IterInline::V4);
    ASSERT_FALSE(nw.empty());
    bool changed = false;
    for (auto& i : nw)  // the slot-zeroing stores of both error paths become no-ops
        if (isa::same(i, isa::st(BPF_DW, BPF_REG_1, 0, 0))) {
            i = isa::ja(0);
            changed = true;
        }
    ASSERT_TRUE(changed);
    const Verdict v = prove_iter_num_new(nw, arch_x86_64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.counterexample.find("memory"), std::string::npos) << v.counterexample;
}

// B6: next with an unsigned compare.
TEST(InlineEquiv, NextWithUnsignedCompareRefuted) {
    auto nx = passes::emit_iter_num_next(IterInline::V4);
    bool changed = false;
    for (auto& i : nx)
        if (i.code == (BPF_JMP32 | BPF_JSGE | BPF_X)) {
            i.code = BPF_JMP32 | BPF_JGE | BPF_X;
            changed = true;
        }
    ASSERT_TRUE(changed);
    const Verdict v = prove_iter_num_next(nx, arch_arm64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.counterexample.find("cur "), std::string::npos) << v.counterexample;
}

// B9: the returned pointer truncated to 32 bits.
TEST(InlineEquiv, NextWith32BitPointerRefuted) {
    auto nx = passes::emit_iter_num_next(IterInline::V4);
    bool changed = false;
    for (auto& i : nx)
        if (i.code == (BPF_ALU64 | BPF_MOV | BPF_X) && i.dst_reg == 0) {
            i.code = BPF_ALU | BPF_MOV | BPF_X;
            changed = true;
        }
    ASSERT_TRUE(changed);
    const Verdict v = prove_iter_num_next(nx, arch_x86_64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.counterexample.find("R0"), std::string::npos) << v.counterexample;
}

TEST(InlineEquiv, DivModGuardsProvedOnAllProfiles) {
    InlineProofOptions o;
    o.families = static_cast<unsigned>(InlineFamily::DivMod);
    const auto proofs = prove_inlines(o);
    EXPECT_EQ(proofs.size(), 3u * 20u);
    for (const auto& p : proofs)
        EXPECT_EQ(p.verdict.outcome, Outcome::Pass) << p.sequence << " on " << p.arch << ": " << p.verdict.reason << " | "
                                                    << p.verdict.counterexample;
}

TEST(InlineEquiv, UnguardedDivisionRefutedInTheZeroCase) {
    const isa::Insn div = isa::alu64_reg(BPF_DIV, 2, 3);
    const isa::Insn seq[] = {div};
    const Verdict v = prove_div_mod(div, seq, arch_x86_64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.reason.find("divisor 0"), std::string::npos) << v.reason;
    EXPECT_NE(v.counterexample.find("src 0x0"), std::string::npos) << v.counterexample;
}

TEST(InlineEquiv, SdivGuardWithoutMinusOneCaseRefuted) {
    const isa::Insn sdiv = isa::make(BPF_ALU | BPF_DIV | BPF_X, 2, 3, 1, 0);
    // Only the zero test of the unsigned guard: INT_MIN / -1 reaches idiv.
    const isa::Insn seq[] = {isa::jmp32_imm(BPF_JNE, 3, 0, 2), isa::alu32_reg(BPF_XOR, 2, 2), isa::ja(1), sdiv};
    const Verdict v = prove_div_mod(sdiv, seq, arch_x86_64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.reason.find("divisor -1"), std::string::npos) << v.reason;
}

TEST(InlineEquiv, MapLookupInlinesProvedOn64BitSkippedOnJit32) {
    InlineProofOptions o;
    o.families = static_cast<unsigned>(InlineFamily::MapLookup);
    o.arches = {arch_x86_64(), arch_jit32()};
    for (const auto& p : prove_inlines(o)) {
        if (p.arch == "jit32") EXPECT_EQ(p.verdict.outcome, Outcome::Skip) << p.sequence;
        else EXPECT_EQ(p.verdict.outcome, Outcome::Pass) << p.sequence << ": " << p.verdict.reason << " | " << p.verdict.counterexample;
    }
}

TEST(InlineEquiv, ArrayLookupWithoutBoundsCheckRefuted) {
    const MapDef m{.name = "array", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 10};
    auto seq = passes::emit_map_lookup_inline(m, arch_x86_64());
    ASSERT_GE(seq.size(), 3u);
    seq[2] = isa::ja(0);  // drop `if r0 >= max_entries`
    const Verdict v = prove_map_lookup(m, seq, arch_x86_64());
    ASSERT_EQ(v.outcome, Outcome::Fail);
    EXPECT_NE(v.counterexample.find("helper R0 0x0"), std::string::npos) << v.counterexample;
}

}  // namespace
// Findings 0007 / 0008: the kernel's bpf_loop entry and get_func_arg inlines are refuted against
// the helpers' u32 arguments (the counterexamples set bits 32-63), the fixed variants prove.
TEST(InlineEquiv, BpfLoopEntryKernelRefutedFixedProved) {
    const auto buggy = passes::emit_bpf_loop_inline(-24, 0, passes::InlineFix::Kernel);
    const Verdict b = prove_bpf_loop_entry(buggy, arch_x86_64());
    ASSERT_EQ(b.outcome, Outcome::Fail);
    EXPECT_NE(b.counterexample.find("nr_loops"), std::string::npos) << b.counterexample;
    const auto fixed = passes::emit_bpf_loop_inline(-24, 0, passes::InlineFix::Fixed);
    ASSERT_EQ(fixed.size(), buggy.size());
    EXPECT_EQ(prove_bpf_loop_entry(fixed, arch_x86_64()).outcome, Outcome::Pass);
    EXPECT_EQ(prove_bpf_loop_entry(fixed, arch_arm64()).outcome, Outcome::Pass);
}

TEST(InlineEquiv, GetFuncArgKernelRefutedFixedProved) {
    const auto buggy = passes::emit_get_func_arg(TraceAttach::Fentry, 2, passes::KernelProfile::K7_3, passes::InlineFix::Kernel);
    const Verdict b = prove_get_func_arg(buggy, arch_x86_64());
    ASSERT_EQ(b.outcome, Outcome::Fail);
    EXPECT_NE(b.counterexample.find("memory"), std::string::npos) << b.counterexample;
    const auto fixed = passes::emit_get_func_arg(TraceAttach::Fentry, 2, passes::KernelProfile::K7_3, passes::InlineFix::Fixed);
    EXPECT_EQ(fixed.size(), buggy.size() + 1);
    EXPECT_EQ(prove_get_func_arg(fixed, arch_x86_64()).outcome, Outcome::Pass);
}

}  // namespace patchfuzz::oracles::smt
