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
#include "bpf/interp/ctx_image.hpp"
#include "bpf/interp/decode_check.hpp"
#include "bpf/interp/effect_log.hpp"
#include "bpf/interp/map_model.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/internal_calls.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/hex.hpp"
#include "bpf/util/rng.hpp"

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

namespace {

using isa::Insn;

// ---- pre-decoded form -----------------------------------------------------------------------------
// One op per (class, operation, operand kind, width); K operands are pre-extended into `imm`,
// jump targets pre-resolved into absolute insn indices in `off`.
#define PF_ALU_OPS(X) X(ADD) X(SUB) X(MUL) X(DIV) X(SDIV) X(MOD) X(SMOD) X(OR) X(AND) X(XOR) X(LSH) X(RSH) X(ARSH) X(MOV)
#define PF_JMP_OPS(X) X(JEQ) X(JNE) X(JGT) X(JGE) X(JLT) X(JLE) X(JSGT) X(JSGE) X(JSLT) X(JSLE) X(JSET)
// The other ops, each one handler. LE*/BSWAP*: ALU|END TO_LE, ALU|END TO_BE and ALU64 END; LDABS,
// LDIND: classic packet loads (aux: size in bytes).
#define PF_OTHER_OPS(X)                                                                                              \
    X(MOVPERCPU) X(MOVSX8_64) X(MOVSX16_64) X(MOVSX32_64) X(MOVSX8_32) X(MOVSX16_32) X(NEG64) X(NEG32) X(ZEXT)       \
    X(LE16) X(LE32) X(LE64) X(BSWAP16) X(BSWAP32) X(BSWAP64)                                                         \
    X(LDXB) X(LDXH) X(LDXW) X(LDXDW) X(LDSXB) X(LDSXH) X(LDSXW) X(LDX_PROBE) X(LDX_CTX_PKT)                         \
    X(STB) X(STH) X(STW) X(STDW) X(STXB) X(STXH) X(STXW) X(STXDW) X(ATOMIC)                                          \
    X(LDABS) X(LDIND)                                                                                                \
    X(LDIMM64) X(LDIMM64_MAP) X(JA) X(CALL_HELPER) X(CALL_LOCAL) X(CALL_KFUNC) X(CALLX) X(EXIT) X(MAY_GOTO) X(GOTOX) \
    X(TAIL_CALL) X(NOP) X(LDIMM64_TAIL) X(INVALID)

enum Op : uint8_t {
#define PF_ENUM_ALU(N) N##64K, N##64X, N##32K, N##32X,
    PF_ALU_OPS(PF_ENUM_ALU)
#undef PF_ENUM_ALU
#define PF_ENUM_JMP(N) N##64K, N##64X, N##32K, N##32X,
    PF_JMP_OPS(PF_ENUM_JMP)
#undef PF_ENUM_JMP
#define PF_ENUM_OTHER(N) N,
    PF_OTHER_OPS(PF_ENUM_OTHER)
#undef PF_ENUM_OTHER
    kOpCount
};

struct DInsn {
    uint8_t op;
    uint8_t dst;
    uint8_t src;
    uint8_t aux;   // LDX_PROBE/ATOMIC/LDABS/LDIND: size in bytes; LDX_PROBE: 1 = sign-extend (bit 7)
    int32_t off;   // memory offset, or absolute jump target; LDIMM64: the value's upper half
    int32_t imm;   // immediate (k64/k32 extend it), masked for shifts; LDIMM64: the value's lower half;
                   // ATOMIC: op; INVALID: reason index in DecodedCode::invalid_
    // 1 + the register a zext_dst mark of the program (InsnAux) zero-extends after this insn
    // (insn_def_regno), 0 for none: what a run with ZextMarks::Apply does, found without a
    // look at the program's side tables per insn.
    uint8_t zext;
    uint8_t unused[3];
    bool operator==(const DInsn&) const = default;
};
static_assert(sizeof(DInsn) == 16 && offsetof(DInsn, imm) == 8 && offsetof(DInsn, zext) == 12);

// A K operand for a 64-bit operation (sign-extended) and for a 32-bit one.
inline uint64_t k64(const DInsn& d) { return static_cast<uint64_t>(static_cast<int64_t>(d.imm)); }
inline uint32_t k32(const DInsn& d) { return static_cast<uint32_t>(d.imm); }
// The 64-bit value of an ld_imm64 (LDIMM64), and how decode stores it.
inline uint64_t imm64(const DInsn& d) { return uint64_t{static_cast<uint32_t>(d.imm)} | (uint64_t{static_cast<uint32_t>(d.off)} << 32); }
inline void set_imm64(DInsn& d, uint64_t v) {
    d.imm = static_cast<int32_t>(static_cast<uint32_t>(v));
    d.off = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
}

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

constexpr uint64_t kHi = 0xffffffff00000000ULL;
constexpr uint32_t kNoPc = 0xffffffffu;

// BPF_END: the low 16 or 32 bits (or all 64) reversed, the rest zero.
uint64_t bswap16(uint64_t v) { return byte_swap16(static_cast<uint16_t>(v)); }
uint64_t bswap32(uint64_t v) { return byte_swap32(static_cast<uint32_t>(v)); }
uint64_t bswap64(uint64_t v) { return byte_swap64(v); }

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

constexpr const char* kSecondSlotReason = "execution reached the second slot of ld_imm64";

}  // namespace

// The DInsn arrays of decoded code destroyed before, kept per thread for the next decodes: the
// execution oracle decodes a few programs for every case, each into an array of its own. An
// array is made with room for at least kMinRoom insns, so that most programs fit any spare one.
class SpareCode {
public:
    struct Array {
        std::unique_ptr<DInsn[]> insns;
        size_t room = 0;
    };
    // An array with room for n DInsns, its contents unspecified. Not inlined: in decode() it made
    // the loop keep `n` on the stack.
    [[gnu::noinline]] static Array take(size_t n) {
        Kept& kept = thread_kept();
        for (size_t k = kept.count; k-- > 0;)
            if (kept.arrays[k].room >= n) {
                Array a = std::move(kept.arrays[k]);
                kept.arrays[k] = std::move(kept.arrays[--kept.count]);
                return a;
            }
        const size_t room = std::max(n, kMinRoom);
        return Array{std::unique_ptr<DInsn[]>(new DInsn[room]), room};
    }
    // Kept for a later take() unless kMaxKept are already (then freed).
    static void give_back(Array a) {
        Kept& kept = thread_kept();
        if (a.insns && kept.count < kMaxKept) kept.arrays[kept.count++] = std::move(a);
    }

private:
    static constexpr size_t kMinRoom = 512;
    static constexpr size_t kMaxKept = 4;
    struct Kept {
        Array arrays[kMaxKept];
        size_t count = 0;
    };
    static Kept& thread_kept() {
        static thread_local Kept kept;
        return kept;
    }
};

// The allocator of DecodedCode's shared blocks (the object with its reference counts, one size):
// blocks freed on this thread are kept, up to kKept, for the next DecodedCodes made on it (the
// execution oracle makes a few for every case).
template <class T>
class RecycledBlocks {
public:
    using value_type = T;
    RecycledBlocks() = default;
    template <class U>
    RecycledBlocks(const RecycledBlocks<U>&) noexcept {}  // (allocate_shared rebinds it)
    T* allocate(size_t n) {
        Kept& kept = thread_kept();
        if (n == 1 && kept.count > 0) return kept.blocks[--kept.count];
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, size_t n) {
        Kept& kept = thread_kept();
        if (n == 1 && kept.count < kKept) {
            kept.blocks[kept.count++] = p;
            return;
        }
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const RecycledBlocks<U>&) const noexcept {
        return true;
    }

private:
    static constexpr size_t kKept = 4;
    struct Kept {
        T* blocks[kKept];
        size_t count = 0;
        ~Kept() {
            for (size_t k = 0; k < count; ++k) std::allocator<T>().deallocate(blocks[k], 1);
        }
    };
    static Kept& thread_kept() {
        static thread_local Kept kept;
        return kept;
    }
};

// A program's code decoded for one value of movsx_as_mov, the only part of a profile the decode
// depends on (and nothing of an input): what Executables of one program share.
struct DecodedCode {
    DecodedCode(const Program& prog, bool movsx_as_mov) : prog_(prog), movsx_as_mov_(movsx_as_mov) { decode(); }
    ~DecodedCode() { SpareCode::give_back(SpareCode::Array{std::move(code_), room_}); }
    DecodedCode(const DecodedCode&) = delete;
    DecodedCode& operator=(const DecodedCode&) = delete;
    void decode();
    void mark_ctx_packet_loads();
    // Sets DInsn::zext from the program's marks, once (what runs with ZextMarks::Apply read; the
    // others, sharing this code, never look).
    void mark_zexts() const;
    [[gnu::noinline]] uint32_t decode_slow(uint32_t pc);
    [[gnu::noinline]] uint32_t decode_general(uint32_t pc);
    DInsn decode_one(uint32_t pc, std::string& why);
    void decode_common_ldimm64(uint32_t pc, DInsn& d) const;
    [[maybe_unused]] bool decodes_alike(uint32_t pc, const DInsn& d);  // for assert()
    // Whether this decode is also the one for a profile with movsx_as_mov == `movsx_as_mov`.
    [[nodiscard]] bool decodes_for(bool movsx_as_mov) const { return !has_movsx_ || movsx_as_mov == movsx_as_mov_; }

    const Program& prog_;
    const bool movsx_as_mov_;
    bool has_movsx_ = false;  // some insn decoded differently under the other movsx_as_mov
    // One per insn and one after them, every one written by decode() (so not zeroed first, as a
    // vector's would be; the array may come with the insns of an earlier decode: SpareCode).
    std::unique_ptr<DInsn[]> code_;
    size_t size_ = 0;
    size_t room_ = 0;  // the array's DInsns
    std::vector<std::string> invalid_;  // reasons for INVALID insns (index in DInsn::imm)
    static constexpr uint32_t kNoReason = ~0u;  // DInsn::imm of an INVALID insn without one in invalid_
    // DInsn::imm of the second slot of a decoded ld_imm64, whose reason (kSecondSlotReason) is not
    // in invalid_: most programs have ld_imm64s, and the string would be made for each decode.
    static constexpr uint32_t kSecondSlot = ~1u;
    static constexpr DInsn second_slot() { return DInsn{INVALID, 0, 0, 0, 0, static_cast<int32_t>(kSecondSlot), 0, {}}; }
    mutable std::once_flag zext_marked_;
};

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

namespace {

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

bool Machine::setup() {
    // A tracing program's ctx is the trampoline's argument array, with two words below it that
    // the inlined get_func_* helpers read (arch_prepare_bpf_trampoline): ctx[-8] the number of
    // arguments, ctx[-16] the traced function's address.
    ctx_base_ = prog_.prog_type == BPF_PROG_TYPE_TRACING ? kTracingCtxPrefix : 0;
    ctx_kind_ = ctx_fields::ctx_kind(prog_.prog_type);
    kernel_ctx_ = ctx_kind_ == ctx_fields::CtxKind::None ? nullptr : ctx_fields::kernel_layout(prog_.ctx_layout);
    if (image_ != nullptr && image_->fits(prog_, ctx_base_)) {
        mem_.restore(image_->memory);
        keep_models(prog_.maps.size());
        for (size_t i = 0; i < prog_.maps.size(); ++i) {
            if (i < maps_.size()) maps_[i].remake(prog_.maps[i], mem_, image_->maps[i]);
            else maps_.emplace_back(prog_.maps[i], mem_, image_->maps[i]);
        }
    } else {
        if (!build_setup()) return false;
        if (image_ != nullptr) {
            // The maps' memory is watched from here on (record_map_digests), and so from the
            // start of every run that restores this set-up: the regions are saved watched.
            mem_.watch(kFirstMapRegion);
            image_->save(prog_, ctx_base_, mem_, maps_);
        }
    }
    // Instruction arrays: each entry's value is the code address of its (xlated) insn, what
    // gotox jumps through. Per program (a rewrite moves insns), so not part of a saved set-up.
    for (const InsnArray& ia : prog_.insn_arrays) {
        if (ia.map_index < 0 || static_cast<size_t>(ia.map_index) >= maps_.size()) continue;
        MapModel& m = maps_[static_cast<size_t>(ia.map_index)];
        if (m.kind() != MapModel::Kind::InsnArray) continue;
        for (size_t e = 0; e < ia.entries.size() && e < m.def().max_entries; ++e) {
            uint32_t r = 0, off = 0;
            uint64_t a = m.direct_value(static_cast<uint32_t>(e * 8));
            if (!mem_.region_of(a, r, off)) continue;
            uint64_t target = ia.entries[e].xlated_off == isa::kInsnDeleted ? 0 : kCodeBase + uint64_t{ia.entries[e].xlated_off} * 8;
            store_le(mem_.region(r).data + off, 8, target);
        }
    }
    return true;
}

// The regions and maps a run starts from, made from the input (and the program's type, attach
// target and map definitions).
bool Machine::build_setup() {
    // Frame f's stack is region f. Only the main frame's is used by every run; a callee's is
    // zeroed when it is entered (push_frame), so it gets storage only then (or on a stray access
    // before, through a pointer made by arithmetic, which reads zeros as from a fresh stack).
    // The main frame's stack starts with the input's bytes from its bottom up, zeros above.
    mem_.add_copy(kStackSize, 0, in_.stack.data(), std::min<size_t>(kStackSize, in_.stack.size()), RegionKind::Stack);
    mem_.add_lazy_many(kMaxFrames - 1, kStackSize, RegionKind::Stack);
    // A converted program's ctx is the kernel structs, filled once the regions they point at exist.
    uint32_t ctx = kernel_ctx_ ? mem_.add(kernel_ctx_size(*kernel_ctx_, ctx_kind_), RegionKind::Ctx)
                               : mem_.add_copy(ctx_base_ + static_cast<uint32_t>(in_.ctx.size()), ctx_base_, in_.ctx.data(),
                                               in_.ctx.size(), RegionKind::Ctx);
    if (!kernel_ctx_ && ctx_kind_ != ctx_fields::CtxKind::None)
        normalize_ctx_view(ctx_kind_, {mem_.region(ctx).data + ctx_base_, in_.ctx.size()});
    if (ctx_base_) {
        store_le(mem_.region(ctx).data, 8, kTracedFuncIp);
        store_le(mem_.region(ctx).data + 8, 8, tracing_nr_args(prog_));
    }
    mem_.add_copy(static_cast<uint32_t>(in_.packet.size()), 0, in_.packet.data(), in_.packet.size(), RegionKind::Packet);
    // pcpu_hot: current_task at +0, cpu_number at +12 (offsets of internal_calls.hpp).
    uint32_t pcpu = mem_.add(16, RegionKind::Ctx, false);
    store_le(mem_.region(pcpu).data, 8, kKsymBase + 0x100000);
    store_le(mem_.region(pcpu).data + (passes::kPcpuCpuNumber - passes::kPcpuCurrentTask), 4, in_.cpu);
    keep_models(prog_.maps.size());
    for (size_t i = 0; i < prog_.maps.size(); ++i) {
        if (i < maps_.size()) maps_[i].remake(prog_.maps[i], mem_);
        else maps_.emplace_back(prog_.maps[i], mem_);
        MapModel& m = maps_[i];
        if (m.kind() == MapModel::Kind::Unsupported) {
            fault(0, "map " + std::to_string(i) + " (type " + std::to_string(prog_.maps[i].type) + ", key size " +
                         std::to_string(prog_.maps[i].key_size) + ") is not modelled",
                  ExecResult::Status::Unsupported);
            return false;
        }
        // A wrong-sized entry ends the run before it starts (no result but the fault), so the
        // entries applied before it are never seen.
        if (i < in_.maps.size() && !m.user_fill(in_.maps[i])) {
            fault(0, "input for map " + std::to_string(i) + " has an entry of the wrong size", ExecResult::Status::Unsupported);
            return false;
        }
    }
    if (kernel_ctx_) build_kernel_ctx();
    return true;
}

// The kernel structs of a converted program's ctx (ctx_image.hpp): the ctx region (sk_buff or
// xdp_buff) and, after the maps' regions, the net_device and xdp_rxq_info it points at.
void Machine::build_kernel_ctx() {
    const ctx_fields::KernelLayout& l = *kernel_ctx_;
    KernelCtxBytes b;
    CtxPointers ptrs;
    const uint32_t dev = mem_.add(l.dev_size, RegionKind::Ctx, false);
    ptrs.dev = Memory::addr(dev, 0);
    if (ctx_kind_ == ctx_fields::CtxKind::Xdp) {
        const uint32_t rxq = mem_.add(l.rxq_size, RegionKind::Ctx, false);
        ptrs.rxq = Memory::addr(rxq, 0);
        b.rxq = mem_.region(rxq).data;
    }
    b.dev = mem_.region(dev).data;
    b.ctx = mem_.region(kRegionCtx).data;
    ptrs.packet = Memory::addr(kRegionPacket, 0);
    ptrs.packet_end = Memory::addr(kRegionPacket, mem_.region(kRegionPacket).size);
    std::array<uint8_t, ctx_fields::kSkbUapiSize> view{};
    const size_t n = std::min(view.size(), in_.ctx.size());
    std::copy_n(in_.ctx.begin(), n, view.begin());
    normalize_ctx_view(ctx_kind_, {view.data(), n});
    fill_kernel_ctx(l, ctx_kind_, {view.data(), n}, ptrs, b);
}

}  // namespace

// The decoded op of a two-operand ALU insn (64-bit, immediate form; +1 register, +2 ALU32), -1
// for any other ALU op (NEG and END are decoded from their imm). `signed_divmod`: DIV/MOD with
// off 1 (sdiv/smod).
static constexpr int alu_base(uint8_t o, bool signed_divmod) {
    switch (o) {
        case BPF_ADD: return ADD64K;
        case BPF_SUB: return SUB64K;
        case BPF_MUL: return MUL64K;
        case BPF_DIV: return signed_divmod ? SDIV64K : DIV64K;
        case BPF_MOD: return signed_divmod ? SMOD64K : MOD64K;
        case BPF_OR: return OR64K;
        case BPF_AND: return AND64K;
        case BPF_XOR: return XOR64K;
        case BPF_LSH: return LSH64K;
        case BPF_RSH: return RSH64K;
        case BPF_ARSH: return ARSH64K;
        case BPF_MOV: return MOV64K;
        default: return -1;
    }
}

// The decoded op of a conditional jump (64-bit, immediate form; +1 register, +2 JMP32), -1 for
// any other jump op.
static constexpr int cond_jump_base(uint8_t o) {
    switch (o) {
        case BPF_JEQ: return JEQ64K;
        case BPF_JNE: return JNE64K;
        case BPF_JGT: return JGT64K;
        case BPF_JGE: return JGE64K;
        case BPF_JLT: return JLT64K;
        case BPF_JLE: return JLE64K;
        case BPF_JSGT: return JSGT64K;
        case BPF_JSGE: return JSGE64K;
        case BPF_JSLT: return JSLT64K;
        case BPF_JSLE: return JSLE64K;
        case BPF_JSET: return JSET64K;
        default: return -1;
    }
}

DInsn DecodedCode::decode_one(uint32_t pc, std::string& why) {
    const Insn& i = prog_.insns[pc];
    const uint32_t n = static_cast<uint32_t>(prog_.insns.size());
    DInsn d{INVALID, i.dst_reg, i.src_reg, 0, i.off, i.imm};
    if (i.dst_reg > isa::kRegAx || i.src_reg > isa::kRegAx) {
        why = "invalid register";
        return d;
    }
    auto jump_target = [&](int64_t rel) -> bool {
        int64_t t = static_cast<int64_t>(pc) + 1 + rel;
        if (t < 0 || t >= static_cast<int64_t>(n)) {
            why = "jump target " + std::to_string(t) + " out of range";
            return false;
        }
        d.off = static_cast<int32_t>(t);
        return true;
    };
    const uint8_t cls = isa::cls(i);
    const bool x = isa::src_bit(i) != 0;
    switch (cls) {
        case BPF_ALU:
        case BPF_ALU64: {
            const bool w64 = cls == BPF_ALU64;
            const uint8_t o = isa::op(i);
            if (o == BPF_NEG) {
                d.op = w64 ? NEG64 : NEG32;
                return d;
            }
            if (o == BPF_END) {
                if (i.imm != 16 && i.imm != 32 && i.imm != 64) {
                    why = "invalid byte swap width";
                    return d;
                }
                int w = i.imm == 16 ? 0 : i.imm == 32 ? 1 : 2;
                if (w64 || x) d.op = static_cast<uint8_t>(BSWAP16 + w);  // ALU64 END / TO_BE on little endian
                else d.op = static_cast<uint8_t>(LE16 + w);
                return d;
            }
            if (o == BPF_MOV && x && i.off != 0 && i.off != 1 && i.off != -1) {
                // MOVSX (cpu v4). A 32-bit JIT that ignores `off` executes it as a plain move.
                has_movsx_ = true;
                if (movsx_as_mov_) {
                    d.op = w64 ? MOV64X : MOV32X;
                    return d;
                }
                if (w64 && i.off == 8) d.op = MOVSX8_64;
                else if (w64 && i.off == 16) d.op = MOVSX16_64;
                else if (w64 && i.off == 32) d.op = MOVSX32_64;
                else if (!w64 && i.off == 8) d.op = MOVSX8_32;
                else if (!w64 && i.off == 16) d.op = MOVSX16_32;
                else why = "invalid movsx offset " + std::to_string(i.off);
                return d;
            }
            if (o == BPF_MOV && x && w64 && i.off == passes::kAddrPercpuOff) {
                d.op = MOVPERCPU;  // BPF_MOV64_PERCPU_REG
                return d;
            }
            if (o == BPF_MOV && x && !w64 && i.imm == 1 && i.dst_reg == i.src_reg) {
                d.op = ZEXT;  // BPF_ZEXT_REG
                return d;
            }
            // MOV with off 1 (arena cast) / -1 (percpu) is the identity here.
            const int base = alu_base(o, i.off == 1);
            if (base < 0) {
                why = "invalid alu op";
                return d;
            }
            d.op = static_cast<uint8_t>(base + (w64 ? 0 : 2) + (x ? 1 : 0));
            if (o == BPF_LSH || o == BPF_RSH || o == BPF_ARSH) d.imm &= w64 ? 63 : 31;  // ISA mask (also for K)
            return d;
        }
        case BPF_JMP:
        case BPF_JMP32: {
            const uint8_t o = isa::op(i);
            if (o == BPF_JA) {
                if (cls == BPF_JMP32) {
                    d.op = JA;  // gotol: imm
                    jump_target(i.imm);
                    if (!why.empty()) d.op = INVALID;
                    return d;
                }
                if (x) {
                    d.op = GOTOX;
                    return d;
                }
                d.op = JA;
                if (!jump_target(i.off)) d.op = INVALID;
                return d;
            }
            if (cls == BPF_JMP) {
                if (o == BPF_CALL) {
                    if (x) {
                        d.op = CALLX;
                        return d;
                    }
                    if (i.src_reg == BPF_PSEUDO_CALL) {
                        d.op = CALL_LOCAL;
                        if (!jump_target(i.imm)) d.op = INVALID;
                        return d;
                    }
                    d.op = i.src_reg == BPF_PSEUDO_KFUNC_CALL ? CALL_KFUNC : CALL_HELPER;
                    return d;
                }
                if (o == BPF_EXIT) {
                    d.op = EXIT;
                    return d;
                }
                if (o == BPF_JCOND) {
                    d.op = MAY_GOTO;
                    if (!jump_target(i.off)) d.op = INVALID;
                    return d;
                }
                if (o == isa::kOpTailCall) {
                    d.op = TAIL_CALL;
                    return d;
                }
            }
            const int base = cond_jump_base(o);
            if (base < 0) {
                why = "invalid jump op";
                return d;
            }
            d.op = static_cast<uint8_t>(base + (cls == BPF_JMP ? 0 : 2) + (x ? 1 : 0));
            if (!jump_target(i.off)) d.op = INVALID;
            return d;
        }
        case BPF_LDX: {
            const uint8_t m = isa::mode(i);
            const int sz = isa::size(i) == BPF_B ? 0 : isa::size(i) == BPF_H ? 1 : isa::size(i) == BPF_W ? 2 : 3;
            if (m == BPF_MEM) {
                d.op = static_cast<uint8_t>(LDXB + sz);
                return d;
            }
            if (m == BPF_MEMSX && sz < 3) {
                d.op = static_cast<uint8_t>(LDSXB + sz);
                return d;
            }
            if (m == isa::kModeProbeMem || m == isa::kModeProbeMemSx || m == isa::kModeProbeMem32) {
                d.op = LDX_PROBE;
                d.aux = static_cast<uint8_t>((1u << sz) | (m == isa::kModeProbeMemSx && sz < 3 ? 0x80 : 0));
                return d;
            }
            why = "invalid ldx mode";
            return d;
        }
        case BPF_ST:
        case BPF_STX: {
            const uint8_t m = isa::mode(i);
            const int sz = isa::size(i) == BPF_B ? 0 : isa::size(i) == BPF_H ? 1 : isa::size(i) == BPF_W ? 2 : 3;
            if (cls == BPF_ST && m == isa::kModeNospec) {
                d.op = NOP;
                return d;
            }
            if (m == BPF_MEM || (cls == BPF_STX && m == isa::kModeProbeMem32) || (cls == BPF_ST && m == isa::kModeProbeMem32)) {
                d.op = static_cast<uint8_t>((cls == BPF_ST ? STB : STXB) + sz);
                return d;
            }
            if (cls == BPF_STX && (m == BPF_ATOMIC || m == isa::kModeProbeAtomic)) {
                d.op = ATOMIC;
                d.aux = static_cast<uint8_t>(1u << sz);
                return d;
            }
            why = "invalid store mode";
            return d;
        }
        case BPF_LD: {
            const uint8_t m = isa::mode(i);
            if (m == BPF_ABS || m == BPF_IND) {
                // Classic packet load: the result is always R0 (classic A); a DW form does not
                // exist (bpf_opcode_in_insntable).
                if (isa::size(i) == BPF_DW) {
                    why = "LD_ABS/LD_IND with size DW does not exist";
                    return d;
                }
                d.op = m == BPF_ABS ? LDABS : LDIND;
                d.aux = isa::size(i) == BPF_B ? 1 : isa::size(i) == BPF_H ? 2 : 4;
                d.dst = BPF_REG_0;
                return d;
            }
            if (!isa::is_ldimm64(i)) {
                why = "invalid ld instruction " + hex(i.code);
                return d;
            }
            if (pc + 1 >= n) {
                why = "ld_imm64 truncated";
                return d;
            }
            const uint64_t lo32 = static_cast<uint32_t>(i.imm);
            d.op = LDIMM64;
            switch (i.src_reg) {
                case 0:
                case BPF_PSEUDO_MAP_FD:
                case BPF_PSEUDO_MAP_IDX:
                case BPF_PSEUDO_MAP_VALUE:
                case BPF_PSEUDO_MAP_IDX_VALUE: decode_common_ldimm64(pc, d); break;
                case BPF_PSEUDO_BTF_ID: set_imm64(d, kKsymBase + (lo32 << 12)); break;
                case BPF_PSEUDO_FUNC: {
                    int64_t t = static_cast<int64_t>(pc) + 1 + i.imm;
                    // t == n: the callback's code was removed as dead (the verifier never reached
                    // it, e.g. bpf_loop with nr_loops 0 after inlining). The kernel still loads a
                    // (dangling) address; only calling it would fault, and the callers check.
                    if (t < 0 || t > static_cast<int64_t>(n)) {
                        why = "ld_imm64 function address out of range";
                        d.op = INVALID;
                        return d;
                    }
                    set_imm64(d, kCodeBase + static_cast<uint64_t>(t) * 8);
                    break;
                }
                default: why = "invalid ld_imm64 src " + std::to_string(i.src_reg); d.op = INVALID;
            }
            return d;
        }
        default:
            break;
    }
    if (i.code == 0 && pc > 0 && isa::is_ldimm64(prog_.insns[pc - 1])) {
        why = kSecondSlotReason;
        return d;
    }
    why = "invalid opcode " + hex(i.code);
    return d;
}

namespace {

// How the opcodes decode whose op follows from `code` alone (or from `code` when some fields are
// 0, as for a plain register move), as decode_one finds it. The rest of the insn only needs the
// immediate masked (32-bit operands, shift counts) and, for a jump, `off` resolved. A generated
// program is mostly these, and one table load decodes them where decode_one's nested switches
// cost a few branch mispredictions per insn. An entry is 32 bytes, for a cheap index.
struct FastDecode {
    // Properties of the insn's register byte (kSrc: src_reg is not 0; kBadReg: a register number
    // above kRegAx; kAny: always set, RegDecode) that send it to decode_one: an entry that decodes
    // nothing rejects kAny, every other one kBadReg and kSrc where src must be 0 for `op`.
    uint32_t reject = kAny;  // as wide as what it is tested with, to spare a zero extension
    // The DInsn's op (INVALID: decode_one decides) and aux where DInsn has them (head_byte);
    // decode() adds dst and src.
    uint32_t head = 0;
    uint64_t imm_mask = 0xffffffff;  // of imm read unsigned (64 bits: no zero extension for the store)
    // The bits of the insn, read as one host word (insn_byte), that must be 0 for `op`: off (DIV
    // and MOD are signed with off 1) and imm (MOV X with either is no plain move). So one test of
    // the register properties and one of the word decide, without a branch per field.
    uint64_t zero_bits = 0;
    // ~0 for a jump, whose `off` decode() resolves into an insn index (and range-checks), else 0:
    // a mask instead of a flag, so that jumps and other insns take one path without a branch.
    uint64_t jump_mask = 0;
    static constexpr uint8_t kSrc = 4, kBadReg = 8, kAny = 16;
};

// DInsn's first four bytes (op, dst, src, aux) as one host word, which decode() composes from its
// tables and stores at once: byte k of the struct holds v.
static_assert(offsetof(DInsn, op) == 0 && offsetof(DInsn, dst) == 1 && offsetof(DInsn, src) == 2 && offsetof(DInsn, aux) == 3);
static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
constexpr uint32_t head_byte(unsigned k, uint8_t v) {
    return uint32_t{v} << (std::endian::native == std::endian::little ? 8 * k : 24 - 8 * k);
}
// The same for an insn read as one 64-bit host word, as decode() reads each: byte k of the insn.
static_assert(sizeof(Insn) == 8 && offsetof(Insn, off) == 2 && offsetof(Insn, imm) == 4);
constexpr uint64_t insn_byte(unsigned k, uint8_t v) {
    return uint64_t{v} << (std::endian::native == std::endian::little ? 8 * k : 56 - 8 * k);
}
constexpr uint64_t kOffBits = insn_byte(2, 0xff) | insn_byte(3, 0xff);
constexpr uint64_t kImmBits = insn_byte(4, 0xff) | insn_byte(5, 0xff) | insn_byte(6, 0xff) | insn_byte(7, 0xff);

constexpr std::array<FastDecode, 256> make_fast_decode() {
    std::array<FastDecode, 256> t{};
    for (unsigned c = 0; c < 256; ++c) {
        const uint8_t cls = c & 0x07, o = c & 0xf0, mode = c & 0xe0, size = c & 0x18;
        const int sz = size == BPF_B ? 0 : size == BPF_H ? 1 : size == BPF_W ? 2 : 3;  // as decode_one
        const bool x = (c & BPF_X) != 0;
        FastDecode& f = t[c];
        uint8_t op = INVALID, aux = 0;
        uint8_t needs_zero = 0;  // kSrc or not
        uint64_t zero_bits = 0;
        if (cls == BPF_ALU || cls == BPF_ALU64) {
            // Not END (decoded from imm). DIV/MOD are unsigned with off 0 (1: signed), MOV X is a
            // plain move with off and imm 0 (else movsx, percpu, zext).
            const bool w64 = cls == BPF_ALU64;
            const int base = alu_base(o, false);
            if (o == BPF_NEG) {
                op = w64 ? NEG64 : NEG32;
            } else if (base >= 0) {
                if (o == BPF_DIV || o == BPF_MOD) zero_bits = kOffBits;
                if (o == BPF_MOV && x) zero_bits = kOffBits | kImmBits;
                op = static_cast<uint8_t>(base + (w64 ? 0 : 2) + (x ? 1 : 0));
                const bool shift = o == BPF_LSH || o == BPF_RSH || o == BPF_ARSH;
                f.imm_mask = shift ? (w64 ? 63 : 31) : 0xffffffff;
            }
        } else if (cls == BPF_JMP || cls == BPF_JMP32) {
            // Not gotol (JMP32 JA: imm is the offset) nor a call with a src (local or kfunc).
            const int base = cond_jump_base(o);
            f.jump_mask = ~uint64_t{0};
            if (base >= 0) {
                op = static_cast<uint8_t>(base + (cls == BPF_JMP ? 0 : 2) + (x ? 1 : 0));
            } else if (c == (BPF_JMP | BPF_JA | BPF_K)) {
                op = JA;
            } else if (cls == BPF_JMP && o == BPF_JCOND) {
                op = MAY_GOTO;
            } else {
                f.jump_mask = 0;
                if (c == (BPF_JMP | BPF_JA | BPF_X)) op = GOTOX;
                if (cls == BPF_JMP && o == BPF_EXIT) op = EXIT;
                if (cls == BPF_JMP && o == isa::kOpTailCall) op = TAIL_CALL;
                if (c == (BPF_JMP | BPF_CALL | BPF_X)) op = CALLX;
                if (c == (BPF_JMP | BPF_CALL | BPF_K)) {
                    op = CALL_HELPER;  // src 0
                    needs_zero = FastDecode::kSrc;
                }
            }
        } else if (cls == BPF_LDX) {
            if (mode == BPF_MEM) op = static_cast<uint8_t>(LDXB + sz);
            if (mode == BPF_MEMSX && sz < 3) op = static_cast<uint8_t>(LDSXB + sz);
            if (mode == isa::kModeProbeMem || mode == isa::kModeProbeMemSx || mode == isa::kModeProbeMem32) {
                op = LDX_PROBE;
                aux = static_cast<uint8_t>((1u << sz) | (mode == isa::kModeProbeMemSx && sz < 3 ? 0x80 : 0));
            }
        } else if (cls == BPF_ST && mode == isa::kModeNospec) {
            op = NOP;
        } else if ((cls == BPF_ST || cls == BPF_STX) && (mode == BPF_MEM || mode == isa::kModeProbeMem32)) {
            op = static_cast<uint8_t>((cls == BPF_ST ? STB : STXB) + sz);
        } else if (cls == BPF_STX && (mode == BPF_ATOMIC || mode == isa::kModeProbeAtomic)) {
            op = ATOMIC;
            aux = static_cast<uint8_t>(1u << sz);
        }
        f.reject = op == INVALID ? FastDecode::kAny : static_cast<uint32_t>(needs_zero | FastDecode::kBadReg);
        f.zero_bits = zero_bits;
        f.head = head_byte(0, op) | head_byte(3, aux);
        static_assert(sizeof(FastDecode) == 32);
    }
    return t;
}
constexpr std::array<FastDecode, 256> kFastDecode = make_fast_decode();

// What the byte of an insn that holds dst_reg and src_reg contributes to its fast decode: the
// register properties (kSrc, kBadReg, and kAny for every byte) and DInsn's dst and src bytes
// (head_byte). Indexed by that byte as it is in memory: which nibble holds which field is the
// compiler's bit-field layout, so the table is made for it at run time, once.
struct RegDecode {
    uint32_t head;
    uint32_t props;  // as wide as FastDecode::reject
};
const RegDecode* reg_decode_table() {
    static const std::array<RegDecode, 256> table = [] {
        std::array<RegDecode, 256> t{};
        for (unsigned dst = 0; dst < 16; ++dst) {
            for (unsigned src = 0; src < 16; ++src) {
                Insn probe{};
                probe.dst_reg = static_cast<uint8_t>(dst) & 0xf;
                probe.src_reg = static_cast<uint8_t>(src) & 0xf;
                const uint8_t byte = reinterpret_cast<const uint8_t*>(&probe)[1];
                t[byte].head = head_byte(1, static_cast<uint8_t>(dst)) | head_byte(2, static_cast<uint8_t>(src));
                t[byte].props = static_cast<uint32_t>((src != 0 ? FastDecode::kSrc : 0) |
                                                     (dst > isa::kRegAx || src > isa::kRegAx ? FastDecode::kBadReg : 0) | FastDecode::kAny);
            }
        }
        return t;
    }();
    return table.data();
}

}  // namespace

// What decode() checks its table against in builds with assertions.
bool DecodedCode::decodes_alike(uint32_t pc, const DInsn& d) {
    std::string why;
    DInsn unmarked = d;  // marks are added after
    unmarked.zext = 0;
    return decode_one(pc, why) == unmarked && why.empty();
}

void DecodedCode::decode() {
    const uint32_t n = static_cast<uint32_t>(prog_.insns.size());
    // One more than the insns: what a run that falls through the last insn (or returns past it)
    // reaches, an invalid insn with no reason of its own (Machine::loop names it).
    SpareCode::Array array = SpareCode::take(size_t{n} + 1);
    code_ = std::move(array.insns);
    room_ = array.room;
    size_ = n;
    code_[n] = DInsn{INVALID, 0, 0, 0, 0, static_cast<int32_t>(kNoReason)};
    const RegDecode* const regs = reg_decode_table();
    // The insns are read through a local pointer, and the result written through another: DInsn's
    // byte fields may alias anything, so stores through code_ would otherwise make every load of
    // prog_/code_ state be redone per insn.
    const Insn* const insns = prog_.insns.data();
    DInsn* const out = code_.get();
    // The insn at i decodes into d; `next` is its pc + 1. Three pointers stepped together, not
    // an index each is computed from: a few instructions less per insn.
    const Insn* i = insns;
    DInsn* d = out;
    for (uint64_t next = 1; next <= n; ++next, ++i, ++d) {
        uint64_t word;
        std::memcpy(&word, i, sizeof word);
        const FastDecode& f = kFastDecode[i->code];
        const RegDecode& r = regs[reinterpret_cast<const uint8_t*>(i)[1]];  // the dst_reg/src_reg byte
        // A jump's target as an unsigned index (one compare also rejects those before insn 0), and
        // `off` for any other insn, whose `target` is 0, always in range.
        const uint64_t new_off = static_cast<uint64_t>(int64_t{i->off}) + (next & f.jump_mask);
        const uint64_t target = new_off & f.jump_mask;
        if (((r.props & f.reject) | (word & f.zero_bits)) == 0 && target < n) [[likely]] {  // else decode_one says why not
            const uint32_t head = f.head | r.head;
            std::memcpy(d, &head, sizeof head);  // op, dst, src, aux
            d->off = static_cast<int32_t>(new_off);
            // imm, and zext and the unused bytes after it zeroed (no mark), in one store.
            const uint64_t imm = static_cast<uint32_t>(i->imm) & f.imm_mask;
            const uint64_t tail = std::endian::native == std::endian::little ? imm : imm << 32;
            std::memcpy(&d->imm, &tail, sizeof tail);
            assert(decodes_alike(static_cast<uint32_t>(next - 1), *d));
            continue;
        }
        // The last pc it decoded (the second slot after an ld_imm64).
        const uint64_t last = decode_slow(static_cast<uint32_t>(next - 1));
        i = insns + last;
        d = out + last;
        next = last + 1;
    }
    mark_ctx_packet_loads();
}

// A 4-byte read of __sk_buff's or xdp_md's data, data_end or data_meta that the verifier typed as a
// ctx access gives a packet pointer, not the ctx bytes there: such reads become LDX_CTX_PKT (aux:
// which pointer). Only in the uapi form: a converted program reads the pointers the kernel
// structs hold.
void DecodedCode::mark_ctx_packet_loads() {
    const ctx_fields::CtxKind kind = ctx_fields::ctx_kind(prog_.prog_type);
    if (kind == ctx_fields::CtxKind::None || prog_.ctx_layout != CtxLayout::Uapi) return;
    const size_t n = std::min(prog_.aux.size(), size_);
    for (size_t pc = 0; pc < n; ++pc) {
        if (prog_.aux[pc].ptr_type != PtrType::Ctx || code_[pc].op != LDXW) continue;
        const Insn& i = prog_.insns[pc];
        const ctx_fields::UapiField* f = ctx_fields::allowed_access(kind, i.off, 4, false);
        if (f == nullptr || f->ptr == ctx_fields::PacketPtr::None || f->off != i.off) continue;
        code_[pc].op = LDX_CTX_PKT;
        code_[pc].aux = static_cast<uint8_t>(f->ptr);
    }
}

void DecodedCode::mark_zexts() const {
    std::call_once(zext_marked_, [this] {
        const InsnAux* const aux = prog_.aux.data();
        const Insn* const insns = prog_.insns.data();
        DInsn* const out = code_.get();
        const size_t n = std::min(prog_.aux.size(), size_);
        for (size_t pc = 0; pc < n; ++pc) {
            if (aux[pc].zext_dst) [[unlikely]] {
                const int reg = isa::insn_def_regno(insns[pc]);
                out[pc].zext = static_cast<uint8_t>(reg >= 0 ? reg + 1 : 0);
            }
        }
    });
}

// An ld_imm64 pair at pc (pc + 1 < n) with a plain value or a map (src 0, MAP_FD, MAP_IDX,
// MAP_VALUE, MAP_IDX_VALUE), into `d`, which has the first insn's fields. Shared by decode_one
// and decode_slow.
void DecodedCode::decode_common_ldimm64(uint32_t pc, DInsn& d) const {
    const uint32_t n = static_cast<uint32_t>(prog_.insns.size());
    const Insn& i = prog_.insns[pc];
    const Insn& hi = prog_.insns[pc + 1];
    if (i.src_reg == 0) {
        d.op = LDIMM64;
        d.imm = i.imm;  // set_imm64 of the pair's value
        d.off = hi.imm;
        return;
    }
    // Resolved when executed (Machine::map_ldimm64_direct, then map_ldimm64_rest): map addresses
    // belong to one execution's memory, and the per-CPU copy to its input's CPU.
    d.op = LDIMM64_MAP;
    d.src = i.src_reg;
    d.off = hi.imm;  // value offset (the *_VALUE forms)
    d.imm = i.imm;   // map index (read unsigned when executed)
    // bpf-next: the rewritten form of a per-CPU array value (do_misc_fixups row i) is recognised
    // by the BPF_MOV64_PERCPU_REG right after the pair.
    d.aux = pc + 2 < n && prog_.insns[pc + 2].code == (BPF_ALU64 | BPF_MOV | BPF_X) && prog_.insns[pc + 2].off == passes::kAddrPercpuOff &&
            prog_.insns[pc + 2].dst_reg == i.dst_reg && prog_.insns[pc + 2].src_reg == i.dst_reg;
}

// The insns the table leaves to decode_one, out of decode()'s loop so that the loop keeps its
// state in registers. Returns the last pc decoded (pc + 1 after an ld_imm64). The valid ones that
// are common in programs are decoded here as decode_one would: ld_imm64 of a value, map, BTF id
// or function, the zero extension the zext pass inserts (BPF_ZEXT_REG), a local or kfunc call,
// gotol, byte swaps and signed division. Anything else is decode_general's, which has what
// decode_one needs (a reason string, most registers): this function stays small for the common
// ones.
uint32_t DecodedCode::decode_slow(uint32_t pc) {
    const Insn* const insns = prog_.insns.data();
    const uint64_t n = size_;
    const Insn& i = insns[pc];
    DInsn* const out = code_.get() + pc;
    const uint8_t dst = i.dst_reg, src = i.src_reg;
    if (dst > isa::kRegAx || src > isa::kRegAx) return decode_general(pc);
    DInsn d{INVALID, dst, src, 0, i.off, i.imm, 0, {}};
    switch (i.code) {
        case BPF_LD | BPF_IMM | BPF_DW: {
            if (pc + 1 >= n) return decode_general(pc);
            d.op = LDIMM64;
            switch (src) {
                case 0:
                case BPF_PSEUDO_MAP_FD:
                case BPF_PSEUDO_MAP_IDX:
                case BPF_PSEUDO_MAP_VALUE:
                case BPF_PSEUDO_MAP_IDX_VALUE: decode_common_ldimm64(pc, d); break;
                case BPF_PSEUDO_BTF_ID: set_imm64(d, kKsymBase + (uint64_t{static_cast<uint32_t>(i.imm)} << 12)); break;
                case BPF_PSEUDO_FUNC: {
                    // Up to n: the address of a callback removed as dead (decode_one).
                    const uint64_t t = pc + 1 + static_cast<uint64_t>(int64_t{i.imm});
                    if (t > n) return decode_general(pc);  // also what is before insn 0
                    set_imm64(d, kCodeBase + t * 8);
                    break;
                }
                default: return decode_general(pc);
            }
            assert(decodes_alike(pc, d));
            out[0] = d;
            out[1] = second_slot();
            return pc + 1;
        }
        case BPF_ALU | BPF_MOV | BPF_X:
            // off 1 (arena cast) and -1 (percpu) are a plain move too, so a zext still.
            if (i.imm != 1 || dst != src || (i.off != 0 && i.off != 1 && i.off != -1)) return decode_general(pc);
            d.op = ZEXT;
            break;
        case BPF_JMP | BPF_CALL | BPF_K: {
            if (src == BPF_PSEUDO_KFUNC_CALL) {
                d.op = CALL_KFUNC;
                break;
            }
            const uint64_t t = pc + 1 + static_cast<uint64_t>(int64_t{i.imm});
            if (src != BPF_PSEUDO_CALL || t >= n) return decode_general(pc);  // also what is before insn 0
            d.op = CALL_LOCAL;
            d.off = static_cast<int32_t>(t);
            break;
        }
        case BPF_JMP32 | BPF_JA | BPF_K: {  // gotol: the offset is imm
            const uint64_t t = pc + 1 + static_cast<uint64_t>(int64_t{i.imm});
            if (t >= n) return decode_general(pc);
            d.op = JA;
            d.off = static_cast<int32_t>(t);
            break;
        }
        case BPF_ALU | BPF_END | BPF_K:  // to little endian
        case BPF_ALU | BPF_END | BPF_X:  // to big endian
        case BPF_ALU64 | BPF_END | BPF_K: {  // bswap
            if (i.imm != 16 && i.imm != 32 && i.imm != 64) return decode_general(pc);
            const int w = i.imm == 16 ? 0 : i.imm == 32 ? 1 : 2;
            d.op = static_cast<uint8_t>((i.code == (BPF_ALU | BPF_END | BPF_K) ? LE16 : BSWAP16) + w);
            break;
        }
        case BPF_ALU64 | BPF_DIV | BPF_K: case BPF_ALU64 | BPF_DIV | BPF_X: case BPF_ALU | BPF_DIV | BPF_K: case BPF_ALU | BPF_DIV | BPF_X:
        case BPF_ALU64 | BPF_MOD | BPF_K: case BPF_ALU64 | BPF_MOD | BPF_X: case BPF_ALU | BPF_MOD | BPF_K: case BPF_ALU | BPF_MOD | BPF_X:
            // Off 1: signed (off 0, unsigned, is the table's).
            if (i.off != 1) return decode_general(pc);
            d.op = static_cast<uint8_t>(alu_base(isa::op(i), true) + (isa::cls(i) == BPF_ALU64 ? 0 : 2) + (isa::src_bit(i) ? 1 : 0));
            break;
        default: return decode_general(pc);
    }
    assert(decodes_alike(pc, d));
    out[0] = d;
    return pc;
}

// decode_slow for what it does not know: decode_one's result, with the reason of an invalid insn
// kept.
uint32_t DecodedCode::decode_general(uint32_t pc) {
    const uint32_t n = static_cast<uint32_t>(prog_.insns.size());
    std::string why;
    DInsn d = decode_one(pc, why);
    if (d.op == INVALID) {
        if (why.empty()) why = "invalid instruction";
        d.imm = static_cast<int32_t>(invalid_.size());
        invalid_.push_back(std::move(why));
    }
    code_[pc] = d;
    if ((d.op == LDIMM64 || d.op == LDIMM64_MAP) && pc + 1 < n) {
        ++pc;
        code_[pc] = second_slot();
    }
    return pc;
}

namespace {

MapModel* Machine::map_arg(uint32_t pc, uint64_t handle, const char* what) {
    for (MapModel& m : maps_)
        if (m.handle() == handle) return &m;
    if (const uint32_t n = inner_map_number(handle))
        fault(pc, std::string(what) + ": " + hex(handle) + " is inner map " + std::to_string(n) +
                      " of a map-in-map; inner maps are not modelled",
              ExecResult::Status::Unsupported);
    else
        fault(pc, std::string(what) + ": " + hex(handle) + " is not a map pointer");
    return nullptr;
}

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

// A tail call through the helper or the internal insn, as the kernel interpreter's JMP_TAIL_CALL
// (kernel/bpf/core.c ___bpf_prog_run) and the JITs do it: an index >= max_entries (u32 compare)
// or an exhausted MAX_TAIL_CALL_CNT falls through before anything happens; otherwise the counter
// is taken and the slot is read. Our prog arrays are empty, so every call then falls through too,
// but the counted attempt is the observable effect (a rewrite that drops an in-range call, or
// makes an out-of-range one count, diverges).
bool Machine::tail_call_attempt(uint32_t pc, uint64_t map, uint64_t index) {
    MapModel* m = map_arg(pc, map, "tail call");
    if (!m) return false;
    const uint32_t idx = static_cast<uint32_t>(index);
    if (idx >= m->def().max_entries || tail_calls_ >= kMaxTailCalls) return true;
    ++tail_calls_;
    effects_.add("tail_call(map ", uint64_t{map_index(map)}, ", index ", uint64_t{idx}, ")");
    return true;
}

uint32_t Machine::map_index(uint64_t handle) const {
    for (size_t i = 0; i < maps_.size(); ++i)
        if (maps_[i].handle() == handle) return static_cast<uint32_t>(i);
    return 0xffffffffu;
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
    if (addr == passes::kJiffiesAddr && size == 8) {
        out = clock_read();
        return true;
    }
    return false;
}

// BPF_MOV64_PERCPU_REG: per-CPU offset -> this CPU's address. Map per-CPU pointers carry their
// region in the offset; the pcpu_hot offsets of internal_calls.hpp land in the pcpu region.
uint64_t Machine::percpu_addr(uint64_t v) const {
    if (v >= kPercpuBase && v - kPercpuBase < (uint64_t{1} << 44)) return kRegionBase + (v - kPercpuBase);
    const uint64_t lo = static_cast<uint64_t>(passes::kPcpuCurrentTask);
    if (v >= lo && v < lo + 16) return Memory::addr(kRegionPcpu, static_cast<uint32_t>(v - lo));
    return v + 0x5a5a000000000000ULL;  // garbage in, an unmapped address out
}

// bpf_get_func_arg / _ret / _arg_cnt / _ip of a tracing program (kernel/trace/bpf_trace.c), on
// the trampoline words below ctx (setup). The argument index is the helper's `u32 n`.
bool Machine::tracing_helper(uint32_t pc, int32_t id, uint64_t& ret) {
    const uint64_t ctx = r_[1];
    const uint8_t* words = mem_.translate(ctx - kTracingCtxPrefix, kTracingCtxPrefix, false);
    if (!words) {
        fault(pc, "helper " + std::to_string(id) + ": r1 " + hex(ctx) + " is not the tracing ctx");
        return false;
    }
    const uint64_t ip = load_le(words, 8), nr_args = load_le(words + 8, 8);
    auto arg_word = [&](uint64_t index, uint64_t& out) {
        const uint8_t* p = mem_.translate(ctx + index * 8, 8, false);
        if (!p) {
            fault(pc, "helper " + std::to_string(id) + ": ctx word " + std::to_string(index) + " is outside the ctx");
            return false;
        }
        out = load_le(p, 8);
        return true;
    };
    auto store_result = [&](uint64_t where, uint64_t v) {
        uint8_t* p = mem_.translate(where, 8, true);
        if (!p) {
            fault(pc, "helper " + std::to_string(id) + ": value pointer " + hex(where) + " is not 8 writable bytes");
            return false;
        }
        store_le(p, 8, v);
        return true;
    };
    switch (id) {
        case BPF_FUNC_get_func_arg: {
            const uint32_t n = static_cast<uint32_t>(r_[2]);
            if (uint64_t{n} >= nr_args) {
                ret = static_cast<uint64_t>(-int64_t{EINVAL});
                return true;
            }
            uint64_t v = 0;
            if (!arg_word(n, v) || !store_result(r_[3], v)) return false;
            ret = 0;
            return true;
        }
        case BPF_FUNC_get_func_ret: {
            const TraceAttach a = prog_.attach;
            const bool has_ret = a == TraceAttach::Fexit || a == TraceAttach::ModifyReturn || a == TraceAttach::Fsession ||
                                 a == TraceAttach::FexitMulti || a == TraceAttach::FsessionMulti;
            if (!has_ret) {
                ret = static_cast<uint64_t>(-int64_t{EOPNOTSUPP});
                return true;
            }
            uint64_t v = 0;
            if (!arg_word(nr_args, v) || !store_result(r_[2], v)) return false;
            ret = 0;
            return true;
        }
        case BPF_FUNC_get_func_arg_cnt: ret = nr_args; return true;
        default: ret = ip; return true;  // get_func_ip: bpf_get_func_ip_tracing
    }
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

bool Machine::call_kfunc(uint32_t pc, int32_t btf_id) {
    kfunc::Kind kind = kfunc::Kind::Unknown;
    for (const KfuncDesc& k : prog_.kfuncs)
        if (k.btf_id == btf_id) kind = static_cast<kfunc::Kind>(k.kind);
    if (kind == kfunc::Kind::Unknown)
        if (auto i = kfunc::by_btf_id(btf_id)) kind = i->kind;
    switch (kind) {
        case kfunc::Kind::IterNumNew: {
            // bpf_iter_num_new (kernel/bpf/bpf_iter.c, v4 text; docs/iterator-isa-arch.md §1.2): int start/end in w2/w3.
            uint8_t* p = mem_.translate(r_[1], 8, true);
            if (!p) {
                fault(pc, "bpf_iter_num_new: iterator pointer " + hex(r_[1]) + " is not 8 writable bytes");
                return false;
            }
            int32_t s = static_cast<int32_t>(r_[2]), e = static_cast<int32_t>(r_[3]);
            int32_t rc = 0;
            uint32_t cur = 0, end = 0;
            if (s > e) rc = -22;
            else if (static_cast<uint32_t>(e) - static_cast<uint32_t>(s) > static_cast<uint32_t>(isa::kMaxLoops)) rc = -7;
            else {
                cur = static_cast<uint32_t>(s) - 1;
                end = static_cast<uint32_t>(e);
            }
            store_le(p, 4, cur);
            store_le(p + 4, 4, end);
            r_[0] = static_cast<uint32_t>(rc);  // int return: the callee writes eax / w0
            if (cost_) {
                cost_->call(CostModel::CallKind::Kfunc, 7);
                cost_->store(1, 2, r_[1]);
                cost_->op(0, 2, 3, 1);
            }
            break;
        }
        case kfunc::Kind::IterNumNext: {
            // bpf_iter_num_next (§1.3): 32-bit wrapping cur + 1, signed compare, (0,0) when drained.
            uint8_t* p = mem_.translate(r_[1], 8, true);
            if (!p) {
                fault(pc, "bpf_iter_num_next: iterator pointer " + hex(r_[1]) + " is not 8 writable bytes");
                return false;
            }
            uint32_t cur = static_cast<uint32_t>(load_le(p, 4)) + 1;
            int32_t end = static_cast<int32_t>(load_le(p + 4, 4));
            uint64_t it = r_[1];
            if (static_cast<int32_t>(cur) >= end) {
                store_le(p, 8, 0);
                r_[0] = 0;
            } else {
                store_le(p, 4, cur);
                r_[0] = it;
            }
            if (cost_) {
                // body ≈ 9 insns (5 + the 4 modelled below): the slot round trip is the loop-carried chain.
                cost_->call(CostModel::CallKind::Kfunc, 5);
                cost_->load(CostModel::kScratch0, 1, it);
                cost_->alu(CostModel::kScratch0, CostModel::kScratch0, CostModel::kNone);
                cost_->store(1, CostModel::kScratch0, it);
                cost_->alu(0, 1, CostModel::kNone);
            }
            break;
        }
        case kfunc::Kind::IterNumDestroy:
            // v4: a no-op (§1.4), which is what the inline does too.
            if (cost_) cost_->call(CostModel::CallKind::Kfunc, 1);
            break;
        case kfunc::Kind::CastToKernCtx:
        case kfunc::Kind::RdonlyCast:
            r_[0] = r_[1];
            if (cost_) cost_->call(CostModel::CallKind::Kfunc, 1);
            break;
        default:
            fault(pc, "kfunc with BTF id " + std::to_string(btf_id) + " has no model", ExecResult::Status::Unsupported);
            return false;
    }
    for (int k = 1; k <= 5; ++k) r_[k] = kCallPoison;
    if (cost_) cost_->clobber(1, 5);
    return true;
}

bool Machine::call_helper_any(uint32_t pc, int32_t id) {
    const uint64_t a1 = r_[1], a2 = r_[2], a3 = r_[3], a4 = r_[4];
    uint64_t ret = 0;
    double body = 4;
    if (opts_.conformance_helpers && id == 5) {
        // The bpf_conformance harness helper: the tests only require that it returns.
        ret = a1;
    } else {
        switch (id) {
            case BPF_FUNC_map_lookup_elem:
            case BPF_FUNC_map_update_elem:
            case BPF_FUNC_map_delete_elem: {
                MapModel* m = map_arg(pc, a1, id == BPF_FUNC_map_lookup_elem   ? "bpf_map_lookup_elem"
                                               : id == BPF_FUNC_map_update_elem ? "bpf_map_update_elem"
                                                                                : "bpf_map_delete_elem");
                if (!m) return false;
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "map helper: key pointer " + hex(a2) + " is not " + std::to_string(m->def().key_size) + " readable bytes");
                    return false;
                }
                const uint32_t mi = map_index(a1);
                if (id != BPF_FUNC_map_lookup_elem && m->map_in_map()) {
                    // check_map_func_compatibility: only lookups on ARRAY/HASH_OF_MAPS.
                    fault(pc, std::string(id == BPF_FUNC_map_update_elem ? "bpf_map_update_elem" : "bpf_map_delete_elem") +
                                  " on map " + std::to_string(mi) + ", a map-in-map (type " + std::to_string(m->def().type) +
                                  "): BPF programs cannot change its elements");
                    return false;
                }
                if (id == BPF_FUNC_map_lookup_elem) {
                    ret = m->lookup(key);
                    body = 12;
                } else if (id == BPF_FUNC_map_update_elem) {
                    const uint8_t* val = mem_.translate(a3, m->def().value_size, false);
                    if (!val) {
                        fault(pc, "bpf_map_update_elem: value pointer " + hex(a3) + " is not readable");
                        return false;
                    }
                    maps_updated_ = true;
                    ret = static_cast<uint64_t>(m->update(key, val, a4));
                    effects_.add("map_update(map ", uint64_t{mi}, ", flags ", Hex{a4}, ") = ", static_cast<int64_t>(ret));
                } else {
                    maps_updated_ = true;
                    ret = static_cast<uint64_t>(m->remove(key));
                    effects_.add("map_delete(map ", uint64_t{mi}, ") = ", static_cast<int64_t>(ret));
                }
                break;
            }
            case passes::kInternalHtabLookup: {
                // __htab_map_lookup_elem: the element (header + key + value), or NULL.
                MapModel* m = map_arg(pc, a1, "__htab_map_lookup_elem");
                if (!m) return false;
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "__htab_map_lookup_elem: key pointer " + hex(a2) + " is not readable");
                    return false;
                }
                ret = m->lookup_elem(key);
                body = 10;
                break;
            }
            case passes::kInternalTimedMayGoto: {
                // arch_bpf_timed_may_goto: refreshes the budget (BPF_MAX_TIMED_LOOPS) until the
                // "time slice" ends; time is counted in refreshes so that the total number of
                // iterations matches the plain countdown's BPF_MAX_LOOPS (deterministic). Preserves R0-R5.
                ++timed_refreshes_;
                r_[isa::kRegAx] = timed_refreshes_ * static_cast<uint64_t>(isa::kMaxTimedLoops) < static_cast<uint64_t>(isa::kMaxLoops)
                                      ? static_cast<uint64_t>(isa::kMaxTimedLoops)
                                      : 0;
                if (cost_) cost_->call(CostModel::CallKind::Helper, 6);
                return true;
            }
            case passes::kInternalSkbLoad8:
            case passes::kInternalSkbLoad16:
            case passes::kInternalSkbLoad32: {
                // bpf_skb_load_helper_{8,16,32}_no_cache(skb, int offset), what bpf_gen_ld_abs
                // calls (net/core/filter.c): the value, or -EFAULT outside the packet. The offset
                // is the helper's `int`: the low 32 bits of R2.
                const uint32_t size = id == passes::kInternalSkbLoad8 ? 1 : id == passes::kInternalSkbLoad16 ? 2 : 4;
                uint64_t v = 0;
                const SkbLoad st = skb_load(a1, static_cast<int32_t>(static_cast<uint32_t>(a2)), size, v);
                if (st == SkbLoad::NotSkb) {
                    fault(pc, "bpf_skb_load_helper_" + std::to_string(8 * size) + "_no_cache: r1 " + hex(a1) + " is not the skb (ctx)");
                    return false;
                }
                ret = st == SkbLoad::Ok ? v : static_cast<uint64_t>(-int64_t{EFAULT});
                body = 8;
                break;
            }
            case passes::kInternalPerfSnapshotBranchStack:
                // perf_snapshot_branch_stack(entries, cnt): no LBR in our model, so it writes no
                // entry and returns 0 (as on a CPU without branch snapshot support).
                ret = 0;
                break;
            case BPF_FUNC_get_branch_snapshot:
                // bpf_get_branch_snapshot(buf, u32 size, u64 flags) (kernel/trace/bpf_trace.c): the
                // snapshot (none here, as above), then -EINVAL for any flags, else -ENOENT for no
                // entries; the buffer is never written.
                ret = static_cast<uint64_t>(a3 != 0 ? -int64_t{EINVAL} : -int64_t{ENOENT});
                break;
            case BPF_FUNC_map_lookup_percpu_elem: {
                MapModel* m = map_arg(pc, a1, "bpf_map_lookup_percpu_elem");
                if (!m) return false;
                if (m->map_in_map()) {
                    fault(pc, "bpf_map_lookup_percpu_elem on a map-in-map (only bpf_map_lookup_elem is allowed on it)");
                    return false;
                }
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "bpf_map_lookup_percpu_elem: bad key pointer " + hex(a2));
                    return false;
                }
                ret = static_cast<uint32_t>(a3) == in_.cpu ? m->lookup(key) : 0;
                break;
            }
            case BPF_FUNC_ktime_get_ns:
            case BPF_FUNC_ktime_get_boot_ns:
            case BPF_FUNC_jiffies64:
                // Deterministic clock: advances per call, so a rewrite that keeps the calls keeps
                // the values. (Mostly modelled by call_helper; here for the conformance harness.)
                ret = clock_read();
                break;
            case BPF_FUNC_get_prandom_u32:
                ret = static_cast<uint32_t>(prandom_.next());
                effects_.add("prandom() = ", ret);
                break;
            case BPF_FUNC_get_smp_processor_id:
                ret = in_.cpu;
                break;
            case BPF_FUNC_get_func_arg:
            case BPF_FUNC_get_func_ret:
            case BPF_FUNC_get_func_arg_cnt:
            case BPF_FUNC_get_func_ip:
                if (prog_.prog_type != BPF_PROG_TYPE_TRACING) {
                    fault(pc, "helper " + std::to_string(id) + " has no model outside tracing programs", ExecResult::Status::Unsupported);
                    return false;
                }
                if (!tracing_helper(pc, id, ret)) return false;
                break;
            case BPF_FUNC_get_current_pid_tgid:
                ret = (4242ULL << 32) | 4243;
                break;
            case BPF_FUNC_get_current_task:
            case BPF_FUNC_get_current_task_btf:
                ret = kKsymBase + 0x100000;
                break;
            case BPF_FUNC_tail_call: {
                // No program is ever installed in our prog arrays: the call falls through, as the
                // kernel does for an empty slot (r0 keeps its value, like the internal insn).
                if (!tail_call_attempt(pc, a2, a3)) return false;
                ret = r_[0];
                break;
            }
            case BPF_FUNC_loop: {
                // bpf_loop (kernel/bpf/bpf_iter.c): u32 nr_loops, callback(i, ctx) until it returns 1.
                uint32_t nr = static_cast<uint32_t>(a1);
                if (a4 != 0) {
                    ret = static_cast<uint64_t>(-22);
                    break;
                }
                if (nr > static_cast<uint32_t>(isa::kMaxLoops)) {
                    ret = static_cast<uint64_t>(-7);
                    break;
                }
                if (nr == 0) {
                    ret = 0;
                    break;
                }
                uint64_t cb = a2 - kCodeBase;
                if ((cb & 7) != 0 || (cb >> 3) >= code_size_) {
                    fault(pc, "bpf_loop: callback " + hex(a2) + " is not a code address");
                    return false;
                }
                if (cost_) cost_->call(CostModel::CallKind::Helper, 4);
                if (!push_frame(pc, static_cast<uint32_t>(cb >> 3), true)) return false;
                Frame& f = frames_[depth_];
                f.loop_n = nr;
                f.loop_ctx = a3;
                r_[1] = 0;
                r_[2] = a3;
                for (int k = 3; k <= 5; ++k) r_[k] = kCallPoison;
                jump_to_ = static_cast<uint32_t>(cb >> 3);
                return true;  // the loop continues at the callback; EXIT of this frame iterates
            }
            default:
                fault(pc, "helper " + std::to_string(id) + " has no model", ExecResult::Status::Unsupported);
                return false;
        }
    }
    helper_returns(ret, body);
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

// `out` = the n bytes at `p`. Mostly `out` has n bytes already (the result of an earlier run of the
// program, see ExecResult::clear_but_memory): then one copy, without vector::assign's general case.
void copy_bytes(std::vector<uint8_t>& out, const uint8_t* p, size_t n) {
    if (out.size() == n) [[likely]] {
        if (n) std::memcpy(out.data(), p, n);
    } else {
        out.assign(p, p + n);
    }
}

// res_.ctx: the ctx region's bytes, or for a socket filter, tc or XDP program the uapi view
// (normalized as it was made, or read back from the kernel structs), so the two forms compare.
void Machine::final_ctx() {
    if (!kernel_ctx_) {
        copy_bytes(res_.ctx, mem_.region(kRegionCtx).data, mem_.region(kRegionCtx).size);
        if (ctx_kind_ != ctx_fields::CtxKind::None) normalize_ctx_view(ctx_kind_, {res_.ctx.data() + ctx_base_, in_.ctx.size()});
        return;
    }
    const ctx_fields::KernelLayout& l = *kernel_ctx_;
    res_.ctx.assign(in_.ctx.begin(), in_.ctx.end());
    normalize_ctx_view(ctx_kind_, res_.ctx);
    KernelCtxBytes b;
    b.ctx = mem_.region(kRegionCtx).data;
    uint64_t dev = load_le(b.ctx + l.skb_dev, 8);
    if (ctx_kind_ == ctx_fields::CtxKind::Xdp) {
        b.rxq = mem_.translate(load_le(b.ctx + l.xdp_rxq, 8), l.rxq_size, false);
        PATCHFUZZ_CHECK(b.rxq != nullptr, "interp: the xdp_rxq_info image is gone");
        dev = load_le(b.rxq + l.rxq_dev, 8);
    }
    b.dev = mem_.translate(dev, l.dev_size, false);
    PATCHFUZZ_CHECK(b.dev != nullptr, "interp: the net_device image is gone");
    read_back_ctx_view(l, ctx_kind_, b, res_.ctx);
}

// res_.map_digests. Maps the run left as set up (no map helper changed one, no write reached
// their memory) have the digests of the set-up: taken from the saved set-up when a run before
// noted them there, else computed and noted.
void Machine::record_map_digests() {
    res_.map_digests.reserve(maps_.size());
    const bool as_set_up = image_ != nullptr && !maps_updated_ && !mem_.watched_written();
    const bool noted = as_set_up && image_->digests_saved;
    for (size_t i = 0; i < maps_.size(); ++i) {
        MapModel& m = maps_[i];
        const bool program_own = m.kind() == MapModel::Kind::InsnArray;  // (not part of the set-up)
        res_.map_digests.push_back(noted && !program_own ? image_->map_digests[i] : m.content_digest());
    }
    if (as_set_up && !noted) {
        image_->map_digests = res_.map_digests;
        image_->digests_saved = true;
    }
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

}  // namespace

std::string decode_mismatch(const Program& prog, bool movsx_as_mov) {
    DecodedCode code(prog, movsx_as_mov);
    DecodedCode reference(prog, movsx_as_mov);  // decode_one's scratch (it notes MOVSX)
    for (uint32_t pc = 0; pc < code.size_; ++pc) {
        const DInsn& got = code.code_[pc];
        std::string why;
        DInsn want = reference.decode_one(pc, why);
        const std::string at = "insn " + std::to_string(pc) + " (code " + hex(prog.insns[pc].code) + "): ";
        if (want.op == INVALID) {
            if (why.empty()) why = "invalid instruction";
            if (got.op != INVALID) return at + "decoded, but invalid: " + why;
            const std::string& got_why = code.invalid_.at(static_cast<uint32_t>(got.imm));
            if (got_why != why) return at + "invalid for \"" + got_why + "\", not \"" + why + "\"";
            want.imm = got.imm;  // the reason's index
        }
        if (!(got == want)) return at + "decoded differently";
        if (got.op == LDIMM64 || got.op == LDIMM64_MAP) ++pc;
    }
    return {};
}

namespace {
std::shared_ptr<const DecodedCode> decoded_code(const Program& prog, bool movsx_as_mov) {
    return std::allocate_shared<DecodedCode>(RecycledBlocks<DecodedCode>(), prog, movsx_as_mov);
}
}  // namespace

Executable::Executable(const Program& prog, const ArchProfile& arch, ZextMarks marks)
    : prog_(&prog), arch_(arch), marks_(marks), code_(decoded_code(prog, arch.movsx_as_mov)) {
    if (marks == ZextMarks::Apply) code_->mark_zexts();
}
Executable::Executable(const Executable& decoded_like, const ArchProfile& arch, ZextMarks marks)
    : prog_(decoded_like.prog_),
      arch_(arch),
      marks_(marks),
      code_(decoded_like.code_->decodes_for(arch.movsx_as_mov) ? decoded_like.code_
                                                               : decoded_code(*prog_, arch.movsx_as_mov)) {
    if (marks == ZextMarks::Apply) code_->mark_zexts();
}
bool Executable::shares_code_with(const Executable& other) const { return code_ == other.code_; }
Executable::~Executable() = default;
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;

void execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts, ExecResult& out) {
    Machine m(exe, *exe.code_, in, nullptr, opts, out);
    m.run();
}

PreparedInput::PreparedInput() : image_(std::make_unique<SetupImage>()) {}
PreparedInput::PreparedInput(const ExecInput& in) : in_(&in), image_(std::make_unique<SetupImage>()) {}
PreparedInput::~PreparedInput() = default;
PreparedInput::PreparedInput(PreparedInput&&) noexcept = default;
PreparedInput& PreparedInput::operator=(PreparedInput&&) noexcept = default;
void PreparedInput::reset(const ExecInput& in) {
    in_ = &in;
    image_->saved = false;
}
bool PreparedInput::has_setup() const { return image_->saved; }

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
