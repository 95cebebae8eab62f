// Instruction semantics follow docs/iterator-isa-arch.md §3 (RFC 9669 plus the kernel's internal
// encodings); per-JIT deviations follow §4 (x86-32 do_jit: off-blind MOV, verifier-driven zext).
#include "oracles/smt/bv_semantics.hpp"

#include <string>
#include <utility>
#include <vector>

#include "bpf/isa/insn_def32.hpp"

namespace patchfuzz::oracles::smt {
namespace {

using isa::Insn;

Error unsupported(size_t pc, const std::string& what) { return make_error("pc " + std::to_string(pc), what); }

Term merge(const std::vector<std::pair<Term, BvState>>& in, BvState& out) {
    out = in.back().second;
    Term guard = in.back().first;
    if (in.size() == 1) return guard;
    // Common prefix of the write logs (shared by pointer), then every path's own writes guarded by
    // its path condition; paths are mutually exclusive, so the order between suffixes is irrelevant.
    size_t common = out.mem.writes.size();
    for (const auto& [g, s] : in) {
        size_t k = 0;
        while (k < common && k < s.mem.writes.size() && s.mem.writes[k] == out.mem.writes[k]) ++k;
        common = k;
    }
    std::vector<std::shared_ptr<const MemWrite>> writes(out.mem.writes.begin(), out.mem.writes.begin() + static_cast<long>(common));
    for (const auto& [g, s] : in)
        for (size_t k = common; k < s.mem.writes.size(); ++k)
            writes.push_back(std::make_shared<const MemWrite>(MemWrite{g && s.mem.writes[k]->cond, s.mem.writes[k]->addr, s.mem.writes[k]->byte}));
    for (size_t i = in.size() - 1; i-- > 0;) {
        const Term& g = in[i].first;
        const BvState& s = in[i].second;
        for (int r = 0; r < kNumRegs; ++r) out.regs[r] = ite(g, s.regs[r], out.regs[r]);
        out.trap = ite(g, s.trap, out.trap);
        guard = g || guard;
    }
    out.mem.writes = std::move(writes);
    return guard;
}

Term bswap(const Term& v, unsigned width) {
    Term out = extract(v, 7, 0);
    for (unsigned b = 1; b < width / 8; ++b) out = concat(out, extract(v, b * 8 + 7, b * 8));
    return out;
}

struct Exec {
    TermContext& ctx;
    const ArchProfile& arch;

    // Writes a 32-bit def: zero-extended on 64-bit JITs, garbage upper half on jit32.
    Term def32(const Term& v32) {
        if (arch.alu32_no_implicit_zext) return concat(ctx.fresh("hi32", 32), v32);
        return zext(v32, 32);
    }

    // machine division (trap on /0 and signed MIN/-1); `w` = 32 or 64
    Term mdiv(BvState& st, const Term& x, const Term& y, bool is_signed, bool is_mod, unsigned w) {
        const Term zero = ctx.bv(0, w), m1 = ctx.bv(~0ULL, w), min = ctx.bv(1ULL << (w - 1), w);
        Term trap = y == zero;
        if (is_signed) trap = trap || (x == min && y == m1);
        st.trap = st.trap || trap;
        const std::string name = std::string(is_signed ? "s" : "u") + (is_mod ? "rem" : "div") + std::to_string(w);
        Term q = ctx.apply(name, {x, y}, w);
        if (is_signed) q = ite(y == m1, is_mod ? zero : -x, q);  // idiv by -1 is defined except for MIN
        return q;
    }
};

}  // namespace

Term isa_div(TermContext& ctx, const Term& x, const Term& y, bool is_signed) {
    const unsigned w = x.width();
    const Term zero = ctx.bv(0, w);
    Term q = ctx.apply(std::string(is_signed ? "s" : "u") + "div" + std::to_string(w), {x, y}, w);
    if (is_signed) q = ite(y == ctx.bv(~0ULL, w), -x, q);
    return ite(y == zero, zero, q);
}

Term isa_mod(TermContext& ctx, const Term& x, const Term& y, bool is_signed) {
    const unsigned w = x.width();
    const Term zero = ctx.bv(0, w);
    Term r = ctx.apply(std::string(is_signed ? "s" : "u") + "rem" + std::to_string(w), {x, y}, w);
    if (is_signed) r = ite(y == ctx.bv(~0ULL, w), zero, r);
    return ite(y == zero, x, r);
}

std::vector<Insn> with_zext_markers(std::span<const Insn> code) {
    const size_t n = code.size();
    std::vector<int64_t> pos(n + 1, 0);
    int64_t extra = 0;
    for (size_t i = 0; i < n; ++i) {
        pos[i] = static_cast<int64_t>(i) + extra;
        if (isa::insn_has_def32(code[i]) && !isa::is_zext_marker(code[i])) ++extra;
    }
    pos[n] = static_cast<int64_t>(n) + extra;
    std::vector<Insn> out;
    for (size_t i = 0; i < n; ++i) {
        Insn in = code[i];
        if (isa::relative_field(in) != isa::RelField::None && !isa::is_pseudo_func(in) && !isa::is_call(in)) {
            const int64_t t = static_cast<int64_t>(i) + 1 + isa::displacement(in);
            if (t >= 0 && t <= static_cast<int64_t>(n)) {
                const int64_t d = pos[static_cast<size_t>(t)] - pos[i] - 1;
                if (isa::relative_field(in) == isa::RelField::Off16) in.off = static_cast<int16_t>(d);
                else in.imm = static_cast<int32_t>(d);
            }
        }
        out.push_back(in);
        if (isa::insn_has_def32(code[i]) && !isa::is_zext_marker(code[i])) out.push_back(isa::zext_marker(code[i].dst_reg));
    }
    return out;
}

BvState initial_state(TermContext& ctx, const std::string& prefix) {
    BvState s;
    for (int r = 0; r < kNumRegs; ++r) s.regs[r] = ctx.var(prefix + (r == isa::kRegAx ? std::string("ax") : "r" + std::to_string(r)), 64);
    s.mem.base = ctx.mem_var(prefix + "mem");
    s.trap = ctx.boolean(false);
    return s;
}

Term mem_read(const Mem& mem, const Term& addr) {
    Term v = select(mem.base, addr);
    for (const auto& w : mem.writes) v = ite(w->cond && w->addr == addr, w->byte, v);
    return v;
}

Term load_le(const Mem& mem, const Term& addr, unsigned width, TermContext& ctx) {
    Term v = mem_read(mem, addr);
    for (unsigned b = 1; b < width / 8; ++b) v = concat(mem_read(mem, addr + ctx.bv(b, 64)), v);
    return v;
}

Mem store_le(const Mem& mem, const Term& addr, const Term& value, TermContext& ctx, const Term* cond) {
    Mem m = mem;
    const Term c = cond ? *cond : ctx.boolean(true);
    for (unsigned b = 0; b < value.width() / 8; ++b)
        m.writes.push_back(std::make_shared<const MemWrite>(MemWrite{c, addr + ctx.bv(b, 64), extract(value, b * 8 + 7, b * 8)}));
    return m;
}

Expected<BvState> run_sequence(TermContext& ctx, std::span<const Insn> code_in, const BvState& in, const ArchProfile& arch) {
    std::vector<Insn> zexted;
    std::span<const Insn> code = code_in;
    if (arch.needs_zext) {
        zexted = with_zext_markers(code_in);
        code = zexted;
    }
    const size_t n = code.size();
    std::vector<std::vector<std::pair<Term, BvState>>> pending(n + 1);
    pending[0].emplace_back(ctx.boolean(true), in);
    Exec x{ctx, arch};
    auto size_bits = [](uint8_t sz) -> unsigned {
        switch (sz) {
            case BPF_B: return 8;
            case BPF_H: return 16;
            case BPF_W: return 32;
            default: return 64;
        }
    };
    for (size_t pc = 0; pc < n; ++pc) {
        if (pending[pc].empty()) continue;
        BvState st;
        const Term guard = merge(pending[pc], st);
        pending[pc].clear();
        const Insn& i = code[pc];
        auto jump_to = [&](int64_t disp) -> Expected<size_t> {
            const int64_t t = static_cast<int64_t>(pc) + 1 + disp;
            if (t <= static_cast<int64_t>(pc)) return unsupported(pc, "backward jump (only forward jumps are modelled)");
            if (t > static_cast<int64_t>(n)) return unsupported(pc, "jump past the end of the sequence (+" + std::to_string(disp) + ")");
            return static_cast<size_t>(t);
        };
        const uint8_t cls = isa::cls(i);
        size_t next = pc + 1;
        switch (cls) {
            case BPF_ALU:
            case BPF_ALU64: {
                const bool is64 = cls == BPF_ALU64;
                const unsigned w = is64 ? 64 : 32;
                const uint8_t op = isa::op(i);
                Term& dreg = st.regs[i.dst_reg];
                if (i.dst_reg >= kNumRegs || i.src_reg >= kNumRegs) return unsupported(pc, "register number out of range");
                const Term d = is64 ? dreg : extract(dreg, 31, 0);
                const Term sreg = st.regs[i.src_reg];
                const bool x_src = isa::src_bit(i) == BPF_X;
                const Term s = x_src ? (is64 ? sreg : extract(sreg, 31, 0))
                                     : (is64 ? ctx.bv(static_cast<uint64_t>(static_cast<int64_t>(i.imm)), 64)
                                             : ctx.bv(static_cast<uint32_t>(i.imm), 32));
                if (op == BPF_END) {
                    const unsigned bw = static_cast<unsigned>(i.imm);
                    if (bw != 16 && bw != 32 && bw != 64) return unsupported(pc, "byte swap width " + std::to_string(i.imm));
                    const Term low = extract(dreg, bw - 1, 0);
                    const bool swap = is64 || isa::src_bit(i) == BPF_X;  // ALU64 END or TO_BE (little-endian host)
                    dreg = zext(swap ? bswap(low, bw) : low, 64 - bw);
                    break;
                }
                if (op == BPF_MOV) {
                    if (x_src && is64 && i.off == -1) {  // BPF_MOV64_PERCPU_REG
                        dreg = ctx.apply("this_cpu_ptr", {sreg}, 64);
                        break;
                    }
                    if (!x_src) {
                        dreg = is64 ? s : x.def32(s);
                        break;
                    }
                    if (!is64 && i.imm == 1 && i.off == 0) {  // zext marker: clears the upper half everywhere
                        dreg = zext(extract(sreg, 31, 0), 32);
                        break;
                    }
                    if (i.imm != 0) return unsupported(pc, "MOV X with imm " + std::to_string(i.imm) + " (address-space cast)");
                    if (i.off == 0 || arch.movsx_as_mov) {  // jit32: MOVSX decoded as a plain move
                        if (i.off != 0 && i.off != 8 && i.off != 16 && i.off != 32)
                            return unsupported(pc, "MOVSX off " + std::to_string(i.off));
                        dreg = is64 ? sreg : x.def32(extract(sreg, 31, 0));
                        break;
                    }
                    if (i.off != 8 && i.off != 16 && !(is64 && i.off == 32)) return unsupported(pc, "MOVSX off " + std::to_string(i.off));
                    const unsigned ow = static_cast<unsigned>(i.off);
                    const Term ext = sext(extract(sreg, ow - 1, 0), w - ow);
                    dreg = is64 ? ext : x.def32(ext);
                    break;
                }
                Term r;
                switch (op) {
                    case BPF_ADD: r = d + s; break;
                    case BPF_SUB: r = d - s; break;
                    case BPF_MUL: r = d * s; break;
                    case BPF_OR: r = d | s; break;
                    case BPF_AND: r = d & s; break;
                    case BPF_XOR: r = d ^ s; break;
                    case BPF_NEG: r = -d; break;
                    case BPF_LSH: r = shl(d, s & ctx.bv(w - 1, w)); break;
                    case BPF_RSH: r = lshr(d, s & ctx.bv(w - 1, w)); break;
                    case BPF_ARSH: r = ashr(d, s & ctx.bv(w - 1, w)); break;
                    case BPF_DIV:
                    case BPF_MOD:
                        if (i.off != 0 && i.off != 1) return unsupported(pc, "division with off " + std::to_string(i.off));
                        r = x.mdiv(st, d, s, i.off == 1, op == BPF_MOD, w);
                        break;
                    default: return unsupported(pc, "ALU op 0x" + std::to_string(op));
                }
                dreg = is64 ? r : x.def32(r);
                break;
            }
            case BPF_LDX: {
                const uint8_t mode = isa::mode(i);
                if (mode != BPF_MEM && mode != BPF_MEMSX) return unsupported(pc, "LDX mode " + std::to_string(mode));
                if (mode == BPF_MEMSX && arch.movsx_as_mov) return unsupported(pc, "LDX MEMSX: this JIT has no sign-extending load");
                const unsigned w = size_bits(isa::size(i));
                const Term addr = st.regs[i.src_reg] + ctx.bv(static_cast<uint64_t>(static_cast<int64_t>(i.off)), 64);
                const Term v = load_le(st.mem, addr, w, ctx);
                if (mode == BPF_MEMSX) st.regs[i.dst_reg] = sext(v, 64 - w);
                else if (w == 64) st.regs[i.dst_reg] = v;
                else st.regs[i.dst_reg] = x.def32(zext(v, 32 - w));
                break;
            }
            case BPF_ST:
            case BPF_STX: {
                if (i.code == (BPF_ST | isa::kModeNospec)) break;  // speculation barrier: no data effect
                if (isa::mode(i) != BPF_MEM) return unsupported(pc, "store mode " + std::to_string(isa::mode(i)));
                const unsigned w = size_bits(isa::size(i));
                const Term addr = st.regs[i.dst_reg] + ctx.bv(static_cast<uint64_t>(static_cast<int64_t>(i.off)), 64);
                const Term v64 = cls == BPF_STX ? st.regs[i.src_reg] : ctx.bv(static_cast<uint64_t>(static_cast<int64_t>(i.imm)), 64);
                st.mem = store_le(st.mem, addr, w == 64 ? v64 : extract(v64, w - 1, 0), ctx);
                break;
            }
            case BPF_LD: {
                if (!isa::is_ldimm64(i)) return unsupported(pc, "legacy LD (ABS/IND) is not modelled");
                if (pc + 1 >= n) return unsupported(pc, "ld_imm64 without its second slot");
                const Insn& hi = code[pc + 1];
                const uint64_t v = static_cast<uint32_t>(i.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(hi.imm)) << 32);
                if (i.src_reg == 0) st.regs[i.dst_reg] = ctx.bv(v, 64);
                else st.regs[i.dst_reg] = ctx.apply("ld_pseudo" + std::to_string(i.src_reg), {ctx.bv(v, 64)}, 64);
                next = pc + 2;
                break;
            }
            case BPF_JMP:
            case BPF_JMP32: {
                const uint8_t op = isa::op(i);
                if (isa::is_exit(i)) return unsupported(pc, "exit inside the sequence");
                if (isa::is_call(i)) {
                    if (i.src_reg == BPF_PSEUDO_CALL) return unsupported(pc, "bpf-to-bpf call");
                    const std::string name = (i.src_reg == BPF_PSEUDO_KFUNC_CALL ? "kfunc_" : "call_") + std::to_string(i.imm);
                    st.regs[0] = ctx.apply(name, {st.regs[1], st.regs[2], st.regs[3], st.regs[4], st.regs[5]}, 64);
                    for (int r = 1; r <= 5; ++r) st.regs[r] = ctx.fresh("clobber_r" + std::to_string(r), 64);
                    break;
                }
                if (op == BPF_JA) {
                    if (isa::src_bit(i) == BPF_X) return unsupported(pc, "gotox");
                    auto t = jump_to(cls == BPF_JMP32 ? i.imm : i.off);
                    if (!t) return t.error();
                    pending[*t].emplace_back(guard, st);
                    next = SIZE_MAX;
                    break;
                }
                if (op == BPF_JCOND || op == isa::kOpTailCall) return unsupported(pc, "may_goto / tail call");
                const bool is64 = cls == BPF_JMP;
                const Term a = is64 ? st.regs[i.dst_reg] : extract(st.regs[i.dst_reg], 31, 0);
                const Term b = isa::src_bit(i) == BPF_X ? (is64 ? st.regs[i.src_reg] : extract(st.regs[i.src_reg], 31, 0))
                                                        : (is64 ? ctx.bv(static_cast<uint64_t>(static_cast<int64_t>(i.imm)), 64)
                                                                : ctx.bv(static_cast<uint32_t>(i.imm), 32));
                Term c;
                switch (op) {
                    case BPF_JEQ: c = a == b; break;
                    case BPF_JNE: c = a != b; break;
                    case BPF_JGT: c = ugt(a, b); break;
                    case BPF_JGE: c = uge(a, b); break;
                    case BPF_JLT: c = ult(a, b); break;
                    case BPF_JLE: c = ule(a, b); break;
                    case BPF_JSGT: c = sgt(a, b); break;
                    case BPF_JSGE: c = sge(a, b); break;
                    case BPF_JSLT: c = slt(a, b); break;
                    case BPF_JSLE: c = sle(a, b); break;
                    case BPF_JSET: c = (a & b) != ctx.bv(0, a.width()); break;
                    default: return unsupported(pc, "jump op " + std::to_string(op));
                }
                auto t = jump_to(i.off);
                if (!t) return t.error();
                pending[*t].emplace_back(guard && c, st);
                pending[pc + 1].emplace_back(guard && !c, st);
                next = SIZE_MAX;
                break;
            }
            default: return unsupported(pc, "instruction class " + std::to_string(cls));
        }
        if (next != SIZE_MAX) {
            if (next > n) return unsupported(pc, "falls past the end");
            pending[next].emplace_back(guard, st);
        }
    }
    if (pending[n].empty()) return make_error("", "no path reaches the end of the sequence");
    BvState out;
    merge(pending[n], out);
    return out;
}

}  // namespace patchfuzz::oracles::smt
