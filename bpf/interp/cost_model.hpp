#pragma once
// Per-arch cost model (docs/iterator-isa-arch.md §5): a scoreboard that counts cycles while the
// interpreter runs. Each register and each 8-byte stack slot has a ready cycle; an instruction
// issues in order from a front end that accepts W instructions per cycle, starts when its
// operands are ready and finishes after its latency; a load from a slot that an earlier store
// wrote is ready L_sf cycles after that store's data (store->load forwarding); every call adds a
// fixed overhead to the front end (call/return, prologue/epilogue) that depends on the kind of
// callee. Total cycles = max(front end, last result). In a loop this gives
//   cycles per iteration = max(loop-carried dependency latency, insns/W + calls * c_call),
// the formula of §5.1, without shape-specific rules.
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace patchfuzz::interp {

struct CostParams {
    std::string_view arch;
    double width = 6;            // W: sustained insns per cycle
    double l_sf = 0;             // store->load forwarding latency, same address
    double l_alu = 1;            // add/sub/logic/move
    double l_mul = 3;
    double l_div = 20;
    double l_load = 4;           // load with no earlier store to its slot in the scoreboard
    double c_kfunc = 2.3;        // per kfunc call+return (plain C function, no BPF frame)
    double c_subprog = 3.0;      // per BPF-to-BPF call (JIT prologue/epilogue)
    double c_helper = 2.3;       // per helper call
    double ja0_insns = 0;        // cost in insns of a `ja +0` (x86-64 emits nothing, arm64 a `b`)
};

// §5.2 parameters: x86-64 (memory renaming makes the stack chain nearly free) and arm64 (a
// 6-cycle store->load chain; larger subprog prologue with bti/paciasp/tail-call count).
const CostParams& cost_x86_64();
const CostParams& cost_arm64();

class CostModel {
public:
    enum class CallKind : uint8_t { Kfunc, Subprog, Helper };
    static constexpr int kScratch0 = 12;  // scoreboard registers for reference-model bodies
    static constexpr int kScratch1 = 13;
    static constexpr int kNone = -1;

    explicit CostModel(const CostParams& p) : p_(p) {}

    // One instruction: dst <- f(s1, s2) with `latency` (dst kNone: no result, e.g. a branch
    // whose outcome is predicted; it still takes an issue slot).
    void op(int dst, int s1, int s2, double latency);
    void alu(int dst, int s1, int s2) { op(dst, s1, s2, p_.l_alu); }
    void load(int dst, int addr_reg, uint64_t addr);
    void store(int addr_reg, int val_reg, uint64_t addr);
    // Front-end cost of a call of `kind` plus `body_insns` of the callee's own (non-BPF) code.
    void call(CallKind kind, double body_insns);
    void ja0() { front_ += p_.ja0_insns / p_.width; }
    // Registers the callee clobbered become ready now.
    void clobber(int first, int last);

    [[nodiscard]] double cycles() const;
    [[nodiscard]] const CostParams& params() const { return p_; }

private:
    double ready(int r) const { return r < 0 ? 0 : reg_[static_cast<size_t>(r)]; }
    const CostParams& p_;
    double front_ = 0;
    double last_ = 0;
    std::array<double, 16> reg_{};
    std::unordered_map<uint64_t, double> slot_store_;  // 8-byte slot -> cycle its data is ready
};

}  // namespace patchfuzz::interp
