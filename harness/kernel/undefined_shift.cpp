#include "harness/kernel/undefined_shift.hpp"

#include <linux/bpf.h>

#include "bpf/asm/disassemble.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::kernel {
namespace {

// The trap is a helper call with an id no helper has: the interpreter stops there ("has no
// model"), and the id carries the shift's pc in the unprobed program.
constexpr int32_t kTrapBase = 0x7f000000;

bool is_register_shift(const isa::Insn& in) {
    const uint8_t cls = in.code & 0x07, op = in.code & 0xf0;
    return (cls == BPF_ALU || cls == BPF_ALU64) && (in.code & BPF_X) &&
           (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH);
}

}  // namespace

std::optional<std::string> wide_register_shift(const Program& prog, const interp::ExecInput& in, const ArchProfile& arch) {
    patch::PatchBatch batch;
    for (uint32_t pc = 0; pc < prog.len(); pc++) {
        const isa::Insn& s = prog.insns[pc];
        if (!is_register_shift(s)) continue;
        const bool w64 = (s.code & 0x07) == BPF_ALU64;
        // [if amount <= width-1 goto +1 (the shift, slot 2); trap; shift]
        const isa::Insn guard = w64 ? isa::jmp_imm(BPF_JLE, s.src_reg, 63, 1) : isa::jmp32_imm(BPF_JLE, s.src_reg, 31, 1);
        batch.patches.push_back({patch::PatchKind::Replace, pc, {guard, isa::call_helper(kTrapBase + static_cast<int32_t>(pc)), s}, 0});
    }
    if (batch.patches.empty()) return std::nullopt;
    Program probe = prog;
    auto patcher = patch::make_patcher("incremental");
    if (!patcher || !patcher->apply(probe, batch).ok()) return std::string("no probe (the program could not be patched)");
    const auto res = interp::execute(probe, in, arch);
    if (res.status == interp::ExecResult::Status::Ok || res.fault_pc >= probe.len()) return std::nullopt;
    const isa::Insn& at = probe.insns[res.fault_pc];
    if (at.code != (BPF_JMP | BPF_CALL) || at.src_reg != 0 || at.imm < kTrapBase) return std::nullopt;
    const auto pc = static_cast<uint32_t>(at.imm - kTrapBase);
    if (pc >= prog.len()) return std::nullopt;
    return "pc " + std::to_string(pc) + ": " + assembly::disasm_insn(prog.insns, pc) + " by an amount past the width";
}

}  // namespace patchfuzz::kernel
