#include "harness/case/case_file.hpp"

#include "bpf/util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <limits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/asm/assemble.hpp"
#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::harness {
namespace {

// ---- small vocabularies ---------------------------------------------------------------------------

constexpr std::string_view kSections[] = {"program", "maps",  "kfuncs",  "aux",   "subprogs", "linfo",  "finfo",
                                          "insn-arrays", "pokes", "patches", "options", "input", "expect"};

constexpr std::pair<kfunc::Kind, std::string_view> kKfuncKinds[] = {
    {kfunc::Kind::Unknown, "unknown"},
    {kfunc::Kind::IterNumNew, "iter_num_new"},
    {kfunc::Kind::IterNumNext, "iter_num_next"},
    {kfunc::Kind::IterNumDestroy, "iter_num_destroy"},
    {kfunc::Kind::CastToKernCtx, "cast_to_kern_ctx"},
    {kfunc::Kind::RdonlyCast, "rdonly_cast"},
};

constexpr std::pair<PtrType, std::string_view> kPtrTypes[] = {
    {PtrType::None, "none"},     {PtrType::Ctx, "ctx"}, {PtrType::Stack, "stack"}, {PtrType::MapValue, "map_value"},
    {PtrType::Packet, "packet"}, {PtrType::Btf, "btf"}, {PtrType::Arena, "arena"},
};

constexpr std::pair<passes::IterInline, std::string_view> kIterInline[] = {
    {passes::IterInline::V4, "v4"}, {passes::IterInline::V1, "v1"}, {passes::IterInline::V3, "v3"}, {passes::IterInline::Off, "off"}};

constexpr std::pair<passes::KernelProfile, std::string_view> kKernels[] = {
    {passes::KernelProfile::BpfNext, "bpf-next"}, {passes::KernelProfile::K6_1, "6.1"}, {passes::KernelProfile::K6_12, "6.12"},
    {passes::KernelProfile::K7_2, "7.2"},         {passes::KernelProfile::K7_3, "7.3"}};

constexpr std::pair<passes::InlineFix, std::string_view> kInlineFix[] = {{passes::InlineFix::Kernel, "buggy"},
                                                                          {passes::InlineFix::Fixed, "fixed"}};

constexpr std::pair<TraceAttach, std::string_view> kTraceAttach[] = {
    {TraceAttach::Other, "other"},         {TraceAttach::RawTp, "raw_tp"},
    {TraceAttach::Fentry, "fentry"},       {TraceAttach::Fexit, "fexit"},
    {TraceAttach::ModifyReturn, "fmod_ret"}, {TraceAttach::Fsession, "fsession"},
    {TraceAttach::FentryMulti, "fentry_multi"}, {TraceAttach::FexitMulti, "fexit_multi"},
    {TraceAttach::FsessionMulti, "fsession_multi"}};

constexpr uint64_t kDefaultStepBudget = interp::ExecInput{}.step_budget;
// The most filler slots one patch may ask for (the kernel's instruction limit, 1M, rounded up).
constexpr uint32_t kMaxFill = 1u << 20;

template <class E, size_t N>
std::string_view name_in(const std::pair<E, std::string_view> (&t)[N], E v) {
    for (const auto& [e, n] : t)
        if (e == v) return n;
    return {};
}
template <class E, size_t N>
std::optional<E> value_in(const std::pair<E, std::string_view> (&t)[N], std::string_view n) {
    for (const auto& [e, name] : t)
        if (name == n) return e;
    return std::nullopt;
}

// ---- writing helpers ------------------------------------------------------------------------------

bool plain_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+' || c == ':' || c == '/' ||
              c == '@' || c == '$'))
            return false;
    return true;
}

// A name as one token: bare when it is plain, else "quoted" with \" \\ \xHH escapes.
std::string quote(std::string_view s) {
    if (plain_token(s)) return std::string(s);
    std::string o = "\"";
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (u < 0x20 || u >= 0x7f) {
            char b[5];
            std::snprintf(b, sizeof b, "\\x%02x", u);
            o += b;
        } else {
            o += c;
        }
    }
    return o + "\"";
}

std::string join(const std::vector<std::string>& v, char sep) {
    std::string o;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) o += sep;
        o += v[i];
    }
    return o;
}

// ---- parsing helpers ------------------------------------------------------------------------------

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

bool blank_or_comment(std::string_view t) {
    size_t i = t.find_first_not_of(" \t");
    return i == std::string_view::npos || t[i] == '#';
}

Expected<std::vector<Tok>> Parser::tokens(const Line& l, size_t from) const {
    std::vector<Tok> out;
    const std::string_view s = l.text;
    size_t i = from;
    while (i < s.size()) {
        if (s[i] == ' ' || s[i] == '\t') {
            ++i;
            continue;
        }
        if (s[i] == '#') break;  // trailing comment
        Tok t;
        t.col = i + 1;
        // A token is bare text up to a blank; a '"' at its start or right after its first '='
        // opens a quoted part (escapes \" \\ \xHH) that may hold blanks.
        while (i < s.size() && s[i] != ' ' && s[i] != '\t') {
            if (s[i] == '"' && (t.text.empty() || (t.eq != std::string::npos && t.eq + 1 == t.text.size())) && !t.quoted) {
                t.quoted = true;
                const size_t open = i++;
                bool closed = false;
                while (i < s.size()) {
                    const char ch = s[i];
                    if (ch == '"') {
                        closed = true;
                        ++i;
                        break;
                    }
                    if (ch == '\\') {
                        const char e = i + 1 < s.size() ? s[i + 1] : '\0';
                        if (e == '"' || e == '\\') {
                            t.text += e;
                            i += 2;
                        } else if (e == 'x' && i + 3 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 2])) &&
                                   std::isxdigit(static_cast<unsigned char>(s[i + 3]))) {
                            t.text += static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16));
                            i += 4;
                        } else {
                            return err(l.no, i + 1, "bad escape in quoted name");
                        }
                        continue;
                    }
                    t.text += ch;
                    ++i;
                }
                if (!closed) return err(l.no, open + 1, "unterminated quoted name");
                continue;
            }
            // A control character in bare text would not survive write_case(): a trailing '\r'
            // is read as a CRLF line end. Such bytes are written \xHH inside quotes instead.
            if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(s[i]));
                return err(l.no, i + 1, std::string("control character ") + hex + " outside quotes");
            }
            if (s[i] == '=' && t.eq == std::string::npos && !t.quoted) t.eq = t.text.size();
            t.text += s[i++];
        }
        out.push_back(std::move(t));
    }
    return out;
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

Expected<std::vector<uint8_t>> Parser::hexbytes(const Line& l, const Tok& t, std::string_view s) const {
    const size_t col = t.col + (s.data() >= t.text.data() && s.data() <= t.text.data() + t.text.size()
                                    ? static_cast<size_t>(s.data() - t.text.data())
                                    : 0);
    if (s.size() % 2) return err(l.no, col, "odd number of hex digits");
    std::vector<uint8_t> out;
    out.reserve(s.size() / 2);
    for (size_t i = 0; i < s.size(); i += 2) {
        uint8_t b = 0;
        auto [p, ec] = std::from_chars(s.data() + i, s.data() + i + 2, b, 16);
        if (ec != std::errc() || p != s.data() + i + 2) return err(l.no, col + i, "bad hex byte '" + std::string(s.substr(i, 2)) + "'");
        out.push_back(b);
    }
    return out;
}

// Assembles lines with their file line numbers: blank lines pad the text so the assembler's
// "file:line:col" already points into the .case file.
Expected<std::vector<isa::Insn>> Parser::assemble_lines(const std::vector<Line>& lines) const {
    std::string text;
    size_t at = 1;
    for (const auto& l : lines) {
        while (at < l.no) {
            text += '\n';
            ++at;
        }
        text.append(l.text);
        text += '\n';
        ++at;
    }
    return assembly::assemble(text, path_);
}

Expected<Case> Parser::run() {
    Case c;
    c.path = path_;
    std::vector<Line> lines;
    size_t start = 0, no = 0;
    while (start < text_.size()) {
        size_t nl = text_.find('\n', start);
        if (nl == std::string_view::npos) nl = text_.size();
        std::string_view t = text_.substr(start, nl - start);
        if (!t.empty() && t.back() == '\r') t.remove_suffix(1);
        lines.push_back(Line{++no, t});
        start = nl + 1;
    }
    std::vector<Section> sections;
    std::map<std::string, size_t> first_at;
    for (const auto& l : lines) {
        if (l.text.rfind("--", 0) == 0) {
            auto toks = tokens(l, 2);
            if (!toks) return toks.error();
            if (toks->empty() || l.text.size() < 3 || l.text[2] != ' ')
                return err(l.no, "unknown section '" + std::string(l.text) + "'");
            const std::string name = (*toks)[0].text;
            bool known = false;
            for (auto k : kSections) known |= (k == name);
            if (!known) return err(l.no, "unknown section '" + std::string(l.text) + "'");
            if (name != "input") {
                if (auto it = first_at.find(name); it != first_at.end())
                    return err(l.no, "duplicate section '-- " + name + "' (first at line " + std::to_string(it->second) + ")");
                first_at[name] = l.no;
            }
            if (name != "program" && toks->size() > 1)
                return err(l.no, (*toks)[1].col, "section '-- " + name + "' takes no arguments");
            sections.push_back(Section{name, l, {}});
            continue;
        }
        if (sections.empty()) {
            if (l.text.empty()) continue;
            if (l.text[0] != '#') return err(l.no, 1, "expected a '# comment' or a section such as '-- program'");
            std::string_view cm = l.text.substr(1);
            if (!cm.empty() && cm[0] == ' ') cm.remove_prefix(1);
            // A lone '\r' inside a comment reads as a blank, as write_case() writes it: the
            // comment then survives a write/read round trip unchanged.
            std::string comment(cm);
            for (char& ch : comment)
                if (ch == '\r') ch = ' ';
            c.comments.push_back(std::move(comment));
            continue;
        }
        sections.back().body.push_back(l);
    }
    if (!first_at.count("program")) return err(lines.empty() ? 1 : lines.back().no, "missing section '-- program'");
    // The program first: every other section refers to its length.
    for (const auto& s : sections)
        if (s.name == "program")
            if (auto st = program(s, c); !st) return st.error();
    c.options.arch = arch_x86_64();
    for (const auto& s : sections) {
        Status st;
        if (s.name == "maps") st = maps(s, c);
        else if (s.name == "kfuncs") st = kfuncs(s, c);
        else if (s.name == "aux") st = aux(s, c);
        else if (s.name == "subprogs") st = subprogs(s, c);
        else if (s.name == "linfo") st = linfo(s, c);
        else if (s.name == "finfo") st = finfo(s, c);
        else if (s.name == "insn-arrays") st = insn_arrays(s, c);
        else if (s.name == "pokes") st = pokes(s, c);
        else if (s.name == "patches") st = patches(s, c);
        else if (s.name == "options") st = options(s, c);
        else if (s.name == "input") st = input(s, c);
        else if (s.name == "expect") st = expect(s, c);
        if (!st) return st.error();
    }
    return c;
}

Status Parser::program(const Section& s, Case& c) const {
    auto toks = tokens(s.header, 2);
    if (!toks) return toks.error();
    std::string name;
    uint32_t type = 0;
    TraceAttach attach = TraceAttach::Other;
    uint8_t attach_vlen = 0;
    for (size_t i = 1; i < toks->size(); ++i) {
        const Tok& t = (*toks)[i];
        auto [k, v] = kv(t);
        if (k == "name" && v) {
            name = std::string(*v);
        } else if (k == "type" && v) {
            auto pt = loader::prog_type_by_name(*v);
            if (!pt) return err(s.header.no, t.col + 5, "unknown program type '" + std::string(*v) + "'");
            type = *pt;
        } else if (k == "attach" && v) {
            auto at = value_in(kTraceAttach, *v);
            if (!at)
                return err(s.header.no, t.col + 7,
                           "unknown attach type '" + std::string(*v) +
                               "' (other, raw_tp, fentry, fexit, fmod_ret, fsession, fentry_multi, fexit_multi, fsession_multi)");
            attach = *at;
        } else if (k == "attach-vlen" && v) {
            auto n = num<uint8_t>(s.header, t, *v, "attach-vlen");
            if (!n) return n.error();
            attach_vlen = *n;
        } else {
            return err(s.header.no, t.col, "unknown program attribute '" + t.text + "' (name=, type=, attach=, attach-vlen=)");
        }
    }
    auto insns = assemble_lines(s.body);
    if (!insns) return insns.error();
    c.program = make_program(std::move(*insns));
    c.program.name = std::move(name);
    c.program.prog_type = type;
    c.program.attach = attach;
    c.program.attach_btf_vlen = attach_vlen;
    return {};
}

Status Parser::maps(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        if (toks->size() < 2) return err(l.no, 1, "expected 'INDEX NAME type=... key=... value=... max_entries=...'");
        auto idx = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "map index");
        if (!idx) return idx.error();
        if (*idx != c.program.maps.size())
            return err(l.no, 1, "map index " + std::to_string(*idx) + " out of order (expected " + std::to_string(c.program.maps.size()) + ")");
        MapDef m;
        m.name = (*toks)[1].text;
        for (size_t i = 2; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [k, v] = kv(t);
            Expected<uint32_t> n = 0u;
            if (k == "type" && v) {
                auto mt = loader::map_type_by_name(*v);
                if (!mt) return err(l.no, t.col + 5, "unknown map type '" + std::string(*v) + "'");
                m.type = *mt;
            } else if (k == "key" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "key size"))) return n.error();
                m.key_size = *n;
            } else if (k == "value" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "value size"))) return n.error();
                m.value_size = *n;
            } else if (k == "max_entries" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "max_entries"))) return n.error();
                m.max_entries = *n;
            } else if (k == "flags" && v) {
                if (!(n = num<uint32_t>(l, t, *v, "flags"))) return n.error();
                m.map_flags = *n;
            } else if (k == "bypass_spec_v1" && !v) {
                m.bypass_spec_v1 = true;
            } else if (k == "unpriv_array" && !v) {
                m.unpriv_array = true;
            } else {
                return err(l.no, t.col, "unknown map attribute '" + t.text + "'");
            }
        }
        c.program.maps.push_back(std::move(m));
    }
    return {};
}

Status Parser::kfuncs(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        if (toks->size() < 2) return err(l.no, 1, "expected 'BTF_ID NAME [kind=...] [off=N]'");
        auto id = num<int32_t>(l, (*toks)[0], (*toks)[0].text, "btf id");
        if (!id) return id.error();
        KfuncDesc k{.btf_id = *id, .name = (*toks)[1].text};
        if (auto info = kfunc::by_name(k.name)) k.kind = static_cast<uint32_t>(info->kind);
        for (size_t i = 2; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [key, v] = kv(t);
            if (key == "kind" && v) {
                if (auto kk = value_in(kKfuncKinds, *v)) {
                    k.kind = static_cast<uint32_t>(*kk);
                } else {
                    auto n = num<uint32_t>(l, t, *v, "kfunc kind");
                    if (!n) return err(l.no, t.col + 5, "unknown kfunc kind '" + std::string(*v) + "'");
                    k.kind = *n;
                }
            } else if (key == "off" && v) {
                auto n = num<int16_t>(l, t, *v, "kfunc offset");
                if (!n) return n.error();
                k.offset = *n;
            } else {
                return err(l.no, t.col, "unknown kfunc attribute '" + t.text + "'");
            }
        }
        c.program.kfuncs.push_back(std::move(k));
    }
    return {};
}

Status Parser::aux(const Section& s, Case& c) const {
    std::vector<size_t> set_at(c.program.aux.size(), 0);
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto idx = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "insn index");
        if (!idx) return idx.error();
        if (*idx >= c.program.aux.size())
            return err(l.no, 1, "aux for insn " + std::to_string(*idx) + " but the program has " + std::to_string(c.program.aux.size()) + " insns");
        if (set_at[*idx]) return err(l.no, 1, "aux for insn " + std::to_string(*idx) + " already given at line " + std::to_string(set_at[*idx]));
        set_at[*idx] = l.no;
        InsnAux& a = c.program.aux[*idx];
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            const auto kvp = kv(t);  // (not a structured binding: the lambdas below capture it)
            const std::string_view k = kvp.first;
            const std::optional<std::string_view>& v = kvp.second;
            if (!v) return err(l.no, t.col, "expected key=value, got '" + t.text + "'");
            auto u32 = [&](uint32_t& dst, const char* what) -> Status {
                auto n = num<uint32_t>(l, t, *v, what);
                if (!n) return n.error();
                dst = *n;
                return {};
            };
            auto flag = [&](bool& dst) -> Status {
                if (*v == "0") dst = false;
                else if (*v == "1") dst = true;
                else return err(l.no, t.col + k.size() + 1, "expected 0 or 1 for " + std::string(k));
                return {};
            };
            Status st;
            uint32_t tmp = 0;
            if (k == "orig") st = u32(a.orig_idx, "orig");
            else if (k == "seen") st = flag(a.seen);
            else if (k == "zext_dst") st = flag(a.zext_dst);
            else if (k == "needs_zext") st = flag(a.needs_zext);
            else if (k == "nospec") st = flag(a.nospec);
            else if (k == "nospec_result") st = flag(a.nospec_result);
            else if (k == "alu_state") {
                st = u32(tmp, "alu_state");
                if (st && tmp > 255) st = err(l.no, t.col, "alu_state " + std::to_string(tmp) + " is out of range");
                a.alu_state = static_cast<uint8_t>(tmp);
            } else if (k == "alu_limit") st = u32(a.alu_limit, "alu_limit");
            else if (k == "ptr") {
                auto p = value_in(kPtrTypes, *v);
                if (!p) st = err(l.no, t.col + 4, "unknown pointer type '" + std::string(*v) + "'");
                else a.ptr_type = *p;
            } else if (k == "ctx_field_size") {
                st = u32(tmp, "ctx_field_size");
                if (st && tmp > 255) st = err(l.no, t.col, "ctx_field_size " + std::to_string(tmp) + " is out of range");
                a.ctx_field_size = static_cast<uint8_t>(tmp);
            } else if (k == "map") {
                auto n = num<int32_t>(l, t, *v, "map");
                if (!n) st = n.error();
                else a.map_index = *n;
            } else if (k == "map_ptr_poisoned") st = flag(a.map_ptr_poisoned);
            else if (k == "map_key_poisoned") st = flag(a.map_key_poisoned);
            else if (k == "map_key") st = u32(a.map_key, "map_key");
            else if (k == "map_key_known") st = flag(a.map_key_known);
            else if (k == "loop_inline") st = flag(a.loop_fit_for_inline);
            else if (k == "loop_cb") st = u32(a.loop_callback_subprogno, "loop_cb");
            else if (k == "percpu_alloc_ptr") st = flag(a.call_with_percpu_alloc_ptr);
            else if (k == "arg_prog") {
                st = u32(tmp, "arg_prog");
                if (st && tmp > 255) st = err(l.no, t.col, "arg_prog " + std::to_string(tmp) + " is out of range");
                a.arg_prog = static_cast<uint8_t>(tmp);
            } else if (k == "indirect_target") st = flag(a.indirect_target);
            else st = err(l.no, t.col, "unknown aux field '" + std::string(k) + "'");
            if (!st) return st;
        }
    }
    return {};
}

Status Parser::subprogs(const Section& s, Case& c) const {
    c.program.subprogs.clear();
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto start = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "subprog start");
        if (!start) return start.error();
        SubprogInfo si{.start = *start};
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [k, v] = kv(t);
            Expected<uint32_t> n = 0u;
            if (v && (k == "stack" || k == "extra" || k == "linfo")) {
                if (!(n = num<uint32_t>(l, t, *v, std::string(k)))) return n.error();
                (k == "stack" ? si.stack_depth : k == "extra" ? si.stack_extra : si.linfo_idx) = *n;
            } else if (!v && k == "tail_call") si.has_tail_call = true;
            else if (!v && k == "cb") si.is_cb = true;
            else if (!v && k == "async_cb") si.is_async_cb = true;
            else if (!v && k == "exception_cb") si.is_exception_cb = true;
            else if (!v && k == "hidden") si.is_hidden = true;
            else return err(l.no, t.col, "unknown subprog attribute '" + t.text + "'");
        }
        c.program.subprogs.push_back(si);
    }
    return {};
}

Status Parser::linfo(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto off = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "insn offset");
        if (!off) return off.error();
        LineInfo li{.insn_off = *off};
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [k, v] = kv(t);
            Expected<uint32_t> n = 0u;
            if (v && k == "file") {
                if (!(n = num<uint32_t>(l, t, *v, "file"))) return n.error();
                li.file_name_off = *n;
            } else if (v && k == "line_off") {
                if (!(n = num<uint32_t>(l, t, *v, "line_off"))) return n.error();
                li.line_off = *n;
            } else if (v && k == "line") {
                auto colon = v->find(':');
                if (colon == std::string_view::npos) return err(l.no, t.col, "expected line=LINE:COL");
                auto ln = num<uint32_t>(l, t, v->substr(0, colon), "line");
                if (!ln) return ln.error();
                auto cl = num<uint32_t>(l, t, v->substr(colon + 1), "column");
                if (!cl) return cl.error();
                if (*ln >= (1u << 22) || *cl >= (1u << 10)) return err(l.no, t.col, "line " + std::string(*v) + " out of range (line < 2^22, col < 1024)");
                li.line_col = (*ln << 10) | *cl;
            } else {
                return err(l.no, t.col, "unknown line-info attribute '" + t.text + "'");
            }
        }
        c.program.linfo.push_back(li);
    }
    return {};
}

Status Parser::finfo(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto off = num<uint32_t>(l, (*toks)[0], (*toks)[0].text, "insn offset");
        if (!off) return off.error();
        FuncInfo fi{.insn_off = *off};
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            auto [k, v] = kv(t);
            if (v && k == "type") {
                auto n = num<uint32_t>(l, t, *v, "type id");
                if (!n) return n.error();
                fi.type_id = *n;
            } else {
                return err(l.no, t.col, "unknown func-info attribute '" + t.text + "'");
            }
        }
        c.program.finfo.push_back(fi);
    }
    return {};
}

Status Parser::insn_arrays(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        auto [k, v] = kv((*toks)[0]);
        if (k != "map" || !v) return err(l.no, (*toks)[0].col, "expected 'map=N ORIG:XLATED ...'");
        auto mi = num<int32_t>(l, (*toks)[0], *v, "map");
        if (!mi) return mi.error();
        InsnArray a{.map_index = *mi};
        for (size_t i = 1; i < toks->size(); ++i) {
            const Tok& t = (*toks)[i];
            std::string_view e = t.text;
            auto colon = e.find(':');
            if (colon == std::string_view::npos) return err(l.no, t.col, "expected ORIG:XLATED or ORIG:del, got '" + t.text + "'");
            auto o = num<uint32_t>(l, t, e.substr(0, colon), "orig offset");
            if (!o) return o.error();
            InsnArrayEntry en{.orig_off = *o};
            if (e.substr(colon + 1) == "del") {
                en.xlated_off = isa::kInsnDeleted;
            } else {
                auto x = num<uint32_t>(l, t, e.substr(colon + 1), "xlated offset");
                if (!x) return x.error();
                en.xlated_off = *x;
            }
            a.entries.push_back(en);
        }
        c.program.insn_arrays.push_back(std::move(a));
    }
    return {};
}

Status Parser::pokes(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        PokeDesc pd;
        for (const Tok& t : *toks) {
            auto [k, v] = kv(t);
            if (v && k == "insn") {
                auto n = num<uint32_t>(l, t, *v, "insn");
                if (!n) return n.error();
                pd.insn_idx = *n;
            } else if (v && k == "map") {
                auto n = num<int32_t>(l, t, *v, "map");
                if (!n) return n.error();
                pd.map_index = *n;
            } else if (v && k == "key") {
                auto n = num<uint32_t>(l, t, *v, "key");
                if (!n) return n.error();
                pd.key = *n;
            } else {
                return err(l.no, t.col, "unknown poke attribute '" + t.text + "' (insn=, map=, key=)");
            }
        }
        c.program.pokes.push_back(pd);
    }
    return {};
}

Status Parser::patches(const Section& s, Case& c) const {
    const auto& b = s.body;
    for (size_t i = 0; i < b.size(); ++i) {
        const Line& l = b[i];
        if (blank_or_comment(l.text)) continue;
        if (l.text[0] == ' ' || l.text[0] == '\t') return err(l.no, 1, "assembly line outside a 'replace' or 'insert-before'");
        auto toks = tokens(l);
        if (!toks) return toks.error();
        const std::string& kw = (*toks)[0].text;
        if (kw == "batch") {
            if (toks->size() > 1) return err(l.no, (*toks)[1].col, "'batch' takes no arguments");
            c.patches.emplace_back();
            continue;
        }
        if (c.patches.empty()) return err(l.no, 1, "expected 'batch' before the first patch");
        patch::Patch p;
        // `replace POS fill=N` / `insert-before POS fill=N`: the body starts with N filler slots.
        const bool filled = kw != "remove" && toks->size() == 3 && (*toks)[2].text.rfind("fill=", 0) == 0;
        const size_t want = kw == "remove" || filled ? 3 : 2;
        if (kw == "replace") p.kind = patch::PatchKind::Replace;
        else if (kw == "remove") p.kind = patch::PatchKind::Remove;
        else if (kw == "insert-before") p.kind = patch::PatchKind::InsertBefore;
        else return err(l.no, 1, "unknown patch '" + kw + "' (batch, replace POS, remove POS COUNT, insert-before POS)");
        if (toks->size() != want)
            return err(l.no, 1, kw == "remove" ? "expected 'remove POS COUNT'" : "expected '" + kw + " POS [fill=N]'");
        auto pos = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "position");
        if (!pos) return pos.error();
        p.pos = *pos;
        if (p.kind == patch::PatchKind::Remove) {
            auto cnt = num<uint32_t>(l, (*toks)[2], (*toks)[2].text, "count");
            if (!cnt) return cnt.error();
            p.count = *cnt;
        } else {
            std::vector<Line> body;
            while (i + 1 < b.size() && (b[i + 1].text.empty() || b[i + 1].text[0] == ' ' || b[i + 1].text[0] == '\t')) body.push_back(b[++i]);
            auto insns = assemble_lines(body);
            if (!insns) return insns.error();
            if (filled) {
                const Tok& f = (*toks)[2];
                auto n = num<uint32_t>(l, f, std::string_view(f.text).substr(5), "fill");
                if (!n) return n.error();
                if (*n > kMaxFill) return err(l.no, f.col, "fill=" + std::to_string(*n) + " is more than " + std::to_string(kMaxFill) + " slots");
                p.insns.reserve(*n + insns->size());
                for (uint32_t j = 0; j < *n; ++j) p.insns.push_back(patch::filler_insn(j));
            }
            p.insns.insert(p.insns.end(), insns->begin(), insns->end());
        }
        c.patches.back().patches.push_back(std::move(p));
    }
    return {};
}

std::vector<std::string> split_list(std::string_view v) {
    std::vector<std::string> out;
    if (v.empty()) return out;
    size_t start = 0;
    while (true) {
        auto comma = v.find(',', start);
        out.emplace_back(v.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

Status Parser::options(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        for (const Tok& t : *toks) {
            const auto kvp = kv(t);  // (not a structured binding: the lambda below captures it)
            const std::string_view k = kvp.first;
            const std::optional<std::string_view>& v = kvp.second;
            if (!v) return err(l.no, t.col, "expected key=value, got '" + t.text + "'");
            const size_t vcol = t.col + k.size() + 1;
            auto flag = [&](bool& dst) -> Status {
                if (*v == "0") dst = false;
                else if (*v == "1") dst = true;
                else return err(l.no, vcol, "expected 0 or 1 for " + std::string(k));
                return {};
            };
            Status st;
            if (k == "arch") {
                auto a = arch_by_name(*v);
                if (!a) return err(l.no, vcol, "unknown arch '" + std::string(*v) + "' (" + arch_name_list() + ")");
                c.arch = std::string(*v);
                c.options.arch = *a;
            } else if (k == "passes") {
                c.options.only = split_list(*v);
            } else if (k == "iter-inline") {
                auto ii = value_in(kIterInline, *v);
                if (!ii) return err(l.no, vcol, "unknown iter-inline '" + std::string(*v) + "' (v4, v1, v3, off)");
                c.options.iter_inline = *ii;
            } else if (k == "kernel") {
                auto kp = value_in(kKernels, *v);
                if (!kp) return err(l.no, vcol, "unknown kernel '" + std::string(*v) + "' (bpf-next, 6.1, 6.12, 7.2, 7.3)");
                c.options.kernel = *kp;
            } else if (k == "loop-inline" || k == "func-arg-inline") {
                auto f = value_in(kInlineFix, *v);
                if (!f) return err(l.no, vcol, "unknown " + std::string(k) + " '" + std::string(*v) + "' (buggy, fixed)");
                (k == "loop-inline" ? c.options.loop_inline : c.options.func_arg_inline) = *f;
            } else if (k == "privileged") {
                st = flag(c.options.privileged);
                if (st && c.privilege == passes::Privilege::Bpf && !c.options.privileged)
                    return err(l.no, vcol, "privileged=0 contradicts privilege=bpf (CAP_BPF is bpf_capable)");
                if (st && c.privilege != passes::Privilege::Bpf)
                    c.privilege = c.options.privileged ? passes::Privilege::Root : passes::Privilege::Unpriv;
            } else if (k == "privilege") {
                auto pl = passes::privilege_named(*v);
                if (!pl) return err(l.no, vcol, "unknown privilege '" + std::string(*v) + "' (" + passes::kPrivilegeNames + ")");
                c.privilege = *pl;
                c.options.privileged = passes::bpf_capable(*pl);
            } else if (k == "rnd-hi32") {
                st = flag(c.options.test_rnd_hi32);
            } else if (k == "rnd-hi32-seed") {
                auto n = num<uint64_t>(l, t, *v, "rnd-hi32-seed");
                if (!n) return n.error();
                c.options.rnd_hi32_seed = *n;
            } else if (k == "patchers") {
                c.patchers = split_list(*v);
            } else if (k == "seed") {
                auto n = num<uint64_t>(l, t, *v, "seed");
                if (!n) return n.error();
                c.seed = *n;
            } else {
                return err(l.no, t.col,
                           "unknown option '" + std::string(k) +
                               "' (arch, passes, iter-inline, kernel, loop-inline, func-arg-inline, privileged, privilege, rnd-hi32, rnd-hi32-seed, "
                               "patchers, seed)");
            }
            if (!st) return st;
        }
    }
    return {};
}

Status Parser::input(const Section& s, Case& c) const {
    interp::ExecInput in;
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        const std::string& kw = (*toks)[0].text;
        auto arg = [&](size_t n) -> Status {
            if (toks->size() != n + 1) return err(l.no, 1, "'" + kw + "' takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"));
            return {};
        };
        Status st;
        if (kw == "ctx" || kw == "packet") {
            if (toks->size() > 2) return err(l.no, (*toks)[2].col, "'" + kw + "' takes one hex string");
            std::vector<uint8_t> bytes;
            if (toks->size() == 2) {
                auto hb = hexbytes(l, (*toks)[1], (*toks)[1].text);
                if (!hb) return hb.error();
                bytes = std::move(*hb);
            }
            (kw == "ctx" ? in.ctx : in.packet) = std::move(bytes);
        } else if (kw.size() == 2 && kw[0] == 'r' && kw[1] >= '0' && kw[1] <= '9') {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, kw);
            if (!n) return n.error();
            in.regs[static_cast<size_t>(kw[1] - '0')] = *n;
        } else if (kw == "cpu") {
            if (!(st = arg(1))) return st;
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "cpu");
            if (!n) return n.error();
            in.cpu = *n;
        } else if (kw == "prandom") {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, "prandom");
            if (!n) return n.error();
            in.prandom_seed = *n;
        } else if (kw == "budget") {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, "budget");
            if (!n) return n.error();
            in.step_budget = *n;
        } else if (kw == "maps") {
            if (!(st = arg(1))) return st;
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "map count");
            if (!n) return n.error();
            if (*n > (1u << 16)) return err(l.no, (*toks)[1].col, "map count " + std::to_string(*n) + " is out of range");
            in.maps.resize(*n);
        } else if (kw == "map") {
            if (toks->size() != 4) return err(l.no, 1, "expected 'map INDEX key=HEX value=HEX'");
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "map index");
            if (!n) return n.error();
            if (*n >= in.maps.size())
                return err(l.no, (*toks)[1].col, "map index " + std::to_string(*n) + " but 'maps' declared " + std::to_string(in.maps.size()));
            auto [kk, kv_] = kv((*toks)[2]);
            auto [vk, vv] = kv((*toks)[3]);
            if (kk != "key" || !kv_) return err(l.no, (*toks)[2].col, "expected key=HEX");
            if (vk != "value" || !vv) return err(l.no, (*toks)[3].col, "expected value=HEX");
            auto key = hexbytes(l, (*toks)[2], *kv_);
            if (!key) return key.error();
            auto val = hexbytes(l, (*toks)[3], *vv);
            if (!val) return val.error();
            in.maps[*n].push_back(interp::MapEntry{std::move(*key), std::move(*val)});
        } else {
            return err(l.no, 1, "unknown input field '" + kw + "' (ctx, packet, r0..r9, cpu, prandom, budget, maps, map)");
        }
    }
    c.inputs.push_back(std::move(in));
    return {};
}

Status Parser::expect(const Section& s, Case& c) const {
    std::optional<Line> got;
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        if (got) return err(l.no, 1, "'-- expect' holds one line");
        got = l;
    }
    if (!got) return err(s.header.no, "'-- expect' is empty (pass, or fail <signature>)");
    std::string_view t = got->text;
    // Trailing blanks (a stray '\r' too) are not part of the verdict: write_case() drops them.
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    for (size_t i = 0; i < t.size(); ++i)
        if (static_cast<unsigned char>(t[i]) < 0x20 || t[i] == 0x7f)
            return err(got->no, i + 1, "control character in '-- expect'");
    if (t == "pass" || t == "unknown" || t == "skip" || (t.rfind("fail ", 0) == 0 && t.size() > 5)) {
        c.expect = std::string(t);
        return {};
    }
    return err(got->no, 1, "expected 'pass', 'fail <signature>', 'unknown' or 'skip', got '" + std::string(t) + "'");
}

// ---- writer ---------------------------------------------------------------------------------------

std::string aux_line(const InsnAux& a, uint32_t i) {
    const InsnAux d{.orig_idx = i, .seen = true};
    std::string o;
    auto add = [&](const std::string& s) { o += " " + s; };
    auto b = [&](bool v, bool dv, const char* k) {
        if (v != dv) add(std::string(k) + "=" + (v ? "1" : "0"));
    };
    auto u = [&](uint64_t v, uint64_t dv, const char* k) {
        if (v != dv) add(std::string(k) + "=" + std::to_string(v));
    };
    u(a.orig_idx, d.orig_idx, "orig");
    b(a.seen, d.seen, "seen");
    b(a.zext_dst, d.zext_dst, "zext_dst");
    b(a.needs_zext, d.needs_zext, "needs_zext");
    b(a.nospec, d.nospec, "nospec");
    b(a.nospec_result, d.nospec_result, "nospec_result");
    u(a.alu_state, d.alu_state, "alu_state");
    u(a.alu_limit, d.alu_limit, "alu_limit");
    if (a.ptr_type != d.ptr_type) {
        auto n = name_in(kPtrTypes, a.ptr_type);
        add("ptr=" + (n.empty() ? std::string("none") : std::string(n)));
    }
    u(a.ctx_field_size, d.ctx_field_size, "ctx_field_size");
    if (a.map_index != d.map_index) add("map=" + std::to_string(a.map_index));
    b(a.map_ptr_poisoned, d.map_ptr_poisoned, "map_ptr_poisoned");
    b(a.map_key_poisoned, d.map_key_poisoned, "map_key_poisoned");
    u(a.map_key, d.map_key, "map_key");
    b(a.map_key_known, d.map_key_known, "map_key_known");
    b(a.loop_fit_for_inline, d.loop_fit_for_inline, "loop_inline");
    u(a.loop_callback_subprogno, d.loop_callback_subprogno, "loop_cb");
    b(a.call_with_percpu_alloc_ptr, d.call_with_percpu_alloc_ptr, "percpu_alloc_ptr");
    u(a.arg_prog, d.arg_prog, "arg_prog");
    b(a.indirect_target, d.indirect_target, "indirect_target");
    return o.empty() ? o : std::to_string(i) + o;
}

bool inputs_equal(const interp::ExecInput& a, const interp::ExecInput& b) {
    if (a.ctx != b.ctx || a.packet != b.packet || a.regs != b.regs || a.cpu != b.cpu || a.prandom_seed != b.prandom_seed ||
        a.step_budget != b.step_budget || a.maps.size() != b.maps.size())
        return false;
    for (size_t i = 0; i < a.maps.size(); ++i) {
        if (a.maps[i].size() != b.maps[i].size()) return false;
        for (size_t j = 0; j < a.maps[i].size(); ++j)
            if (a.maps[i][j].key != b.maps[i][j].key || a.maps[i][j].value != b.maps[i][j].value) return false;
    }
    return true;
}

void write_asm(std::ostringstream& o, const std::vector<isa::Insn>& insns, const char* indent) {
    const std::string text = assembly::disassemble(insns);
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        o << indent << std::string_view(text).substr(start, nl - start) << '\n';
        start = nl + 1;
    }
}

}  // namespace

Expected<Case> parse_case(std::string_view text, const std::string& path) { return Parser(text, path).run(); }

Expected<Case> read_case(const std::string& path) {
    // A directory opens as a stream on Linux and reads as empty: say what it is instead.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Error{path, std::string("cannot read: ") + std::strerror(EISDIR)};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{path, std::string("cannot open: ") + std::strerror(errno)};
    std::ostringstream ss;
    ss << in.rdbuf();
    auto c = parse_case(ss.str(), path);
    if (!c) return c;
    if (auto v = isa::validate_program(c->program); !v) return v.error().with_context(path);
    return c;
}

std::string write_case(const Case& c) {
    std::ostringstream o;
    for (const auto& cm : c.comments) {
        std::string t = cm;
        for (char& ch : t)
            if (ch == '\n' || ch == '\r') ch = ' ';
        o << "# " << t << '\n';
    }
    const Program& p = c.program;
    o << "-- program";
    if (!p.name.empty()) o << " name=" << quote(p.name);
    if (p.prog_type) o << " type=" << loader::prog_type_name(p.prog_type);
    if (p.attach != TraceAttach::Other) o << " attach=" << name_in(kTraceAttach, p.attach);
    if (p.attach_btf_vlen) o << " attach-vlen=" << unsigned(p.attach_btf_vlen);
    o << '\n';
    write_asm(o, p.insns, "");

    if (!p.maps.empty()) {
        o << "-- maps\n";
        for (size_t i = 0; i < p.maps.size(); ++i) {
            const auto& m = p.maps[i];
            o << i << ' ' << quote(m.name) << " type=" << loader::map_type_name(m.type) << " key=" << m.key_size
              << " value=" << m.value_size << " max_entries=" << m.max_entries;
            if (m.map_flags) o << " flags=0x" << std::hex << m.map_flags << std::dec;
            if (m.bypass_spec_v1) o << " bypass_spec_v1";
            if (m.unpriv_array) o << " unpriv_array";
            o << '\n';
        }
    }
    if (!p.kfuncs.empty()) {
        o << "-- kfuncs\n";
        for (const auto& k : p.kfuncs) {
            o << k.btf_id << ' ' << quote(k.name);
            auto kn = name_in(kKfuncKinds, static_cast<kfunc::Kind>(k.kind));
            if (!kn.empty()) o << " kind=" << kn;
            else o << " kind=" << k.kind;
            if (k.offset) o << " off=" << k.offset;
            o << '\n';
        }
    }
    std::string aux_text;
    for (uint32_t i = 0; i < p.aux.size(); ++i) {
        auto l = aux_line(p.aux[i], i);
        if (!l.empty()) aux_text += l + "\n";
    }
    if (!aux_text.empty()) o << "-- aux\n" << aux_text;
    if (p.subprogs != make_program(p.insns).subprogs) {
        o << "-- subprogs\n";
        for (const auto& s : p.subprogs) {
            o << s.start;
            if (s.stack_depth) o << " stack=" << s.stack_depth;
            if (s.stack_extra) o << " extra=" << s.stack_extra;
            if (s.linfo_idx) o << " linfo=" << s.linfo_idx;
            if (s.has_tail_call) o << " tail_call";
            if (s.is_cb) o << " cb";
            if (s.is_async_cb) o << " async_cb";
            if (s.is_exception_cb) o << " exception_cb";
            if (s.is_hidden) o << " hidden";
            o << '\n';
        }
    }
    if (!p.linfo.empty()) {
        o << "-- linfo\n";
        for (const auto& l : p.linfo)
            o << l.insn_off << " file=" << l.file_name_off << " line_off=" << l.line_off << " line=" << (l.line_col >> 10) << ':'
              << (l.line_col & 1023) << '\n';
    }
    if (!p.finfo.empty()) {
        o << "-- finfo\n";
        for (const auto& f : p.finfo) o << f.insn_off << " type=" << f.type_id << '\n';
    }
    if (!p.insn_arrays.empty()) {
        o << "-- insn-arrays\n";
        for (const auto& a : p.insn_arrays) {
            o << "map=" << a.map_index;
            for (const auto& e : a.entries) {
                o << ' ' << e.orig_off << ':';
                if (e.xlated_off == isa::kInsnDeleted) o << "del";
                else o << e.xlated_off;
            }
            o << '\n';
        }
    }
    if (!p.pokes.empty()) {
        o << "-- pokes\n";
        for (const auto& k : p.pokes) o << "insn=" << k.insn_idx << " map=" << k.map_index << " key=" << k.key << '\n';
    }
    if (!c.patches.empty()) {
        o << "-- patches\n";
        for (const auto& b : c.patches) {
            o << "batch\n";
            for (const auto& pt : b.patches) {
                // A leading filler run of 64 slots or more is written as fill=N.
                size_t fill = 0;
                while (fill < pt.insns.size() && isa::same(pt.insns[fill], patch::filler_insn(static_cast<uint32_t>(fill)))) ++fill;
                if (fill < 64) fill = 0;
                const std::string fill_attr = fill ? " fill=" + std::to_string(fill) : "";
                switch (pt.kind) {
                    case patch::PatchKind::Replace: o << "replace " << pt.pos << fill_attr << '\n'; break;
                    case patch::PatchKind::Remove: o << "remove " << pt.pos << ' ' << pt.count << '\n'; break;
                    case patch::PatchKind::InsertBefore: o << "insert-before " << pt.pos << fill_attr << '\n'; break;
                }
                if (pt.kind != patch::PatchKind::Remove)
                    write_asm(o, std::vector<isa::Insn>(pt.insns.begin() + static_cast<std::ptrdiff_t>(fill), pt.insns.end()), "  ");
            }
        }
    }
    o << "-- options\n";
    o << "arch=" << c.arch << " iter-inline=" << name_in(kIterInline, c.options.iter_inline)
      << " kernel=" << name_in(kKernels, c.options.kernel) << " privileged=" << (c.options.privileged ? 1 : 0)
      << " rnd-hi32=" << (c.options.test_rnd_hi32 ? 1 : 0);
    if (c.privilege != passes::Privilege::Root) o << " privilege=" << passes::to_string(c.privilege);
    if (c.options.rnd_hi32_seed) o << " rnd-hi32-seed=" << c.options.rnd_hi32_seed;
    // the kernel's inlines are the default: only a fixed variant is written
    if (c.options.loop_inline != passes::InlineFix::Kernel) o << " loop-inline=" << name_in(kInlineFix, c.options.loop_inline);
    if (c.options.func_arg_inline != passes::InlineFix::Kernel)
        o << " func-arg-inline=" << name_in(kInlineFix, c.options.func_arg_inline);
    o << '\n';
    if (!c.options.only.empty()) o << "passes=" << join(c.options.only, ',') << '\n';
    if (!c.patchers.empty()) o << "patchers=" << join(c.patchers, ',') << '\n';
    if (c.seed) o << "seed=" << c.seed << '\n';
    for (const auto& in : c.inputs) {
        o << "-- input\n";
        if (!in.ctx.empty()) o << "ctx " << hex_bytes(in.ctx) << '\n';
        if (!in.packet.empty()) o << "packet " << hex_bytes(in.packet) << '\n';
        for (size_t r = 0; r < in.regs.size(); ++r)
            if (in.regs[r]) o << 'r' << r << " 0x" << std::hex << in.regs[r] << std::dec << '\n';
        if (in.cpu) o << "cpu " << in.cpu << '\n';
        if (in.prandom_seed) o << "prandom " << in.prandom_seed << '\n';
        if (in.step_budget != kDefaultStepBudget) o << "budget " << in.step_budget << '\n';
        if (!in.maps.empty()) {
            o << "maps " << in.maps.size() << '\n';
            for (size_t m = 0; m < in.maps.size(); ++m)
                for (const auto& e : in.maps[m]) o << "map " << m << " key=" << hex_bytes(e.key) << " value=" << hex_bytes(e.value) << '\n';
        }
    }
    o << "-- expect\n" << c.expect << '\n';
    return o.str();
}

Status write_case_file_atomic(const Case& c, const std::string& path) {
    return write_file_atomic(path, write_case(c));
}

bool same_case(const Case& a, const Case& b) {
    if (a.comments != b.comments || !(a.program == b.program) || a.arch != b.arch || a.patchers != b.patchers || a.expect != b.expect ||
        a.seed != b.seed)
        return false;
    const auto& x = a.options;
    const auto& y = b.options;
    if (a.privilege != b.privilege) return false;
    if (x.iter_inline != y.iter_inline || x.kernel != y.kernel || x.privileged != y.privileged || x.test_rnd_hi32 != y.test_rnd_hi32 ||
        x.rnd_hi32_seed != y.rnd_hi32_seed || x.only != y.only)
        return false;
    if (a.patches.size() != b.patches.size() || a.inputs.size() != b.inputs.size()) return false;
    for (size_t i = 0; i < a.patches.size(); ++i) {
        const auto& pa = a.patches[i].patches;
        const auto& pb = b.patches[i].patches;
        if (pa.size() != pb.size()) return false;
        for (size_t j = 0; j < pa.size(); ++j) {
            if (pa[j].kind != pb[j].kind || pa[j].pos != pb[j].pos || pa[j].count != pb[j].count || pa[j].insns.size() != pb[j].insns.size())
                return false;
            for (size_t k = 0; k < pa[j].insns.size(); ++k)
                if (!isa::same(pa[j].insns[k], pb[j].insns[k])) return false;
        }
    }
    for (size_t i = 0; i < a.inputs.size(); ++i)
        if (!inputs_equal(a.inputs[i], b.inputs[i])) return false;
    return true;
}

}  // namespace patchfuzz::harness
