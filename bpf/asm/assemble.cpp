// Reads the kernel syntax printed by disassemble() back into instructions (see SYNTAX.md).
// Internally a parse error is thrown as LineError and turned into an Error at the public boundary
// (the style guide allows a module to throw internally when its public function converts).
#include "bpf/asm/assemble.hpp"

#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "bpf/asm/asm_cursor.hpp"
#include "bpf/asm/syntax.hpp"
#include "bpf/kfunc/kfunc_table.hpp"

namespace patchfuzz::assembly {
namespace {

using namespace detail;

// A label reference waiting for its definition.
struct Fixup {
    enum Kind { Jump16, Jump32, Call, Func, CallByName } kind;
    size_t idx;  // insn index
    std::string label;
    size_t line, col;
};

class Assembler {
public:
    Assembler(std::string_view filename) : file_(filename) {}

    Expected<std::vector<Insn>> run(std::string_view text) {
        size_t line_no = 0;
        size_t start = 0;
        while (start <= text.size()) {
            size_t nl = text.find('\n', start);
            if (nl == std::string_view::npos) nl = text.size();
            ++line_no;
            std::string_view line = text.substr(start, nl - start);
            try {
                parse_line(strip_comment(line), line_no);
            } catch (const LineError& e) {
                return Error{loc(line_no, e.col), e.message};
            }
            start = nl + 1;
        }
        for (const Fixup& f : fixups_) {
            try {
                resolve(f);
            } catch (const LineError& e) {
                return Error{loc(f.line, e.col), e.message};
            }
        }
        return std::move(insns_);
    }

private:
    std::string loc(size_t line, size_t col) const {
        return std::string(file_) + ":" + std::to_string(line) + ":" + std::to_string(col + 1);
    }

    // Cut ';', '#' and '//' comments. (No string literals exist in this syntax.)
    static std::string_view strip_comment(std::string_view l) {
        size_t cut = l.size();
        for (size_t i = 0; i < l.size(); ++i) {
            if (l[i] == ';' || l[i] == '#') {
                // '#' is also the helper-id separator "call name#12": only a comment after a blank
                // or at line start.
                if (l[i] == '#' && i > 0 && l[i - 1] != ' ' && l[i - 1] != '\t') continue;
                cut = i;
                break;
            }
            if (l[i] == '/' && i + 1 < l.size() && l[i + 1] == '/') {
                cut = i;
                break;
            }
        }
        return l.substr(0, cut);
    }

    void emit(Insn in) { insns_.push_back(in); }

    static bool looks_like_reg(const std::string& id) {
        if (id.size() < 2 || (id[0] != 'r' && id[0] != 'w')) return false;
        for (size_t i = 1; i < id.size(); ++i)
            if (!std::isdigit(static_cast<unsigned char>(id[i]))) return false;
        return true;
    }

    void parse_line(std::string_view line, size_t line_no) {
        Cursor c(line);
        if (c.done()) return;
        // bpftool / verifier-log prefixes: "  12: " and "(b7) ".
        {
            size_t save = c.pos();
            auto n = c.try_number();
            if (n && !n->hex && n->value >= 0 && c.accept(":")) {
                // numbered prefix, ignored
            } else {
                c.set_pos(save);
            }
        }
        std::optional<std::pair<uint8_t, size_t>> opcode_prefix;
        {
            size_t save = c.pos();
            if (c.accept("(")) {
                std::string_view r = c.rest();
                if (r.size() >= 3 && std::isxdigit(static_cast<unsigned char>(r[0])) &&
                    std::isxdigit(static_cast<unsigned char>(r[1])) && r[2] == ')') {
                    opcode_prefix = {static_cast<uint8_t>(std::stoul(std::string(r.substr(0, 2)), nullptr, 16)), save};
                    c.set_pos(c.pos() + 3);
                } else {
                    c.set_pos(save);
                }
            }
        }
        if (c.done()) return;
        // Label definition: "name:" alone on its line.
        {
            size_t save = c.pos();
            auto id = c.ident();
            if (id && c.accept(":") && c.done()) {
                if (looks_like_reg(*id)) Cursor::fail_at(save, "label '" + *id + "' is a register name");
                if (labels_.count(*id)) Cursor::fail_at(save, "label '" + *id + "' defined twice");
                labels_[*id] = insns_.size();
                return;
            }
            c.set_pos(save);
        }
        const size_t first = insns_.size();
        statement(c, line_no);
        c.end();
        if (opcode_prefix && insns_.size() > first && insns_[first].code != opcode_prefix->first) {
            char b[96];
            std::snprintf(b, sizeof b, "opcode prefix (%02x) does not match the insn's code 0x%02x",
                          opcode_prefix->first, insns_[first].code);
            Cursor::fail_at(opcode_prefix->second, b);
        }
    }

    // A jump/call target: "pc+N" / "pc-N" (returns the number) or a label (recorded as a fixup).
    std::optional<Number> target(Cursor& c, Fixup::Kind kind, size_t line_no) {
        const size_t col = c.pos();
        if (c.accept_word("pc")) {
            if (!c.peek_sign()) c.fail("expected '+N' or '-N' after 'pc'" + c.found());
            return c.number();
        }
        auto id = c.ident();
        if (!id) c.fail("expected a target 'pc+N' or a label" + c.found());
        fixups_.push_back(Fixup{kind, insns_.size(), *id, line_no, col});
        return std::nullopt;
    }

    void statement(Cursor& c, size_t line_no) {
        const size_t col0 = c.pos();
        // Register-led statements.
        if (auto r = c.try_reg()) return reg_statement(c, *r, 0, line_no);
        if (c.accept("*")) return store(c, BPF_MEM, col0);
        auto word = c.ident();
        if (!word) c.fail("expected an instruction" + c.found());
        const std::string& w = *word;
        if (w == "exit") return emit(exit_insn());
        if (w == "nospec") return emit(nospec());
        if (w == "zext") {
            Reg r = c.reg_w(false);
            return emit(zext_marker(r.num));
        }
        if (w == "tail_call") {
            int32_t imm = 0;
            if (!c.done()) imm = s32(c.number(), "tail call imm");
            return emit(make(BPF_JMP | kOpTailCall, 0, 0, 0, imm));
        }
        if (w == "gotox") return emit(make(BPF_JMP | BPF_JA | BPF_X, c.reg_w(true).num, 0, 0, 0));
        if (w == "goto" || w == "may_goto") {
            auto n = target(c, Fixup::Jump16, line_no);
            const int16_t off = n ? off16(*n, "jump offset") : 0;
            return emit(w == "goto" ? ja(off) : may_goto(off));
        }
        if (w == "gotol") {
            auto n = target(c, Fixup::Jump32, line_no);
            return emit(gotol(n ? s32(*n, "jump offset") : 0));
        }
        if (w == "call") return call(c, line_no);
        if (w == "if") return cond_jump(c, line_no);
        if (w == "lock") return lock(c, 0, col0);
        if (w == "store_release") return store_release(c, BPF_ATOMIC);
        if (w == "probe_mem" || w == "probe_mem32") {
            const uint8_t mode = w == "probe_mem" ? kModeProbeMem : kModeProbeMem32;
            if (auto r = c.try_reg()) return reg_statement(c, *r, mode, line_no);
            if (mode == kModeProbeMem32 && c.accept("*")) return store(c, kModeProbeMem32, col0);
            c.fail("expected a load" + std::string(mode == kModeProbeMem32 ? " or store" : "") + " after '" + w + "'" + c.found());
        }
        if (w == "probe_atomic") {
            if (c.accept_word("lock")) return lock(c, kModeProbeAtomic, col0);
            if (auto r = c.try_reg()) return reg_statement(c, *r, kModeProbeAtomic, line_no);
            c.fail("expected an atomic insn after 'probe_atomic'" + c.found());
        }
        if (w == ".insn") return raw(c);
        Cursor::fail_at(col0, "unknown mnemonic '" + w + "'");
    }

    void raw(Cursor& c) {
        auto field = [&](const char* name) {
            c.expect(name);
            c.expect("=");
            return c.number();
        };
        Number code = field("code"), dst = field("dst"), src = field("src"), off = field("off"), imm = field("imm");
        if (code.value < 0 || code.value > 255) Cursor::fail_at(code.col, "code " + code.text + " does not fit in 8 bits");
        if (dst.value < 0 || dst.value > 15) Cursor::fail_at(dst.col, "dst " + dst.text + " does not fit in 4 bits");
        if (src.value < 0 || src.value > 15) Cursor::fail_at(src.col, "src " + src.text + " does not fit in 4 bits");
        emit(make(static_cast<uint8_t>(code.value), static_cast<uint8_t>(dst.value), static_cast<uint8_t>(src.value),
                  off16(off), imm32(imm)));
    }

    void call(Cursor& c, size_t line_no) {
        const size_t col = c.pos();
        if (c.accept_word("pc")) {
            if (!c.peek_sign()) c.fail("expected '+N' or '-N' after 'pc'" + c.found());
            return emit(call_pseudo(s32(c.number(), "call offset")));
        }
        auto name = c.ident();
        if (!name) c.fail("expected 'pc+N', a helper 'name#id' or a label" + c.found());
        if (!c.accept("#")) {
            // "call name": a label (pseudo call); helper/kfunc names resolved after all labels.
            fixups_.push_back(Fixup{Fixup::CallByName, insns_.size(), *name, line_no, col});
            return emit(call_pseudo(0));
        }
        const Number idn = c.number();
        const int32_t id = s32(idn, "call id");
        auto kf = kfunc::by_name(*name);
        if (*name == "kernel-function" || kf) {
            if (kf && kf->btf_id != id)
                Cursor::fail_at(idn.col, "kfunc '" + *name + "' has BTF id " + std::to_string(kf->btf_id) + ", not " +
                                             std::to_string(id));
            int16_t off = 0;
            if (c.accept("off:")) off = off16(c.number());
            return emit(call_kfunc(id, off));
        }
        if (*name != "unknown") {
            auto h = helper_id(*name);
            if (!h) Cursor::fail_at(col, "unknown helper or kfunc '" + *name + "'");
            if (*h != id)
                Cursor::fail_at(idn.col, "helper '" + *name + "' is #" + std::to_string(*h) + ", not #" + std::to_string(id));
        }
        emit(call_helper(id));
    }

    void cond_jump(Cursor& c, size_t line_no) {
        Reg dst = c.reg();
        const size_t opcol = c.pos();
        uint8_t op = 0;
        // Longest operators first.
        static constexpr std::pair<const char*, uint8_t> kOps[] = {
            {"s>=", BPF_JSGE}, {"s<=", BPF_JSLE}, {"s>", BPF_JSGT}, {"s<", BPF_JSLT}, {"==", BPF_JEQ},
            {"!=", BPF_JNE},   {">=", BPF_JGE},   {"<=", BPF_JLE},  {">", BPF_JGT},   {"<", BPF_JLT},
            {"&", BPF_JSET},
        };
        bool found = false;
        for (const auto& [t, o] : kOps)
            if (c.accept(t)) {
                op = o;
                found = true;
                break;
            }
        if (!found) Cursor::fail_at(opcol, "expected a comparison operator" + c.found());
        const uint8_t cls = dst.wide ? BPF_JMP : BPF_JMP32;
        Insn in{};
        if (auto src = c.try_reg()) {
            if (src->wide != dst.wide)
                Cursor::fail_at(src->col, std::string("expected a ") + (dst.wide ? "64-bit register rN" : "32-bit register wN"));
            in = make(cls | op | BPF_X, dst.num, src->num, 0, 0);
        } else {
            in = make(cls | op | BPF_K, dst.num, 0, 0, imm32(c.number()));
        }
        if (!c.accept_word("goto")) c.fail("expected 'goto'" + c.found());
        auto n = target(c, Fixup::Jump16, line_no);
        if (n) in.off = off16(*n, "jump offset");
        emit(in);
    }

    // "*(u32 *)(r1 +0) = r2" / "= 5" (after the leading '*').
    void store(Cursor& c, uint8_t mode, size_t col0) {
        MemType t = mem_type(c);
        if (t.sign) Cursor::fail_at(t.col, "stores take unsigned sizes u8/u16/u32/u64");
        MemRef m = mem_ref(c);
        c.expect("=");
        if (auto src = c.try_reg()) {
            if (!src->wide) Cursor::fail_at(src->col, "expected a 64-bit register rN");
            return emit(make(BPF_STX | mode | t.size, m.base.num, src->num, m.off, 0));
        }
        if (c.done()) c.fail("expected a register or an immediate");
        (void)col0;
        emit(make(BPF_ST | mode | t.size, m.base.num, 0, m.off, imm32(c.number())));
    }

    // "lock *(u64 *)(r1 +8) += r2" (after 'lock').
    void lock(Cursor& c, uint8_t probe_mode, size_t) {
        c.expect("*");
        MemType t = mem_type(c);
        if (t.sign) Cursor::fail_at(t.col, "atomics take unsigned sizes u32/u64");
        MemRef m = mem_ref(c);
        const size_t opcol = c.pos();
        int32_t op;
        if (c.accept("+=")) op = BPF_ADD;
        else if (c.accept("&=")) op = BPF_AND;
        else if (c.accept("|=")) op = BPF_OR;
        else if (c.accept("^=")) op = BPF_XOR;
        else Cursor::fail_at(opcol, "expected one of += &= |= ^=" + c.found());
        Reg src = c.reg_w(true);
        emit(make(BPF_STX | (probe_mode ? probe_mode : BPF_ATOMIC) | t.size, m.base.num, src.num, m.off, op));
    }

    void store_release(Cursor& c, uint8_t mode) {
        c.expect("(");
        MemType t = mem_type(c);
        MemRef m = mem_ref(c);
        c.expect(",");
        Reg src = c.reg_w(true);
        c.expect(")");
        emit(make(BPF_STX | mode | t.size, m.base.num, src.num, m.off, BPF_STORE_REL));
    }

    // Everything that starts with a register: ALU, mov/movsx, neg, endian, loads, ldimm64, atomics
    // written as assignments. `mode`: 0, kModeProbeMem, kModeProbeMem32 or kModeProbeAtomic prefix.
    void reg_statement(Cursor& c, Reg dst, uint8_t mode, size_t line_no) {
        const char wc = dst.wide ? 'r' : 'w';
        const uint8_t alu = dst.wide ? BPF_ALU64 : BPF_ALU;
        const size_t opcol = c.pos();
        // Compound assignment operators.
        static constexpr std::pair<const char*, uint8_t> kAlu[] = {
            {"s>>=", BPF_ARSH}, {"<<=", BPF_LSH}, {">>=", BPF_RSH}, {"s/=", BPF_DIV}, {"s%=", BPF_MOD},
            {"+=", BPF_ADD},    {"-=", BPF_SUB},  {"*=", BPF_MUL},  {"/=", BPF_DIV},  {"|=", BPF_OR},
            {"&=", BPF_AND},    {"%=", BPF_MOD},  {"^=", BPF_XOR},
        };
        for (const auto& [t, op] : kAlu) {
            if (!c.accept(t)) continue;
            if (mode) Cursor::fail_at(opcol, "a probe prefix needs a load or an atomic");
            const int16_t off = (t[0] == 's' && t[1] != '>') ? 1 : 0;  // sdiv/smod
            if (auto src = c.try_reg()) {
                if (src->wide != dst.wide)
                    Cursor::fail_at(src->col, std::string("expected a ") + (dst.wide ? "64-bit register rN" : "32-bit register wN"));
                return emit(make(alu | op | BPF_X, dst.num, src->num, off, 0));
            }
            return emit(make(alu | op | BPF_K, dst.num, 0, off, imm32(c.number())));
        }
        if (!c.accept("=")) Cursor::fail_at(opcol, "expected an assignment operator" + c.found());
        // --- "dst = ..." ---
        if (c.accept("*")) {  // load
            const size_t tcol = c.pos();
            MemType t = mem_type(c);
            if (c.accept_word("skb")) {  // legacy packet load: r0 = *(u32 *)skb[imm] / skb[rN + imm]
                if (mode) Cursor::fail_at(opcol, "packet loads take no probe prefix");
                if (t.sign || t.size == BPF_DW) Cursor::fail_at(t.col, "packet loads take u8/u16/u32");
                if (!dst.wide || dst.num != 0) Cursor::fail_at(dst.col, "packet loads always write r0");
                c.expect("[");
                Insn in{};
                if (auto src = c.try_reg()) {
                    c.expect("+");
                    in = make(BPF_LD | BPF_IND | t.size, 0, src->num, 0, imm32(c.number()));
                } else {
                    in = make(BPF_LD | BPF_ABS | t.size, 0, 0, 0, imm32(c.number()));
                }
                c.expect("]");
                return emit(in);
            }
            MemRef m = mem_ref(c);
            if (!dst.wide) Cursor::fail_at(dst.col, "loads write a 64-bit register rN");
            if (mode == kModeProbeAtomic) Cursor::fail_at(tcol, "'probe_atomic' needs an atomic insn");
            uint8_t md;
            if (t.sign) {
                if (t.size == BPF_DW) Cursor::fail_at(t.col, "sign-extending loads take s8/s16/s32");
                md = mode == kModeProbeMem ? kModeProbeMemSx : mode == kModeProbeMem32 ? 0xff : BPF_MEMSX;
                if (md == 0xff) Cursor::fail_at(t.col, "probe_mem32 loads do not sign-extend");
            } else {
                md = mode ? mode : BPF_MEM;
            }
            return emit(make(BPF_LDX | md | t.size, dst.num, m.base.num, m.off, 0));
        }
        if (mode == kModeProbeMem || mode == kModeProbeMem32) c.fail("expected a load after the probe prefix" + c.found());
        if (mode && !c.try_reg()) {
            if (auto id = c.ident()) return named_rhs(c, dst, *id, mode, line_no);
        }
        if (mode) c.fail("expected an atomic after 'probe_atomic'" + c.found());
        {
            const size_t save = c.pos();
            if (!c.try_reg()) {
                if (auto id = c.ident()) return named_rhs(c, dst, *id, mode, line_no);
            }
            c.set_pos(save);
        }
        const size_t before_minus = c.pos();
        if (c.accept("-") && c.try_reg()) {  // neg: "r0 = -r0"
            c.set_pos(before_minus + 1);
            Reg src = c.reg_w(dst.wide);
            if (src.num != dst.num) Cursor::fail_at(src.col, std::string("neg operates in place: expected ") + wc + std::to_string(dst.num));
            return emit(make(alu | BPF_NEG | BPF_K, dst.num, 0, 0, 0));
        }
        c.set_pos(before_minus);
        if (c.accept("&(void __percpu *)")) {
            c.expect("(");
            Reg src = c.reg_w(true);
            c.expect(")");
            if (!dst.wide) Cursor::fail_at(dst.col, "expected a 64-bit register rN");
            return emit(make(BPF_ALU64 | BPF_MOV | BPF_X, dst.num, src.num, -1, 0));
        }
        if (c.accept("(")) {  // movsx: "r1 = (s8)r2"
            const size_t tcol = c.pos();
            auto t = c.ident();
            int16_t bits = 0;
            if (t == "s8") bits = 8;
            else if (t == "s16") bits = 16;
            else if (t == "s32") bits = 32;
            if (!bits) Cursor::fail_at(tcol, "expected s8, s16 or s32");
            c.expect(")");
            Reg src = c.reg_w(dst.wide);
            return emit(make(alu | BPF_MOV | BPF_X, dst.num, src.num, bits, 0));
        }
        if (auto src = c.try_reg()) {
            if (src->wide != dst.wide)
                Cursor::fail_at(src->col, std::string("expected a ") + (dst.wide ? "64-bit register rN" : "32-bit register wN"));
            return emit(make(alu | BPF_MOV | BPF_X, dst.num, src->num, 0, 0));
        }
        Number n = c.number();
        const bool ll = c.accept_word("ll");
        if (dst.wide && (n.hex || ll)) {  // ldimm64: kernel prints it as 0x%llx; LLVM adds "ll"
            if (n.huge || n.value < INT64_MIN || n.value > (i128)UINT64_MAX)
                Cursor::fail_at(n.col, "immediate " + n.text + " does not fit in 64 bits");
            const uint64_t v = static_cast<uint64_t>(n.value);
            emit(ldimm64_lo(dst.num, 0, static_cast<int32_t>(static_cast<uint32_t>(v))));
            return emit(ldimm64_hi(static_cast<int32_t>(static_cast<uint32_t>(v >> 32))));
        }
        if (ll) Cursor::fail_at(dst.col, "ldimm64 needs a 64-bit register rN");
        emit(make(alu | BPF_MOV | BPF_K, dst.num, 0, 0, imm32(n)));
    }

    // "dst = NAME..." forms: endian, map/subprog/btf_id ldimm64, addr_space_cast, atomics.
    void named_rhs(Cursor& c, Reg dst, const std::string& id, uint8_t mode, size_t line_no) {
        const size_t idcol = c.pos() - id.size();
        auto need_wide = [&] {
            if (!dst.wide) Cursor::fail_at(dst.col, "expected a 64-bit register rN");
        };
        if (mode && id.rfind("atomic", 0) != 0) Cursor::fail_at(idcol, "expected an atomic after 'probe_atomic'");
        for (const char* e : {"be", "le", "bswap"}) {
            const std::string_view ev(e);
            if (id.size() > ev.size() && id.compare(0, ev.size(), ev) == 0 &&
                std::isdigit(static_cast<unsigned char>(id[ev.size()]))) {
                const std::string bits = id.substr(ev.size());
                if (bits != "16" && bits != "32" && bits != "64")
                    Cursor::fail_at(idcol, "byte swap width must be 16, 32 or 64");
                need_wide();
                Reg src = c.reg_w(true);
                if (src.num != dst.num) Cursor::fail_at(src.col, "byte swaps operate in place: expected r" + std::to_string(dst.num));
                const uint8_t code = ev == "bswap" ? (BPF_ALU64 | BPF_END | BPF_K)
                                     : ev == "be"  ? (BPF_ALU | BPF_END | BPF_TO_BE)
                                                   : (BPF_ALU | BPF_END | BPF_TO_LE);
                return emit(make(code, dst.num, 0, 0, std::stoi(bits)));
            }
        }
        if (id == "map") {
            need_wide();
            c.expect("[");
            const bool idx = c.accept("idx:");
            if (!idx) c.expect("id:");
            const uint32_t m = u32(c.number(), "map id");
            c.expect("]");
            if (!idx) {
                if (!c.accept("[")) {
                    emit(ldimm64_lo(dst.num, BPF_PSEUDO_MAP_FD, static_cast<int32_t>(m)));
                    return emit(ldimm64_hi(0));
                }
                c.expect("0");
                c.expect("]");
                c.expect("+");
                const uint32_t off = u32(c.number(), "map value offset");
                emit(ldimm64_lo(dst.num, BPF_PSEUDO_MAP_VALUE, static_cast<int32_t>(m)));
                return emit(ldimm64_hi(static_cast<int32_t>(off)));
            }
            if (!c.accept("+")) {
                emit(ldimm64_lo(dst.num, BPF_PSEUDO_MAP_IDX, static_cast<int32_t>(m)));
                return emit(ldimm64_hi(0));
            }
            const uint32_t off = u32(c.number(), "map value offset");
            emit(ldimm64_lo(dst.num, BPF_PSEUDO_MAP_IDX_VALUE, static_cast<int32_t>(m)));
            return emit(ldimm64_hi(static_cast<int32_t>(off)));
        }
        if (id == "btf_id") {
            need_wide();
            c.expect("[");
            const uint32_t b = u32(c.number(), "btf id");
            c.expect("]");
            uint32_t fd = 0;
            if (c.accept("[")) {
                c.expect("fd:");
                fd = u32(c.number(), "btf fd");
                c.expect("]");
            }
            emit(ldimm64_lo(dst.num, BPF_PSEUDO_BTF_ID, static_cast<int32_t>(b)));
            return emit(ldimm64_hi(static_cast<int32_t>(fd)));
        }
        if (id == "subprog") {
            need_wide();
            c.expect("[");
            int32_t rel = 0;
            if (c.peek_sign()) {
                rel = s32(c.number(), "subprog offset");
            } else {
                const size_t col = c.pos();
                auto l = c.ident();
                if (!l) c.fail("expected '+N' or a label" + c.found());
                fixups_.push_back(Fixup{Fixup::Func, insns_.size(), *l, line_no, col});
            }
            c.expect("]");
            emit(ldimm64_lo(dst.num, BPF_PSEUDO_FUNC, rel));
            return emit(ldimm64_hi(0));
        }
        if (id == "addr_space_cast") {
            need_wide();
            c.expect("(");
            Reg src = c.reg_w(true);
            c.expect(",");
            Number a = c.number();
            c.expect(",");
            Number b = c.number();
            c.expect(")");
            if (a.value < 0 || a.value > 0xffff) Cursor::fail_at(a.col, "address space " + a.text + " does not fit in 16 bits");
            if (b.value < 0 || b.value > 0xffff) Cursor::fail_at(b.col, "address space " + b.text + " does not fit in 16 bits");
            return emit(make(BPF_ALU64 | BPF_MOV | BPF_X, dst.num, src.num, 1,
                             static_cast<int32_t>((uint32_t(a.value) << 16) | uint32_t(b.value))));
        }
        if (id == "load_acquire") {
            c.expect("(");
            MemType t = mem_type(c);
            MemRef m = mem_ref(c);
            c.expect(")");
            return emit(make(BPF_STX | BPF_ATOMIC | t.size, dst.num, m.base.num, m.off, BPF_LOAD_ACQ));
        }
        // atomic[64]_fetch_<op>, atomic[64]_xchg, atomic[64]_cmpxchg
        if (id.rfind("atomic", 0) == 0) {
            std::string rest = id.substr(6);
            const bool a64 = rest.rfind("64", 0) == 0;
            if (a64) rest = rest.substr(2);
            int32_t imm;
            if (rest == "_fetch_add") imm = BPF_ADD | BPF_FETCH;
            else if (rest == "_fetch_and") imm = BPF_AND | BPF_FETCH;
            else if (rest == "_fetch_or") imm = BPF_OR | BPF_FETCH;
            else if (rest == "_fetch_xor") imm = BPF_XOR | BPF_FETCH;
            else if (rest == "_xchg") imm = BPF_XCHG;
            else if (rest == "_cmpxchg") imm = BPF_CMPXCHG;
            else Cursor::fail_at(idcol, "unknown atomic '" + id + "'");
            c.expect("(");
            MemType t = mem_type(c);
            if (t.sign || (t.size != BPF_W && t.size != BPF_DW)) Cursor::fail_at(t.col, "atomics take u32 or u64");
            if (a64 != (t.size == BPF_DW))
                Cursor::fail_at(t.col, a64 ? "atomic64_* needs (u64 *)" : "atomic_* needs (u32 *); use atomic64_* for u64");
            MemRef m = mem_ref(c);
            c.expect(",");
            if (imm == BPF_CMPXCHG) {
                Reg r0 = c.reg_w(true);
                if (r0.num != 0) Cursor::fail_at(r0.col, "cmpxchg compares with r0");
                if (dst.num != 0) Cursor::fail_at(dst.col, "cmpxchg writes r0");
                c.expect(",");
            }
            Reg src = c.reg_w(true);
            c.expect(")");
            if (imm != BPF_CMPXCHG && src.num != dst.num)
                Cursor::fail_at(src.col, "the fetched value goes to the source register: expected r" + std::to_string(dst.num));
            return emit(make(BPF_STX | (mode ? mode : BPF_ATOMIC) | t.size, m.base.num, src.num, m.off, imm));
        }
        Cursor::fail_at(idcol, "unknown operand '" + id + "'");
    }

    void resolve(const Fixup& f) {
        auto it = labels_.find(f.label);
        Insn& in = insns_[f.idx];
        if (it == labels_.end()) {
            if (f.kind == Fixup::CallByName) {
                // Not a label: a helper or kfunc by bare name.
                if (auto k = kfunc::by_name(f.label)) {
                    in = call_kfunc(k->btf_id);
                    return;
                }
                if (auto h = helper_id(f.label)) {
                    in = call_helper(*h);
                    return;
                }
            }
            Cursor::fail_at(f.col, "undefined label '" + f.label + "'");
        }
        const int64_t disp = static_cast<int64_t>(it->second) - static_cast<int64_t>(f.idx) - 1;
        if (f.kind == Fixup::Jump16) {
            if (disp < INT16_MIN || disp > INT16_MAX)
                Cursor::fail_at(f.col, "jump to label '" + f.label + "' is " + std::to_string(disp) +
                                           " insns away, does not fit in 16 bits (use gotol)");
            in.off = static_cast<int16_t>(disp);
        } else {
            in.imm = static_cast<int32_t>(disp);
        }
    }

    std::string_view file_;
    std::vector<Insn> insns_;
    std::map<std::string, size_t> labels_;
    std::vector<Fixup> fixups_;
};

}  // namespace

Expected<std::vector<Insn>> assemble(std::string_view text, std::string_view filename) {
    Assembler a(filename);
    return a.run(text);
}

}  // namespace patchfuzz::assembly
