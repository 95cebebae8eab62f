// The generator's rewrite-site items: site_item() draws one of the sites the passes rewrite
// (division, map lookups and updates, may_goto and bpf_for loops, bpf_loop, tail calls, ctx loads,
// LD_ABS, inlined helpers and kfuncs, zext and sanitation facts, probe and percpu loads, gotol and
// gotox, dead code, far jumps) and the builders it dispatches to.
#include "bpf/passes/ctx_fields.hpp"
#include "gen/ctx_reads.hpp"
#include "gen/program_builder.hpp"

namespace patchfuzz::gen::builder {

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
    counted_loop_body(f, depth, loop_depth, limit - 8, cnt, head);
    set_target(f, out, here(f));
    emit(f, isa::mov64_reg(R1, R10));
    emit(f, isa::alu64_imm(BPF_ADD, R1, slot_off(it)));
    emit(f, isa::call_kfunc(id(kfunc::Kind::IterNumDestroy)));
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

}  // namespace patchfuzz::gen::builder
