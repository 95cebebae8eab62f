// The interpreter's decoder: a program's insns into DInsns (decoded_code.hpp), through a table for
// the opcodes that decode from their code byte alone (FastDecode) and decode_one() for the rest,
// which is also the reference decode_mismatch() checks the table against. Also the Executable,
// which holds a program's decoded code, shared by the Executables that decode alike.
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

#include "bpf/interp/decode_check.hpp"
#include "bpf/interp/decoded_code.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/interp/ctx_image.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::interp {

using namespace detail;

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
            if (o == BPF_MOV && x && w64 && i.off == isa::kAddrPercpuOff) {
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

// The table, from the opcode facts (isa/insn_facts.hpp): the DInsn op each opcode decodes to when
// its code byte decides it, and INVALID (decode_one) for every other.
constexpr std::array<FastDecode, 256> make_fast_decode() {
    std::array<FastDecode, 256> t{};
    for (unsigned c = 0; c < 256; ++c) {
        const isa::InsnFacts& k = isa::kInsnFacts[c];
        // log2 of the access width: 0 for B .. 3 for DW (as decode_one)
        const int sz = k.bytes == 1 ? 0 : k.bytes == 2 ? 1 : k.bytes == 4 ? 2 : 3;
        const bool alu = k.cls == BPF_ALU || k.cls == BPF_ALU64;
        const bool jmp = k.cls == BPF_JMP || k.cls == BPF_JMP32;
        FastDecode& f = t[c];
        uint8_t op = INVALID, aux = 0;
        uint8_t needs_zero = 0;  // kSrc or not
        uint64_t zero_bits = 0;
        if (alu) {
            // Not END (decoded from imm). DIV/MOD are unsigned with off 0 (1: signed), MOV X is a
            // plain move with off and imm 0 (else movsx, percpu, zext).
            const int base = alu_base(k.op, false);
            if (k.op == BPF_NEG) {
                op = k.wide ? NEG64 : NEG32;
            } else if (base >= 0) {
                if (k.op == BPF_DIV || k.op == BPF_MOD) zero_bits = kOffBits;
                if (k.op == BPF_MOV && k.x) zero_bits = kOffBits | kImmBits;
                op = static_cast<uint8_t>(base + (k.wide ? 0 : 2) + (k.x ? 1 : 0));
                const bool shift = k.op == BPF_LSH || k.op == BPF_RSH || k.op == BPF_ARSH;
                f.imm_mask = shift ? (k.wide ? 63 : 31) : 0xffffffff;
            }
        } else if (jmp) {
            // The jumps by `off` whose op the code decides (conditional jumps, ja, may_goto), and
            // the insns that jump nowhere in the program (exit, gotox, tail call, callx, a helper
            // call: src 0). Not gotol (imm) nor a call with a src (local or kfunc).
            const int base = cond_jump_base(k.op);
            if (base >= 0) {
                op = static_cast<uint8_t>(base + (k.wide ? 0 : 2) + (k.x ? 1 : 0));
            } else if (c == (BPF_JMP | BPF_JA | BPF_K)) {
                op = JA;
            } else if (k.wide && k.op == BPF_JCOND) {
                op = MAY_GOTO;  // (K or X, as decode_one)
            } else if (k.wide) {
                if (c == (BPF_JMP | BPF_JA | BPF_X)) op = GOTOX;
                if (k.op == BPF_EXIT) op = EXIT;
                if (k.op == isa::kOpTailCall) op = TAIL_CALL;
                if (c == (BPF_JMP | BPF_CALL | BPF_X)) op = CALLX;
                if (c == (BPF_JMP | BPF_CALL | BPF_K)) {
                    op = CALL_HELPER;  // src 0
                    needs_zero = FastDecode::kSrc;
                }
            }
            // The ops above that jump do so by `off`, as the facts say.
            if (base >= 0 || op == JA || op == MAY_GOTO) {
                if (k.target != isa::Target::Off) throw "a decoded jump the opcode facts do not make one by off";
                f.jump_mask = ~uint64_t{0};
            }
        } else if (k.cls == BPF_LDX) {
            if (k.mode == BPF_MEM) op = static_cast<uint8_t>(LDXB + sz);
            if (k.mode == BPF_MEMSX && sz < 3) op = static_cast<uint8_t>(LDSXB + sz);
            if (k.mode == isa::kModeProbeMem || k.mode == isa::kModeProbeMemSx || k.mode == isa::kModeProbeMem32) {
                op = LDX_PROBE;
                aux = static_cast<uint8_t>((1u << sz) | (k.mode == isa::kModeProbeMemSx && sz < 3 ? 0x80 : 0));
            }
        } else if (k.cls == BPF_ST && k.mode == isa::kModeNospec) {
            op = NOP;
        } else if ((k.cls == BPF_ST || k.cls == BPF_STX) && (k.mode == BPF_MEM || k.mode == isa::kModeProbeMem32)) {
            op = static_cast<uint8_t>((k.cls == BPF_ST ? STB : STXB) + sz);
        } else if (k.cls == BPF_STX && (k.mode == BPF_ATOMIC || k.mode == isa::kModeProbeAtomic)) {
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
    d.aux = pc + 2 < n && prog_.insns[pc + 2].code == (BPF_ALU64 | BPF_MOV | BPF_X) && prog_.insns[pc + 2].off == isa::kAddrPercpuOff &&
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

}  // namespace patchfuzz::interp
