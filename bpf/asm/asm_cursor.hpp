#pragma once
// The assembler's lexical layer, private to bpf/asm: a cursor over one line (blanks, registers,
// numbers, names, punctuation) whose errors carry their column (LineError), the range checks of
// numbers with assemble.hpp's messages, and the memory operand forms "(u32 *)" and "(rN +off)".
// assemble.cpp parses statements with it.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::assembly::detail {

using namespace patchfuzz::isa;
using i128 = __int128;

struct LineError {
    size_t col;  // 0-based
    std::string message;
};

struct Number {
    i128 value = 0;  // exact; |value| < 2^64 unless `huge`
    bool hex = false;
    bool huge = false;  // more than 64 bits of digits
    size_t col = 0;
    std::string text;
};

// Quoted input text in a message: control and non-ASCII bytes as \xHH, so a stray NUL or escape
// byte in a file cannot garble the terminal or cut the message short.
inline std::string printable(std::string_view t) {
    static const char kHex[] = "0123456789abcdef";
    std::string o;
    for (char ch : t) {
        const auto u = static_cast<unsigned char>(ch);
        if (u < 0x20 || u >= 0x7f) {
            o += "\\x";
            o += kHex[u >> 4];
            o += kHex[u & 0xf];
        } else {
            o += ch;
        }
    }
    return o;
}

struct Reg {
    uint8_t num = 0;
    bool wide = true;  // rN (true) or wN (false)
    size_t col = 0;
};

class Cursor {
public:
    explicit Cursor(std::string_view s) : s_(s) {}
    void ws() {
        while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
    }
    [[nodiscard]] bool done() {
        ws();
        return p_ >= s_.size();
    }
    [[nodiscard]] size_t pos() {
        ws();
        return p_;
    }
    void set_pos(size_t p) { p_ = p; }
    [[nodiscard]] std::string_view rest() {
        ws();
        return s_.substr(p_);
    }
    bool accept(std::string_view lit) {
        ws();
        if (s_.substr(p_).substr(0, lit.size()) == lit) {
            p_ += lit.size();
            return true;
        }
        return false;
    }
    // Like accept, but only a whole word ("exit" does not match "exits").
    bool accept_word(std::string_view w) {
        ws();
        if (s_.substr(p_).substr(0, w.size()) != w) return false;
        if (p_ + w.size() < s_.size() && ident_char(s_[p_ + w.size()])) return false;
        p_ += w.size();
        return true;
    }
    [[nodiscard]] bool peek_sign() {
        ws();
        return p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-');
    }
    void expect(std::string_view lit) {
        if (!accept(lit)) fail("expected '" + std::string(lit) + "'" + found());
    }
    std::string found() {
        ws();
        if (p_ >= s_.size()) return ", found end of line";
        size_t e = p_;
        while (e < s_.size() && e - p_ < 20 && s_[e] != ' ' && s_[e] != '\t') ++e;
        return ", found '" + printable(s_.substr(p_, e - p_)) + "'";
    }
    void end() {
        if (!done()) fail("unexpected trailing text '" + printable(rest()) + "'");
    }
    [[noreturn]] void fail(std::string msg) {
        ws();
        throw LineError{p_, std::move(msg)};
    }
    [[noreturn]] static void fail_at(size_t col, std::string msg) { throw LineError{col, std::move(msg)}; }

    static bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
    static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
    // An identifier (labels, mnemonics); "kernel-function" is accepted as one word too.
    std::optional<std::string> ident() {
        ws();
        if (p_ >= s_.size() || !ident_start(s_[p_])) return std::nullopt;
        size_t e = p_;
        while (e < s_.size() && (ident_char(s_[e]) || (s_[e] == '-' && e + 1 < s_.size() && ident_start(s_[e + 1])))) ++e;
        std::string r(s_.substr(p_, e - p_));
        p_ = e;
        return r;
    }
    std::optional<Reg> try_reg() {
        ws();
        if (p_ + 1 < s_.size() && (s_[p_] == 'r' || s_[p_] == 'w') && std::isdigit(static_cast<unsigned char>(s_[p_ + 1]))) {
            size_t e = p_ + 1;
            unsigned v = 0;
            while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
                if (v < 100000) v = v * 10 + unsigned(s_[e] - '0');
                ++e;
            }
            if (e < s_.size() && ident_char(s_[e])) return std::nullopt;  // "r1x" is a name
            Reg r;
            r.col = p_;
            r.wide = s_[p_] == 'r';
            if (v > kRegAx) fail_at(p_, "register " + std::string(s_.substr(p_, e - p_)) + " out of range");
            r.num = static_cast<uint8_t>(v);
            p_ = e;
            return r;
        }
        return std::nullopt;
    }
    Reg reg() {
        auto r = try_reg();
        if (!r) fail("expected a register" + found());
        return *r;
    }
    Reg reg_w(bool wide) {
        Reg r = reg();
        if (r.wide != wide)
            fail_at(r.col, std::string("expected a ") + (wide ? "64-bit register rN" : "32-bit register wN"));
        return r;
    }
    // [+-]?(0x[0-9a-fA-F]+|[0-9]+)
    std::optional<Number> try_number() {
        ws();
        size_t q = p_;
        Number n;
        n.col = p_;
        bool neg = false;
        if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) neg = s_[q++] == '-';
        if (q >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[q]))) return std::nullopt;
        unsigned __int128 v = 0;
        const unsigned __int128 cap = (unsigned __int128)1 << 80;
        if (s_[q] == '0' && q + 1 < s_.size() && (s_[q + 1] == 'x' || s_[q + 1] == 'X')) {
            n.hex = true;
            q += 2;
            const size_t start = q;
            while (q < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[q]))) {
                const int c = std::tolower(static_cast<unsigned char>(s_[q]));
                if (v < cap) v = v * 16 + unsigned(c <= '9' ? c - '0' : c - 'a' + 10);
                ++q;
            }
            if (q == start) fail_at(n.col, "malformed number '" + std::string(s_.substr(n.col, q - n.col)) + "'");
        } else {
            while (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
                if (v < cap) v = v * 10 + unsigned(s_[q] - '0');
                ++q;
            }
        }
        if (q < s_.size() && ident_char(s_[q])) {
            size_t e = q;
            while (e < s_.size() && ident_char(s_[e])) ++e;
            fail_at(n.col, "malformed number '" + std::string(s_.substr(n.col, e - n.col)) + "'");
        }
        n.huge = v >= cap;
        n.value = neg ? -static_cast<i128>(v) : static_cast<i128>(v);
        n.text = std::string(s_.substr(n.col, q - n.col));
        p_ = q;
        return n;
    }
    Number number() {
        auto n = try_number();
        if (!n) fail("expected a number" + found());
        return *n;
    }

private:
    std::string_view s_;
    size_t p_ = 0;
};

// Range checks with the exact messages of assemble.hpp.
inline int32_t imm32(const Number& n) {
    if (n.huge || n.value < INT32_MIN || n.value > UINT32_MAX)
        Cursor::fail_at(n.col, "immediate " + n.text + " does not fit in 32 bits");
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(n.value)));
}
inline int16_t off16(const Number& n, const char* what = "offset") {
    if (n.huge || n.value < INT16_MIN || n.value > INT16_MAX)
        Cursor::fail_at(n.col, std::string(what) + " " + n.text + " does not fit in 16 bits");
    return static_cast<int16_t>(n.value);
}
inline int32_t s32(const Number& n, const char* what) {
    if (n.huge || n.value < INT32_MIN || n.value > INT32_MAX)
        Cursor::fail_at(n.col, std::string(what) + " " + n.text + " does not fit in 32 bits");
    return static_cast<int32_t>(n.value);
}
inline uint32_t u32(const Number& n, const char* what) {
    if (n.huge || n.value < 0 || n.value > UINT32_MAX)
        Cursor::fail_at(n.col, std::string(what) + " " + n.text + " does not fit in 32 bits (unsigned)");
    return static_cast<uint32_t>(n.value);
}

inline uint8_t size_code(std::string_view t) {
    if (t == "u8" || t == "s8") return BPF_B;
    if (t == "u16" || t == "s16") return BPF_H;
    if (t == "u32" || t == "s32") return BPF_W;
    return BPF_DW;
}

// "(u32 *)": returns size bits and whether the type is signed.
struct MemType {
    uint8_t size;
    bool sign;
    size_t col;
};
inline MemType mem_type(Cursor& c) {
    c.expect("(");
    const size_t col = c.pos();
    auto t = c.ident();
    if (!t || !(*t == "u8" || *t == "u16" || *t == "u32" || *t == "u64" || *t == "s8" || *t == "s16" ||
                *t == "s32" || *t == "s64"))
        Cursor::fail_at(col, "expected a size u8/u16/u32/u64 (or s8/s16/s32 for sign-extending loads)");
    c.expect("*");
    c.expect(")");
    return MemType{size_code(*t), (*t)[0] == 's', col};
}
// "(rN +off)" or "(rN)": base register and offset.
struct MemRef {
    Reg base;
    int16_t off;
};
inline MemRef mem_ref(Cursor& c) {
    c.expect("(");
    MemRef m{c.reg_w(true), 0};
    if (c.peek_sign()) m.off = off16(c.number());
    c.expect(")");
    return m;
}

}  // namespace patchfuzz::assembly::detail
