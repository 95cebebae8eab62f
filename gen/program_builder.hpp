#pragma once
// The program generator's Builder, private to gen/: the frame layout and item vocabulary, the
// per-function buffers (Fn), and the Builder class that emits a program item by item.
// program_gen.cpp holds the structure (functions, blocks, plain items, the final layout);
// site_items.cpp the rewrite-site items (site_item() and the builders it dispatches to).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/util/check.hpp"
#include "gen/emitted.hpp"
#include "gen/program_gen.hpp"

namespace patchfuzz::gen::builder {

using isa::Insn;

inline constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R4 = 4, R10 = 10;
inline constexpr uint8_t kCtxReg = 6;  // main and normal subprogs keep the context here (`r6 = r1`)
inline constexpr std::array<uint8_t, 3> kVars = {7, 8, 9};  // long-lived scalars of a function
// Frame layout (slot k is the 8 bytes at fp - 8(k+1)): 4 scratch slots, then per loop depth a
// counter slot and an iterator slot, then the map-key slot. 72 bytes at most per frame.
inline constexpr uint32_t kScratchSlots = 4;
inline constexpr uint32_t kMaxLoopDepth = 2;
inline constexpr uint32_t kKeySlot = kScratchSlots + 2 * kMaxLoopDepth;
inline constexpr int16_t slot_off(uint32_t k) { return static_cast<int16_t>(-8 * static_cast<int32_t>(k + 1)); }
inline constexpr uint32_t kMaxItem = 28;  // largest fixed part of any item (a new item needs this much room)
inline constexpr uint32_t kMaxSubprogs = 6;  // besides main

// Dead: a normal function called only from code the verifier never saw (Item::Dead's shape), so
// that dead-code removal deletes the whole subprog and its func_info (docs/patching.md §4.3).
enum class Role : uint8_t { Main, Normal, Callback, Dead };

// Items of a block. Order matters for shrinking: lower = simpler.
enum class Item : uint8_t {
    Alu, Mem, If, Padding, LdImm, Nop, Atomic, CountedLoop, CallSub, Helper,
    // rewrite sites
    DivMod, Lookup, MapUpdDel, MayGotoLoop, BpfFor, BpfLoop, TailCall, CtxLoad, LdAbs, HelperInl,
    KfuncCast, Zext, Sanitize, ProbeMem, Nospec, PercpuLd, Gotol, Gotox, Dead, FarJump,
};
inline constexpr uint32_t kPlainItems = static_cast<uint32_t>(Item::DivMod);
inline constexpr uint32_t kSiteItems = static_cast<uint32_t>(Item::FarJump) + 1 - kPlainItems;

struct Fn {
    Role role = Role::Main;
    bool has_ctx = false;
    bool cb_ret_one = false;   // callback returns 1 (stops bpf_loop after one round)
    bool zext_all = false;     // every 32-bit def gets zext_dst, read as 64 bits or not (over-marking)
    Emitted<Insn> code;
    Emitted<InsnAux> aux;  // one record per insn of `code`, with as much room (reserve())
    std::vector<std::pair<uint32_t, uint32_t>> calls;  // (local insn, target fn): pseudo call / func
    struct Arr {
        uint32_t map;
        std::vector<uint32_t> targets;  // local
    };
    std::vector<Arr> arrays;
    uint32_t stack = 0;      // bytes used
    uint32_t init_mask = 0;  // slots written with a full 8-byte store
    bool has_tail_call = false;
    std::vector<uint32_t> must_call, must_loop;

    // Room for n insns and their aux records: emit() then checks the insns' room only.
    void reserve(uint32_t n) {
        code.reserve(n);
        aux.reserve(n);
    }
};

inline constexpr uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The column of a line-info record: mix(i) % 80 of the insn's index in its function, from a table
// for the indexes of usual functions (every other record would cost a mix()).
inline uint32_t line_column(uint32_t i) {
    static constexpr auto kColumns = [] {
        std::array<uint8_t, 512> t{};
        for (uint32_t k = 0; k < t.size(); ++k) t[k] = static_cast<uint8_t>(mix(k) % 80);
        return t;
    }();
    return i < kColumns.size() ? kColumns[i] : static_cast<uint32_t>(mix(i) % 80);
}

inline bool def32(const Insn& in) {
    const uint8_t c = isa::cls(in);
    if (c == BPF_ALU) return isa::op(in) != BPF_END || in.imm != 64;
    if (c == BPF_LDX) return isa::mode(in) == BPF_MEM && isa::size(in) != BPF_DW;
    return false;
}

class Builder {
public:
    Builder(ChoiceSource& s, const GenOptions& o)
        : s_(s),
          o_(o),
          site_from_(1000 - static_cast<uint32_t>(std::clamp(o.patch_site_density, 0.0, 1.0) * 1000)),
          fixed_far_jumps_(o.far_jump_prob >= 1.0 && o.max_far_jumps != UINT32_MAX) {}
    GeneratedCase run();

private:
    // ---- emission ----
    uint32_t emit(Fn& f, Insn in) {
        // function() reserves a function's limit: growing is rare, and a call from here only then,
        // so that the usual emit saves no registers.
        if (f.code.full()) [[unlikely]] return grow_and_emit(f, in);  // aux has the same room
        // Every insn gets one of three fresh aux records (the generator emits a hundred insns per
        // case): a copy of a constant is cheaper than building one field by field.
        static constexpr InsnAux kSeen{.seen = true}, kMarked{.seen = true, .zext_dst = true}, kUnseen{};
        const auto at = f.code.size();
        f.code.append(in);
        f.aux.append(dead_ ? kUnseen : (f.zext_all && def32(in) ? kMarked : kSeen));
        f.aux[at].orig_idx = at;  // the function's own index: finish() adds where the function starts
        return at;
    }
    [[gnu::noinline]] uint32_t grow_and_emit(Fn& f, Insn in) {
        f.reserve(2 * f.code.size() + kMaxItem);
        return emit(f, in);
    }
    uint32_t emit_ld64(Fn& f, uint8_t dst, uint8_t pseudo, int32_t lo, int32_t hi) {
        const uint32_t at = emit(f, isa::ldimm64_lo(dst, pseudo, lo));
        emit(f, isa::ldimm64_hi(hi));
        return at;
    }
    static void set_target(Fn& f, uint32_t at, uint32_t target) {
        const int64_t d = static_cast<int64_t>(target) - static_cast<int64_t>(at) - 1;
        if (isa::is_gotol(f.code[at])) {
            f.code[at].imm = static_cast<int32_t>(d);
        } else {
            PATCHFUZZ_CHECK(d >= -32768 && d <= 32767, "generated jump displacement out of range");
            f.code[at].off = static_cast<int16_t>(d);
        }
    }
    uint32_t here(const Fn& f) const { return static_cast<uint32_t>(f.code.size()); }
    // The pseudo call or PSEUDO_FUNC at local insn `at` names function g (finish() resolves it).
    static void add_call(Fn& f, uint32_t at, uint32_t g) {
        if (f.calls.empty()) f.calls.reserve(8);  // one allocation for the usual few calls
        f.calls.emplace_back(at, g);
    }
    void use_slot(Fn& f, uint32_t k) { f.stack = std::max(f.stack, 8 * (k + 1)); }
    void init_slot(Fn& f, uint32_t k) {
        use_slot(f, k);
        if (!(f.init_mask & (1u << k))) {
            emit(f, isa::st(BPF_DW, R10, slot_off(k), imm32()));
            f.init_mask |= 1u << k;
        }
    }

    // ---- choices ----
    uint8_t var() { return kVars[s_.pick(3, Tag::Reg)]; }
    int32_t imm32() {
        switch (s_.pick(6, Tag::Imm)) {
            case 0: return static_cast<int32_t>(s_.draw_signed(-16, 16, Tag::Imm));
            case 1: return static_cast<int32_t>(s_.draw_signed(-4096, 4096, Tag::Imm));
            case 2: return -1;
            case 3: return std::numeric_limits<int32_t>::min();
            case 4: return std::numeric_limits<int32_t>::max();
            default: return static_cast<int32_t>(static_cast<uint32_t>(s_.draw(0, UINT32_MAX, Tag::Imm)));
        }
    }
    uint32_t map_of(uint32_t type, uint32_t variant);
    void add_kfunc(kfunc::Kind k) {
        const auto info = kfunc::by_kind(k);
        PATCHFUZZ_CHECK(info.has_value(), "kfunc missing from kfunc_table");
        for (const auto& d : p_.kfuncs)
            if (d.btf_id == info->btf_id) return;
        p_.kfuncs.push_back(KfuncDesc{.btf_id = info->btf_id, .offset = 0, .kind = static_cast<uint32_t>(k),
                                      .name = std::string(info->name)});
    }

    // A function after the current one (callees are generated before their callers) with role
    // `r`, by one pick among them; UINT32_MAX when there is none. Counted in place: a list of
    // the candidates would cost an allocation per call site.
    uint32_t pick_callee(Role r) {
        uint32_t count = 0;
        for (uint32_t g = cur_ + 1; g < fns_.size(); ++g) count += fns_[g].role == r ? 1 : 0;
        if (count == 0) return UINT32_MAX;
        uint32_t nth = s_.pick(count, Tag::Misc);
        for (uint32_t g = cur_ + 1;; ++g)
            if (fns_[g].role == r && nth-- == 0) return g;
    }

    // ---- structure ----
    void function(uint32_t idx, uint32_t limit);
    void block(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit, uint32_t want);
    void item(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    void item_kind(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    [[gnu::noinline]] void site_item(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    // Whether an item may open a nested block (an if, a loop, a gotol or gotox) / a loop.
    bool nest_ok(const Fn& f, uint32_t depth, uint32_t limit) const {
        return depth < o_.max_block_depth && here(f) + kMaxItem + 8 <= limit;
    }
    bool loop_ok(const Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit) const {
        return nest_ok(f, depth, limit) && loop_depth < std::min(o_.max_loop_depth, kMaxLoopDepth);
    }
    void ld_imm(Fn& f);
    void padding(Fn& f, uint32_t n);
    void alu(Fn& f);
    void mem(Fn& f);
    void atomic(Fn& f);
    void if_block(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    void loop(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    // A counted loop's body and latch: a block, then the counter in stack slot `cnt` incremented and
    // compared with a drawn bound, jumping back to `head` while below it.
    void counted_loop_body(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit, uint32_t cnt, uint32_t head);
    void bpf_for(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    void call_sub(Fn& f, uint32_t g);
    void bpf_loop(Fn& f, uint32_t g);
    void lookup(Fn& f, uint32_t type, uint32_t variant);
    void div_mod(Fn& f, bool force_reg);
    void helper_inl(Fn& f);
    void gotox(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit);
    void far_jump(Fn& f, uint32_t limit);
    void cond_jump_emit(Fn& f, uint32_t& at);
    void finish();

    ChoiceSource& s_;
    const GenOptions& o_;
    // Of every item's options, worked out once: an item is a rewrite site when its draw in
    // [0, 999] is >= site_from_; profiles place their long jumps (item()) when fixed_far_jumps_.
    const uint32_t site_from_;
    const bool fixed_far_jumps_;
    Program p_;
    std::vector<Fn> fns_;
    std::array<uint32_t, kMaxSubprogs + 1> layout_{}, place_{};  // function at each place, place of each function
    bool dead_ = false;
    uint32_t cur_ = 0;
    uint32_t lookups_left_ = 0;      // exact-lookup mode
    uint32_t lookup_every_ = 0;
    uint32_t next_lookup_at_ = 0;
    uint32_t hash_map_ = UINT32_MAX;
    uint32_t far_jumps_ = 0;
    // Per map of p_.maps, the (type << 32 | variant) map_of() made it for, or kRenamedMap once
    // gotox() gave it a name of its own: map_of() finds a map without building its name.
    static constexpr uint64_t kRenamedMap = UINT64_MAX;
    std::vector<uint64_t> map_keys_;
};

}  // namespace patchfuzz::gen::builder
