// ubpf / bpf_conformance mnemonic assembler, written from the .data files and the RFC 9669 opcode
// tables (no code taken from either project). Parse errors are thrown as LineError internally and
// returned as Error{path:line:col} at the public boundary.
#include "bpf/conformance/ubpf_asm.hpp"

#include <cctype>
#include <map>
#include <optional>
#include <string>

namespace patchfuzz::conformance {
namespace {

using namespace patchfuzz::isa;
using i128 = __int128;

struct LineError {
    size_t col;  // 0-based
    std::string message;
};
[[noreturn]] void fail(size_t col, std::string m) { throw LineError{col, std::move(m)}; }

struct Operand {
    std::string text;
    size_t col;
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Integer literal: [+-]?(0x hex | decimal). Returns value and whether it was hex.
struct Num {
    i128 v;
    bool hex;
};
std::optional<Num> parse_num(std::string_view t) {
    size_t i = 0;
    bool neg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    if (i >= t.size()) return std::nullopt;
    unsigned __int128 v = 0;
    bool hex = false;
    const unsigned __int128 cap = (unsigned __int128)1 << 80;
    if (t.size() - i > 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
        hex = true;
        for (i += 2; i < t.size(); ++i) {
            if (!std::isxdigit(static_cast<unsigned char>(t[i]))) return std::nullopt;
            const int c = std::tolower(static_cast<unsigned char>(t[i]));
            if (v < cap) v = v * 16 + unsigned(c <= '9' ? c - '0' : c - 'a' + 10);
        }
    } else {
        for (; i < t.size(); ++i) {
            if (!std::isdigit(static_cast<unsigned char>(t[i]))) return std::nullopt;
            if (v < cap) v = v * 10 + unsigned(t[i] - '0');
        }
    }
    const i128 sv = static_cast<i128>(v);
    return Num{neg ? -sv : sv, hex};
}

uint8_t reg(const Operand& o) {
    const std::string& t = o.text;
    if (t.size() >= 3 && t[0] == '%' && t[1] == 'r') {
        bool digits = true;
        for (size_t i = 2; i < t.size(); ++i) digits &= std::isdigit(static_cast<unsigned char>(t[i])) != 0;
        if (digits && t.size() <= 4) {
            const int n = std::stoi(t.substr(2));
            if (n <= 10) return static_cast<uint8_t>(n);
        }
    }
    fail(o.col, "invalid register '" + t + "' (expected %r0..%r10)");
}
bool is_reg(const Operand& o) { return !o.text.empty() && o.text[0] == '%'; }

// Decimal immediates are signed 32-bit; hex ones any 32-bit pattern (as the suite's tests expect).
int32_t imm32(const Operand& o) {
    auto n = parse_num(o.text);
    if (!n) fail(o.col, "expected an immediate, found '" + o.text + "'");
    const bool ok = n->hex ? (n->v >= -((i128)1 << 31) && n->v <= (i128)UINT32_MAX) : (n->v >= INT32_MIN && n->v <= INT32_MAX);
    if (!ok) fail(o.col, "immediate " + o.text + " does not fit in 32 bits");
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(n->v)));
}
uint64_t imm64(const Operand& o) {
    auto n = parse_num(o.text);
    if (!n) fail(o.col, "expected an immediate, found '" + o.text + "'");
    if (n->v < INT64_MIN || n->v > (i128)UINT64_MAX) fail(o.col, "immediate " + o.text + " does not fit in 64 bits");
    return static_cast<uint64_t>(n->v);
}
int16_t off16(std::string_view t, size_t col) {
    auto n = parse_num(t);
    if (!n) fail(col, "expected an offset, found '" + std::string(t) + "'");
    if (n->v < INT16_MIN || n->v > INT16_MAX) fail(col, "offset " + std::string(t) + " does not fit in 16 bits");
    return static_cast<int16_t>(n->v);
}

// "[%rN]", "[%rN+off]", "[%rN-off]"
struct Mem {
    uint8_t reg;
    int16_t off;
};
Mem mem(const Operand& o) {
    const std::string& t = o.text;
    if (t.size() < 2 || t.front() != '[' || t.back() != ']')
        fail(o.col, "expected a memory operand [%rN+off], found '" + t + "'");
    const std::string inner = t.substr(1, t.size() - 2);
    size_t sign = inner.find_first_of("+-");
    Operand r{inner.substr(0, sign), o.col + 1};
    Mem m{reg(Operand{std::string(trim(r.text)), r.col}), 0};
    if (sign != std::string::npos) m.off = off16(trim(std::string_view(inner).substr(sign)), o.col + 1 + sign);
    return m;
}

struct Fixup {
    size_t idx;
    bool imm_field;
    std::string label;
    size_t line, col;
};

class UbpfAssembler {
public:
    UbpfAssembler(std::string_view path, int first_line) : path_(path), first_line_(first_line) {}

    Expected<std::vector<Insn>> run(std::string_view text) {
        size_t line_idx = 0, start = 0;
        while (start <= text.size()) {
            size_t nl = text.find('\n', start);
            if (nl == std::string_view::npos) nl = text.size();
            std::string_view line = text.substr(start, nl - start);
            const size_t line_no = static_cast<size_t>(first_line_) + line_idx;
            try {
                parse_line(line, line_no);
            } catch (const LineError& e) {
                return Error{loc(line_no, e.col), e.message};
            }
            ++line_idx;
            start = nl + 1;
        }
        // The suite's convention: `exit` names the first exit insn unless it is a real label.
        if (!labels_.count("exit") && first_exit_) labels_["exit"] = *first_exit_;
        for (const Fixup& f : fixups_) {
            auto it = labels_.find(f.label);
            if (it == labels_.end()) return Error{loc(f.line, f.col), "undefined label '" + f.label + "'"};
            const int64_t disp = static_cast<int64_t>(it->second) - static_cast<int64_t>(f.idx) - 1;
            if (f.imm_field) {
                insns_[f.idx].imm = static_cast<int32_t>(disp);
            } else {
                if (disp < INT16_MIN || disp > INT16_MAX)
                    return Error{loc(f.line, f.col), "jump to label '" + f.label + "' does not fit in 16 bits"};
                insns_[f.idx].off = static_cast<int16_t>(disp);
            }
        }
        return std::move(insns_);
    }

private:
    std::string loc(size_t line, size_t col) const {
        return std::string(path_) + ":" + std::to_string(line) + ":" + std::to_string(col + 1);
    }

    void emit(Insn in) { insns_.push_back(in); }

    void parse_line(std::string_view line, size_t line_no) {
        if (size_t h = line.find('#'); h != std::string_view::npos) line = line.substr(0, h);
        size_t p = 0;
        while (p < line.size() && std::isspace(static_cast<unsigned char>(line[p]))) ++p;
        if (p >= line.size()) return;
        size_t e = p;
        while (e < line.size() && !std::isspace(static_cast<unsigned char>(line[e]))) ++e;
        std::string mn(line.substr(p, e - p));
        const size_t mn_col = p;
        if (mn.size() > 1 && mn.back() == ':') {  // label
            std::string label = mn.substr(0, mn.size() - 1);
            if (labels_.count(label)) fail(mn_col, "label '" + label + "' defined twice");
            labels_[label] = insns_.size();
            if (!trim(line.substr(e)).empty()) fail(e, "unexpected text after label '" + label + "'");
            return;
        }
        // Operands: comma-separated; "lock" and "call" also use blank-separated words.
        std::vector<Operand> ops;
        std::string_view rest = line.substr(e);
        size_t base = e;
        while (true) {
            size_t q = 0;
            while (q < rest.size() && std::isspace(static_cast<unsigned char>(rest[q]))) ++q;
            if (q >= rest.size()) break;
            size_t end = rest.find(',', q);
            const bool last = end == std::string_view::npos;
            if (last) end = rest.size();
            std::string_view tok = trim(rest.substr(q, end - q));
            // Blank-separated words inside one comma field ("lock fetch add [..]", "call local f").
            size_t w = 0;
            while (w < tok.size()) {
                size_t we = w;
                if (tok[w] == '[') {
                    we = tok.find(']', w);
                    we = we == std::string_view::npos ? tok.size() : we + 1;
                } else {
                    while (we < tok.size() && !std::isspace(static_cast<unsigned char>(tok[we]))) ++we;
                }
                ops.push_back(Operand{std::string(tok.substr(w, we - w)), base + q + w});
                w = we;
                while (w < tok.size() && std::isspace(static_cast<unsigned char>(tok[w]))) ++w;
            }
            if (last) break;
            base += end + 1;
            rest = rest.substr(end + 1);
        }
        instruction(mn, mn_col, ops, line_no);
    }

    void need(const std::string& mn, size_t col, const std::vector<Operand>& ops, size_t n) {
        if (ops.size() != n)
            fail(col, "'" + mn + "' takes " + std::to_string(n) + " operand" + (n == 1 ? "" : "s") + ", got " +
                          std::to_string(ops.size()));
    }

    // A jump target: +N / -N or a label (resolved later).
    int32_t target(const Operand& o, bool imm_field, size_t line_no) {
        if (!o.text.empty() && (o.text[0] == '+' || o.text[0] == '-')) {
            if (imm_field) {
                auto n = parse_num(o.text);
                if (!n || n->v < INT32_MIN || n->v > INT32_MAX) fail(o.col, "offset " + o.text + " does not fit in 32 bits");
                return static_cast<int32_t>(n->v);
            }
            return off16(o.text, o.col);
        }
        if (o.text.empty() || !(std::isalpha(static_cast<unsigned char>(o.text[0])) || o.text[0] == '_'))
            fail(o.col, "expected a jump target (+N, -N or a label), found '" + o.text + "'");
        fixups_.push_back(Fixup{insns_.size(), imm_field, o.text, line_no, o.col});
        return 0;
    }

    void instruction(std::string mn, size_t col, const std::vector<Operand>& ops, size_t line_no) {
        static const std::map<std::string, uint8_t> kAlu = {
            {"add", BPF_ADD}, {"sub", BPF_SUB}, {"mul", BPF_MUL}, {"div", BPF_DIV}, {"sdiv", BPF_DIV},
            {"or", BPF_OR},   {"and", BPF_AND}, {"lsh", BPF_LSH}, {"rsh", BPF_RSH}, {"mod", BPF_MOD},
            {"smod", BPF_MOD}, {"xor", BPF_XOR}, {"mov", BPF_MOV}, {"arsh", BPF_ARSH},
        };
        static const std::map<std::string, uint8_t> kJmp = {
            {"jeq", BPF_JEQ},   {"jgt", BPF_JGT},   {"jge", BPF_JGE}, {"jset", BPF_JSET},
            {"jne", BPF_JNE},   {"jsgt", BPF_JSGT}, {"jsge", BPF_JSGE}, {"jlt", BPF_JLT},
            {"jle", BPF_JLE},   {"jslt", BPF_JSLT}, {"jsle", BPF_JSLE},
        };
        static const std::map<std::string, uint8_t> kSize = {{"b", BPF_B}, {"h", BPF_H}, {"w", BPF_W}, {"dw", BPF_DW}};
        auto strip = [](const std::string& m, const char* sfx) -> std::optional<std::string> {
            const std::string s(sfx);
            if (m.size() > s.size() && m.compare(m.size() - s.size(), s.size(), s) == 0) return m.substr(0, m.size() - s.size());
            return std::nullopt;
        };
        // ALU: op, op32, op64
        {
            std::string base = mn;
            uint8_t cls = BPF_ALU64;
            if (auto b = strip(mn, "32")) base = *b, cls = BPF_ALU;
            else if (auto b64 = strip(mn, "64")) base = *b64;
            if (auto it = kAlu.find(base); it != kAlu.end()) {
                need(mn, col, ops, 2);
                const int16_t off = (base == "sdiv" || base == "smod") ? 1 : 0;
                const uint8_t dst = reg(ops[0]);
                if (is_reg(ops[1])) return emit(make(cls | it->second | BPF_X, dst, reg(ops[1]), off, 0));
                return emit(make(cls | it->second | BPF_K, dst, 0, off, imm32(ops[1])));
            }
            if (base == "neg") {
                need(mn, col, ops, 1);
                return emit(make(cls | BPF_NEG | BPF_K, reg(ops[0]), 0, 0, 0));
            }
        }
        // movsx<from><to>: movsx832, movsx1632, movsx864, movsx1664, movsx3264
        if (mn.rfind("movsx", 0) == 0) {
            static const std::map<std::string, std::pair<uint8_t, int16_t>> kMovsx = {
                {"movsx832", {BPF_ALU, 8}},    {"movsx1632", {BPF_ALU, 16}}, {"movsx864", {BPF_ALU64, 8}},
                {"movsx1664", {BPF_ALU64, 16}}, {"movsx3264", {BPF_ALU64, 32}},
            };
            auto it = kMovsx.find(mn);
            if (it == kMovsx.end()) fail(col, "unknown mnemonic '" + mn + "'");
            need(mn, col, ops, 2);
            return emit(make(it->second.first | BPF_MOV | BPF_X, reg(ops[0]), reg(ops[1]), it->second.second, 0));
        }
        for (const char* e : {"le", "be", "swap", "bswap"}) {
            if (auto w = mn.rfind(e, 0) == 0 ? std::optional<std::string>(mn.substr(std::string(e).size())) : std::nullopt;
                w && (*w == "16" || *w == "32" || *w == "64")) {
                need(mn, col, ops, 1);
                const std::string_view ev(e);
                const uint8_t code = ev == "le"   ? (BPF_ALU | BPF_END | BPF_TO_LE)
                                     : ev == "be" ? (BPF_ALU | BPF_END | BPF_TO_BE)
                                                  : (BPF_ALU64 | BPF_END | BPF_K);
                return emit(make(code, reg(ops[0]), 0, 0, std::stoi(*w)));
            }
        }
        if (mn == "lddw") {
            need(mn, col, ops, 2);
            const uint8_t dst = reg(ops[0]);
            const uint64_t v = imm64(ops[1]);
            emit(ldimm64_lo(dst, 0, static_cast<int32_t>(static_cast<uint32_t>(v))));
            return emit(ldimm64_hi(static_cast<int32_t>(static_cast<uint32_t>(v >> 32))));
        }
        for (const char* pre : {"ldxs", "ldx", "stx", "st"}) {
            const std::string p(pre);
            if (mn.rfind(p, 0) != 0) continue;
            auto sz = kSize.find(mn.substr(p.size()));
            if (sz == kSize.end()) continue;
            if (p == "ldxs" && sz->second == BPF_DW) continue;
            need(mn, col, ops, 2);
            if (p == "ldx" || p == "ldxs") {
                const uint8_t dst = reg(ops[0]);
                Mem m = mem(ops[1]);
                return emit(make(BPF_LDX | (p == "ldxs" ? BPF_MEMSX : BPF_MEM) | sz->second, dst, m.reg, m.off, 0));
            }
            Mem m = mem(ops[0]);
            if (p == "stx") return emit(make(BPF_STX | BPF_MEM | sz->second, m.reg, reg(ops[1]), m.off, 0));
            return emit(make(BPF_ST | BPF_MEM | sz->second, m.reg, 0, m.off, imm32(ops[1])));
        }
        if (mn == "ja") {
            need(mn, col, ops, 1);
            return emit(ja(static_cast<int16_t>(target(ops[0], false, line_no))));
        }
        if (mn == "ja32") {  // gotol: JMP32 | JA, displacement in imm
            need(mn, col, ops, 1);
            return emit(gotol(target(ops[0], true, line_no)));
        }
        {
            std::string base = mn;
            uint8_t cls = BPF_JMP;
            if (auto b = strip(mn, "32")) base = *b, cls = BPF_JMP32;
            if (auto it = kJmp.find(base); it != kJmp.end()) {
                need(mn, col, ops, 3);
                const uint8_t dst = reg(ops[0]);
                Insn in = is_reg(ops[1]) ? make(cls | it->second | BPF_X, dst, reg(ops[1]), 0, 0)
                                         : make(cls | it->second | BPF_K, dst, 0, 0, imm32(ops[1]));
                in.off = static_cast<int16_t>(target(ops[2], false, line_no));
                return emit(in);
            }
        }
        if (mn == "exit") {
            need(mn, col, ops, 0);
            if (!first_exit_) first_exit_ = insns_.size();
            return emit(exit_insn());
        }
        if (mn == "call") {
            if (ops.size() == 1 && is_reg(ops[0]))  // callx: JMP | CALL | X, target register in dst
                return emit(make(BPF_JMP | BPF_CALL | BPF_X, reg(ops[0]), 0, 0, 0));
            if (ops.size() == 1) return emit(call_helper(imm32(ops[0])));
            if (ops.size() != 2) fail(col, "'call' takes 1 or 2 operands, got " + std::to_string(ops.size()));
            const std::string& mode = ops[0].text;
            if (mode == "helper") return emit(call_helper(imm32(ops[1])));
            if (mode == "local") return emit(call_pseudo(target(ops[1], true, line_no)));
            if (mode == "runtime") return emit(call_kfunc(imm32(ops[1])));
            fail(ops[0].col, "unknown call mode '" + mode + "' (helper, local or runtime)");
        }
        if (mn == "lock") {
            // lock [fetch] <op>[32] [%rN+off], %rM
            size_t i = 0;
            bool fetch = false;
            if (i < ops.size() && ops[i].text == "fetch") fetch = true, ++i;
            if (ops.size() != i + 3) fail(col, "invalid number of operands for lock (lock [fetch] <op> [%rN+off], %rM)");
            std::string op = ops[i].text;
            uint8_t sz = BPF_DW;
            if (auto b = strip(op, "32")) op = *b, sz = BPF_W;
            int32_t imm;
            if (op == "add") imm = BPF_ADD;
            else if (op == "and") imm = BPF_AND;
            else if (op == "or") imm = BPF_OR;
            else if (op == "xor") imm = BPF_XOR;
            else if (op == "xchg") imm = BPF_XCHG;
            else if (op == "cmpxchg") imm = BPF_CMPXCHG;
            else fail(ops[i].col, "unknown atomic operation '" + ops[i].text + "'");
            if (fetch) {
                if (imm == BPF_XCHG || imm == BPF_CMPXCHG) fail(ops[0].col, "'fetch' is implied by " + op);
                imm |= BPF_FETCH;
            }
            Mem m = mem(ops[i + 1]);
            return emit(make(BPF_STX | BPF_ATOMIC | sz, m.reg, reg(ops[i + 2]), m.off, imm));
        }
        fail(col, "unknown mnemonic '" + mn + "'");
    }

    std::string_view path_;
    int first_line_;
    std::vector<Insn> insns_;
    std::map<std::string, size_t> labels_;
    std::vector<Fixup> fixups_;
    std::optional<size_t> first_exit_;
};

}  // namespace

Expected<std::vector<isa::Insn>> ubpf_assemble(std::string_view text, std::string_view path, int first_line) {
    UbpfAssembler a(path, first_line);
    return a.run(text);
}

}  // namespace patchfuzz::conformance
