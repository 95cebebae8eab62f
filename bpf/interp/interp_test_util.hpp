#pragma once
// What the interpreter's tests share: running a bare insn list on a profile, r0 of a sequence on
// every 64-bit profile, and building ld_imm64 pairs and insn lists.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::interp::interp_test {

using isa::Insn;

inline ExecResult run(std::vector<Insn> insns, const ArchProfile& arch = arch_x86_64(), ExecInput in = {}) {
    return execute(make_program(std::move(insns)), in, arch);
}
// r0 = value of `insns` ending with exit, on every 64-bit profile (they must agree).
inline uint64_t r0_of(std::vector<Insn> insns) {
    insns.push_back(isa::exit_insn());
    ExecResult a = run(insns, arch_x86_64());
    ExecResult b = run(insns, arch_arm64());
    EXPECT_EQ(a.status, ExecResult::Status::Ok) << a.reason;
    EXPECT_EQ(a.r0, b.r0);
    return a.r0;
}
inline Insn lddw(uint8_t dst, uint64_t v) { return isa::ldimm64_lo(dst, 0, static_cast<int32_t>(static_cast<uint32_t>(v))); }
inline std::vector<Insn> ld64(uint8_t dst, uint64_t v) { return {lddw(dst, v), isa::ldimm64_hi(static_cast<int32_t>(v >> 32))}; }
inline std::vector<Insn> cat(std::vector<Insn> a, const std::vector<Insn>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace patchfuzz::interp::interp_test
