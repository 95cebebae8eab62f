#include "gen/program_gen.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "bpf/passes/zext_marks.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/rng.hpp"
#include "gen/ctx_reads.hpp"
#include "gen/emitted.hpp"

namespace patchfuzz::gen {
namespace {

using isa::Insn;

constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R4 = 4, R10 = 10;
constexpr uint8_t kCtxReg = 6;  // main and normal subprogs keep the context here (`r6 = r1`)
constexpr std::array<uint8_t, 3> kVars = {7, 8, 9};  // long-lived scalars of a function
// Frame layout (slot k is the 8 bytes at fp - 8(k+1)): 4 scratch slots, then per loop depth a
// counter slot and an iterator slot, then the map-key slot. 72 bytes at most per frame.
constexpr uint32_t kScratchSlots = 4;
constexpr uint32_t kMaxLoopDepth = 2;
constexpr uint32_t kKeySlot = kScratchSlots + 2 * kMaxLoopDepth;
constexpr int16_t slot_off(uint32_t k) { return static_cast<int16_t>(-8 * static_cast<int32_t>(k + 1)); }
constexpr uint32_t kMaxItem = 28;  // largest fixed part of any item (a new item needs this much room)
constexpr uint32_t kMaxSubprogs = 6;  // besides main

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
constexpr uint32_t kPlainItems = static_cast<uint32_t>(Item::DivMod);
constexpr uint32_t kSiteItems = static_cast<uint32_t>(Item::FarJump) + 1 - kPlainItems;

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

constexpr uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The column of a line-info record: mix(i) % 80 of the insn's index in its function, from a table
// for the indexes of usual functions (every other record would cost a mix()).
uint32_t line_column(uint32_t i) {
    static constexpr auto kColumns = [] {
        std::array<uint8_t, 512> t{};
        for (uint32_t k = 0; k < t.size(); ++k) t[k] = static_cast<uint8_t>(mix(k) % 80);
        return t;
    }();
    return i < kColumns.size() ? kColumns[i] : static_cast<uint32_t>(mix(i) % 80);
}

bool def32(const Insn& in) {
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

// One map per (type, variant), named "m<type>_<variant>", created on first use.
uint32_t Builder::map_of(uint32_t type, uint32_t variant) {
    const uint64_t key = uint64_t{type} << 32 | variant;
    for (uint32_t i = 0; i < map_keys_.size(); ++i)
        if (map_keys_[i] == key) return i;
    if (map_keys_.empty()) {  // room for the usual few maps at once
        map_keys_.reserve(8);
        p_.maps.reserve(8);
    }
    MapDef m;
    m.name = "m" + std::to_string(type) + "_" + std::to_string(variant);
    m.type = type;
    switch (type) {
        case BPF_MAP_TYPE_ARRAY:
        case BPF_MAP_TYPE_PERCPU_ARRAY:
            m.key_size = 4;
            m.value_size = 8 * (1 + s_.pick(4, Tag::Map));
            m.max_entries = 1 + s_.pick(16, Tag::Map);
            m.bypass_spec_v1 = variant == 1;
            m.map_flags = variant == 2 ? BPF_F_INNER_MAP : 0;
            break;
        case BPF_MAP_TYPE_ARRAY_OF_MAPS:
        case BPF_MAP_TYPE_HASH_OF_MAPS:
            m.key_size = 4;
            m.value_size = 4;
            m.max_entries = 1 + s_.pick(8, Tag::Map);
            break;
        case BPF_MAP_TYPE_PROG_ARRAY:
            m.key_size = 4;
            m.value_size = 4;
            m.max_entries = 1 + s_.pick(4, Tag::Map);
            m.unpriv_array = variant == 1;
            break;
        default:
            if (type == isa::kMapTypeInsnArray) {
                m.key_size = 4;
                m.value_size = 8;
                m.max_entries = variant;
                break;
            }
            // hash flavours
            m.key_size = s_.flag(Tag::Map) ? 8 : 4;
            m.value_size = 8 * (1 + s_.pick(4, Tag::Map));
            m.max_entries = 16u << s_.pick(4, Tag::Map);
            m.map_flags = s_.flag(Tag::Map) ? BPF_F_NO_PREALLOC : 0;
            if (type == BPF_MAP_TYPE_LRU_HASH) m.map_flags = 0;
            break;
    }
    p_.maps.push_back(std::move(m));
    map_keys_.push_back(key);
    return static_cast<uint32_t>(p_.maps.size() - 1);
}

GeneratedCase Builder::run() {
    static constexpr uint32_t kTypes[] = {BPF_PROG_TYPE_SOCKET_FILTER, BPF_PROG_TYPE_SCHED_CLS, BPF_PROG_TYPE_XDP,
                                          BPF_PROG_TYPE_KPROBE, BPF_PROG_TYPE_TRACING};
    p_.prog_type = o_.prog_type ? o_.prog_type : kTypes[s_.pick(5, Tag::Misc)];
    p_.name = "gen";
    const uint32_t max_insns = std::max<uint32_t>(o_.max_insns, 8);
    const uint32_t min_insns = std::min(o_.min_insns, max_insns);
    const uint32_t target = static_cast<uint32_t>(s_.draw(min_insns, max_insns, Tag::Len));
    const uint32_t sub_cap = std::min<uint32_t>({o_.subprogs_max, kMaxSubprogs, target / 24});
    const uint32_t nsub = sub_cap ? static_cast<uint32_t>(s_.draw(0, sub_cap, Tag::Len)) : 0;
    fns_.resize(nsub + 1);
    fns_[0].role = Role::Main;
    fns_[0].has_ctx = true;
    for (uint32_t g = 1; g <= nsub; ++g) {
        Fn& fg = fns_[g];
        fg.role = s_.chance(1, 3) ? Role::Callback : s_.chance(1, 8) ? Role::Dead : Role::Normal;
        fg.has_ctx = fg.role != Role::Callback;
        fg.cb_ret_one = fg.role == Role::Callback && s_.flag();
        // caller: a lower function that is neither a callback nor dead (a dead caller would leave
        // its callee seen but never called)
        uint32_t f = static_cast<uint32_t>(s_.draw(0, g - 1, Tag::Misc));
        while (f > 0 && (fns_[f].role == Role::Callback || fns_[f].role == Role::Dead)) --f;
        (fg.role == Role::Callback ? fns_[f].must_loop : fns_[f].must_call).push_back(g);
    }
    // Where each function goes: main first (subprog 0 starts at insn 0), the others in any order,
    // so that calls and callback loads point backward as well as forward (a real object's .text
    // puts a callee before or after its caller as it likes). layout_[k] = the function at place k.
    for (size_t g = 0; g < fns_.size(); ++g) layout_[g] = static_cast<uint32_t>(g);
    for (size_t k = fns_.size(); k > 2; --k) std::swap(layout_[k - 1], layout_[1 + s_.pick(static_cast<uint32_t>(k - 1), Tag::Misc)]);
    for (size_t k = 0; k < fns_.size(); ++k) place_[layout_[k]] = static_cast<uint32_t>(k);
    if (o_.exact_lookups) {
        lookups_left_ = o_.exact_hash_lookups;
        hash_map_ = map_of(BPF_MAP_TYPE_HASH, 0);
    }
    // Subprogs first (highest index first: callees exist before callers), main last so that it
    // knows how much room is left.
    const double share = std::clamp(o_.subprog_share, 0.0, 0.9);
    const uint32_t sub_limit = std::max<uint32_t>(16, static_cast<uint32_t>(target * share / (nsub + 1)));
    uint32_t used = 0;
    for (uint32_t g = nsub; g >= 1; --g) {
        cur_ = g;
        function(g, sub_limit);
        used += here(fns_[g]);
    }
    cur_ = 0;
    const uint32_t main_limit = target > used + 16 ? target - used : 16;
    if (o_.exact_lookups && lookups_left_) {
        lookup_every_ = std::max<uint32_t>(1, main_limit / (lookups_left_ + 1));
        next_lookup_at_ = lookup_every_;
    }
    function(0, main_limit);
    finish();
    // The marks the verifier's liveness sets (a 32-bit def whose register a path reads as 64 bits),
    // on top of the random ones: without them a zext JIT (jit32) runs a program the kernel never
    // produces, and the exec oracle can only skip the case.
    passes::add_zext_marks(p_);
    GeneratedCase c;
    c.inputs = make_inputs(p_, s_, o_.inputs);
    if (o_.compute_stats) c.stats = analyze(p_);
    c.program = std::move(p_);
    return c;
}

void Builder::function(uint32_t idx, uint32_t limit) {
    Fn& f = fns_[idx];
    f.reserve(limit + kMaxItem);
    f.zext_all = s_.chance(1, 4);
    dead_ = f.role == Role::Dead;
    const uint32_t body_limit = limit > 4 ? limit - 4 : 0;
    // A function may begin with a jump or a may_goto (both paths meet at its third insn): the
    // may_goto prologue then goes in front of a transfer, or of a patched one (docs/patching.md §5.3.1).
    switch (s_.pick(8, Tag::Kind)) {
        case 0: {
            const uint32_t j = emit(f, isa::jmp_imm(s_.flag() ? BPF_JEQ : BPF_JNE, R1, 0, 0));
            emit(f, isa::mov64_imm(R0, 0));
            set_target(f, j, here(f));
            break;
        }
        case 1: {
            const uint32_t j = emit(f, isa::may_goto(0));
            emit(f, isa::mov64_imm(R0, 0));
            set_target(f, j, here(f));
            break;
        }
        case 2: {
            // A callback's address loaded into r2 and left unused (r2 is free at every function
            // entry but a callback's, whose `data` argument no generated callback reads): a
            // prologue then goes in front of a PSEUDO_FUNC load. Only of a callback placed after
            // the function: the kernel's copy of a backward one after the may_goto prologue keeps
            // its imm and names the wrong insn (docs/patching.md §8; an open finding of issue 28, which every
            // campaign would otherwise hit).
            uint32_t g = 1;
            while (g < fns_.size() && (fns_[g].role != Role::Callback || place_[g] <= place_[idx])) ++g;
            if (g == fns_.size()) break;
            add_call(f, emit_ld64(f, R2, BPF_PSEUDO_FUNC, 0, 0), g);
            break;
        }
        default: break;
    }
    // prologue
    if (f.role == Role::Callback) {
        emit(f, isa::mov64_reg(kVars[0], R1));  // loop index
    } else {
        emit(f, isa::mov64_reg(kCtxReg, R1));
        emit(f, isa::mov64_imm(kVars[0], imm32()));
    }
    emit(f, isa::mov64_imm(kVars[1], imm32()));
    emit(f, isa::mov64_imm(kVars[2], imm32()));
    // calls every subprog needs to be reachable
    for (uint32_t g : f.must_call) {
        if (fns_[g].role != Role::Dead) {
            call_sub(f, g);
            continue;
        }
        // Item::Dead's never-taken branch around the only call of a dead function.
        emit(f, isa::mov64_imm(R0, 0));
        const uint32_t j = emit(f, isa::jmp_imm(BPF_JEQ, R0, 0, 0));
        dead_ = true;
        call_sub(f, g);
        dead_ = f.role == Role::Dead;
        set_target(f, j, here(f));
    }
    for (uint32_t g : f.must_loop) bpf_loop(f, g);
    block(f, 0, 0, body_limit, UINT32_MAX);
    // A jump back to the function's first insn (insn 0 for main) that is never taken: a backward
    // reference to a subprog start, which every prologue at that start must keep right (spec
    // §3.7). A conditional jump on the frame pointer (never 0), a gotol behind one, or a may_goto
    // (taken only once the loop budget is spent, which one run never does). Short functions only:
    // in one of near 32767 insns the jump would overflow once the passes grow it, which is the far
    // jumps' business (GenOptions::far_jump_prob).
    if (s_.chance(1, 4) && here(f) < 4096) {
        uint32_t j = 0;
        switch (s_.pick(3, Tag::Jump)) {
            case 0: j = emit(f, isa::jmp_imm(BPF_JEQ, R10, 0, 0)); break;
            case 1:
                emit(f, isa::jmp_imm(BPF_JNE, R10, 0, 1));
                j = emit(f, isa::gotol(0));
                break;
            default: j = emit(f, isa::may_goto(0)); break;
        }
        set_target(f, j, 0);
    }
    if (idx == 0) {
        while (o_.exact_lookups && lookups_left_) lookup(f, BPF_MAP_TYPE_HASH, 0);
        // reach min_insns
        uint32_t total = here(f) + 2;
        for (uint32_t g = 1; g < fns_.size(); ++g) total += here(fns_[g]);
        if (total < o_.min_insns) padding(f, o_.min_insns - total);
    }
    // epilogue
    if (f.role == Role::Callback)
        emit(f, isa::mov64_imm(R0, f.cb_ret_one ? 1 : 0));
    else
        emit(f, isa::mov64_reg(R0, var()));
    emit(f, isa::exit_insn());
    dead_ = false;
}

void Builder::block(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit, uint32_t want) {
    uint32_t have = 0;
    while (here(f) + kMaxItem <= limit && s_.another(have, want)) {
        ItemScope scope(s_);
        item(f, depth, loop_depth, limit);
        ++have;
    }
}

void Builder::item(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    if (lookups_left_ && cur_ == 0 && here(f) >= next_lookup_at_) {
        // exact-lookup mode: catch up with the schedule (a nested item may have spanned several slots)
        while (lookups_left_ && here(f) >= next_lookup_at_) {
            lookup(f, BPF_MAP_TYPE_HASH, 0);
            next_lookup_at_ += lookup_every_;
        }
        return;
    }
    if (fixed_far_jumps_ && far_jumps_ < o_.max_far_jumps && cur_ == 0 && depth == 0 && loop_depth == 0 &&
        here(f) >= limit / 8 &&
        here(f) + o_.far_jump_distance + 64 + 10 * lookups_left_ <= limit) {
        // profiles: their long jumps at a fixed place, so that every seed has them
        return item_kind(f, Item::FarJump, depth, loop_depth, limit);
    }
    const bool site = s_.draw(0, 999, Tag::Kind) >= site_from_;
    const Item k = site ? static_cast<Item>(kPlainItems + s_.pick(kSiteItems))
                        : static_cast<Item>(s_.pick(kPlainItems));
    item_kind(f, k, depth, loop_depth, limit);
}

void Builder::padding(Fn& f, uint32_t n) {
    // Cheap filler (long jumps, profiles, 1M-insn programs): one choice, derived immediates.
    const uint64_t seed = s_.draw(0, UINT32_MAX, Tag::Imm);
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t h = mix(seed + i);
        const uint8_t d = kVars[h % 3];
        const int32_t imm = static_cast<int32_t>((h >> 8) & 0xffff) - 0x8000;
        switch ((h >> 4) % 4) {
            case 0: emit(f, isa::mov64_imm(d, imm)); break;
            case 1: emit(f, isa::alu64_imm(BPF_ADD, d, imm)); break;
            case 2: emit(f, isa::alu64_reg(BPF_XOR, d, kVars[(h >> 40) % 3])); break;
            default: emit(f, isa::alu32_imm(BPF_AND, d, imm)); break;
        }
    }
}

void Builder::alu(Fn& f) {
    static constexpr uint8_t kOps[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_OR,  BPF_AND, BPF_LSH, BPF_RSH,
                                       BPF_XOR, BPF_MOV, BPF_ARSH, BPF_NEG, BPF_END, BPF_DIV, BPF_MOD};
    const bool is64 = s_.flag(Tag::Kind);
    const uint8_t cls = is64 ? BPF_ALU64 : BPF_ALU;
    const uint32_t nops = sizeof kOps + (o_.cpu_v4 ? 3 : 0);
    const uint32_t pick = s_.pick(nops);
    const uint8_t d = var();
    if (pick >= sizeof kOps) {  // cpu v4 forms
        switch (pick - sizeof kOps) {
            case 0: {  // movsx
                const int16_t offs[] = {8, 16, 32};
                const int16_t off = offs[s_.pick(is64 ? 3 : 2, Tag::Off)];
                emit(f, isa::make(cls | BPF_MOV | BPF_X, d, var(), off, 0));
                return;
            }
            case 1: {  // sdiv/smod by a constant other than 0 and -1
                int32_t imm = imm32();
                if (imm == 0 || imm == -1) imm = 3;
                emit(f, isa::make(cls | (s_.flag() ? BPF_DIV : BPF_MOD) | BPF_K, d, 0, 1, imm));
                return;
            }
            default: {  // bswap (ALU64 | END | TO_LE)
                const int32_t w[] = {16, 32, 64};
                emit(f, isa::make(BPF_ALU64 | BPF_END | BPF_TO_LE, d, 0, 0, w[s_.pick(3, Tag::Imm)]));
                return;
            }
        }
    }
    const uint8_t op = kOps[pick];
    if (op == BPF_NEG) {
        emit(f, isa::make(cls | BPF_NEG | BPF_K, d, 0, 0, 0));
        return;
    }
    if (op == BPF_END) {
        const int32_t w[] = {16, 32, 64};
        const int32_t width = w[s_.pick(3, Tag::Imm)];  // draws in g++'s order (see cond_jump_emit)
        const uint8_t to = s_.flag() ? BPF_TO_BE : BPF_TO_LE;
        emit(f, isa::make(BPF_ALU | BPF_END | to, d, 0, 0, width));
        return;
    }
    const bool reg = s_.flag(Tag::Kind);
    if (reg && op != BPF_DIV && op != BPF_MOD) {
        emit(f, isa::make(cls | op | BPF_X, d, var(), 0, 0));
        return;
    }
    int32_t imm;
    if (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH)
        imm = static_cast<int32_t>(s_.draw(0, is64 ? 63 : 31, Tag::Imm));
    else
        imm = imm32();
    if ((op == BPF_DIV || op == BPF_MOD) && imm == 0) imm = 7;  // the verifier rejects div by 0 imm
    emit(f, isa::make(cls | op | BPF_K, d, 0, 0, imm));
}

void Builder::mem(Fn& f) {
    static constexpr uint8_t kSizes[] = {BPF_B, BPF_H, BPF_W, BPF_DW};
    static constexpr int kBytes[] = {1, 2, 4, 8};
    const uint32_t si = s_.pick(4, Tag::Kind);
    const uint32_t slot = s_.pick(kScratchSlots, Tag::Off);
    const int16_t off = static_cast<int16_t>(slot_off(slot) + kBytes[si] * static_cast<int>(s_.pick(8 / kBytes[si], Tag::Off)));
    switch (s_.pick(3)) {
        case 0:
            use_slot(f, slot);
            emit(f, isa::st(kSizes[si], R10, off, imm32()));
            if (si == 3) f.init_mask |= 1u << slot;
            break;
        case 1:
            use_slot(f, slot);
            emit(f, isa::stx(kSizes[si], R10, var(), off));
            if (si == 3) f.init_mask |= 1u << slot;
            break;
        default: {
            init_slot(f, slot);
            const bool sx = o_.cpu_v4 && si < 3 && s_.flag();
            const uint32_t at = emit(f, isa::make(BPF_LDX | kSizes[si] | (sx ? BPF_MEMSX : BPF_MEM), var(), R10, off, 0));
            f.aux[at].ptr_type = PtrType::Stack;
            break;
        }
    }
}

void Builder::atomic(Fn& f) {
    static constexpr int32_t kOps[] = {BPF_ADD, BPF_OR, BPF_AND, BPF_XOR, BPF_ADD | BPF_FETCH, BPF_OR | BPF_FETCH,
                                       BPF_AND | BPF_FETCH, BPF_XOR | BPF_FETCH, BPF_XCHG, BPF_CMPXCHG};
    const uint32_t slot = s_.pick(kScratchSlots, Tag::Off);
    init_slot(f, slot);
    const uint32_t n = sizeof kOps / sizeof kOps[0] + (o_.cpu_v4 ? 2 : 0);
    const uint32_t pick = s_.pick(n);
    if (pick >= sizeof kOps / sizeof kOps[0]) {  // load-acquire / store-release, any size
        static constexpr uint8_t kSizes[] = {BPF_B, BPF_H, BPF_W, BPF_DW};
        const uint8_t sz = kSizes[s_.pick(4)];
        if (pick == sizeof kOps / sizeof kOps[0])
            emit(f, isa::make(BPF_STX | BPF_ATOMIC | sz, var(), R10, slot_off(slot), BPF_LOAD_ACQ));
        else
            emit(f, isa::make(BPF_STX | BPF_ATOMIC | sz, R10, var(), slot_off(slot), BPF_STORE_REL));
        return;
    }
    const uint8_t sz = s_.flag() ? BPF_DW : BPF_W;
    const int16_t off = static_cast<int16_t>(slot_off(slot) + (sz == BPF_W ? 4 * static_cast<int>(s_.pick(2, Tag::Off)) : 0));
    if (kOps[pick] == BPF_CMPXCHG) emit(f, isa::mov64_reg(R0, var()));
    emit(f, isa::make(BPF_STX | BPF_ATOMIC | sz, R10, var(), off, kOps[pick]));
}

void Builder::cond_jump_emit(Fn& f, uint32_t& at) {
    static constexpr uint8_t kJ[] = {BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE,
                                     BPF_JSGT, BPF_JSGE, BPF_JSLT, BPF_JSLE, BPF_JSET};
    const uint8_t jop = kJ[s_.pick(sizeof kJ)];
    const uint8_t cls = s_.flag() ? BPF_JMP32 : BPF_JMP;
    // Draws are sequenced in statements of their own: in one call's arguments their order is the
    // compiler's, and a seed must give the same program from every build (g++'s order kept).
    if (s_.flag()) {
        const uint8_t src = var();
        const uint8_t dst = var();
        at = emit(f, isa::make(cls | jop | BPF_X, dst, src, 0, 0));
    } else {
        const int32_t imm = imm32();
        const uint8_t dst = var();
        at = emit(f, isa::make(cls | jop | BPF_K, dst, 0, 0, imm));
    }
}

void Builder::if_block(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    uint32_t j = 0;
    cond_jump_emit(f, j);
    const bool has_else = s_.flag();
    block(f, depth + 1, loop_depth, limit - 1, static_cast<uint32_t>(s_.draw(0, 4, Tag::Len)));
    if (has_else) {
        const uint32_t e = emit(f, isa::ja(0));
        set_target(f, j, here(f));
        block(f, depth + 1, loop_depth, limit, static_cast<uint32_t>(s_.draw(0, 4, Tag::Len)));
        set_target(f, e, here(f));
    } else {
        set_target(f, j, here(f));
    }
}

// Counted and may_goto loops: a counter slot bounds every loop to loop_iters_max rounds.
void Builder::loop(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    const uint32_t cnt = kScratchSlots + 2 * loop_depth;
    use_slot(f, cnt);
    emit(f, isa::st(BPF_DW, R10, slot_off(cnt), 0));
    f.init_mask |= 1u << cnt;
    const uint32_t head = here(f);
    uint32_t mg = UINT32_MAX;
    if (k == Item::MayGotoLoop) mg = emit(f, isa::may_goto(0));
    block(f, depth + 1, loop_depth + 1, limit - 4, static_cast<uint32_t>(s_.draw(0, 3, Tag::Len)));
    const int32_t n = static_cast<int32_t>(s_.draw(1, std::max<uint32_t>(1, o_.loop_iters_max), Tag::Imm));
    emit(f, isa::ldx(BPF_DW, R0, R10, slot_off(cnt)));
    emit(f, isa::alu64_imm(BPF_ADD, R0, 1));
    emit(f, isa::stx(BPF_DW, R10, R0, slot_off(cnt)));
    const uint32_t back = emit(f, isa::jmp_imm(BPF_JLT, R0, n, 0));
    set_target(f, back, head);
    if (mg != UINT32_MAX) set_target(f, mg, here(f));
}

// bpf_for(i, start, end): new / next / destroy on an 8-byte stack slot (docs/iterator-isa-arch.md §1.6),
// with start/end from the edge table of §1.7 and §2.4 and garbage in the upper halves of R2/R3.
void Builder::bpf_for(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
    constexpr int32_t M = isa::kMaxLoops;
    int32_t start = 0, end = 0;
    const int32_t a = static_cast<int32_t>(s_.draw_signed(-8, 8, Tag::Imm));
    switch (s_.pick(9, Tag::Imm)) {
        case 0: start = a; end = a + static_cast<int32_t>(s_.draw(0, 6, Tag::Imm)); break;  // short range
        case 1: start = a; end = a; break;                                                  // empty
        case 2: start = a + 1 + static_cast<int32_t>(s_.draw(0, 100, Tag::Imm)); end = a; break;  // start > end
        case 3: start = a; end = a + M - 1 + static_cast<int32_t>(s_.draw(0, 2, Tag::Imm)); break;  // M-1, M, M+1
        case 4: start = kMin + static_cast<int32_t>(s_.draw(0, 2, Tag::Imm)); end = start + static_cast<int32_t>(s_.draw(0, 3, Tag::Imm)); break;
        case 5: end = kMax - static_cast<int32_t>(s_.draw(0, 2, Tag::Imm)); start = end - static_cast<int32_t>(s_.draw(0, 3, Tag::Imm)); break;
        case 6: start = kMin; end = s_.flag() ? 0 : kMax; break;
        case 7: start = kMax; end = kMin; break;
        default: start = static_cast<int32_t>(s_.draw(0, UINT32_MAX, Tag::Imm)); end = static_cast<int32_t>(s_.draw(0, UINT32_MAX, Tag::Imm)); break;
    }
    const bool garbage = s_.flag();
    const int32_t g2 = garbage ? static_cast<int32_t>(s_.draw(1, UINT32_MAX, Tag::Imm)) : 0;
    const int32_t g3 = garbage ? static_cast<int32_t>(s_.draw(0, UINT32_MAX, Tag::Imm)) : 0;
    const uint32_t it = kScratchSlots + 2 * loop_depth + 1, cnt = it - 1;
    use_slot(f, it);
    use_slot(f, cnt);
    add_kfunc(kfunc::Kind::IterNumNew);
    add_kfunc(kfunc::Kind::IterNumNext);
    add_kfunc(kfunc::Kind::IterNumDestroy);
    const auto id = [](kfunc::Kind k) { return kfunc::by_kind(k)->btf_id; };
    emit(f, isa::st(BPF_DW, R10, slot_off(cnt), 0));
    f.init_mask |= 1u << cnt;
    emit(f, isa::mov64_reg(R1, R10));
    emit(f, isa::alu64_imm(BPF_ADD, R1, slot_off(it)));
    if (garbage) {
        emit_ld64(f, R2, 0, start, g2);
        emit_ld64(f, R3, 0, end, g3);
    } else {
        emit(f, isa::mov32_imm(R2, start));
        emit(f, isa::mov32_imm(R3, end));
    }
    emit(f, isa::call_kfunc(id(kfunc::Kind::IterNumNew)));
    const uint32_t head = here(f);
    emit(f, isa::mov64_reg(R1, R10));
    emit(f, isa::alu64_imm(BPF_ADD, R1, slot_off(it)));
    emit(f, isa::call_kfunc(id(kfunc::Kind::IterNumNext)));
    const uint32_t out = emit(f, isa::jmp_imm(BPF_JEQ, R0, 0, 0));
    emit(f, isa::ldx(BPF_W, var(), R0, 0));
    block(f, depth + 1, loop_depth + 1, limit - 8, static_cast<uint32_t>(s_.draw(0, 3, Tag::Len)));
    const int32_t n = static_cast<int32_t>(s_.draw(1, std::max<uint32_t>(1, o_.loop_iters_max), Tag::Imm));
    emit(f, isa::ldx(BPF_DW, R0, R10, slot_off(cnt)));
    emit(f, isa::alu64_imm(BPF_ADD, R0, 1));
    emit(f, isa::stx(BPF_DW, R10, R0, slot_off(cnt)));
    const uint32_t back = emit(f, isa::jmp_imm(BPF_JLT, R0, n, 0));
    set_target(f, back, head);
    set_target(f, out, here(f));
    emit(f, isa::mov64_reg(R1, R10));
    emit(f, isa::alu64_imm(BPF_ADD, R1, slot_off(it)));
    emit(f, isa::call_kfunc(id(kfunc::Kind::IterNumDestroy)));
}

void Builder::call_sub(Fn& f, uint32_t g) {
    emit(f, isa::mov64_reg(R1, kCtxReg));
    emit(f, isa::mov64_reg(R2, var()));
    const uint32_t at = emit(f, isa::call_pseudo(0));
    add_call(f, at, g);
    emit(f, isa::mov64_reg(var(), R0));
}

void Builder::bpf_loop(Fn& f, uint32_t g) {
    const Fn& cb = fns_[g];
    int32_t nr;
    bool upper_half = false;
    if (cb.cb_ret_one) {
        const int32_t opts[] = {0, 1, 5, isa::kMaxLoops, isa::kMaxLoops + 1, -1};
        nr = opts[s_.pick(6, Tag::Imm)];
        // A 64-bit scalar with bits 32-63 set: the helper counts (u32)nr_loops, the inline
        // compares all 64 bits (docs/iterator-isa-arch.md §2.4; finding 0007).
        upper_half = s_.chance(1, 8);
    } else {
        nr = static_cast<int32_t>(s_.draw(0, std::max<uint32_t>(1, o_.loop_iters_max), Tag::Imm));
    }
    if (upper_half)
        emit_ld64(f, R1, 0, nr, 1);
    else
        emit(f, isa::mov32_imm(R1, nr));
    const uint32_t fn = emit_ld64(f, R2, BPF_PSEUDO_FUNC, 0, 0);
    add_call(f, fn, g);
    emit(f, isa::mov64_imm(R3, 0));
    emit(f, isa::mov64_imm(R4, 0));
    const uint32_t at = emit(f, isa::call_helper(BPF_FUNC_loop));
    f.aux[at].loop_fit_for_inline = !s_.chance(1, 4);
    f.aux[at].loop_callback_subprogno = g;
    emit(f, isa::mov64_reg(var(), R0));
}

void Builder::lookup(Fn& f, uint32_t type, uint32_t variant) {
    const uint32_t m = (o_.exact_lookups && type == BPF_MAP_TYPE_HASH) ? hash_map_ : map_of(type, variant);
    const MapDef& md = p_.maps[m];
    use_slot(f, kKeySlot);
    const bool small = md.type == BPF_MAP_TYPE_HASH || md.type == BPF_MAP_TYPE_LRU_HASH ||
                       md.type == BPF_MAP_TYPE_PERCPU_HASH || md.type == BPF_MAP_TYPE_HASH_OF_MAPS;
    const int32_t key = static_cast<int32_t>(s_.draw(0, small ? 7 : md.max_entries + 1, Tag::Imm));
    emit(f, isa::st(md.key_size == 8 ? BPF_DW : BPF_W, R10, slot_off(kKeySlot), key));
    emit_ld64(f, R1, BPF_PSEUDO_MAP_FD, static_cast<int32_t>(m), 0);
    emit(f, isa::mov64_reg(R2, R10));
    emit(f, isa::alu64_imm(BPF_ADD, R2, slot_off(kKeySlot)));
    const uint32_t at = emit(f, isa::call_helper(BPF_FUNC_map_lookup_elem));
    f.aux[at].map_index = static_cast<int32_t>(m);
    f.aux[at].map_ptr_poisoned = !o_.exact_lookups && s_.chance(1, 16);
    const uint32_t j = emit(f, isa::jmp_imm(BPF_JEQ, R0, 0, 0));
    if (md.type == BPF_MAP_TYPE_ARRAY_OF_MAPS || md.type == BPF_MAP_TYPE_HASH_OF_MAPS) {
        emit(f, isa::alu64_imm(BPF_ADD, var(), 1));
    } else {
        const int16_t voff = static_cast<int16_t>(8 * s_.pick(md.value_size / 8, Tag::Off));
        const uint32_t ld = emit(f, isa::ldx(BPF_DW, var(), R0, voff));
        f.aux[ld].ptr_type = PtrType::MapValue;
        if (s_.flag()) {
            const uint32_t stp = emit(f, isa::stx(BPF_DW, R0, var(), voff));
            f.aux[stp].ptr_type = PtrType::MapValue;
        }
    }
    set_target(f, j, here(f));
    if (lookups_left_ && type == BPF_MAP_TYPE_HASH && o_.exact_lookups) --lookups_left_;
}

void Builder::div_mod(Fn& f, bool force_reg) {
    const uint8_t cls = s_.flag() ? BPF_ALU64 : BPF_ALU;
    const uint8_t op = s_.flag() ? BPF_DIV : BPF_MOD;
    const int16_t sgn = o_.cpu_v4 && s_.flag() ? 1 : 0;
    const uint8_t d = var();
    if (!force_reg && sgn && s_.chance(1, 3)) {  // row c: signed by -1
        emit(f, isa::make(cls | op | BPF_K, d, 0, 1, -1));
        return;
    }
    // by register, with edge divisors loaded into a temp: 0, -1, 1, INT_MIN, or a variable
    uint8_t src = R2;
    switch (s_.pick(5, Tag::Imm)) {
        case 0: src = var(); break;
        case 1: emit(f, isa::mov64_imm(R2, 0)); break;
        case 2: emit(f, isa::mov64_imm(R2, -1)); break;
        case 3: emit(f, isa::mov64_imm(R2, 1)); break;
        default: emit(f, isa::mov64_imm(R2, std::numeric_limits<int32_t>::min())); break;
    }
    emit(f, isa::make(cls | op | BPF_X, d, src, sgn, 0));
}

void Builder::helper_inl(Fn& f) {
    const bool tracing = p_.prog_type == BPF_PROG_TYPE_TRACING && f.has_ctx;
    const bool kprobe = p_.prog_type == BPF_PROG_TYPE_KPROBE || p_.prog_type == BPF_PROG_TYPE_TRACING;
    const uint32_t n = tracing ? 10 : (kprobe ? 6 : 3);
    switch (s_.pick(n)) {
        case 0: emit(f, isa::call_helper(BPF_FUNC_get_smp_processor_id)); break;
        case 1: emit(f, isa::call_helper(BPF_FUNC_jiffies64)); break;
        case 2: emit(f, isa::call_helper(BPF_FUNC_get_prandom_u32)); break;
        case 3: emit(f, isa::call_helper(BPF_FUNC_get_current_task)); break;
        case 4: emit(f, isa::call_helper(BPF_FUNC_get_current_task_btf)); break;
        case 5: {  // branch snapshot into the scratch area (32 bytes)
            for (uint32_t k = 0; k < 4; ++k) use_slot(f, k);
            emit(f, isa::mov64_reg(R1, R10));
            emit(f, isa::alu64_imm(BPF_ADD, R1, slot_off(3)));
            emit(f, isa::mov64_imm(R2, 32));
            emit(f, isa::mov64_imm(R3, 0));
            emit(f, isa::call_helper(BPF_FUNC_get_branch_snapshot));
            break;
        }
        case 6:
            use_slot(f, 0);
            emit(f, isa::mov64_reg(R1, kCtxReg));
            if (s_.chance(1, 8))  // the helper takes `u32 n`: an index with bits 32-63 set
                emit_ld64(f, R2, 0, static_cast<int32_t>(s_.draw(0, 6, Tag::Imm)), 1);
            else
                emit(f, isa::mov64_imm(R2, static_cast<int32_t>(s_.draw(0, 6, Tag::Imm))));
            emit(f, isa::mov64_reg(R3, R10));
            emit(f, isa::alu64_imm(BPF_ADD, R3, slot_off(0)));
            emit(f, isa::call_helper(BPF_FUNC_get_func_arg));
            break;
        case 7:
            use_slot(f, 0);
            emit(f, isa::mov64_reg(R1, kCtxReg));
            emit(f, isa::mov64_reg(R2, R10));
            emit(f, isa::alu64_imm(BPF_ADD, R2, slot_off(0)));
            emit(f, isa::call_helper(BPF_FUNC_get_func_ret));
            break;
        case 8:
            emit(f, isa::mov64_reg(R1, kCtxReg));
            emit(f, isa::call_helper(BPF_FUNC_get_func_arg_cnt));
            break;
        default:
            emit(f, isa::mov64_reg(R1, kCtxReg));
            emit(f, isa::call_helper(BPF_FUNC_get_func_ip));
            break;
    }
    emit(f, isa::mov64_reg(var(), R0));
}

// gotox through an instruction array: r1 = table[var & (k-1)]; gotox r1; k case blocks.
void Builder::gotox(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    const uint32_t k = 2u << s_.pick(2, Tag::Len);
    const uint32_t m = map_of(isa::kMapTypeInsnArray, k);
    // each gotox gets its own table: make the map name unique
    p_.maps[m].name += "_" + std::to_string(p_.insn_arrays.size());
    map_keys_[m] = kRenamedMap;
    emit(f, isa::mov64_reg(R2, var()));
    emit(f, isa::alu64_imm(BPF_AND, R2, static_cast<int32_t>(k - 1)));
    emit(f, isa::alu64_imm(BPF_LSH, R2, 3));
    emit_ld64(f, R1, BPF_PSEUDO_MAP_VALUE, static_cast<int32_t>(m), 0);
    emit(f, isa::alu64_reg(BPF_ADD, R1, R2));
    const uint32_t ld = emit(f, isa::ldx(BPF_DW, R1, R1, 0));
    f.aux[ld].ptr_type = PtrType::MapValue;
    emit(f, isa::make(BPF_JMP | BPF_JA | BPF_X, R1, 0, 0, 0));
    Fn::Arr arr{m, {}};
    std::vector<uint32_t> exits;
    for (uint32_t c = 0; c < k; ++c) {
        arr.targets.push_back(here(f));
        const uint32_t sub = limit > (k - c) * 2 ? limit - (k - c) * 2 : here(f);
        const uint32_t cap = std::min<uint32_t>(sub, here(f) + 64);
        block(f, depth + 1, loop_depth, cap, static_cast<uint32_t>(s_.draw(0, 2, Tag::Len)));
        emit(f, isa::alu64_imm(BPF_ADD, var(), static_cast<int32_t>(c)));  // every case is non-empty
        if (c + 1 < k) exits.push_back(emit(f, isa::ja(0)));
    }
    for (uint32_t e : exits) set_target(f, e, here(f));
    for (uint32_t t : arr.targets) f.aux[t].indirect_target = true;
    f.arrays.push_back(std::move(arr));
}

// A forward or backward jump whose displacement ends within far_jump_margin of 32767, over a
// block that ends in division sites (each grows by >= 3 when patched): after patching the
// displacement no longer fits 16 bits.
void Builder::far_jump(Fn& f, uint32_t limit) {
    const uint32_t kLimit = std::clamp<uint32_t>(o_.far_jump_distance, 64, 32767);
    const uint32_t margin = std::clamp<uint32_t>(o_.far_jump_margin, 4, kLimit / 2);
    if (here(f) + kLimit + 64 > limit) {
        alu(f);
        return;
    }
    ++far_jumps_;
    const bool backward = s_.flag();
    const uint32_t dist = kLimit - static_cast<uint32_t>(s_.draw(0, margin, Tag::Jump));
    if (!backward) {
        uint32_t j = 0;
        cond_jump_emit(f, j);
        const uint32_t end = j + 1 + dist;
        padding(f, dist - margin);
        while (here(f) + 2 <= end) div_mod(f, true);
        padding(f, end - here(f));
        set_target(f, j, here(f));
    } else {
        // counted loop (one round) whose back edge spans `dist`
        const uint32_t cnt = kScratchSlots;
        use_slot(f, cnt);
        emit(f, isa::st(BPF_DW, R10, slot_off(cnt), 0));
        f.init_mask |= 1u << cnt;
        const uint32_t head = here(f);
        const uint32_t back_at = head + dist - 1;  // back edge: off = head - back_at - 1 = -dist
        padding(f, dist - margin);
        while (here(f) + 5 <= back_at - 3) div_mod(f, true);
        padding(f, back_at - 3 - here(f));
        emit(f, isa::ldx(BPF_DW, R0, R10, slot_off(cnt)));
        emit(f, isa::alu64_imm(BPF_ADD, R0, 1));
        emit(f, isa::stx(BPF_DW, R10, R0, slot_off(cnt)));
        const uint32_t back = emit(f, isa::jmp_imm(BPF_JLT, R0, 1, 0));
        set_target(f, back, head);
    }
}

void Builder::ld_imm(Fn& f) {
    switch (s_.pick(4)) {
        case 0: {
            const int32_t lo = imm32(), hi = imm32();
            emit_ld64(f, var(), 0, lo, hi);
            return;
        }
        case 1:  // ksym address (value unused)
            emit_ld64(f, R1, BPF_PSEUDO_BTF_ID, static_cast<int32_t>(s_.draw(1, 1000, Tag::Imm)), 0);
            return;
        case 2:  // map by fd_array index (value unused)
            emit_ld64(f, R1, BPF_PSEUDO_MAP_IDX, static_cast<int32_t>(map_of(BPF_MAP_TYPE_ARRAY, 0)), 0);
            return;
        default: {  // direct value address of an array map, by index, then a load
            const uint32_t m = map_of(BPF_MAP_TYPE_ARRAY, 0);
            const int32_t voff = static_cast<int32_t>(8 * s_.pick(p_.maps[m].value_size / 8, Tag::Off));
            emit_ld64(f, R1, BPF_PSEUDO_MAP_IDX_VALUE, static_cast<int32_t>(m), voff);
            const uint32_t ld = emit(f, isa::ldx(BPF_DW, var(), R1, 0));
            f.aux[ld].ptr_type = PtrType::MapValue;
            return;
        }
    }
}

// The plain items (nine in ten of all) each by a call of its own, the rewrite sites in
// site_item(): with the sites' bodies inlined here, every item paid their six saved registers.
void Builder::item_kind(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    switch (k) {
        case Item::Alu: return alu(f);
        case Item::Mem: return mem(f);
        case Item::If:
            if (nest_ok(f, depth, limit)) return if_block(f, depth, loop_depth, limit);
            return alu(f);
        case Item::Padding: return padding(f, static_cast<uint32_t>(s_.draw(1, std::min<uint32_t>(16, limit - here(f)), Tag::Len)));
        case Item::LdImm: return ld_imm(f);
        case Item::Nop:
            emit(f, s_.chance(1, 4) ? isa::may_goto(0) : isa::ja(0));
            return;
        case Item::Atomic: return atomic(f);
        case Item::CountedLoop:
            if (loop_ok(f, depth, loop_depth, limit)) return loop(f, k, depth, loop_depth, limit);
            return alu(f);
        case Item::CallSub: {
            if (f.role == Role::Callback || loop_depth > 0) return alu(f);
            const uint32_t g = pick_callee(Role::Normal);
            if (g == UINT32_MAX) return alu(f);
            return call_sub(f, g);
        }
        case Item::Helper:
            emit(f, isa::call_helper(BPF_FUNC_ktime_get_ns));
            emit(f, isa::mov64_reg(var(), R0));
            return;
        default: return site_item(f, k, depth, loop_depth, limit);
    }
}

void Builder::site_item(Fn& f, Item k, uint32_t depth, uint32_t loop_depth, uint32_t limit) {
    const bool nest_ok = this->nest_ok(f, depth, limit);
    const bool loop_ok = this->loop_ok(f, depth, loop_depth, limit);
    const bool main = cur_ == 0;
    const bool skb = p_.prog_type == BPF_PROG_TYPE_SOCKET_FILTER || p_.prog_type == BPF_PROG_TYPE_SCHED_CLS;
    switch (k) {
        case Item::MayGotoLoop:
            if (loop_ok) return loop(f, k, depth, loop_depth, limit);
            return alu(f);
        case Item::DivMod: return div_mod(f, false);
        case Item::Lookup: {
            if (o_.exact_lookups) return div_mod(f, false);
            static constexpr uint32_t kTypes[] = {BPF_MAP_TYPE_HASH, BPF_MAP_TYPE_LRU_HASH, BPF_MAP_TYPE_PERCPU_HASH,
                                                  BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_PERCPU_ARRAY,
                                                  BPF_MAP_TYPE_ARRAY_OF_MAPS, BPF_MAP_TYPE_HASH_OF_MAPS};
            const uint32_t t = kTypes[s_.pick(7, Tag::Map)];
            const uint32_t variant = t == BPF_MAP_TYPE_ARRAY ? s_.pick(3, Tag::Map) : 0;
            return lookup(f, t, variant);
        }
        case Item::MapUpdDel: {
            const uint32_t t = s_.flag(Tag::Map) ? BPF_MAP_TYPE_HASH : BPF_MAP_TYPE_ARRAY;
            const uint32_t m = map_of(t, 0);
            const MapDef& md = p_.maps[m];
            use_slot(f, kKeySlot);
            emit(f, isa::st(md.key_size == 8 ? BPF_DW : BPF_W, R10, slot_off(kKeySlot), static_cast<int32_t>(s_.draw(0, 7, Tag::Imm))));
            const bool upd = s_.flag();
            if (upd)
                for (uint32_t s = 0; s < md.value_size / 8; ++s) init_slot(f, s);
            emit_ld64(f, R1, BPF_PSEUDO_MAP_FD, static_cast<int32_t>(m), 0);
            emit(f, isa::mov64_reg(R2, R10));
            emit(f, isa::alu64_imm(BPF_ADD, R2, slot_off(kKeySlot)));
            if (upd) {
                emit(f, isa::mov64_reg(R3, R10));
                emit(f, isa::alu64_imm(BPF_ADD, R3, slot_off(md.value_size / 8 - 1)));
                emit(f, isa::mov64_imm(R4, 0));
            }
            const uint32_t at = emit(f, isa::call_helper(upd ? BPF_FUNC_map_update_elem : BPF_FUNC_map_delete_elem));
            f.aux[at].map_index = static_cast<int32_t>(m);
            emit(f, isa::mov64_reg(var(), R0));
            return;
        }
        case Item::BpfFor:
            if (loop_ok) return bpf_for(f, depth, loop_depth, limit);
            return alu(f);
        case Item::BpfLoop: {
            if (f.role == Role::Callback || loop_depth > 0) return alu(f);
            const uint32_t g = pick_callee(Role::Callback);
            if (g == UINT32_MAX) return alu(f);
            return bpf_loop(f, g);
        }
        case Item::TailCall: {
            if (!main) return alu(f);
            const uint32_t m = map_of(BPF_MAP_TYPE_PROG_ARRAY, s_.chance(1, 4) ? 1 : 0);
            const int32_t key = static_cast<int32_t>(s_.draw(0, p_.maps[m].max_entries, Tag::Imm));
            emit(f, isa::mov64_reg(R1, kCtxReg));
            emit_ld64(f, R2, BPF_PSEUDO_MAP_FD, static_cast<int32_t>(m), 0);
            emit(f, isa::mov32_imm(R3, key));
            const uint32_t at = emit(f, isa::call_helper(BPF_FUNC_tail_call));
            f.aux[at].map_index = static_cast<int32_t>(m);
            f.aux[at].map_key = static_cast<uint32_t>(key);
            f.aux[at].map_key_known = true;
            f.has_tail_call = true;
            return;
        }
        case Item::CtxLoad: {
            if (!f.has_ctx) return alu(f);
            const bool wide = p_.prog_type == BPF_PROG_TYPE_KPROBE || p_.prog_type == BPF_PROG_TYPE_TRACING ||
                              p_.prog_type == BPF_PROG_TYPE_RAW_TRACEPOINT;
            if (wide) {
                const auto off = static_cast<int16_t>(8 * s_.pick(p_.prog_type == BPF_PROG_TYPE_KPROBE ? 16 : 4, Tag::Off));
                const uint32_t at = emit(f, isa::ldx(BPF_DW, var(), kCtxReg, off));
                f.aux[at].ptr_type = PtrType::Ctx;
                f.aux[at].ctx_field_size = 8;
                return;
            }
            // __sk_buff / xdp_md: a field the ctx_access pass converts, at a width it allows.
            const std::vector<CtxRead>& reads = ctx_scalar_reads(ctx_fields::ctx_kind(p_.prog_type));
            if (reads.empty()) return alu(f);
            const CtxRead& r = reads[s_.pick(static_cast<uint32_t>(reads.size()), Tag::Off)];
            static constexpr uint8_t kSizeCodes[] = {0, BPF_B, BPF_H, 0, BPF_W, 0, 0, 0, BPF_DW};
            const uint32_t at = emit(f, isa::ldx(kSizeCodes[r.size], var(), kCtxReg, r.off));
            f.aux[at].ptr_type = PtrType::Ctx;
            f.aux[at].ctx_field_size = r.ctx_field_size;
            return;
        }
        case Item::LdAbs: {
            if (!main || !skb || fns_.size() > 1) return alu(f);  // LD_ABS cannot mix with bpf-to-bpf calls
            static constexpr uint8_t kSizes[] = {BPF_B, BPF_H, BPF_W};
            const uint8_t sz = kSizes[s_.pick(3)];
            if (s_.flag()) {
                emit(f, isa::make(BPF_LD | BPF_ABS | sz, 0, 0, 0, static_cast<int32_t>(s_.draw(0, 40, Tag::Imm))));
            } else {
                const uint8_t v = var();
                emit(f, isa::alu64_imm(BPF_AND, v, 15));
                emit(f, isa::make(BPF_LD | BPF_IND | sz, 0, v, 0, static_cast<int32_t>(s_.draw(0, 24, Tag::Imm))));
            }
            emit(f, isa::mov64_reg(var(), R0));
            return;
        }
        case Item::HelperInl: return helper_inl(f);
        case Item::KfuncCast: {
            if (!f.has_ctx) return alu(f);
            emit(f, isa::mov64_reg(R1, kCtxReg));
            if (s_.flag()) {
                add_kfunc(kfunc::Kind::CastToKernCtx);
                emit(f, isa::call_kfunc(kfunc::by_kind(kfunc::Kind::CastToKernCtx)->btf_id));
            } else {
                add_kfunc(kfunc::Kind::RdonlyCast);
                emit(f, isa::mov64_imm(R2, static_cast<int32_t>(s_.draw(1, 100, Tag::Imm))));
                emit(f, isa::call_kfunc(kfunc::by_kind(kfunc::Kind::RdonlyCast)->btf_id));
            }
            return;
        }
        case Item::Zext: {
            if (s_.flag()) {  // 32-bit def whose upper half is read later
                const int32_t imm = imm32();  // draws in g++'s order (see cond_jump_emit)
                const uint8_t dst = var();
                const uint8_t op = s_.flag() ? BPF_ADD : BPF_MOV;
                const uint32_t at = emit(f, isa::alu32_imm(op, dst, imm));
                f.aux[at].zext_dst = true;
            } else {  // ALU64 move of a zero-extended value: may be narrowed (row b)
                emit(f, isa::mov32_reg(R2, var()));
                const uint32_t at = emit(f, isa::mov64_reg(var(), R2));
                f.aux[at].needs_zext = true;
            }
            return;
        }
        case Item::Sanitize: {  // ptr = fp; ptr += -off (masked, Spectre v1); load through it
            const uint32_t slot = s_.pick(kScratchSlots, Tag::Off);
            init_slot(f, slot);
            emit(f, isa::mov64_reg(R2, R10));
            emit(f, isa::mov64_imm(R3, slot_off(slot)));
            const uint32_t at = emit(f, isa::alu64_reg(BPF_ADD, R2, R3));
            // BPF_ALU_SANITIZE_SRC (pointer is dst) | BPF_ALU_NEG_VALUE (negative offset)
            f.aux[at].alu_state = 0x1 | 0x4;
            f.aux[at].alu_limit = static_cast<uint32_t>(-slot_off(slot)) + static_cast<uint32_t>(s_.draw(0, 8, Tag::Imm));
            const uint32_t ld = emit(f, isa::ldx(BPF_DW, var(), R2, 0));
            f.aux[ld].ptr_type = PtrType::Stack;
            return;
        }
        case Item::ProbeMem: {
            const uint32_t slot = s_.pick(kScratchSlots, Tag::Off);
            init_slot(f, slot);
            const bool sx = o_.cpu_v4 && s_.flag();
            const uint32_t at = emit(f, isa::make(BPF_LDX | (sx ? BPF_W : BPF_DW) | (sx ? BPF_MEMSX : BPF_MEM), var(), R10,
                                                  slot_off(slot), 0));
            f.aux[at].ptr_type = PtrType::Btf;
            return;
        }
        case Item::Nospec: {
            const uint32_t slot = s_.pick(kScratchSlots, Tag::Off);
            use_slot(f, slot);
            const uint32_t at = emit(f, isa::stx(BPF_DW, R10, var(), slot_off(slot)));
            f.init_mask |= 1u << slot;
            f.aux[at].ptr_type = PtrType::Stack;
            if (s_.flag())
                f.aux[at].nospec = true;
            else
                f.aux[at].nospec_result = true;
            return;
        }
        case Item::PercpuLd: {
            const uint32_t m = map_of(BPF_MAP_TYPE_PERCPU_ARRAY, 0);
            emit_ld64(f, R1, BPF_PSEUDO_MAP_VALUE, static_cast<int32_t>(m), 0);
            return;
        }
        case Item::Gotol: {
            if (!o_.cpu_v4 || !nest_ok) return alu(f);
            uint32_t j = 0;
            cond_jump_emit(f, j);  // skips the gotol: the block after it stays reachable
            const uint32_t g = emit(f, isa::gotol(0));
            set_target(f, j, here(f));
            block(f, depth + 1, loop_depth, limit, static_cast<uint32_t>(s_.draw(0, 3, Tag::Len)));
            set_target(f, g, here(f));
            return;
        }
        case Item::Gotox:
            if (nest_ok) return gotox(f, depth, loop_depth, limit);
            return alu(f);
        case Item::Dead: {  // r0 = 0; if r0 == 0 goto +n; n insns the verifier never saw
            emit(f, isa::mov64_imm(R0, 0));
            const uint32_t j = emit(f, isa::jmp_imm(BPF_JEQ, R0, 0, 0));
            const uint32_t n = static_cast<uint32_t>(s_.draw(1, 6, Tag::Len));
            const bool was_dead = dead_;  // inside a dead function everything stays unseen
            dead_ = true;
            for (uint32_t i = 0; i < n; ++i) alu(f);
            dead_ = was_dead;
            set_target(f, j, here(f));
            return;
        }
        case Item::FarJump:
            if (depth == 0 && loop_depth == 0 && o_.far_jump_prob > 0 && far_jumps_ < o_.max_far_jumps &&
                s_.draw(0, 999, Tag::Jump) < static_cast<uint64_t>(o_.far_jump_prob * 1000)) {
                far_jump(f, limit);
                if (lookups_left_ && cur_ == 0) {  // spread the remaining lookups over what is left
                    lookup_every_ = std::max<uint32_t>(1, (limit - std::min(limit, here(f))) / (lookups_left_ + 1));
                    next_lookup_at_ = here(f) + lookup_every_;
                }
                return;
            }
            return div_mod(f, true);
        default: return;  // plain items: item_kind()
    }
}

void Builder::finish() {
    const auto& layout = layout_;
    const auto& place = place_;
    std::array<uint32_t, kMaxSubprogs + 2> start{};  // where each function starts (by function), then the end
    uint32_t total = 0;
    for (size_t k = 0; k < fns_.size(); ++k) {
        start[layout[k]] = total;
        total += here(fns_[layout[k]]);
    }
    // Every function is copied, main too (the Emitted buffers are no vectors to move): a hundred
    // insns' copy costs less than the growth checks emit() no longer inlines.
    p_.insns.reserve(total);
    p_.aux.reserve(total);
    const bool btf = s_.draw(0, 7, Tag::Misc) != 0;
    const uint64_t lseed = s_.draw(0, UINT32_MAX, Tag::Misc);
    const uint32_t lper = static_cast<uint32_t>(std::clamp(o_.linfo_density, 0.0, 1.0) * 1024);
    // About lper/1024 records per insn and one per function: one allocation for the usual case.
    p_.linfo.reserve(static_cast<size_t>(total) * lper / 1024 + fns_.size() + 8);
    p_.subprogs.reserve(fns_.size() + 1);
    if (btf) p_.finfo.reserve(fns_.size());
    uint32_t line = 1;
    for (size_t k = 0; k < fns_.size(); ++k) {
        const size_t g = layout[k];
        Fn& f = fns_[g];
        const uint32_t base = start[g];
        SubprogInfo si;
        si.start = base;
        si.stack_depth = f.stack;
        si.has_tail_call = f.has_tail_call;
        si.is_cb = f.role == Role::Callback;
        si.linfo_idx = static_cast<uint32_t>(p_.linfo.size());
        p_.subprogs.push_back(si);
        if (btf) p_.finfo.push_back(FuncInfo{.insn_off = base, .type_id = 100 + static_cast<uint32_t>(g)});
        p_.insns.insert(p_.insns.end(), f.code.begin(), f.code.end());
        p_.aux.insert(p_.aux.end(), f.aux.begin(), f.aux.end());
        // bpf_loop calls name their callback by subprog number: its place in the layout.
        for (uint32_t i = 0; i < here(f); ++i) {
            uint32_t& cb = p_.aux[base + i].loop_callback_subprogno;
            if (cb != 0) cb = place[cb];
        }
        for (auto [at, tgt] : f.calls)
            p_.insns[base + at].imm = static_cast<int32_t>(start[tgt]) - static_cast<int32_t>(base + at) - 1;
        const uint32_t flen = here(f);
        // Through a local pointer: p_.insns itself would be reloaded after every record pushed.
        const Insn* const code = p_.insns.data() + base;
        for (uint32_t i = 0; btf && i < flen; ++i) {
            // a record at the function's first insn, and by chance at any other but a second slot
            if (i > 0 && (isa::is_ldimm64(code[i - 1]) || (mix(lseed + base + i) & 1023) >= lper)) continue;
            line += 1 + static_cast<uint32_t>(mix(lseed ^ (base + i)) % 3);
            p_.linfo.push_back(LineInfo{.insn_off = base + i, .file_name_off = 1, .line_off = 10 + line,
                                        .line_col = (line << 10) | line_column(i)});
        }
        for (auto& arr : f.arrays) {
            InsnArray ia;
            ia.map_index = static_cast<int32_t>(arr.map);
            for (uint32_t t : arr.targets) ia.entries.push_back(InsnArrayEntry{.orig_off = base + t, .xlated_off = base + t});
            p_.insn_arrays.push_back(std::move(ia));
        }
    }
    p_.subprogs.push_back(SubprogInfo{.start = total, .linfo_idx = static_cast<uint32_t>(p_.linfo.size())});
    // Every insn's orig_idx is its index in its function until here (emit()), and main comes first.
    InsnAux* const aux = p_.aux.data();
    for (uint32_t i = here(fns_[0]); i < total; ++i) aux[i].orig_idx = i;
}

}  // namespace

std::vector<interp::ExecInput> make_inputs(const Program& prog, ChoiceSource& src, uint32_t count) {
    std::vector<interp::ExecInput> out;
    out.reserve(count);
    const uint64_t seed = src.draw(0, UINT32_MAX, Tag::Misc);
    for (uint32_t n = 0; n < count; ++n) {
        uint64_t h = mix(seed * 131 + n);
        auto next = [&h]() { return h = mix(h); };
        interp::ExecInput& in = out.emplace_back();
        in.ctx.resize(ctx_size_for(prog.prog_type));
        Rng::fill_bytes(in.ctx, next);
        in.packet.resize(64);
        Rng::fill_bytes(in.packet, next);
        for (auto& r : in.regs) r = next();  // garbage, upper halves included
        in.cpu = static_cast<uint32_t>(next() % 4);
        in.prandom_seed = next();
        in.maps.resize(prog.maps.size());
        for (size_t m = 0; m < prog.maps.size(); ++m) {
            const MapDef& md = prog.maps[m];
            const bool hash = md.type == BPF_MAP_TYPE_HASH || md.type == BPF_MAP_TYPE_LRU_HASH ||
                              md.type == BPF_MAP_TYPE_PERCPU_HASH;
            const bool array = md.type == BPF_MAP_TYPE_ARRAY || md.type == BPF_MAP_TYPE_PERCPU_ARRAY;
            if (!hash && !array) continue;
            const uint32_t keys = hash ? 8 : std::min<uint32_t>(md.max_entries, 8);
            std::vector<interp::MapEntry>& entries = in.maps[m];
            entries.reserve(keys);
            for (uint32_t k = 0; k < keys; ++k) {
                if (hash && (next() & 1)) continue;  // half of the small keys present
                interp::MapEntry& e = entries.emplace_back();
                e.key.resize(md.key_size);
                // The key is k, little-endian, in its low 4 bytes (at most): k < 8, so all but its
                // first byte are the zeros resize() wrote.
                if (md.key_size > 0) e.key[0] = static_cast<uint8_t>(k);
                e.value.resize(md.value_size);
                Rng::fill_bytes(e.value, next);
            }
        }
    }
    return out;
}

GeneratedCase generate(ChoiceSource& src, const GenOptions& opts) {
    Builder b(src, opts);
    return b.run();
}

}  // namespace patchfuzz::gen
