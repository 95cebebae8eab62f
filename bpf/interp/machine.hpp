#pragma once
// The interpreter's machine, private to bpf/interp: registers, frames, memory regions, map models
// and the effect log of one run (Machine), and the set-up a PreparedInput keeps between runs
// (SetupImage). Its parts are defined in interp.cpp (the dispatch loop and the small functions it
// calls, in one translation unit), machine_setup.cpp (the regions, ctx and maps a run starts
// from, and the results it ends with) and helper_models.cpp (the helper and kfunc models).
#include <linux/bpf.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/interp/cost_model.hpp"
#include "bpf/interp/ctx_image.hpp"
#include "bpf/interp/decoded_code.hpp"
#include "bpf/interp/effect_log.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/interp/map_model.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/util/hex.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::interp {

// What PreparedInput keeps of the first run on its input: the set-up that run built, and what of
// its program the set-up read, so that it is restored only for a program it fits.
struct SetupImage {
    // What of a map's definition its set-up reads (MapModel's constructor and user_fill): two
    // programs whose maps have these alike get the same set-up, whatever the maps' names and
    // flags (the models read those from their own program's definitions).
    struct MapShape {
        uint32_t type, key_size, value_size, max_entries;
        explicit MapShape(const MapDef& d) : type(d.type), key_size(d.key_size), value_size(d.value_size), max_entries(d.max_entries) {}
        bool operator==(const MapShape&) const = default;
    };
    bool saved = false;
    uint32_t ctx_base = 0;
    // What the ctx region was made from besides the input (ctx_image.hpp): the uapi view of this
    // kind, or the kernel structs of this layout.
    ctx_fields::CtxKind ctx_kind = ctx_fields::CtxKind::None;
    CtxLayout ctx_layout = CtxLayout::Uapi;
    uint64_t nr_args = 0;  // tracing_nr_args(), in the ctx prefix of a tracing program
    std::vector<MapShape> map_shapes;
    Memory::Image memory;
    std::vector<MapModel::State> maps;  // [0, map_shapes.size()): this set-up's
    // MapModel::content_digest() of each map as set up, noted by the first run that ended with
    // its maps unchanged (Machine::record_map_digests), for the runs after it that leave them
    // unchanged too: most runs change no map, and each run digested every map. An insn array's
    // entry is not used: its contents are the program's (Machine::setup).
    bool digests_saved = false;
    std::vector<uint64_t> map_digests;

    [[nodiscard]] bool fits(const Program& p, uint32_t p_ctx_base) const {
        if (!saved || p_ctx_base != ctx_base || (ctx_base != 0 && tracing_nr_args(p) != nr_args) || p.maps.size() != map_shapes.size())
            return false;
        if (ctx_fields::ctx_kind(p.prog_type) != ctx_kind || p.ctx_layout != ctx_layout) return false;
        for (size_t i = 0; i < map_shapes.size(); ++i)
            if (!(MapShape(p.maps[i]) == map_shapes[i])) return false;
        return true;
    }
    void save(const Program& p, uint32_t p_ctx_base, const Memory& mem, const std::vector<MapModel>& models) {
        ctx_base = p_ctx_base;
        nr_args = ctx_base ? tracing_nr_args(p) : 0;
        ctx_kind = ctx_fields::ctx_kind(p.prog_type);
        ctx_layout = p.ctx_layout;
        map_shapes.clear();
        for (const MapDef& d : p.maps) map_shapes.emplace_back(d);
        mem.save(memory);
        // Never shrunk: the States after the models' (a set-up of more maps before) keep their
        // storage for a later one, and only the first map_shapes.size() are read (fits()).
        if (maps.size() < models.size()) maps.resize(models.size());
        for (size_t i = 0; i < models.size(); ++i) maps[i] = models[i].state();
        saved = true;
        digests_saved = false;
    }
};

namespace detail {

// No default member initializers: a Machine's frames stay unwritten until entered (Frame{} then
// zeroes one), instead of all eight being zeroed for every run.
struct Frame {
    uint32_t ret_pc;
    uint64_t saved[5];  // caller's r6-r9, r10
    uint32_t may_goto;
    bool loop_cb;       // frame of a bpf_loop callback
    uint32_t loop_i, loop_n;
    uint32_t cb_pc;
    uint64_t loop_ctx;
};

inline constexpr uint64_t kHi = 0xffffffff00000000ULL;
inline constexpr uint32_t kNoPc = 0xffffffffu;

// BPF_END: the low 16 or 32 bits (or all 64) reversed, the rest zero.
inline uint64_t bswap16(uint64_t v) { return byte_swap16(static_cast<uint16_t>(v)); }
inline uint64_t bswap32(uint64_t v) { return byte_swap32(static_cast<uint32_t>(v)); }
inline uint64_t bswap64(uint64_t v) { return byte_swap64(v); }

// ISA division semantics (RFC 9669 §4.1; kernel rewrites in do_misc_fixups), never host traps.
inline uint64_t udiv64(uint64_t a, uint64_t b) { return b ? a / b : 0; }
inline uint64_t umod64(uint64_t a, uint64_t b) { return b ? a % b : a; }
inline uint64_t sdiv64(uint64_t a, uint64_t b) {
    if (b == 0) return 0;
    if (b == ~0ULL) return 0 - a;
    return static_cast<uint64_t>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
}
inline uint64_t smod64(uint64_t a, uint64_t b) {
    if (b == 0) return a;
    if (b == ~0ULL) return 0;
    return static_cast<uint64_t>(static_cast<int64_t>(a) % static_cast<int64_t>(b));
}
inline uint32_t udiv32(uint32_t a, uint32_t b) { return b ? a / b : 0; }
inline uint32_t umod32(uint32_t a, uint32_t b) { return b ? a % b : a; }
inline uint32_t sdiv32(uint32_t a, uint32_t b) {
    if (b == 0) return 0;
    if (b == 0xffffffffu) return 0u - a;
    return static_cast<uint32_t>(static_cast<int32_t>(a) / static_cast<int32_t>(b));
}
inline uint32_t smod32(uint32_t a, uint32_t b) {
    if (b == 0) return a;
    if (b == 0xffffffffu) return 0;
    return static_cast<uint32_t>(static_cast<int32_t>(a) % static_cast<int32_t>(b));
}

// `out` = the n bytes at `p`. Mostly `out` has n bytes already (the result of an earlier run of the
// program, see ExecResult::clear_but_memory): then one copy, without vector::assign's general case.
inline void copy_bytes(std::vector<uint8_t>& out, const uint8_t* p, size_t n) {
    if (out.size() == n) [[likely]] {
        if (n) std::memcpy(out.data(), p, n);
    } else {
        out.assign(p, p + n);
    }
}

class Machine {
public:
    // Fills `out`, reusing the storage its vectors already have (the oracle runs many programs
    // on many inputs into the same results).
    // `image` (optional): the set-up saved by an earlier run on `in`, restored when it fits this
    // program, else built and saved there (PreparedInput).
    Machine(const Executable& exe, const DecodedCode& code, const ExecInput& in, SetupImage* image, const ExecOptions& opts,
            ExecResult& out)
        : prog_(exe.program()),
          in_(in),
          image_(image),
          arch_(exe.arch()),
          marks_(exe.zext_marks()),
          opts_(opts),
          res_(out),
          effects_(out.effects),
          code_(code.code_.get()),
          code_size_(code.size_),
          invalid_(code.invalid_),
          prandom_(in.prandom_seed) {
        res_.clear_but_memory();  // run() writes the memory, or clears it (end_before_start)
        maps_.swap(spare_models());
    }
    ~Machine() { spare_models().swap(maps_); }
    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    void run();

private:
    // A run that ends before its first insn (its set-up failed, or there is no code) has no
    // final memory.
    void end_before_start() {
        res_.stack.clear();
        res_.ctx.clear();
        res_.packet.clear();
    }
    // setup
    bool setup();
    bool build_setup();
    void build_kernel_ctx();
    void final_ctx();
    void record_map_digests();
    // maps_ with at most n models (those of a run before, to be remade) and room for n.
    void keep_models(size_t n) {
        if (maps_.size() > n) maps_.erase(maps_.begin() + static_cast<std::ptrdiff_t>(n), maps_.end());
        maps_.reserve(n);
    }
    // What a 32-bit def does with the register's upper half (hi_keep_): the plain runs, most of
    // all, know it when the loop is made, and their 32-bit ops are then a plain 32-bit op.
    enum class UpperHalf : uint8_t { Zeroed, Kept, AsHiKeep };
    // Where loop() tests the step budget. EveryInsn: at every insn's dispatch. AtJumps: only where
    // the run jumps (taken jumps, calls, returns), holding back a reserve of code_size_ steps
    // that no run can exceed between two jumps (it only moves forward, and faults at the end of
    // the code), so that every insn in between is sure to have its step; when the steps left
    // run into the reserve, loop() stops before the insn it was to run (at_jumps_stopped_), and
    // an EveryInsn loop runs the rest. The plain runs, most of all, spare a test per insn.
    enum class StepCheck : uint8_t { EveryInsn, AtJumps };
    template <bool kCost, bool kTrace, bool kZextMarks, UpperHalf kUpper = UpperHalf::AsHiKeep,
              StepCheck kCheck = StepCheck::EveryInsn>
    void loop();
    // A plain run (no cost, trace or zext marks): tests the budget at jumps while it can.
    template <UpperHalf kUpper>
    void plain_loop() {
        loop<false, false, false, kUpper, StepCheck::AtJumps>();
        if (at_jumps_stopped_) loop<false, false, false, kUpper, StepCheck::EveryInsn>();
    }
    void charge(const DInsn& d, uint32_t pc);

    // faults
    void fault(uint32_t pc, std::string reason, ExecResult::Status st = ExecResult::Status::Fault) {
        if (done_) return;
        done_ = true;
        res_.status = st;
        res_.fault_pc = pc;
        res_.reason = std::move(reason);
    }
    // calls
    // A helper call. The clock helpers, most of the calls generated programs make, are modelled
    // right here, without the set-up of call_helper_any(), which models every helper.
    bool call_helper(uint32_t pc, int32_t id) {
        if ((id == BPF_FUNC_ktime_get_ns || id == BPF_FUNC_ktime_get_boot_ns || id == BPF_FUNC_jiffies64) &&
            !opts_.conformance_helpers) [[likely]] {
            helper_returns(clock_read(), 4);
            return true;
        }
        return call_helper_any(pc, id);
    }
    bool call_helper_any(uint32_t pc, int32_t id);
    // A helper's return: r0 = ret, r1-r5 poisoned, and (with a cost model) `body` cycles.
    void helper_returns(uint64_t ret, double body) {
        r_[0] = ret;
        for (int k = 1; k <= 5; ++k) r_[k] = kCallPoison;
        if (cost_) {
            cost_->call(CostModel::CallKind::Helper, body);
            cost_->clobber(0, 5);
        }
    }
    bool call_kfunc(uint32_t pc, int32_t btf_id);
    bool push_frame(uint32_t pc, uint32_t target, bool loop_cb);
    // The host pointer of an insn's access of `size` (1..8) bytes at `a`, nullptr when no region
    // has them: Memory::translate_access(), but through the frame's stack view when they are in it.
    [[gnu::always_inline]] uint8_t* access(uint64_t a, uint32_t size, bool write) {
        const uint64_t off = a - stack_lo_;
        if ((off | stack_off_mask_) <= kStackSize - size) [[likely]] {
            uint8_t* const p = stack_data_ + off;
            if (p == nullptr) __builtin_unreachable();  // (a valid view has storage)
            return p;
        }
        uint8_t* const p = mem_.translate_access(a, size, write);
        if (stack_off_mask_ != 0) [[unlikely]]
            view_stack();
        return p;
    }
    void view_stack();
    void stack_changed() { stack_off_mask_ = ~uint64_t{0}; }
    bool too_deep(uint32_t pc);  // push_frame's fault
    MapModel* map_arg(uint32_t pc, uint64_t handle, const char* what);
    bool tail_call_attempt(uint32_t pc, uint64_t map, uint64_t index);
    uint32_t map_index(uint64_t handle) const;
    uint64_t clock_read();
    [[gnu::noinline]] void clock_effect(uint64_t v);  // the effect of a read beyond the table's
    bool special_load(uint64_t addr, uint32_t size, uint64_t& out);
    uint64_t percpu_addr(uint64_t v) const;
    bool tracing_helper(uint32_t pc, int32_t id, uint64_t& ret);
    enum class SkbLoad : uint8_t { Ok, OutOfPacket, NotSkb };
    SkbLoad skb_load(uint64_t skb, int32_t offset, uint32_t size, uint64_t& value);
    // The map ld_imm64s map_ldimm64_direct() leaves (it returned 0): a per-CPU array's value, or a
    // fault with its reason in `why`.
    bool map_ldimm64_rest(const DInsn& d, uint64_t& out, std::string& why) const;
    // A map ld_imm64 of the common forms, inline in loop(): the map (MAP_FD, MAP_IDX) or a value of
    // an array (MAP_VALUE, MAP_IDX_VALUE); 0 for any other (a map pointer is never 0).
    uint64_t map_ldimm64_direct(const DInsn& d) const {
        const uint64_t index = static_cast<uint32_t>(d.imm);
        if (index >= maps_.size()) [[unlikely]]
            return 0;
        const MapModel& m = maps_[index];
        return d.src == BPF_PSEUDO_MAP_FD || d.src == BPF_PSEUDO_MAP_IDX ? m.handle() : m.direct_value(static_cast<uint32_t>(d.off));
    }
    bool no_such_map(uint64_t index, std::string& why) const;

    // First: its address is the Machine's, which the memory accesses of loop() pass to the slow
    // paths of Memory::translate() without computing it.
    Memory mem_;
    const Program& prog_;
    const ExecInput& in_;
    SetupImage* const image_;
    const ArchProfile& arch_;
    const ZextMarks marks_;
    const ExecOptions& opts_;
    ExecResult& res_;
    EffectLog effects_;  // into res_.effects
    bool done_ = false;

    const DInsn* const code_;
    const size_t code_size_;
    const std::vector<std::string>& invalid_;
    uint32_t ctx_base_ = 0;  // where r1 points inside the ctx region (after a tracing prefix)
    // The ctx of a socket filter, tc or XDP program (ctx_image.hpp): its kind, and the kernel build
    // whose structs the ctx region is when the program's ctx accesses were converted (else nullptr:
    // the region is the uapi view).
    ctx_fields::CtxKind ctx_kind_ = ctx_fields::CtxKind::None;
    const ctx_fields::KernelLayout* kernel_ctx_ = nullptr;
    // The program's maps' models, made by setup() (nothing reads them before): reserved for all
    // maps at once, models never move.
    std::vector<MapModel> maps_;
    // maps_, kept per thread from one run to the next with its models, which the next run's
    // setup() remakes for its maps (most runs have maps: a vector of their own was an allocation
    // per run, and each hash map's model allocated its keys and elements). A run that finds it
    // taken (a run inside a run, which none makes today) allocates its own.
    static std::vector<MapModel>& spare_models() {
        static thread_local std::vector<MapModel> spare;
        return spare;
    }
    // r0-r10, AX, and four that callx can name (always 0). Written by run() before the first insn,
    // so no initializer (that clears them once more, in a `rep stos`).
    uint64_t r_[16];
    uint64_t hi_keep_ = 0;  // kHi under alu32_no_implicit_zext: 32-bit defs keep the old upper half
    Frame frames_[kMaxFrames];
    uint32_t depth_ = 0;
    // The current frame's stack as the insns' accesses see it without Memory::translate() (most
    // are spills, fills and locals): its first address and its storage, valid while
    // stack_off_mask_ is 0. ~0 makes every access miss it (access() then translates): set when
    // the frame changes or its stack is made fresh, until an access finds the stack allocated.
    uint64_t stack_lo_ = 0;
    uint8_t* stack_data_ = nullptr;
    uint64_t stack_off_mask_ = ~uint64_t{0};
    uint32_t tail_calls_ = 0;
    uint32_t jump_to_ = kNoPc;  // set by bpf_loop: continue at the callback
    // A map helper changed a map's elements (update, delete): the maps may differ from their
    // set-up even where no write reached their memory through translate() (Memory::watch).
    bool maps_updated_ = false;
    uint64_t clock_calls_ = 0;
    uint64_t timed_refreshes_ = 0;
    Rng prandom_;
    uint64_t budget_ = 0;
    uint64_t steps_ = 0;
    uint32_t start_pc_ = 0;  // where loop() starts: 0, or where a StepCheck::AtJumps loop stopped
    bool at_jumps_stopped_ = false;
    CostModel* cost_ = nullptr;
    std::vector<TraceStep> ring_;
    size_t ring_pos_ = 0;
};

}  // namespace detail
}  // namespace patchfuzz::interp
