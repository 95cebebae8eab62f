// Models kernel/bpf/disasm.c print_bpf_insn() (plus bpftool's print_imm for ldimm64 pseudo
// sources). Our extensions are marked "EXT" and listed in bpf/asm/SYNTAX.md.
#include "bpf/asm/disassemble.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "bpf/asm/syntax.hpp"
#include "bpf/isa/opcode_table.hpp"
#include "bpf/kfunc/kfunc_table.hpp"

namespace patchfuzz::assembly {
namespace {

using namespace patchfuzz::isa;

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

const char* ldst_size(uint8_t code) {
    switch (code & 0x18) {
        case BPF_W: return "u32";
        case BPF_H: return "u16";
        case BPF_B: return "u8";
        default: return "u64";
    }
}
const char* ldsx_size(uint8_t code) {
    switch (code & 0x18) {
        case BPF_W: return "s32";
        case BPF_H: return "s16";
        case BPF_B: return "s8";
        default: return "s64";
    }
}

}  // namespace

const char* alu_op_string(uint8_t op) {
    switch (op) {
        case BPF_ADD: return "+=";
        case BPF_SUB: return "-=";
        case BPF_MUL: return "*=";
        case BPF_DIV: return "/=";
        case BPF_OR: return "|=";
        case BPF_AND: return "&=";
        case BPF_LSH: return "<<=";
        case BPF_RSH: return ">>=";
        case BPF_MOD: return "%=";
        case BPF_XOR: return "^=";
        case BPF_MOV: return "=";
        case BPF_ARSH: return "s>>=";
        default: return "?";
    }
}

const char* jmp_op_string(uint8_t op) {
    switch (op) {
        case BPF_JEQ: return "==";
        case BPF_JGT: return ">";
        case BPF_JLT: return "<";
        case BPF_JGE: return ">=";
        case BPF_JLE: return "<=";
        case BPF_JSET: return "&";
        case BPF_JNE: return "!=";
        case BPF_JSGT: return "s>";
        case BPF_JSLT: return "s<";
        case BPF_JSGE: return "s>=";
        case BPF_JSLE: return "s<=";
        default: return "?";
    }
}

namespace {

std::string raw_insn(const Insn& in) {
    return fmt(".insn code=0x%02x dst=%u src=%u off=%d imm=%d", in.code, unsigned(in.dst_reg), unsigned(in.src_reg),
               int(in.off), int(in.imm));
}

// The kernel prints every register of an atomic as rN, also for the 32-bit forms.
std::string atomic_text(const Insn& in) {
    const char* sz = ldst_size(in.code);
    const char* w64 = (in.code & 0x18) == BPF_DW ? "64" : "";
    const unsigned d = in.dst_reg, s = in.src_reg;
    const int off = in.off;
    // EXT: arena atomics (PROBE_ATOMIC) carry a "probe_atomic " prefix.
    const std::string pre = (in.code & 0xe0) == kModeProbeAtomic ? "probe_atomic " : "";
    const int32_t imm = in.imm;
    const char* opname = nullptr;
    switch (imm & ~BPF_FETCH) {
        case BPF_ADD: opname = "add"; break;
        case BPF_AND: opname = "and"; break;
        case BPF_OR: opname = "or"; break;
        case BPF_XOR: opname = "xor"; break;
        default: break;
    }
    if (imm == BPF_ADD || imm == BPF_AND || imm == BPF_OR || imm == BPF_XOR)
        return pre + fmt("lock *(%s *)(r%u %+d) %s r%u", sz, d, off, alu_op_string(uint8_t(imm)), s);
    if (opname) return pre + fmt("r%u = atomic%s_fetch_%s((%s *)(r%u %+d), r%u)", s, w64, opname, sz, d, off, s);
    if (imm == BPF_CMPXCHG) return pre + fmt("r0 = atomic%s_cmpxchg((%s *)(r%u %+d), r0, r%u)", w64, sz, d, off, s);
    if (imm == BPF_XCHG) return pre + fmt("r%u = atomic%s_xchg((%s *)(r%u %+d), r%u)", s, w64, sz, d, off, s);
    if (imm == BPF_LOAD_ACQ) return pre + fmt("r%u = load_acquire((%s *)(r%u %+d))", d, sz, s, off);
    return pre + fmt("store_release((%s *)(r%u %+d), r%u)", sz, d, off, s);  // BPF_STORE_REL
}

std::string ldimm64_text(const Insn& lo, const Insn& hi) {
    const uint64_t full = (uint64_t(uint32_t(hi.imm)) << 32) | uint32_t(lo.imm);
    const unsigned d = lo.dst_reg;
    switch (lo.src_reg) {
        case 0: return fmt("r%u = 0x%" PRIx64, d, full);
        case BPF_PSEUDO_MAP_FD: return fmt("r%u = map[id:%u]", d, uint32_t(lo.imm));
        case BPF_PSEUDO_MAP_VALUE: return fmt("r%u = map[id:%u][0]+%u", d, uint32_t(lo.imm), uint32_t(hi.imm));
        case BPF_PSEUDO_MAP_IDX: return fmt("r%u = map[idx:%u]", d, uint32_t(lo.imm));  // EXT (bpftool prints 0x..)
        case BPF_PSEUDO_MAP_IDX_VALUE: return fmt("r%u = map[idx:%u]+%u", d, uint32_t(lo.imm), uint32_t(hi.imm));
        case BPF_PSEUDO_FUNC: return fmt("r%u = subprog[%+d]", d, lo.imm);  // EXT: bpftool-like
        case BPF_PSEUDO_BTF_ID:  // EXT: the kernel prints the resolved address
            if (hi.imm == 0) return fmt("r%u = btf_id[%u]", d, uint32_t(lo.imm));
            return fmt("r%u = btf_id[%u][fd:%u]", d, uint32_t(lo.imm), uint32_t(hi.imm));
        default: return raw_insn(lo);
    }
}

}  // namespace

std::string disasm_insn(std::span<const Insn> insns, size_t pc) {
    const Insn& in = insns[pc];
    const OpcodeRow* row = match_row(in, true);
    if (!row) return raw_insn(in);
    const uint8_t code = in.code;
    const uint8_t cls = code & 0x07;
    const unsigned d = in.dst_reg, s = in.src_reg;
    switch (row->group) {
        case Group::Alu: {
            const bool is64 = cls == BPF_ALU64;
            const char c = is64 ? 'r' : 'w';
            const uint8_t op = code & 0xf0;
            if (op == BPF_END) {
                if (is64) return fmt("r%u = bswap%d r%u", d, in.imm, d);
                return fmt("r%u = %s%d r%u", d, (code & BPF_X) ? "be" : "le", in.imm, d);
            }
            if (op == BPF_NEG) return fmt("%c%u = -%c%u", c, d, c, d);
            if (op == BPF_MOV && (code & BPF_X)) {
                if (row->dst_eq_src) return fmt("zext w%u", d);  // EXT: BPF_ZEXT_REG (kernel prints w = w)
                if (is64 && in.off == 1)
                    return fmt("r%u = addr_space_cast(r%u, %d, %d)", d, s, uint32_t(in.imm) >> 16, in.imm & 0xffff);
                if (is64 && in.off == -1) return fmt("r%u = &(void __percpu *)(r%u)", d, s);
                if (in.off != 0) return fmt("%c%u = (s%d)%c%u", c, d, int(in.off), c, s);
            }
            const bool sdiv = (op == BPF_DIV || op == BPF_MOD) && in.off == 1;
            const char* ops = sdiv ? (op == BPF_DIV ? "s/=" : "s%=") : alu_op_string(op);
            if (code & BPF_X) return fmt("%c%u %s %c%u", c, d, ops, c, s);
            return fmt("%c%u %s %d", c, d, ops, in.imm);
        }
        case Group::Jump: {
            if (is_ja(in)) return fmt("goto pc%+d", int(in.off));
            if (is_gotol(in)) return fmt("gotol pc%+d", in.imm);
            if (is_gotox(in)) return fmt("gotox r%u", d);
            if (is_may_goto(in)) return fmt("may_goto pc%+d", int(in.off));
            const char c = cls == BPF_JMP32 ? 'w' : 'r';
            if (code & BPF_X) return fmt("if %c%u %s %c%u goto pc%+d", c, d, jmp_op_string(code & 0xf0), c, s, int(in.off));
            return fmt("if %c%u %s 0x%x goto pc%+d", c, d, jmp_op_string(code & 0xf0), uint32_t(in.imm), int(in.off));
        }
        case Group::Call: {
            if (in.src_reg == BPF_PSEUDO_CALL) return fmt("call pc%+d", in.imm);
            if (in.src_reg == BPF_PSEUDO_KFUNC_CALL) {
                auto k = kfunc::by_btf_id(in.imm);
                std::string name = k ? std::string(k->name) : "kernel-function";
                std::string t = fmt("call %s#%d", name.c_str(), in.imm);
                if (in.off != 0) t += fmt(" off:%d", int(in.off));  // EXT: BTF fd index
                return t;
            }
            std::string_view hn = helper_name(in.imm);
            return fmt("call %.*s#%d", int(hn.size()), hn.data(), in.imm);
        }
        case Group::Exit: return "exit";
        case Group::TailCall:  // EXT: the kernel's dump shows `call bpf_tail_call#12`
            return in.imm == 0 ? std::string("tail_call") : fmt("tail_call %d", in.imm);
        case Group::Nospec: return "nospec";
        case Group::Load: {
            const uint8_t mode = code & 0xe0;
            // EXT: mode prefixes for the kernel-internal PROBE_* loads
            const char* pre = mode == kModeProbeMem || mode == kModeProbeMemSx ? "probe_mem "
                              : mode == kModeProbeMem32                       ? "probe_mem32 "
                                                                              : "";
            const bool sx = mode == BPF_MEMSX || mode == kModeProbeMemSx;
            return fmt("%sr%u = *(%s *)(r%u %+d)", pre, d, sx ? ldsx_size(code) : ldst_size(code), s, int(in.off));
        }
        case Group::Store: {
            const char* pre = (code & 0xe0) == kModeProbeMem32 ? "probe_mem32 " : "";
            if (cls == BPF_STX) return fmt("%s*(%s *)(r%u %+d) = r%u", pre, ldst_size(code), d, int(in.off), s);
            return fmt("%s*(%s *)(r%u %+d) = %d", pre, ldst_size(code), d, int(in.off), in.imm);
        }
        case Group::Atomic: return atomic_text(in);
        case Group::LdPacket:
            if ((code & 0xe0) == BPF_ABS) return fmt("r0 = *(%s *)skb[%d]", ldst_size(code), in.imm);
            return fmt("r0 = *(%s *)skb[r%u + %d]", ldst_size(code), s, in.imm);
        case Group::LdImm64: {
            if (pc + 1 >= insns.size()) return raw_insn(in);
            const Insn& hi = insns[pc + 1];
            if (hi.code != 0 || hi.dst_reg != 0 || hi.src_reg != 0 || hi.off != 0) return raw_insn(in);
            if (row->imm2.rule == Rule::Zero && hi.imm != 0) return raw_insn(in);
            return ldimm64_text(in, hi);
        }
    }
    return raw_insn(in);
}

size_t insn_width(std::span<const Insn> insns, size_t pc) {
    const Insn& in = insns[pc];
    if (!is_ldimm64(in)) return 1;
    // Only a legal pair is printed as one line (see disasm_insn).
    return disasm_insn(insns, pc).rfind(".insn", 0) == 0 ? 1 : 2;
}

std::string disassemble(std::span<const Insn> insns, const DisasmOptions& opts) {
    std::string out;
    for (size_t pc = 0; pc < insns.size();) {
        if (opts.numbered) out += fmt("%4zu: ", pc);
        if (opts.opcodes) out += fmt("(%02x) ", insns[pc].code);
        out += disasm_insn(insns, pc);
        out += '\n';
        pc += insn_width(insns, pc);
    }
    return out;
}

}  // namespace patchfuzz::assembly
