#include "bpf/passes/infer_ctx.hpp"

#include <optional>
#include <vector>

#include "bpf/isa/insn_facts.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "bpf/passes/pass_util.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

// What holds the ctx pointer before an insn: registers (bit r) and 8-byte stack slots (bit k: the
// slot at fp - 8 * (k + 1)).
struct CtxHolders {
    uint16_t regs = 0;
    uint64_t slots = 0;
    bool operator==(const CtxHolders&) const = default;
    [[nodiscard]] bool reg(uint8_t r) const { return r < 16 && (regs >> r) & 1; }
    void set_reg(uint8_t r, bool ctx) {
        if (r >= 16) return;
        regs = static_cast<uint16_t>(ctx ? regs | 1u << r : regs & ~(1u << r));
    }
};

constexpr uint16_t kArgRegs = 0x3e;      // r1-r5
constexpr uint16_t kCallerSaved = 0x3f;  // r0-r5

uint32_t access_bytes(const Insn& in) { return insn_facts(in.code).bytes; }

// The stack slots an access of `bytes` at fp + `off` touches.
uint64_t slots_touched(int32_t off, uint32_t bytes) {
    uint64_t m = 0;
    for (int64_t b = off; b < static_cast<int64_t>(off) + bytes; ++b)
        if (b < 0 && b >= -512) m |= uint64_t{1} << ((-b - 1) / 8);
    return m;
}

// The 8-byte slot an aligned 8-byte access at fp + `off` is, if it is one.
std::optional<unsigned> whole_slot(int32_t off, uint32_t bytes) {
    if (bytes != 8 || off >= 0 || off < -512 || off % 8 != 0) return std::nullopt;
    return static_cast<unsigned>(-off / 8 - 1);
}

// The holders after `in` (the callee's entry is joined separately).
CtxHolders transfer(const Insn& in, CtxHolders h) {
    const uint8_t c = cls(in);
    if (is_alu_class(in)) {
        const bool move64 = in.code == (BPF_ALU64 | BPF_MOV | BPF_X) && in.off == 0 && in.imm == 0;
        h.set_reg(in.dst_reg, move64 && h.reg(in.src_reg));
    } else if (c == BPF_LDX) {
        const auto slot = in.src_reg == BPF_REG_10 && mode(in) == BPF_MEM ? whole_slot(in.off, access_bytes(in)) : std::nullopt;
        h.set_reg(in.dst_reg, slot && (h.slots >> *slot) & 1);
    } else if (c == BPF_ST || c == BPF_STX) {
        if (in.dst_reg == BPF_REG_10) {
            h.slots &= ~slots_touched(in.off, access_bytes(in));
            const auto slot = whole_slot(in.off, access_bytes(in));
            if (c == BPF_STX && mode(in) == BPF_MEM && slot && h.reg(in.src_reg)) h.slots |= uint64_t{1} << *slot;
        } else if (!h.reg(in.dst_reg)) {
            h.slots = 0;  // through a pointer that may point into the stack
        }
        if (c == BPF_STX && mode(in) == BPF_ATOMIC) {
            h.set_reg(in.src_reg, false);  // the fetch forms write it
            h.set_reg(BPF_REG_0, false);   // cmpxchg
        }
    } else if (is_ldimm64(in)) {
        h.set_reg(in.dst_reg, false);
    } else if (c == BPF_LD) {  // legacy packet loads clobber r0-r5
        h.regs &= static_cast<uint16_t>(~kCallerSaved);
    } else if (is_call(in)) {
        h.regs &= static_cast<uint16_t>(~kCallerSaved);
    }
    return h;
}

}  // namespace

void infer_ctx_accesses(Program& prog) {
    const ctx_fields::CtxKind kind = ctx_fields::ctx_kind(prog.prog_type);
    if (kind == ctx_fields::CtxKind::None) return;
    const uint32_t n = prog.len();
    if (n == 0) return;
    std::vector<std::optional<CtxHolders>> before(n);
    std::vector<uint32_t> work;
    auto join = [&](uint32_t pc, const CtxHolders& h) {
        if (pc >= n) return;
        if (!before[pc]) before[pc] = h;
        else {
            const CtxHolders met{static_cast<uint16_t>(before[pc]->regs & h.regs), before[pc]->slots & h.slots};
            if (met == *before[pc]) return;
            before[pc] = met;
        }
        work.push_back(pc);
    };
    std::vector<uint32_t> next;
    auto drain = [&] {
        while (!work.empty()) {
            const uint32_t pc = work.back();
            work.pop_back();
            const Insn& in = prog.insns[pc];
            const CtxHolders h = *before[pc];
            if (is_pseudo_call(in)) {
                const int64_t callee = static_cast<int64_t>(pc) + 1 + in.imm;
                if (callee >= 0) join(static_cast<uint32_t>(callee), CtxHolders{static_cast<uint16_t>(h.regs & kArgRegs), 0});
            }
            const CtxHolders after = transfer(in, h);
            next.clear();
            append_successors(prog, pc, next);
            for (uint32_t s : next) join(s, after);
        }
    };
    join(0, CtxHolders{static_cast<uint16_t>(1u << BPF_REG_1), 0});
    drain();
    // Functions no call reaches (callbacks: their arguments are the helper's, never the ctx).
    for (const SubprogInfo& s : prog.subprogs)
        if (s.start < n && !before[s.start]) {
            join(s.start, CtxHolders{});
            drain();
        }

    for (uint32_t pc = 0; pc < n; ++pc) {
        const Insn& in = prog.insns[pc];
        if (!before[pc] || !(is_plain_load(in) || is_plain_store(in))) continue;
        const bool write = cls(in) != BPF_LDX;
        if (!before[pc]->reg(write ? in.dst_reg : in.src_reg)) continue;
        const ctx_fields::UapiField* f = ctx_fields::allowed_access(kind, in.off, access_bytes(in), write);
        if (f == nullptr) continue;  // unmodelled: left for a real kernel to show
        prog.aux[pc].ptr_type = PtrType::Ctx;
        prog.aux[pc].ctx_field_size = f->narrow ? f->size : 0;
    }
}

}  // namespace patchfuzz::passes
