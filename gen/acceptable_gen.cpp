#include "gen/acceptable_gen.hpp"

#include <linux/bpf.h>

#include <array>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "bpf/passes/ptr_arith_mask.hpp"
#include "gen/ctx_reads.hpp"
#include "gen/test_run_ctx.hpp"

namespace patchfuzz::gen {
namespace {

using namespace patchfuzz::isa;

// Stack layout of main (all initialised in the prologue, so stack_depth is exactly 64):
//   fp-8  map key          fp-16 bpf_loop ctx (u64)      fp-64..fp-33 value buffer (updates)
constexpr int16_t kKeySlot = -8;
constexpr int16_t kLoopCtxSlot = -16;
constexpr int16_t kValueBuf = -64;
constexpr uint32_t kMainStackDepth = 64;
constexpr uint8_t kCallees[] = {6, 7, 8, 9};  // callee-saved: the only long-lived registers

enum SubId : uint8_t { kLoopCallback = 1, kHelperSub = 2 };

struct Fixup {
    size_t pos;  // insn in main
    SubId target;
};

// A gotox's jump table: its map (an index into the final Program::maps) and its entries' insns.
struct JumpTable {
    uint32_t map;
    std::vector<size_t> targets;  // positions in the emitter that holds them
};

struct Emitter {
    std::vector<Insn> code;
    std::vector<InsnAux> aux;
    std::vector<Fixup> fixups;
    std::vector<JumpTable> tables;
    bool uses_callback = false, uses_subprog = false;
    size_t emit(Insn i) {
        code.push_back(i);
        InsnAux a;
        a.seen = true;
        aux.push_back(a);
        return code.size() - 1;
    }
    void append(const Emitter& o, bool seen) {
        for (size_t k = 0; k < o.code.size(); k++) {
            code.push_back(o.code[k]);
            InsnAux a = o.aux[k];
            a.seen = a.seen && seen;
            aux.push_back(a);
        }
        size_t base = code.size() - o.code.size();
        for (auto f : o.fixups) fixups.push_back({f.pos + base, f.target});
        for (JumpTable t : o.tables) {
            for (size_t& at : t.targets) at += base;
            tables.push_back(std::move(t));
        }
        uses_callback |= o.uses_callback;
        uses_subprog |= o.uses_subprog;
    }
};

struct Gen {
    Rng& rng;
    const AcceptableOptions& opts;
    Program prog;  // maps and prog_type filled first
    // Some bpf_loop call has nr_loops > 0. Since 6.7 the verifier pushes the callback only while
    // callback_depth < umax(R1) (check_helper_call, BPF_FUNC_loop), so with every nr_loops == 0
    // the callback is never visited, hence unseen, and dead-code removal deletes it.
    bool any_loop_runs = false;
    // The gotox tables' maps, appended to prog.maps at the end (so that lookups and updates, which
    // draw from prog.maps, never pick one).
    std::vector<MapDef> jump_tables;

    uint8_t callee() { return kCallees[rng.range(0, 3)]; }
    int32_t small_imm() {
        static constexpr int32_t vals[] = {0, 1, 2, 3, 7, 8, 15, 16, 31, 63, 64, 255, 0x7fff, -1, -2, -8, 0x7fffffff,
                                           static_cast<int32_t>(0x80000000u), 12345, -54321};
        return rng.chance(1, 2) ? vals[rng.range(0, std::size(vals) - 1)] : static_cast<int32_t>(rng.next());
    }

    // `scratch`: may use r0 (shift amounts); false inside a map-value body where r0 is the pointer.
    // A branch immediate that keeps every comparison of an unknown value undecided in both widths
    // (0, -1, INT_MAX, INT_MIN would make e.g. `w s<= 0x7fffffff` or `w >= 0` always true, and
    // the verifier would then prune a side our `seen` facts count as live).
    int32_t branch_imm() {
        return rng.chance(1, 4) ? -static_cast<int32_t>(rng.range(2, 1000)) : static_cast<int32_t>(rng.range(1, 0x7ffffffe));
    }

    void alu(Emitter& e, bool scratch = true) {
        static constexpr uint8_t ops[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_OR, BPF_AND, BPF_XOR, BPF_LSH, BPF_RSH, BPF_ARSH, BPF_NEG, BPF_MOV};
        uint8_t op = ops[rng.range(0, std::size(ops) - 1)];
        bool is64 = rng.chance(2, 3);
        uint8_t cls = is64 ? BPF_ALU64 : BPF_ALU;
        uint8_t dst = callee();
        int32_t bits = is64 ? 64 : 32;
        if (op == BPF_NEG) {
            e.emit(make(cls | BPF_NEG | BPF_K, dst, 0, 0, 0));
        } else if (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) {
            if (!scratch || rng.chance(1, 2)) {
                e.emit(make(cls | op | BPF_K, dst, 0, 0, static_cast<int32_t>(rng.range(0, bits - 1))));
            } else {  // shift by a register, masked to the width (defined behaviour everywhere)
                e.emit(mov64_reg(BPF_REG_0, callee()));
                e.emit(alu64_imm(BPF_AND, BPF_REG_0, bits - 1));
                e.emit(make(cls | op | BPF_X, dst, BPF_REG_0, 0, 0));
            }
        } else if (rng.chance(1, 2)) {
            e.emit(make(cls | op | BPF_K, dst, 0, 0, small_imm()));
        } else {
            e.emit(make(cls | op | BPF_X, dst, callee(), 0, 0));
        }
    }

    // do_misc_fixups div/mod rows: by a register that is sometimes 0 or -1 at run time.
    void divmod(Emitter& e) {
        bool is64 = rng.chance(1, 2);
        uint8_t cls = is64 ? BPF_ALU64 : BPF_ALU;
        uint8_t op = rng.chance(1, 2) ? BPF_DIV : BPF_MOD;
        int16_t sign = opts.v612 && rng.chance(1, 3) ? 1 : 0;  // cpu v4 sdiv/smod
        uint8_t dst = callee();
        if (rng.chance(1, 4)) {  // by a nonzero constant (no guard; checks the model leaves it)
            int32_t imm = small_imm();
            if (imm == 0 || imm == -1) imm = 7;
            e.emit(make(cls | op | BPF_K, dst, 0, sign, imm));
            return;
        }
        switch (rng.range(0, 3)) {
            case 0: e.emit(mov64_imm(BPF_REG_0, 0)); break;
            case 1: e.emit(mov64_imm(BPF_REG_0, -1)); break;
            default: e.emit(mov64_reg(BPF_REG_0, callee())); break;
        }
        e.emit(make(cls | op | BPF_X, dst, BPF_REG_0, sign, 0));
    }

    // r1 = map, r2 = fp-8 after storing the key.
    void map_args(Emitter& e, uint32_t m) {
        const auto& md = prog.maps[m];
        int32_t key = static_cast<int32_t>(md.type == BPF_MAP_TYPE_ARRAY ? rng.range(0, md.max_entries + 1) : rng.range(0, 9));
        const int16_t slot = key_slot();
        const size_t store = e.emit(st(md.key_size == 8 ? BPF_DW : BPF_W, BPF_REG_10, slot, key));
        // A store into a slot never written before (STACK_INVALID) may be bypassed speculatively
        // and leave the stale value: below bypass_spec_v4 the verifier asks for a barrier after it.
        e.aux[store].nospec_result = speculative();
        e.emit(ldimm64_lo(BPF_REG_1, BPF_PSEUDO_MAP_FD, static_cast<int32_t>(m)));
        e.emit(ldimm64_hi(0));
        e.emit(mov64_reg(BPF_REG_2, BPF_REG_10));
        e.emit(alu64_imm(BPF_ADD, BPF_REG_2, slot));
    }

    // Below root every key goes to a fresh slot under the prologue's (so each key store meets
    // STACK_INVALID and its barrier is certain; a reused slot's state after the verifier's liveness
    // cleaning is not something the generator should have to predict). Root keeps fp-8.
    bool speculative() const { return !passes::bypass_spec_v1(opts.privilege); }
    int16_t key_slot() {
        if (!speculative()) return kKeySlot;
        ++fresh_key_slots;
        return static_cast<int16_t>(-static_cast<int32_t>(kMainStackDepth + 8 * fresh_key_slots));
    }
    uint32_t fresh_key_slots = 0;

    // hash / LRU / array lookup inline, NULL check, then value accesses (and branches on them).
    void lookup(Emitter& e) {
        uint32_t m = static_cast<uint32_t>(rng.range(0, prog.maps.size() - 1));
        const auto& md = prog.maps[m];
        map_args(e, m);
        size_t call = e.emit(call_helper(BPF_FUNC_map_lookup_elem));
        e.aux[call].map_index = static_cast<int32_t>(m);
        Emitter body;
        uint32_t n = static_cast<uint32_t>(rng.range(1, 4));
        for (uint32_t k = 0; k < n; k++) {
            int16_t off = static_cast<int16_t>(8 * rng.range(0, md.value_size / 8 - 1));
            if (speculative() && rng.chance(1, 3)) {
                speculative_access(body, md, off);
                continue;
            }
            switch (rng.range(0, 4)) {
                case 0:
                case 1: {  // load, then maybe branch on the unknown value
                    uint8_t d = callee();
                    body.emit(ldx(BPF_DW, d, BPF_REG_0, off));
                    if (rng.chance(1, 2)) {
                        Emitter inner;  // r0 holds the value pointer here: ALU on r6-r9 only
                        uint32_t m2 = static_cast<uint32_t>(rng.range(1, 3));
                        for (uint32_t q = 0; q < m2; q++) alu(inner, false);
                        static constexpr uint8_t jops[] = {BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JSGT, BPF_JSLE, BPF_JSET};
                        uint8_t jop = jops[rng.range(0, std::size(jops) - 1)];
                        int32_t bimm = branch_imm();
                        body.emit(rng.chance(1, 2) ? jmp_imm(jop, d, bimm, static_cast<int16_t>(inner.code.size()))
                                                   : jmp32_imm(jop, d, bimm, static_cast<int16_t>(inner.code.size())));
                        body.append(inner, true);
                    }
                    break;
                }
                case 2: body.emit(stx(BPF_DW, BPF_REG_0, callee(), off)); break;
                case 3: body.emit(make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_0, callee(), off, BPF_ADD)); break;
                default: body.emit(st(BPF_W, BPF_REG_0, off, small_imm())); break;
            }
        }
        e.emit(jmp_imm(BPF_JEQ, BPF_REG_0, 0, static_cast<int16_t>(body.code.size())));
        e.append(body, true);
    }

    // The speculative side of the verifier (below bypass_spec_v1), inside a lookup's non-NULL
    // body (r0 = the value): an unknown value from the map, bounded by a mask, then
    //  * pointer arithmetic with it as a variable offset, the pointer as dst (alu_state SRC) or
    //    as src (alu_state DST, the result in the scalar's register): sanitize_ptr_alu() records
    //    alu_limit = the offset's umax (the pointer moves from value+0 to at most value+mask), and
    //    do_misc_fixups (row g) masks the offset through AX; then a byte load through it;
    //  * or a branch decided by its range alone (`if rD <= mask goto`), whose other side only a
    //    speculative path walks (never `seen`): removed and hard-wired with bpf_capable(),
    //    sanitized into `goto -1` without it.
    void speculative_access(Emitter& body, const MapDef& md, int16_t off) {
        static constexpr int32_t masks[] = {1, 3, 7};
        const int32_t mask = masks[rng.range(0, 2)];
        const uint8_t d = callee();
        body.emit(ldx(BPF_DW, d, BPF_REG_0, off));
        body.emit(alu64_imm(BPF_AND, d, mask));
        (void)md;  // every value is at least 8 bytes: value + mask + 1 stays inside
        switch (rng.range(0, 2)) {
            case 0: {  // ptr += off: the offset is the src operand
                body.emit(mov64_reg(BPF_REG_1, BPF_REG_0));
                const size_t add = body.emit(alu64_reg(BPF_ADD, BPF_REG_1, d));
                body.aux[add].alu_state = passes::kAluSanitizeSrc;
                body.aux[add].alu_limit = static_cast<uint32_t>(mask);
                body.emit(ldx(BPF_B, callee(), BPF_REG_1, 0));
                break;
            }
            case 1: {  // off += ptr: the offset is dst, which becomes the pointer
                const size_t add = body.emit(alu64_reg(BPF_ADD, d, BPF_REG_0));
                body.aux[add].alu_state = passes::kAluSanitizeDst;
                body.aux[add].alu_limit = static_cast<uint32_t>(mask);
                body.emit(ldx(BPF_B, d, d, 0));  // a scalar again: r6-r9 never hold a pointer at exit
                break;
            }
            default: {  // decided by the range: the fall-through never runs
                Emitter never;
                const uint32_t n = static_cast<uint32_t>(rng.range(1, 3));
                for (uint32_t k = 0; k < n; k++) never.emit(mov64_imm(callee(), small_imm()));
                body.emit(jmp_imm(BPF_JLE, d, mask, static_cast<int16_t>(n)));
                body.append(never, false);
                break;
            }
        }
    }

    void update(Emitter& e) {
        uint32_t m = static_cast<uint32_t>(rng.range(0, prog.maps.size() - 1));
        map_args(e, m);
        e.emit(mov64_reg(BPF_REG_3, BPF_REG_10));
        e.emit(alu64_imm(BPF_ADD, BPF_REG_3, kValueBuf));
        e.emit(mov64_imm(BPF_REG_4, 0));
        size_t call = e.emit(call_helper(BPF_FUNC_map_update_elem));
        e.aux[call].map_index = static_cast<int32_t>(m);
    }

    // Dead code the verifier proves dead (both kernels hard-wire the branch and remove the block),
    // or a nop `ja +0` (removed), or a branch whose target is also the fallthrough (kept).
    void dead(Emitter& e) {
        Emitter blockd;
        uint32_t n = static_cast<uint32_t>(rng.range(1, 4));
        for (uint32_t k = 0; k < n; k++) blockd.emit(mov64_imm(callee(), small_imm()));
        switch (rng.range(0, 2)) {
            case 0:
                e.emit(mov64_imm(BPF_REG_0, 0));
                e.emit(jmp_imm(BPF_JEQ, BPF_REG_0, 0, static_cast<int16_t>(n)));
                e.append(blockd, false);
                break;
            case 1: e.emit(ja(0)); break;
            default:
                e.emit(mov64_imm(BPF_REG_0, 0));
                e.emit(jmp_imm(BPF_JNE, BPF_REG_0, 0, static_cast<int16_t>(n)));
                e.append(blockd, true);
                break;
        }
    }

    void bpf_loop(Emitter& e) {
        int32_t nr = static_cast<int32_t>(rng.range(0, 6));
        if (nr > 0) any_loop_runs = true;
        e.emit(mov64_imm(BPF_REG_1, nr));
        size_t f = e.emit(ldimm64_lo(BPF_REG_2, BPF_PSEUDO_FUNC, 0));
        e.emit(ldimm64_hi(0));
        e.fixups.push_back({f, kLoopCallback});
        e.emit(mov64_reg(BPF_REG_3, BPF_REG_10));
        e.emit(alu64_imm(BPF_ADD, BPF_REG_3, kLoopCtxSlot));
        e.emit(mov64_imm(BPF_REG_4, 0));
        size_t call = e.emit(call_helper(BPF_FUNC_loop));
        e.aux[call].loop_fit_for_inline = true;
        e.uses_callback = true;
        uint8_t d = callee();
        e.emit(alu64_reg(BPF_ADD, d, BPF_REG_0));
        if (rng.chance(1, 2)) e.emit(ldx(BPF_DW, callee(), BPF_REG_10, kLoopCtxSlot));
    }

    void subcall(Emitter& e) {
        e.emit(mov64_reg(BPF_REG_1, callee()));
        size_t c = e.emit(call_pseudo(0));
        e.fixups.push_back({c, kHelperSub});
        e.uses_subprog = true;
        e.emit(mov64_reg(callee(), BPF_REG_0));
    }

    void counted_loop(Emitter& e) {
        int32_t n = static_cast<int32_t>(rng.range(1, 6));
        uint8_t d = callee();
        e.emit(mov64_imm(BPF_REG_0, 0));
        // Below bypass_spec_v1 the verifier also walks each decided exit test's other side
        // speculatively, back into the loop, where nothing bounds the counter: only may_goto ends
        // those walks (a plain counted loop runs into the 1M-insn limit).
        if (opts.v612 && (rng.chance(1, 2) || speculative())) {  // may_goto guarded loop
            e.emit(may_goto(3));
            e.emit(alu64_imm(BPF_ADD, BPF_REG_0, 1));
            e.emit(alu64_imm(BPF_ADD, d, small_imm()));
            e.emit(jmp_imm(BPF_JLT, BPF_REG_0, n, -4));
        } else {
            e.emit(alu64_imm(BPF_ADD, BPF_REG_0, 1));
            e.emit(alu64_imm(BPF_XOR, d, small_imm()));
            e.emit(jmp_imm(BPF_JLT, BPF_REG_0, n, -3));
        }
    }

    // x86-64 helper inlines on 6.12; results are discarded (nondeterministic).
    void helper_inline(Emitter& e) {
        const bool jiffies = passes::bpf_capable(opts.privilege) && rng.chance(1, 2);  // bpf_jiffies64 needs bpf_capable()
        e.emit(call_helper(jiffies ? BPF_FUNC_jiffies64 : BPF_FUNC_get_smp_processor_id));
    }

    bool unpriv() const { return opts.privilege == passes::Privilege::Unpriv; }

    // ---- the context (convert_ctx_accesses), read and written at the start of main, where r1 is
    // still the ctx pointer: its values then flow into everything after.
    ctx_fields::CtxKind ctx_kind() const { return ctx_fields::ctx_kind(prog.prog_type); }
    size_t ctx_access(Emitter& e, Insn in, uint8_t ctx_field_size) {
        const size_t at = e.emit(in);
        e.aux[at].ptr_type = PtrType::Ctx;
        e.aux[at].ctx_field_size = ctx_field_size;
        return at;
    }
    static uint8_t size_code(uint32_t bytes) { return bytes == 1 ? BPF_B : bytes == 2 ? BPF_H : bytes == 4 ? BPF_W : BPF_DW; }

    // A field read into `dst`, at any width and offset the verifier allows (gen/ctx_reads.hpp);
    // sometimes sign-extending (cpu v4: 6.12 and later).
    void ctx_read(Emitter& e, uint8_t dst) {
        const std::vector<CtxRead>& reads = ctx_scalar_reads(ctx_kind());
        const CtxRead& r = reads[rng.range(0, reads.size() - 1)];
        const bool sx = opts.v612 && r.size < 8 && rng.chance(1, 8);
        const uint8_t mode = sx ? BPF_MEMSX : BPF_MEM;
        ctx_access(e, make(BPF_LDX | size_code(r.size) | mode, dst, BPF_REG_1, r.off, 0), r.ctx_field_size);
    }

    // tc and XDP (root only): data and data_end, a bounds-checked load of packet bytes into a
    // callee-saved register (which keeps its value when the packet is too short), and sometimes
    // the packet's length (data_end - data, a scalar) added to one.
    void packet_read(Emitter& e) {
        using ctx_fields::Field;
        const bool xdp = ctx_kind() == ctx_fields::CtxKind::Xdp;
        ctx_access(e, ldx(BPF_W, BPF_REG_2, BPF_REG_1, ctx_fields::uapi_field(xdp ? Field::XdpData : Field::Data).off), 0);
        ctx_access(e, ldx(BPF_W, BPF_REG_3, BPF_REG_1, ctx_fields::uapi_field(xdp ? Field::XdpDataEnd : Field::DataEnd).off), 0);
        static constexpr uint8_t sizes[] = {1, 2, 4, 8};
        const uint8_t size = sizes[rng.range(0, 3)];
        const auto end = static_cast<int32_t>(rng.range(size, rng.chance(1, 8) ? 80 : 64));  // our packets have 64 bytes
        e.emit(mov64_reg(BPF_REG_4, BPF_REG_2));
        e.emit(alu64_imm(BPF_ADD, BPF_REG_4, end));
        e.emit(jmp_reg(BPF_JGT, BPF_REG_4, BPF_REG_3, 1));
        const size_t load = e.emit(ldx(size_code(size), callee(), BPF_REG_2, static_cast<int16_t>(end - size)));
        e.aux[load].ptr_type = PtrType::Packet;
        if (rng.chance(1, 2)) {
            e.emit(alu64_reg(BPF_SUB, BPF_REG_3, BPF_REG_2));  // data_end - data: a scalar
            e.emit(alu64_reg(BPF_ADD, callee(), BPF_REG_3));
        }
    }

    // A store of a callee-saved register to a field the program may write (cb[]; tc also mark,
    // priority, tc_index), then perhaps a read of that cb[] slot into another.
    void ctx_store(Emitter& e) {
        const std::vector<CtxRead>& stores = ctx_u32_stores(ctx_kind());
        if (stores.empty()) return;
        const CtxRead& s = stores[rng.range(0, stores.size() - 1)];
        ctx_access(e, stx(BPF_W, BPF_REG_1, callee(), s.off), 0);
        if (s.field == ctx_fields::Field::Cb && rng.chance(1, 2)) ctx_access(e, ldx(BPF_W, callee(), BPF_REG_1, s.off), 0);
    }

    // main's first insns: r6-r9 set from constants or ctx fields, then the packet and stores.
    void prologue(Emitter& e) {
        const ctx_fields::CtxKind kind = ctx_kind();
        const bool ctx = opts.ctx && kind != ctx_fields::CtxKind::None && rng.chance(3, 4);
        for (uint8_t r : kCallees) {
            if (ctx && rng.chance(1, 2)) ctx_read(e, r);
            else e.emit(mov64_imm(r, small_imm()));
        }
        if (!ctx) return;
        if (kind != ctx_fields::CtxKind::SkbFilter && rng.chance(1, 2)) packet_read(e);
        if (rng.chance(1, 2)) ctx_store(e);
    }

    // gotox through a jump table (a BPF_MAP_TYPE_INSN_ARRAY map of k entries), indexed by a value
    // loaded from a map (unknown to the verifier, so it explores every entry and every case is
    // seen; an index it knows would leave the other cases unvisited, and removed):
    //   r0 = lookup(...); if r0 == 0 goto end; r2 = *(u64 *)(r0 + off); r2 &= k - 1; r2 <<= 3;
    //   r1 = &table; r1 += r2; r1 = *(u64 *)(r1 + 0); gotox r1
    // then k cases, each its own ALU, div/mod or lookup (whose rewrites move the later entries),
    // `rY += c + 1`, and a jump past the last case. No case starts with a `goto +0`:
    // bpf_opt_remove_nops would delete the entry's insn and the program would jump to address 0
    // (finding 0003, which oopses 7.2 and 7.3). Root only: below it check_map_access bounds the
    // table's variable offset by the map's value_size, two entries.
    void gotox(Emitter& e) {
        const uint32_t k = 2u << rng.range(0, 2);
        const uint32_t table_map = static_cast<uint32_t>(prog.maps.size() + jump_tables.size());
        jump_tables.push_back(MapDef{.name = "jt" + std::to_string(jump_tables.size()), .type = kMapTypeInsnArray, .key_size = 4,
                                     .value_size = 8, .max_entries = k});
        const uint32_t m = static_cast<uint32_t>(rng.range(0, prog.maps.size() - 1));
        map_args(e, m);
        const size_t call = e.emit(call_helper(BPF_FUNC_map_lookup_elem));
        e.aux[call].map_index = static_cast<int32_t>(m);
        Emitter body;
        body.emit(ldx(BPF_DW, BPF_REG_2, BPF_REG_0, static_cast<int16_t>(8 * rng.range(0, prog.maps[m].value_size / 8 - 1))));
        body.emit(alu64_imm(BPF_AND, BPF_REG_2, static_cast<int32_t>(k - 1)));
        body.emit(alu64_imm(BPF_LSH, BPF_REG_2, 3));
        body.emit(ldimm64_lo(BPF_REG_1, BPF_PSEUDO_MAP_VALUE, static_cast<int32_t>(table_map)));
        body.emit(ldimm64_hi(0));
        body.emit(alu64_reg(BPF_ADD, BPF_REG_1, BPF_REG_2));
        const size_t load = body.emit(ldx(BPF_DW, BPF_REG_1, BPF_REG_1, 0));
        body.aux[load].ptr_type = PtrType::MapValue;
        body.emit(make(BPF_JMP | BPF_JA | BPF_X, BPF_REG_1, 0, 0, 0));
        JumpTable table{table_map, {}};
        std::vector<size_t> exits;
        for (uint32_t c = 0; c < k; c++) {
            table.targets.push_back(body.code.size());
            switch (rng.range(0, 3)) {
                case 0:
                case 1: alu(body); break;
                case 2: divmod(body); break;
                default: lookup(body); break;
            }
            body.emit(alu64_imm(BPF_ADD, callee(), static_cast<int32_t>(c + 1)));
            if (c + 1 < k) exits.push_back(body.emit(ja(0)));
        }
        for (size_t x : exits) body.code[x].off = static_cast<int16_t>(body.code.size() - x - 1);
        for (size_t t : table.targets) body.aux[t].indirect_target = true;
        body.tables.push_back(std::move(table));
        e.emit(jmp_imm(BPF_JEQ, BPF_REG_0, 0, static_cast<int16_t>(body.code.size())));
        e.append(body, true);
    }

    void block(Emitter& e) {
        if (opts.gotox && opts.privilege == passes::Privilege::Root && rng.chance(1, 8)) return gotox(e);
        uint64_t kinds = opts.v612 ? 10 : 9;
        uint64_t kind = rng.range(0, kinds - 1);
        if (unpriv() && (kind == 7 || kind == 8)) kind = rng.range(3, 4);  // no callbacks, calls or loops: a lookup instead
        switch (kind) {
            case 0:
            case 1: alu(e); break;
            case 2: divmod(e); break;
            case 3:
            case 4: lookup(e); break;
            case 5: update(e); break;
            case 6: dead(e); break;
            case 7:
                if (opts.calls) bpf_loop(e);
                else counted_loop(e);
                break;
            case 8: if (rng.chance(1, 2) && opts.calls) subcall(e); else counted_loop(e); break;
            default: helper_inline(e); break;
        }
    }
};

MapDef make_map(Rng& rng, uint32_t type, passes::Privilege level) {
    MapDef m;
    m.type = type;
    m.key_size = type == BPF_MAP_TYPE_ARRAY ? 4 : (rng.chance(1, 2) ? 4 : 8);
    static constexpr uint32_t vs[] = {8, 16, 24, 32};
    m.value_size = vs[rng.range(0, 3)];
    // LRU maps evict eagerly while fewer than LOCAL_FREE_TARGET (128) free nodes remain
    // (bpf_lru_list_pop_free_to_local shrinks the inactive list), which the interpreter does not
    // model; with >= 256 entries and < 16 keys in use nothing is ever evicted.
    m.max_entries = type == BPF_MAP_TYPE_LRU_HASH ? static_cast<uint32_t>(rng.range(256, 512))
                                                  : static_cast<uint32_t>(rng.range(1, 16));
    // array_map_alloc(): a creator without bypass_spec_v1 gets an array rounded up to a power of two
    // and lookups masked with max_entries - 1; generate such sizes so the two agree from the start
    m.bypass_spec_v1 = passes::bypass_spec_v1(level);
    if (!m.bypass_spec_v1 && type == BPF_MAP_TYPE_ARRAY) m.max_entries = 1u << rng.range(0, 4);
    m.name = type == BPF_MAP_TYPE_ARRAY ? "array" : type == BPF_MAP_TYPE_HASH ? "hash" : "lru_hash";
    return m;
}

std::vector<uint8_t> rand_bytes(Rng& rng, size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng.next());
    return b;
}

// 64 bytes, with the Ethernet header shaped so that the test run's pkt_type and protocol take
// each of their values (gen/test_run_ctx.hpp): sometimes the loopback's own (all-zero) address,
// common types and 802.3 lengths (with and without the ff ff that makes them raw 802.3).
std::vector<uint8_t> test_packet(Rng& rng) {
    std::vector<uint8_t> p = rand_bytes(rng, 64);
    if (rng.chance(1, 4)) std::fill_n(p.begin(), 6, 0);
    if (rng.chance(1, 2)) {
        static constexpr uint16_t types[] = {0x0800, 0x86dd, 0x0806, 0x8100, 0x88cc, 0x0042, 0x05dc, 0x0600};
        const uint16_t t = types[rng.range(0, std::size(types) - 1)];
        p[12] = static_cast<uint8_t>(t >> 8);
        p[13] = static_cast<uint8_t>(t);
        if (t < 0x600 && rng.chance(1, 2)) p[14] = p[15] = 0xff;
    }
    return p;
}

SkbCtxIn random_ctx_in(Rng& rng) {
    SkbCtxIn in;
    auto value = [&rng]() { return rng.chance(1, 2) ? static_cast<uint32_t>(rng.range(0, 16)) : static_cast<uint32_t>(rng.next()); };
    in.mark = value();
    in.priority = value();
    in.ingress_ifindex = value();
    for (uint32_t& c : in.cb) c = value();
    return in;
}

}  // namespace

AcceptableCase generate_acceptable(Rng& rng, const AcceptableOptions& opts) {
    Gen g{rng, opts, {}};
    const bool root = opts.privilege == passes::Privilege::Root;
    static constexpr uint32_t root_types[] = {BPF_PROG_TYPE_SOCKET_FILTER, BPF_PROG_TYPE_XDP, BPF_PROG_TYPE_SCHED_CLS};
    g.prog.prog_type = root ? root_types[rng.range(0, opts.ctx ? 2 : 1)] : uint32_t{BPF_PROG_TYPE_SOCKET_FILTER};
    static constexpr uint32_t types[] = {BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_HASH, BPF_MAP_TYPE_LRU_HASH};
    uint32_t nmaps = static_cast<uint32_t>(rng.range(1, 3));
    for (uint32_t i = 0; i < nmaps; i++) g.prog.maps.push_back(make_map(rng, types[rng.range(0, g.unpriv() ? 1 : 2)], opts.privilege));

    Emitter main;
    g.prologue(main);
    for (int16_t off = kValueBuf; off < 0; off += 8) {
        const size_t store = main.emit(st(BPF_DW, BPF_REG_10, off, g.small_imm()));
        main.aux[store].nospec_result = g.speculative();  // the first store into each slot (STACK_INVALID)
    }
    uint32_t blocks = static_cast<uint32_t>(rng.range(opts.blocks_min, opts.blocks_max));
    for (uint32_t b = 0; b < blocks; b++) g.block(main);
    main.emit(mov64_reg(BPF_REG_0, BPF_REG_6));
    main.emit(alu64_reg(BPF_XOR, BPF_REG_0, BPF_REG_7));
    main.emit(alu64_reg(BPF_ADD, BPF_REG_0, BPF_REG_8));
    main.emit(alu64_reg(BPF_XOR, BPF_REG_0, BPF_REG_9));
    if (g.prog.prog_type == BPF_PROG_TYPE_XDP) main.emit(alu64_imm(BPF_AND, BPF_REG_0, 1));  // XDP_ABORTED/DROP
    main.emit(exit_insn());

    std::vector<Insn> all = main.code;
    std::vector<InsnAux> aux = main.aux;
    size_t cb_start = 0, sub_start = 0;
    if (main.uses_callback) {  // long cb(u32 index, u64 *ctx): *ctx += index; return 0
        cb_start = all.size();
        bool cb_seen = g.any_loop_runs || !opts.v612;  // 6.1 verifies the callback once regardless
        for (Insn i : {ldx(BPF_DW, BPF_REG_0, BPF_REG_2, 0), alu64_reg(BPF_ADD, BPF_REG_0, BPF_REG_1),
                       stx(BPF_DW, BPF_REG_2, BPF_REG_0, 0), mov64_imm(BPF_REG_0, 0), exit_insn()}) {
            all.push_back(i);
            aux.push_back(InsnAux{.seen = cb_seen});
        }
        // the callback's store into the caller's fp-16, a slot holding a spilled scalar (the
        // prologue's constant, then the callback's own sum): a barrier after it below bypass_spec_v4
        aux[cb_start + 2].nospec_result = g.speculative();
    }
    if (main.uses_subprog) {  // static long f(long x) { return x * 3 + 1; }
        sub_start = all.size();
        for (Insn i : {mov64_reg(BPF_REG_0, BPF_REG_1), alu64_imm(BPF_MUL, BPF_REG_0, 3), alu64_imm(BPF_ADD, BPF_REG_0, 1),
                       exit_insn()}) {
            all.push_back(i);
            aux.push_back(InsnAux{.seen = true});
        }
    }
    for (const auto& f : main.fixups) {
        size_t target = f.target == kLoopCallback ? cb_start : sub_start;
        all[f.pos].imm = static_cast<int32_t>(static_cast<int64_t>(target) - static_cast<int64_t>(f.pos) - 1);
    }
    Program p = make_program(all);
    p.prog_type = g.prog.prog_type;
    p.maps = g.prog.maps;
    p.maps.insert(p.maps.end(), g.jump_tables.begin(), g.jump_tables.end());
    for (const JumpTable& t : main.tables) {  // main starts the program: its positions are final
        InsnArray ia{.map_index = static_cast<int32_t>(t.map), .entries = {}};
        for (size_t at : t.targets)
            ia.entries.push_back(InsnArrayEntry{.orig_off = static_cast<uint32_t>(at), .xlated_off = static_cast<uint32_t>(at)});
        p.insn_arrays.push_back(std::move(ia));
    }
    p.name = "acceptable";
    for (size_t i = 0; i < p.aux.size(); i++) {
        uint32_t orig = p.aux[i].orig_idx;
        p.aux[i] = aux[i];
        p.aux[i].orig_idx = orig;
    }
    p.subprogs[0].stack_depth = kMainStackDepth + 8 * g.fresh_key_slots;
    for (uint32_t s = 0; s < p.subprog_cnt(); s++) {
        if (main.uses_callback && p.subprogs[s].start == cb_start) {
            p.subprogs[s].is_cb = true;
            for (size_t i = 0; i < main.code.size(); i++)
                if (p.aux[i].loop_fit_for_inline) p.aux[i].loop_callback_subprogno = s;
        }
    }
    AcceptableCase out{std::move(p), {}};
    for (uint32_t k = 0; k < opts.inputs; k++) {
        interp::ExecInput in;
        in.packet = test_packet(rng);
        in.ctx = test_run_ctx_view(out.program.prog_type, in.packet, random_ctx_in(rng));
        in.maps.resize(out.program.maps.size());
        for (size_t m = 0; m < out.program.maps.size(); m++) {
            const auto& md = out.program.maps[m];
            if (md.type == kMapTypeInsnArray) continue;  // a jump table: the guest writes it before the load, never a run
            uint32_t keys = md.type == BPF_MAP_TYPE_ARRAY ? md.max_entries : std::min<uint32_t>(md.max_entries, 8);
            for (uint32_t key = 0; key < keys; key++) {
                if (md.type != BPF_MAP_TYPE_ARRAY && rng.chance(1, 3)) continue;
                std::vector<uint8_t> kb(md.key_size, 0);
                for (size_t b = 0; b < 4; b++) kb[b] = static_cast<uint8_t>(key >> (8 * b));
                out.program.maps[m].name = md.name;
                in.maps[m].push_back({kb, rand_bytes(rng, md.value_size)});
            }
        }
        out.inputs.push_back(std::move(in));
    }
    return out;
}

}  // namespace patchfuzz::gen
