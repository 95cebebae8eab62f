#pragma once
// The `.case` reader's parser, private to harness/case: the tokenizer (bare and "quoted" tokens,
// key=value, located numbers and hex bytes) and one method per section. case_parse.cpp holds the
// tokenizer, the section split and the program/options/input/expect sections;
// case_parse_tables.cpp the side-table sections and the explicit patches.
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"
#include "harness/case/case_file.hpp"

namespace patchfuzz::harness::case_format {

struct Tok {
    std::string text;                   // escapes resolved, quotes removed
    size_t col = 0;                     // 1-based
    bool quoted = false;                // the whole token or its value was quoted
    size_t eq = std::string::npos;      // the key/value '=' (outside quotes), if any
};

struct Line {
    size_t no = 0;  // 1-based
    std::string_view text;
};

class Parser {
public:
    Parser(std::string_view text, std::string path) : text_(text), path_(std::move(path)) {}
    Expected<Case> run();

private:
    struct Section {
        std::string name;
        Line header;
        std::vector<Line> body;
    };

    [[nodiscard]] Error err(size_t line, const std::string& msg) const { return Error{path_ + ":" + std::to_string(line), msg}; }
    [[nodiscard]] Error err(size_t line, size_t col, const std::string& msg) const {
        return Error{path_ + ":" + std::to_string(line) + ":" + std::to_string(col), msg};
    }

    Expected<std::vector<Tok>> tokens(const Line& l, size_t from = 0) const;
    template <class T>
    Expected<T> num(const Line& l, const Tok& t, std::string_view text, std::string_view what) const;
    // key=value split; value empty and no '=' -> flag
    static std::pair<std::string_view, std::optional<std::string_view>> kv(const Tok& t) {
        std::string_view s = t.text;
        if (t.eq == std::string::npos) return {s, std::nullopt};
        return {s.substr(0, t.eq), s.substr(t.eq + 1)};
    }
    Expected<std::vector<uint8_t>> hexbytes(const Line& l, const Tok& t, std::string_view s) const;
    Expected<std::vector<isa::Insn>> assemble_lines(const std::vector<Line>& lines) const;

    Status program(const Section& s, Case& c) const;
    Status maps(const Section& s, Case& c) const;
    Status kfuncs(const Section& s, Case& c) const;
    Status aux(const Section& s, Case& c) const;
    template <class R>
    Status records(const Section& s, std::vector<R>& out) const;
    Status subprogs(const Section& s, Case& c) const;
    Status linfo(const Section& s, Case& c) const;
    Status finfo(const Section& s, Case& c) const;
    Status insn_arrays(const Section& s, Case& c) const;
    Status pokes(const Section& s, Case& c) const;
    Status patches(const Section& s, Case& c) const;
    Status options(const Section& s, Case& c) const;
    Status input(const Section& s, Case& c) const;
    Status expect(const Section& s, Case& c) const;

    std::string_view text_;
    std::string path_;
};

inline bool blank_or_comment(std::string_view t) {
    size_t i = t.find_first_not_of(" \t");
    return i == std::string_view::npos || t[i] == '#';
}

template <class T>
Expected<T> Parser::num(const Line& l, const Tok& t, std::string_view s, std::string_view what) const {
    // The value's column: inside the token when it is the value part of key=value.
    const size_t col = t.col + (s.data() >= t.text.data() && s.data() <= t.text.data() + t.text.size()
                                    ? static_cast<size_t>(s.data() - t.text.data())
                                    : 0);
    std::string_view v = s;
    bool neg = false;
    if (!v.empty() && v[0] == '-') {
        if constexpr (std::is_unsigned_v<T>) return err(l.no, col, std::string(what) + " must not be negative");
        neg = true;
        v.remove_prefix(1);
    }
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        base = 16;
        v.remove_prefix(2);
    }
    uint64_t u = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), u, base);
    // All digits but more than 64 bits: a range error, not "expected a number".
    if (!v.empty() && ec == std::errc::result_out_of_range && p == v.data() + v.size())
        return err(l.no, col, std::string(what) + " " + std::string(s) + " is out of range");
    if (v.empty() || ec != std::errc() || p != v.data() + v.size())
        return err(l.no, col, "expected a number for " + std::string(what) + ", got '" + std::string(s) + "'");
    if constexpr (std::is_unsigned_v<T>) {
        if (u > std::numeric_limits<T>::max())
            return err(l.no, col, std::string(what) + " " + std::string(s) + " is out of range");
        return static_cast<T>(u);
    } else {
        using U = std::make_unsigned_t<T>;
        const U lim = neg ? static_cast<U>(std::numeric_limits<T>::max()) + 1 : static_cast<U>(std::numeric_limits<T>::max());
        if (u > lim) return err(l.no, col, std::string(what) + " " + std::string(s) + " is out of range");
        return neg ? static_cast<T>(0 - static_cast<U>(u)) : static_cast<T>(u);
    }
}

}  // namespace patchfuzz::harness::case_format
