// The interpreter's entry points and its dispatch loop (Machine::loop, threaded code over the
// pre-decoded DInsns), with the small Machine functions the loop calls, in this one translation
// unit so that they inline into it: clock reads, special and per-CPU addresses, packet loads, map
// ld_imm64s, frames, and the cost model's charge. Decode, set-up and helper models are in
// decode.cpp, machine_setup.cpp and helper_models.cpp.
#include "bpf/interp/interp.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "bpf/interp/cost_model.hpp"
#include "bpf/interp/decoded_code.hpp"
#include "bpf/interp/effect_log.hpp"
#include "bpf/interp/machine.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::interp {

std::string_view to_string(ExecResult::Status s) {
    switch (s) {
        case ExecResult::Status::Ok: return "ok";
        case ExecResult::Status::Fault: return "fault";
        case ExecResult::Status::StepBudget: return "step-budget";
        case ExecResult::Status::Unsupported: return "unsupported";
    }
    return "?";
}

namespace detail {

// The packet load of bpf_skb_load_helper_{8,16,32} (net/core/filter.c) on our skb: `skb` must be
// the ctx pointer (the verifier keeps the skb in R6 for LD_ABS, and bpf_gen_ld_abs passes R6), its
// data the linear packet region (headlen == len == packet size). Bytes [offset, offset + size)
// are read in network byte order and zero-extended. A negative offset is out of the packet: the
// kernel maps [SKF_LL_OFF, 0) to the link-layer / network header, positions our skb does not
// have (bpf_skb_load_helper_convert_offset's INT_MIN path, as for a skb without a mac header).
Machine::SkbLoad Machine::skb_load(uint64_t skb, int32_t offset, uint32_t size, uint64_t& value) {
    if (skb != Memory::addr(kRegionCtx, ctx_base_)) return SkbLoad::NotSkb;
    const Region& pkt = mem_.region(kRegionPacket);
    if (offset < 0 || int64_t{offset} + size > int64_t{pkt.size}) return SkbLoad::OutOfPacket;
    value = 0;
    for (uint32_t k = 0; k < size; ++k) value = (value << 8) | pkt.data[static_cast<uint32_t>(offset) + k];
    return SkbLoad::Ok;
}

// The n-th read of the clock (n >= 1) gives the same value, and so the same effect text, in every
// run: the texts of the first reads are a table made at compile time (programs read the clock
// often, and formatting a number costs more than copying its text). They all have one length, so
// that copying one is a few moves (EffectLog::add_text inlined), not a memcpy call.
constexpr uint64_t clock_value(uint64_t n) { return 1000000000ULL + 1000 * n; }
constexpr uint64_t kClockTexts = 1024;
constexpr std::string_view kClockPrefix = "clock() = ";
constexpr size_t kClockDigits = 10;
static_assert(clock_value(0) >= 1000000000ULL && clock_value(kClockTexts - 1) <= 9999999999ULL, "10 digits each");
constexpr size_t kClockTextSize = kClockPrefix.size() + kClockDigits;
constexpr std::array<std::array<char, kClockTextSize>, kClockTexts> kClockTextTable = [] {
    std::array<std::array<char, kClockTextSize>, kClockTexts> t{};
    for (uint64_t n = 0; n < kClockTexts; ++n) {
        std::copy(kClockPrefix.begin(), kClockPrefix.end(), t[n].begin());
        uint64_t v = clock_value(n);
        for (size_t k = kClockTextSize; k-- > kClockPrefix.size(); v /= 10) t[n][k] = static_cast<char>('0' + v % 10);
    }
    return t;
}();

uint64_t Machine::clock_read() {
    const uint64_t n = ++clock_calls_;
    const uint64_t v = clock_value(n);
    if (n < kClockTexts) [[likely]]
        effects_.add_text(std::string_view(kClockTextTable[n].data(), kClockTextSize));
    else
        clock_effect(v);
    return v;
}

void Machine::clock_effect(uint64_t v) { effects_.add(kClockPrefix, v); }

// Loads from addresses outside every region that the kernel's inlines read: jiffies_64.
bool Machine::special_load(uint64_t addr, uint32_t size, uint64_t& out) {
    if (addr == isa::kJiffiesAddr && size == 8) {
        out = clock_read();
        return true;
    }
    return false;
}

// BPF_MOV64_PERCPU_REG: per-CPU offset -> this CPU's address. Map per-CPU pointers carry their
// region in the offset; the pcpu_hot offsets of internal_calls.hpp land in the pcpu region.
uint64_t Machine::percpu_addr(uint64_t v) const {
    if (v >= kPercpuBase && v - kPercpuBase < (uint64_t{1} << 44)) return kRegionBase + (v - kPercpuBase);
    const uint64_t lo = static_cast<uint64_t>(isa::kPcpuCurrentTask);
    if (v >= lo && v < lo + 16) return Memory::addr(kRegionPcpu, static_cast<uint32_t>(v - lo));
    return v + 0x5a5a000000000000ULL;  // garbage in, an unmapped address out
}

// The value of a map ld_imm64 (BPF_PSEUDO_MAP_FD/IDX: the map; *_VALUE: an address in its value)
// in this execution's memory; false with the reason when the program names no such map or value.
// A map ld_imm64's fault for a map index the program does not have. Out of line, as too_deep().
[[gnu::noinline, gnu::cold]] bool Machine::no_such_map(uint64_t index, std::string& why) const {
    why = "ld_imm64 names map " + std::to_string(index) + " (program has " + std::to_string(maps_.size()) + ")";
    return false;
}

bool Machine::map_ldimm64_rest(const DInsn& d, uint64_t& out, std::string& why) const {
    const uint64_t index = static_cast<uint32_t>(d.imm);
    if (index >= maps_.size()) [[unlikely]]
        return no_such_map(index, why);
    // bpf-next: a per-CPU array's value means this CPU's copy (the verifier types it
    // PTR_TO_MAP_VALUE); do_misc_fixups (row i) turns it into [ld_imm64 per-CPU pointer;
    // dst = per-cpu(dst)], flagged in `aux` by decode.
    const uint64_t pp = maps_[index].percpu_direct_value(static_cast<uint32_t>(d.off));
    out = pp == 0 ? 0 : d.aux ? pp : percpu_addr(pp);
    if (out == 0) {
        why = "ld_imm64 map value of a map that is not an array (or value offset out of range)";
        return false;
    }
    return true;
}

// Out of line, so that push_frame() does not save and restore the registers that making the text
// takes on every call.
[[gnu::noinline, gnu::cold]] bool Machine::too_deep(uint32_t pc) {
    fault(pc, "call depth exceeds " + std::to_string(kMaxFrames) + " frames");
    return false;
}

// The stack view of the current frame (access()), once its stack has storage (a lazy one gets it
// on its first access).
[[gnu::noinline]] void Machine::view_stack() {
    const Region& reg = mem_.region(depth_);
    if (reg.size != kStackSize || !reg.writable) return;
    stack_lo_ = Memory::addr(depth_, 0);
    stack_data_ = reg.data;
    stack_off_mask_ = 0;
}

bool Machine::push_frame(uint32_t pc, uint32_t target, bool loop_cb) {
    if (depth_ + 1 >= kMaxFrames) [[unlikely]]
        return too_deep(pc);
    Frame& f = frames_[++depth_];
    // Every field written (no Frame{} first: that clears the whole frame once more).
    f.ret_pc = pc + 1;
    for (int k = 0; k < 4; ++k) f.saved[k] = r_[6 + k];
    f.saved[4] = r_[10];
    f.may_goto = static_cast<uint32_t>(isa::kMaxLoops);
    f.loop_cb = loop_cb;
    f.loop_i = f.loop_n = 0;
    f.cb_pc = target;
    f.loop_ctx = 0;
    // A fresh frame: its own zeroed 512-byte stack.
    mem_.fresh(depth_);
    stack_changed();
    r_[10] = Memory::addr(depth_, kStackSize);
    return true;
}

// The cost model's charge for insn `d` at `pc`, made before it runs (its issue slot and operands).
void Machine::charge(const DInsn& d, uint32_t pc) {
    const uint64_t* const r = r_;
    switch (d.op) {
        case LDXB: case LDXH: case LDXW: case LDXDW: case LDSXB: case LDSXH: case LDSXW: case LDX_PROBE: case LDX_CTX_PKT:
            cost_->load(d.dst, d.src, r[d.src] + static_cast<uint64_t>(static_cast<int64_t>(d.off)));
            break;
        case STB: case STH: case STW: case STDW:
            cost_->store(d.dst, CostModel::kNone, r[d.dst] + static_cast<uint64_t>(static_cast<int64_t>(d.off)));
            break;
        case STXB: case STXH: case STXW: case STXDW: case ATOMIC:
            cost_->store(d.dst, d.src, r[d.dst] + static_cast<uint64_t>(static_cast<int64_t>(d.off)));
            break;
        case INVALID:
            break;
        case CALL_HELPER: case CALL_KFUNC: case CALLX: case EXIT: case TAIL_CALL: case LDABS: case LDIND:
            // The insn's own issue slot; the call overhead is charged by the callee model.
            cost_->op(CostModel::kNone, CostModel::kNone, CostModel::kNone, 0);
            break;
        case CALL_LOCAL:
            cost_->op(CostModel::kNone, CostModel::kNone, CostModel::kNone, 0);
            cost_->call(CostModel::CallKind::Subprog, 0);
            break;
        case JA:
            if (d.off == static_cast<int32_t>(pc + 1)) cost_->ja0();
            else cost_->op(CostModel::kNone, CostModel::kNone, CostModel::kNone, 0);
            break;
        case MUL64K: case MUL64X: case MUL32K: case MUL32X:
            cost_->op(d.dst, d.dst, d.src, cost_->params().l_mul);
            break;
        case DIV64K: case DIV64X: case DIV32K: case DIV32X: case SDIV64K: case SDIV64X: case SDIV32K: case SDIV32X:
        case MOD64K: case MOD64X: case MOD32K: case MOD32X: case SMOD64K: case SMOD64X: case SMOD32K: case SMOD32X:
            cost_->op(d.dst, d.dst, d.src, cost_->params().l_div);
            break;
        case MOV64K: case MOV32K: case LDIMM64: case LDIMM64_MAP:
            cost_->alu(d.dst, CostModel::kNone, CostModel::kNone);
            break;
        case MOV64X: case MOV32X: case MOVSX8_64: case MOVSX16_64: case MOVSX32_64: case MOVSX8_32: case MOVSX16_32:
        case ZEXT:
            cost_->alu(d.dst, d.src, CostModel::kNone);
            break;
        default:
            if (d.op <= MOV32X) cost_->alu(d.dst, d.dst, (d.op & 1) ? d.src : CostModel::kNone);
            else if (d.op <= JSET32X) cost_->op(CostModel::kNone, d.dst, (d.op & 1) ? d.src : CostModel::kNone, 0);
            else cost_->alu(d.dst, d.dst, CostModel::kNone);
    }
}

// The dispatch loop is threaded code (GNU labels as values, which g++ and clang both have): every
// handler ends by dispatching the next insn itself through the label table, instead of a jump
// back to one shared switch with its range check. Most of a run's time is this dispatch (a
// generated program runs ~150 mostly one-line insns), and an indirect jump per handler also
// predicts better than the single one of a switch.
template <bool kCost, bool kTrace, bool kZextMarks, Machine::UpperHalf kUpper, Machine::StepCheck kCheck>
void Machine::loop() {
    static_assert(kCheck == StepCheck::EveryInsn || (!kCost && !kTrace), "only plain runs test the budget at jumps");
    uint64_t* const r = r_;
    const DInsn* const code = code_;
    const uint64_t keep = kUpper == UpperHalf::Zeroed ? 0 : kUpper == UpperHalf::Kept ? kHi : hi_keep_;
    const uint64_t budget = budget_;
    const DInsn* ip = code + start_pc_;  // the insn about to run (at pc ip - code)
    // Steps the budget still allows: taking one for an insn where none is left is the budget
    // fault. Signed, so that taking a step is a decrement and a sign test; a budget beyond what
    // any run could take (2^63 steps) is clamped. An insn counts from its dispatch on. AtJumps
    // holds back its reserve (StepCheck), so `left` may start below 0.
    const uint64_t steps_before = steps_;
    const int64_t reserve = kCheck == StepCheck::AtJumps ? static_cast<int64_t>(code_size_) : 0;
    const int64_t allowed = static_cast<int64_t>(std::min<uint64_t>(budget - steps_before, INT64_MAX)) - reserve;
    int64_t left = allowed;

    // One label per op, in the order of enum Op.
#define PF_LABEL4(N) &&L_##N##64K, &&L_##N##64X, &&L_##N##32K, &&L_##N##32X,
#define PF_LABEL(N) &&L_##N,
    static const void* const kLabels[] = {PF_ALU_OPS(PF_LABEL4) PF_JMP_OPS(PF_LABEL4) PF_OTHER_OPS(PF_LABEL)};
#undef PF_LABEL4
#undef PF_LABEL
    static_assert(sizeof kLabels / sizeof kLabels[0] == kOpCount);

#define PF_PC static_cast<uint32_t>(ip - code)
#define PF_STEPS() (steps_before + static_cast<uint64_t>(allowed - left))  // taken so far
#define PF_FAULT(msg)                  \
    do {                               \
        steps_ = PF_STEPS();        \
        fault(PF_PC, (msg));           \
        return;                        \
    } while (0)
    // Runs the insn at ip: after a jump (PF_JUMP) or the run's start, and after an insn that
    // moves forward (PF_FORWARD), which under StepCheck::AtJumps takes its step untested.
#define PF_RUN_INSN()                                                                                    \
    do {                                                                                                 \
        if constexpr (kTrace) ring_[ring_pos_++ % ring_.size()] = TraceStep{PF_PC, static_cast<uint8_t>(depth_), 0}; \
        if constexpr (kCost) charge(*ip, PF_PC);                                                         \
        goto* kLabels[ip->op];                                                                           \
    } while (0)
#define PF_DISPATCH()                          \
    do {                                       \
        if (--left < 0) [[unlikely]]           \
            goto out_of_steps;                 \
        PF_RUN_INSN();                         \
    } while (0)
#define PF_FORWARD()                                           \
    do {                                                       \
        if constexpr (kCheck == StepCheck::AtJumps) {          \
            --left;                                            \
            PF_RUN_INSN();                                     \
        } else {                                               \
            PF_DISPATCH();                                     \
        }                                                      \
    } while (0)
    // After an insn that falls through (one that defines a register or none): the zext mark,
    // the trace's value of dst, then the next insn.
#define PF_NEXT()                                                                          \
    do {                                                                                   \
        if constexpr (kZextMarks) {                                                        \
            /* ZextMarks::Apply. Jumps, calls and exit that jump get no mark; ld_imm64 */  \
            /* defines a 64-bit register, where a mark is meaningless (the zext pass */    \
            /* refuses or splits such an insn). */                                         \
            if (ip->zext) r[ip->zext - 1] = static_cast<uint32_t>(r[ip->zext - 1]);        \
        }                                                                                  \
        if constexpr (kTrace) ring_[(ring_pos_ - 1) % ring_.size()].dst_after = r[ip->dst]; \
        ++ip;                                                                              \
        PF_FORWARD();                                                                      \
    } while (0)
    // Continues at insn `target` (taken jumps, calls, returns).
#define PF_JUMP(target)          \
    do {                         \
        ip = code + (target);    \
        PF_DISPATCH();           \
    } while (0)

    PF_DISPATCH();

#define PF_ALU64(N, EXPR)                                   \
    L_##N##64K: {                                           \
        const DInsn& d = *ip;                               \
        const uint64_t a = r[d.dst], b = k64(d);            \
        r[d.dst] = (EXPR);                                  \
        PF_NEXT();                                          \
    }                                                       \
    L_##N##64X: {                                           \
        const DInsn& d = *ip;                               \
        const uint64_t a = r[d.dst], b = r[d.src];          \
        r[d.dst] = (EXPR);                                  \
        PF_NEXT();                                          \
    }
#define PF_ALU32(N, EXPR)                                                                         \
    L_##N##32K: {                                                                                 \
        const DInsn& d = *ip;                                                                     \
        const uint32_t a = static_cast<uint32_t>(r[d.dst]), b = k32(d);                           \
        r[d.dst] = (r[d.dst] & keep) | static_cast<uint32_t>(EXPR);                               \
        PF_NEXT();                                                                                \
    }                                                                                             \
    L_##N##32X: {                                                                                 \
        const DInsn& d = *ip;                                                                     \
        const uint32_t a = static_cast<uint32_t>(r[d.dst]), b = static_cast<uint32_t>(r[d.src]);  \
        r[d.dst] = (r[d.dst] & keep) | static_cast<uint32_t>(EXPR);                               \
        PF_NEXT();                                                                                \
    }
    PF_ALU64(ADD, a + b)
    PF_ALU64(SUB, a - b)
    PF_ALU64(MUL, a * b)
    PF_ALU64(DIV, udiv64(a, b))
    PF_ALU64(MOD, umod64(a, b))
    PF_ALU64(SDIV, sdiv64(a, b))
    PF_ALU64(SMOD, smod64(a, b))
    PF_ALU64(OR, a | b)
    PF_ALU64(AND, a & b)
    PF_ALU64(XOR, a ^ b)
    PF_ALU64(LSH, a << (b & 63))
    PF_ALU64(RSH, a >> (b & 63))
    PF_ALU64(ARSH, static_cast<uint64_t>(static_cast<int64_t>(a) >> (b & 63)))
    PF_ALU64(MOV, (static_cast<void>(a), b))
    PF_ALU32(ADD, a + b)
    PF_ALU32(SUB, a - b)
    PF_ALU32(MUL, a * b)
    PF_ALU32(DIV, udiv32(a, b))
    PF_ALU32(MOD, umod32(a, b))
    PF_ALU32(SDIV, sdiv32(a, b))
    PF_ALU32(SMOD, smod32(a, b))
    PF_ALU32(OR, a | b)
    PF_ALU32(AND, a & b)
    PF_ALU32(XOR, a ^ b)
    PF_ALU32(LSH, a << (b & 31))
    PF_ALU32(RSH, a >> (b & 31))
    PF_ALU32(ARSH, static_cast<uint32_t>(static_cast<int32_t>(a) >> (b & 31)))
    PF_ALU32(MOV, (static_cast<void>(a), b))
#undef PF_ALU64
#undef PF_ALU32

    // One-register ops: dst = EXPR, with d the insn.
#define PF_UNARY(OP, EXPR)         \
    L_##OP: {                      \
        const DInsn& d = *ip;      \
        r[d.dst] = (EXPR);         \
        PF_NEXT();                 \
    }
    PF_UNARY(MOVSX8_64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(r[d.src]))))
    PF_UNARY(MOVSX16_64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(r[d.src]))))
    PF_UNARY(MOVSX32_64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(r[d.src]))))
    PF_UNARY(MOVSX8_32, (r[d.dst] & keep) | static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(r[d.src]))))
    PF_UNARY(MOVSX16_32, (r[d.dst] & keep) | static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(r[d.src]))))
    PF_UNARY(MOVPERCPU, percpu_addr(r[d.src]))
    PF_UNARY(NEG64, 0 - r[d.dst])
    PF_UNARY(NEG32, (r[d.dst] & keep) | static_cast<uint32_t>(0u - static_cast<uint32_t>(r[d.dst])))
    PF_UNARY(ZEXT, static_cast<uint32_t>(r[d.src]))
    PF_UNARY(LE16, (r[d.dst] & keep) | (r[d.dst] & 0xffff))
    PF_UNARY(LE32, (r[d.dst] & keep) | (r[d.dst] & 0xffffffffu))
    PF_UNARY(LE64, r[d.dst])
    PF_UNARY(BSWAP16, bswap16(r[d.dst]))
    PF_UNARY(BSWAP32, bswap32(r[d.dst]))
    PF_UNARY(BSWAP64, bswap64(r[d.dst]))
#undef PF_UNARY

#define PF_JMP(N, C64, C32)                                                                                  \
    L_##N##64K: {                                                                                            \
        const DInsn& d = *ip;                                                                                \
        const uint64_t a = r[d.dst], b = k64(d);                                                             \
        if (C64) PF_JUMP(d.off);                                                                             \
        PF_NEXT();                                                                                           \
    }                                                                                                        \
    L_##N##64X: {                                                                                            \
        const DInsn& d = *ip;                                                                                \
        const uint64_t a = r[d.dst], b = r[d.src];                                                           \
        if (C64) PF_JUMP(d.off);                                                                             \
        PF_NEXT();                                                                                           \
    }                                                                                                        \
    L_##N##32K: {                                                                                            \
        const DInsn& d = *ip;                                                                                \
        const uint32_t a = static_cast<uint32_t>(r[d.dst]), b = k32(d);                                      \
        if (C32) PF_JUMP(d.off);                                                                             \
        PF_NEXT();                                                                                           \
    }                                                                                                        \
    L_##N##32X: {                                                                                            \
        const DInsn& d = *ip;                                                                                \
        const uint32_t a = static_cast<uint32_t>(r[d.dst]), b = static_cast<uint32_t>(r[d.src]);             \
        if (C32) PF_JUMP(d.off);                                                                             \
        PF_NEXT();                                                                                           \
    }
    PF_JMP(JEQ, a == b, a == b)
    PF_JMP(JNE, a != b, a != b)
    PF_JMP(JGT, a > b, a > b)
    PF_JMP(JGE, a >= b, a >= b)
    PF_JMP(JLT, a < b, a < b)
    PF_JMP(JLE, a <= b, a <= b)
    PF_JMP(JSGT, static_cast<int64_t>(a) > static_cast<int64_t>(b), static_cast<int32_t>(a) > static_cast<int32_t>(b))
    PF_JMP(JSGE, static_cast<int64_t>(a) >= static_cast<int64_t>(b), static_cast<int32_t>(a) >= static_cast<int32_t>(b))
    PF_JMP(JSLT, static_cast<int64_t>(a) < static_cast<int64_t>(b), static_cast<int32_t>(a) < static_cast<int32_t>(b))
    PF_JMP(JSLE, static_cast<int64_t>(a) <= static_cast<int64_t>(b), static_cast<int32_t>(a) <= static_cast<int32_t>(b))
    PF_JMP(JSET, (a & b) != 0, (a & b) != 0)
#undef PF_JMP
L_JA:
    PF_JUMP(ip->off);

#define PF_LDX(OP, SZ, EXT)                                                                       \
    L_##OP: {                                                                                     \
        const DInsn& d = *ip;                                                                     \
        const uint64_t ad = r[d.src] + static_cast<uint64_t>(static_cast<int64_t>(d.off));        \
        const uint8_t* p = access(ad, SZ, false);                                                 \
        if (!p) {                                                                                 \
            uint64_t sv = 0;                                                                      \
            if (!special_load(ad, SZ, sv)) PF_FAULT("invalid read of " #SZ " bytes at " + hex(ad)); \
            r[d.dst] = sv;                                                                        \
            PF_NEXT();                                                                            \
        }                                                                                         \
        r[d.dst] = EXT;                                                                           \
        PF_NEXT();                                                                                \
    }
    PF_LDX(LDXB, 1, (r[d.dst] & keep) | p[0])
    PF_LDX(LDXH, 2, (r[d.dst] & keep) | load_le(p, 2))
    PF_LDX(LDXW, 4, (r[d.dst] & keep) | load_le(p, 4))
    PF_LDX(LDXDW, 8, load_le(p, 8))
    PF_LDX(LDSXB, 1, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[0]))))
    PF_LDX(LDSXH, 2, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(load_le(p, 2)))))
    PF_LDX(LDSXW, 4, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(load_le(p, 4)))))
#undef PF_LDX
L_LDX_CTX_PKT: {
    // A packet pointer read from the uapi ctx (mark_ctx_packet_loads): the packet's start, or its
    // end for data_end; data_meta is the start too (the test runs make no metadata).
    const DInsn& d = *ip;
    if (r[d.src] != Memory::addr(kRegionCtx, ctx_base_)) PF_FAULT("ctx packet pointer read through " + hex(r[d.src]) + ", not the ctx");
    const uint64_t pkt = Memory::addr(kRegionPacket, 0);
    r[d.dst] = d.aux == static_cast<uint8_t>(ctx_fields::PacketPtr::End) ? pkt + mem_.region(kRegionPacket).size : pkt;
    PF_NEXT();
}
L_LDX_PROBE: {
    // PROBE_MEM: a faulting load yields 0 (exception table fixup), never a fault.
    const DInsn& d = *ip;
    const uint32_t sz = d.aux & 0xf;
    const uint64_t ad = r[d.src] + static_cast<uint64_t>(static_cast<int64_t>(d.off));
    const uint8_t* p = mem_.translate_access(ad, sz, false);
    uint64_t v = p ? load_le(p, sz) : 0;
    if ((d.aux & 0x80) && sz < 8) {
        const int sh = 64 - 8 * static_cast<int>(sz);
        v = static_cast<uint64_t>(static_cast<int64_t>(v << sh) >> sh);
    }
    r[d.dst] = v;
    PF_NEXT();
}
#define PF_ST(OP, SZ, VAL)                                                                        \
    L_##OP: {                                                                                     \
        const DInsn& d = *ip;                                                                     \
        const uint64_t ad = r[d.dst] + static_cast<uint64_t>(static_cast<int64_t>(d.off));        \
        uint8_t* p = access(ad, SZ, true);                                                        \
        if (!p) PF_FAULT("invalid write of " #SZ " bytes at " + hex(ad));                         \
        store_le(p, SZ, VAL);                                                                     \
        PF_NEXT();                                                                                \
    }
    PF_ST(STB, 1, k64(d))
    PF_ST(STH, 2, k64(d))
    PF_ST(STW, 4, k64(d))
    PF_ST(STDW, 8, k64(d))
    PF_ST(STXB, 1, r[d.src])
    PF_ST(STXH, 2, r[d.src])
    PF_ST(STXW, 4, r[d.src])
    PF_ST(STXDW, 8, r[d.src])
#undef PF_ST
// The ATOMIC handler's body for an insn of SZ bytes, made for each common width apart: with SZ a
// constant, its loads, stores and masks are single moves, not a switch on the width each.
#define PF_ATOMIC(SZ) \
    {                                                                                                                      \
        const DInsn& d = *ip;                                                                                              \
        const uint32_t sz = (SZ);                                                                                          \
        const uint64_t ad = r[d.dst] + static_cast<uint64_t>(static_cast<int64_t>(d.off));                                 \
        const uint32_t aop = k32(d);                                                                                       \
        const bool is_load = aop == BPF_LOAD_ACQ, is_store = aop == BPF_STORE_REL;                                         \
        if (!is_load && !is_store && sz != 4 && sz != 8) PF_FAULT("atomic operation on " + std::to_string(sz) + " bytes"); \
        if (is_load) {                                                                                                     \
            /* load-acquire: dst = *(src + off); the address comes from src, and dst is */                                 \
            /* only written (it may hold anything, even a non-pointer). */                                                 \
            const uint64_t a2 = r[d.src] + static_cast<uint64_t>(static_cast<int64_t>(d.off));                             \
            const uint8_t* q = access(a2, sz, false);                                                                      \
            if (!q) PF_FAULT("invalid load-acquire at " + hex(a2));                                                        \
            r[d.dst] = load_le(q, sz);                                                                                     \
            PF_NEXT();                                                                                                     \
        }                                                                                                                  \
        uint8_t* p = access(ad, sz, true);                                                                                 \
        if (!p) PF_FAULT("invalid atomic access of " + std::to_string(sz) + " bytes at " + hex(ad));                       \
        const uint64_t mask = ~0ULL >> (64 - 8 * sz);                                                                      \
        const uint64_t old = load_le(p, sz);                                                                               \
        const uint64_t s = r[d.src] & mask;                                                                                \
        if (is_store) {                                                                                                    \
            store_le(p, sz, s);                                                                                            \
            PF_NEXT();                                                                                                     \
        }                                                                                                                  \
        switch (aop & ~static_cast<uint32_t>(BPF_FETCH)) {                                                                 \
            case BPF_ADD: store_le(p, sz, (old + s) & mask); break;                                                        \
            case BPF_OR: store_le(p, sz, old | s); break;                                                                  \
            case BPF_AND: store_le(p, sz, old & s); break;                                                                 \
            case BPF_XOR: store_le(p, sz, old ^ s); break;                                                                 \
            case BPF_XCHG & ~BPF_FETCH:                                                                                    \
                if (aop != BPF_XCHG) PF_FAULT("invalid atomic op " + hex(aop));                                            \
                store_le(p, sz, s);                                                                                        \
                break;                                                                                                     \
            case BPF_CMPXCHG & ~BPF_FETCH:                                                                                 \
                if (aop != BPF_CMPXCHG) PF_FAULT("invalid atomic op " + hex(aop));                                         \
                if ((r[0] & mask) == old) store_le(p, sz, s);                                                              \
                r[0] = old; /* always loaded, zero-extended for W */                                                       \
                break;                                                                                                     \
            default:                                                                                                       \
                PF_FAULT("invalid atomic op " + hex(aop));                                                                 \
        }                                                                                                                  \
        if ((aop & BPF_FETCH) && aop != BPF_CMPXCHG) r[d.src] = old;                                                       \
        PF_NEXT();                                                                                                         \
    }
L_ATOMIC:
    if (ip->aux == 8) PF_ATOMIC(8)
    if (ip->aux == 4) PF_ATOMIC(4)
    PF_ATOMIC(ip->aux)
#undef PF_ATOMIC
L_LDIMM64: {
    r[ip->dst] = imm64(*ip);
    if constexpr (kTrace) ring_[(ring_pos_ - 1) % ring_.size()].dst_after = r[ip->dst];
    ip += 2;
    PF_FORWARD();
}
L_LDIMM64_MAP: {
    if (const uint64_t v = map_ldimm64_direct(*ip)) [[likely]] {
        r[ip->dst] = v;
    } else {
        std::string why;
        if (!map_ldimm64_rest(*ip, r[ip->dst], why)) PF_FAULT(std::move(why));
    }
    if constexpr (kTrace) ring_[(ring_pos_ - 1) % ring_.size()].dst_after = r[ip->dst];
    ip += 2;
    PF_FORWARD();
}
L_NOP:
    PF_NEXT();
L_MAY_GOTO: {
    // do_misc_fixups lowering: a per-frame countdown from BPF_MAX_LOOPS; 0 takes the branch.
    Frame& f = frames_[depth_];
    if (f.may_goto == 0) PF_JUMP(ip->off);
    --f.may_goto;
    PF_NEXT();
}
L_GOTOX: {
    const uint64_t t = r[ip->dst] - kCodeBase;
    if ((t & 7) != 0 || (t >> 3) >= code_size_) PF_FAULT("gotox to " + hex(r[ip->dst]) + ", not a code address");
    PF_JUMP(t >> 3);
}
L_TAIL_CALL: {
    // Internal tail call (r1 ctx, r2 prog array, r3 index): our prog arrays are empty, so
    // every tail call falls through; the attempt itself is the observable effect.
    steps_ = PF_STEPS();
    if (!tail_call_attempt(PF_PC, r[2], r[3])) return;
    PF_NEXT();
}
L_CALL_HELPER: {
    steps_ = PF_STEPS();
    if (!call_helper(PF_PC, ip->imm)) return;
    if (jump_to_ != kNoPc) {
        const uint32_t t = jump_to_;
        jump_to_ = kNoPc;
        PF_JUMP(t);
    }
    PF_NEXT();
}
L_CALLX: {
    // bpf_conformance `callx`: helper id in a register (dst, else src, else imm names it).
    const DInsn& d = *ip;
    const uint8_t reg = d.dst ? d.dst : d.src ? d.src : static_cast<uint8_t>(d.imm & 0xf);
    steps_ = PF_STEPS();
    if (!call_helper(PF_PC, static_cast<int32_t>(r[reg]))) return;
    PF_NEXT();
}
L_CALL_KFUNC: {
    steps_ = PF_STEPS();
    if (!call_kfunc(PF_PC, ip->imm)) return;
    PF_NEXT();
}
L_CALL_LOCAL: {
    steps_ = PF_STEPS();
    if (!push_frame(PF_PC, static_cast<uint32_t>(ip->off), false)) return;
    PF_JUMP(ip->off);
}
L_LDABS:
L_LDIND: {
    // Classic packet load (R6 = skb; R0 = big-endian bytes at imm, + src for IND, as a
    // 32-bit sum like classic BPF's X + k). Outside the packet the function returns 0
    // at once, from this frame, as the exit of bpf_gen_ld_abs's sequence does. The
    // kernel treats the insn as a call: R1-R5 are poisoned like after a helper.
    const DInsn& d = *ip;
    const uint32_t off = k32(d) + (d.op == LDIND ? static_cast<uint32_t>(r[d.src]) : 0u);
    uint64_t v = 0;
    const SkbLoad st = skb_load(r[6], static_cast<int32_t>(off), d.aux, v);
    if (st == SkbLoad::NotSkb) PF_FAULT("LD_ABS/LD_IND: r6 " + hex(r[6]) + " is not the skb (ctx)");
    for (int k = 1; k <= 5; ++k) r[k] = kCallPoison;
    if constexpr (kCost) {
        cost_->call(CostModel::CallKind::Helper, 8);
        cost_->clobber(0, 5);
    }
    if (st == SkbLoad::OutOfPacket) {
        r[0] = 0;
        goto L_EXIT;
    }
    r[0] = v;
    PF_NEXT();
}
L_EXIT: {
    if (depth_ == 0) {
        steps_ = PF_STEPS();
        return;
    }
    Frame& f = frames_[depth_];
    if (f.loop_cb) {
        // bpf_loop: a callback returning non-zero stops the loop (only 0/1 are legal).
        ++f.loop_i;
        if (r[0] == 0 && f.loop_i < f.loop_n) {
            if constexpr (kCost) cost_->call(CostModel::CallKind::Subprog, 0);
            mem_.fresh(depth_);
            stack_changed();
            r[1] = f.loop_i;
            r[2] = f.loop_ctx;
            f.may_goto = static_cast<uint32_t>(isa::kMaxLoops);
            PF_JUMP(f.cb_pc);
        }
        r[0] = f.loop_i;
    }
    for (int k = 0; k < 4; ++k) r[6 + k] = f.saved[k];
    r[10] = f.saved[4];
    --depth_;
    stack_changed();
    PF_JUMP(f.ret_pc);
}
L_LDIMM64_TAIL:
L_INVALID: {
    steps_ = PF_STEPS();
    fault(PF_PC, k32(*ip) < invalid_.size()                ? invalid_[k32(*ip)]
                 : k32(*ip) == DecodedCode::kSecondSlot ? std::string(kSecondSlotReason)
                 : PF_PC == code_size_                  ? std::string("execution ran past the last insn")
                                                        : std::string("invalid instruction"));
    return;
}
out_of_steps:
    if constexpr (kCheck == StepCheck::AtJumps) {
        // Into the reserve: the insn at ip, not run, is where an EveryInsn loop goes on.
        ++left;
        steps_ = PF_STEPS();
        start_pc_ = PF_PC;
        at_jumps_stopped_ = true;
        return;
    }
    steps_ = budget;
    fault(PF_PC, "step budget of " + std::to_string(budget) + " insns exhausted", ExecResult::Status::StepBudget);
#undef PF_RUN_INSN
#undef PF_DISPATCH
#undef PF_FORWARD
#undef PF_NEXT
#undef PF_JUMP
#undef PF_FAULT
#undef PF_PC
#undef PF_STEPS
}

void Machine::run() {
    hi_keep_ = arch_.alu32_no_implicit_zext ? kHi : 0;
    budget_ = opts_.step_budget ? opts_.step_budget : in_.step_budget;
    cost_ = opts_.cost;
    if (!setup()) return end_before_start();
    if (code_size_ == 0) {
        fault(0, "empty program");
        return end_before_start();
    }
    static_assert(sizeof in_.regs == 10 * sizeof r_[0]);
    std::memcpy(r_, in_.regs.data(), sizeof in_.regs);  // r0-r9
    r_[1] = Memory::addr(kRegionCtx, ctx_base_);
    r_[10] = Memory::addr(0, kStackSize);
    std::fill(std::begin(r_) + isa::kRegAx, std::end(r_), 0);
    frames_[0] = Frame{};
    frames_[0].may_goto = static_cast<uint32_t>(isa::kMaxLoops);
    frames_[0].cb_pc = 0xffffffffu;
    if (opts_.trace_last) ring_.resize(opts_.trace_last);
    // The cost model never runs with zext marks applied (it measures rewritten programs).
    if (marks_ == ZextMarks::Apply) {
        if (opts_.trace_last) loop<false, true, true>();
        else loop<false, false, true>();
    } else if (cost_ && opts_.trace_last) loop<true, true, false>();
    else if (cost_) loop<true, false, false>();
    else if (opts_.trace_last) loop<false, true, false>();
    else if (hi_keep_ == 0) plain_loop<UpperHalf::Zeroed>();
    else plain_loop<UpperHalf::Kept>();
    res_.steps = steps_;
    res_.r0 = r_[0];
    copy_bytes(res_.stack, mem_.region(0).data, kStackSize);
    final_ctx();
    copy_bytes(res_.packet, mem_.region(kRegionPacket).data, mem_.region(kRegionPacket).size);
    if (opts_.collect_maps)
        for (MapModel& m : maps_) res_.maps.push_back(m.entries());
    record_map_digests();
    if (cost_) res_.cycles = cost_->cycles();
    if (!ring_.empty()) {
        size_t n = std::min(ring_pos_, ring_.size());
        for (size_t k = 0; k < n; ++k) res_.trace.push_back(ring_[(ring_pos_ - n + k) % ring_.size()]);
    }
}

}  // namespace detail

using detail::Machine;

void execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts, ExecResult& out) {
    Machine m(exe, *exe.code_, in, nullptr, opts, out);
    m.run();
}

void execute(const Executable& exe, PreparedInput& in, const ExecOptions& opts, ExecResult& out) {
    Machine m(exe, *exe.code_, *in.in_, in.image_.get(), opts, out);
    m.run();
}

ExecResult execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts) {
    ExecResult r;
    execute(exe, in, opts, r);
    return r;
}

ExecResult execute(const Program& prog, const ExecInput& in, const ArchProfile& arch, const ExecOptions& opts, ZextMarks marks) {
    return execute(Executable(prog, arch, marks), in, opts);
}

}  // namespace patchfuzz::interp
