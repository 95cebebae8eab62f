// The program generator's structure: Builder::run() lays out main and its subprogs, function()
// and block() fill them item by item, the plain items (ALU, memory, if blocks, counted loops,
// calls, ...) are here, and finish() joins the functions into one Program with its side tables.
// The rewrite-site items are in site_items.cpp; make_inputs() draws the execution inputs.
#include "gen/program_gen.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/zext_marks.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/rng.hpp"
#include "gen/emitted.hpp"
#include "gen/program_builder.hpp"

namespace patchfuzz::gen {
namespace builder {

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
    counted_loop_body(f, depth, loop_depth, limit - 4, cnt, head);
    if (mg != UINT32_MAX) set_target(f, mg, here(f));
}

void Builder::call_sub(Fn& f, uint32_t g) {
    emit(f, isa::mov64_reg(R1, kCtxReg));
    emit(f, isa::mov64_reg(R2, var()));
    const uint32_t at = emit(f, isa::call_pseudo(0));
    add_call(f, at, g);
    emit(f, isa::mov64_reg(var(), R0));
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
void Builder::counted_loop_body(Fn& f, uint32_t depth, uint32_t loop_depth, uint32_t limit, uint32_t cnt, uint32_t head) {
    block(f, depth + 1, loop_depth + 1, limit, static_cast<uint32_t>(s_.draw(0, 3, Tag::Len)));
    const int32_t n = static_cast<int32_t>(s_.draw(1, std::max<uint32_t>(1, o_.loop_iters_max), Tag::Imm));
    emit(f, isa::ldx(BPF_DW, R0, R10, slot_off(cnt)));
    emit(f, isa::alu64_imm(BPF_ADD, R0, 1));
    emit(f, isa::stx(BPF_DW, R10, R0, slot_off(cnt)));
    const uint32_t back = emit(f, isa::jmp_imm(BPF_JLT, R0, n, 0));
    set_target(f, back, head);
}

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

}  // namespace builder

using builder::mix;

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
    builder::Builder b(src, opts);
    return b.run();
}

}  // namespace patchfuzz::gen
