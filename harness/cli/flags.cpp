#include "harness/cli/flags.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "harness/cli/cli_numbers.hpp"

namespace patchfuzz::cli {
namespace {

constexpr size_t kWidth = 100;      // --help wraps flag help to this many columns
constexpr size_t kMaxLabel = 22;    // a longer "--flag VALUE" puts its help on the next line

// "a", "a or b", "a, b or c": the way messages list what was expected.
std::string or_list(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return out;
}

bool all_digits(std::string_view s, bool hex) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c)))) return false;
    return true;
}

// Digits alone (decimal, or hex after 0x): a whole number, even when too large for 64 bits.
bool looks_whole(std::string_view s) {
    if (s.size() > 2 && (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X")) return all_digits(s.substr(2), true);
    return all_digits(s, false);
}

// "(1..256)"; without an upper bound of its own, the side the value fell off.
std::string whole_range(uint64_t lo, uint64_t hi, bool too_big) {
    if (hi != std::numeric_limits<uint64_t>::max()) return "(" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
    return too_big ? "(at most " + std::to_string(hi) + ")" : "(at least " + std::to_string(lo) + ")";
}

// 0.1, 86400, 10000000: as a user writes a bound (no exponent for whole numbers).
std::string real_text(double v) {
    char buf[64];
    if (v == std::floor(v) && std::fabs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

const Flag* find(const VerbFlags& spec, std::string_view name) {
    for (const Flag& f : spec.flags)
        for (const auto& n : f.names)
            if (n == name) return &f;
    return nullptr;
}

std::string label_of(const Flag& f) {
    std::string l;
    for (const auto& n : f.names) l += (l.empty() ? "" : ", ") + n;
    if (!f.value.empty()) l += " " + f.value;
    return l;
}

// `text` as lines of at most kWidth columns, each starting at column `col`; the first line's
// start is already written (out ends at column `at`).
void wrap_into(std::string& out, const std::string& text, size_t col, size_t at) {
    size_t line_start = 0;
    bool first_line = true;
    while (line_start <= text.size()) {
        size_t nl = text.find('\n', line_start);
        if (nl == std::string::npos) nl = text.size();
        const std::string_view line(text.data() + line_start, nl - line_start);
        if (!first_line) {
            out += "\n" + std::string(col, ' ');
            at = col;
        }
        first_line = false;
        size_t pos = 0;
        bool first_word = true;
        while (pos < line.size()) {
            size_t end = line.find(' ', pos);
            if (end == std::string_view::npos) end = line.size();
            const std::string_view word = line.substr(pos, end - pos);
            if (!word.empty()) {
                if (!first_word && at + 1 + word.size() > kWidth) {
                    out += "\n" + std::string(col, ' ');
                    at = col;
                    first_word = true;
                }
                if (!first_word) {
                    out += ' ';
                    ++at;
                }
                out += word;
                at += word.size();
                first_word = false;
            }
            pos = end + 1;
        }
        line_start = nl + 1;
    }
}

}  // namespace

bool Choices::has(std::string_view v) const {
    for (const auto& n : names)
        if (n == v) return true;
    return false;
}

std::string Choices::unknown(const std::string& v) const { return "unknown " + noun + " '" + v + "' (expected " + listing() + ")"; }

std::string Choices::listing() const { return or_list(names); }

Choices choices(std::string noun, const std::vector<std::string_view>& names) {
    Choices c{std::move(noun), {}};
    for (auto n : names) c.names.emplace_back(n);
    return c;
}

int usage_error(std::string_view verb, const std::string& msg) {
    std::fprintf(stderr, "patchfuzz %.*s: %s\n", static_cast<int>(verb.size()), verb.data(), msg.c_str());
    return 2;
}

int VerbFlags::error(const std::string& msg) const { return usage_error(verb, msg); }

ParseResult parse_flags(const VerbFlags& spec, std::span<const std::string> args) {
    auto error = [](std::string m) { return ParseResult{ParseResult::Error, std::move(m)}; };
    std::vector<const Flag*> given;
    std::string first_positional;
    size_t positionals = 0;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") return {ParseResult::Help, ""};
        if (a.size() > 1 && a[0] == '-') {
            std::string name = a;
            std::optional<std::string> inline_value;
            if (a.rfind("--", 0) == 0)
                if (const size_t eq = a.find('='); eq != std::string::npos) {
                    name = a.substr(0, eq);
                    inline_value = a.substr(eq + 1);
                }
            const Flag* f = find(spec, name);
            if (!f) return error("unknown option '" + name + "' (see --help)");
            given.push_back(f);
            if (f->value.empty()) {
                if (inline_value) return error(name + " takes no value");
                f->on_switch();
                continue;
            }
            std::string v;
            if (inline_value) {
                v = *inline_value;
            } else {
                if (i + 1 >= args.size()) return error(name + " needs a value (" + f->value + ")");
                v = args[++i];
            }
            if (std::string e = f->on_value(v); !e.empty()) return error(name + ": " + e);
            continue;
        }
        if (!spec.positionals) return error("unexpected argument '" + a + "' (see --help)");
        if (!spec.positionals->many && positionals == 1)
            return error("more than one " + spec.positionals->noun + " ('" + first_positional + "' and '" + a + "')");
        if (positionals++ == 0) first_positional = a;
        spec.positionals->take(a);
    }
    if (spec.positionals && spec.positionals->required && positionals == 0) return error("missing " + spec.positionals->name);
    for (const Flag& f : spec.flags) {
        if (!f.required) continue;
        bool seen = false;
        for (const Flag* g : given) seen |= g == &f;
        if (!seen) return error("missing " + f.names.front() + (f.value.empty() ? "" : " " + f.value));
    }
    return {};
}

std::optional<int> parse_or_exit(const VerbFlags& spec, Args args) {
    const std::vector<std::string> words(args.begin(), args.end());
    const ParseResult r = parse_flags(spec, words);
    switch (r.kind) {
        case ParseResult::Ok: return std::nullopt;
        case ParseResult::Help: std::fputs(help_text(spec).c_str(), stdout); return 0;
        case ParseResult::Error: return spec.error(r.message);
    }
    return 2;
}

std::string help_text(const VerbFlags& spec) {
    std::string out;
    for (size_t i = 0; i < spec.usage.size(); ++i) out += (i == 0 ? "usage: " : "       ") + spec.usage[i] + "\n";
    if (!spec.about.empty()) out += "\n" + spec.about + (spec.about.back() == '\n' ? "" : "\n");
    // The headings in the order their first flag appears; --help itself closes "options" (or the
    // last heading, when every flag has one of its own).
    std::vector<std::string> sections;
    for (const Flag& f : spec.flags) {
        bool have = false;
        for (const auto& s : sections) have |= s == f.section;
        if (!have) sections.push_back(f.section);
    }
    if (sections.empty()) sections.emplace_back();
    const Flag help{.names = {"-h", "--help"}, .help = "this text"};
    size_t width = 0;
    for (const Flag& f : spec.flags) width = std::max(width, std::min(label_of(f).size(), kMaxLabel));
    width = std::max(width, label_of(help).size());
    const size_t col = 2 + width + 2;
    for (const auto& s : sections) {
        out += "\n" + (s.empty() ? std::string("options") : s) + ":\n";
        auto row = [&](const Flag& f) {
            const std::string label = label_of(f);
            out += "  " + label;
            size_t at = 2 + label.size();
            if (at + 2 > col) {
                out += "\n" + std::string(col, ' ');
            } else {
                out += std::string(col - at, ' ');
            }
            wrap_into(out, f.help + (f.repeatable ? " (repeatable)" : ""), col, col);
            out += "\n";
        };
        for (const Flag& f : spec.flags)
            if (f.section == s) row(f);
        const bool has_plain = std::find(sections.begin(), sections.end(), std::string()) != sections.end();
        if (has_plain ? s.empty() : &s == &sections.back()) row(help);
    }
    if (!spec.exit.empty()) out += "\n" + spec.exit + (spec.exit.back() == '\n' ? "" : "\n");
    return out;
}

// ---- flag kinds ----------------------------------------------------------------------------------

Flag switch_flag(std::vector<std::string> names, std::string help, bool& target, bool value) {
    bool* t = &target;
    return switch_flag(std::move(names), std::move(help), [t, value] { *t = value; });
}

Flag switch_flag(std::vector<std::string> names, std::string help, std::function<void()> act) {
    return Flag{.names = std::move(names), .help = std::move(help), .on_switch = std::move(act)};
}

Flag text_flag(std::vector<std::string> names, std::string value, std::string help, std::string& target) {
    std::string* t = &target;
    return text_flag(std::move(names), std::move(value), std::move(help), [t](const std::string& v) {
        *t = v;
        return std::string();
    });
}

Flag text_flag(std::vector<std::string> names, std::string value, std::string help, TakeValue take) {
    return Flag{.names = std::move(names), .value = std::move(value), .help = std::move(help), .on_value = std::move(take)};
}

Flag choice_flag(std::vector<std::string> names, std::string value, std::string help, Choices choices,
                 std::function<void(const std::string&)> take) {
    return text_flag(std::move(names), std::move(value), std::move(help),
                     [c = std::move(choices), take = std::move(take)](const std::string& v) {
                         if (!c.has(v)) return c.unknown(v);
                         take(v);
                         return std::string();
                     });
}

Flag list_flag(std::vector<std::string> names, std::string value, std::string help, std::optional<Choices> choices,
               std::function<void(std::vector<std::string>)> take) {
    return text_flag(std::move(names), std::move(value), std::move(help),
                     [c = std::move(choices), take = std::move(take)](const std::string& v) {
                         std::vector<std::string> items;
                         size_t b = 0;
                         while (b <= v.size()) {
                             size_t e = v.find(',', b);
                             if (e == std::string::npos) e = v.size();
                             if (e > b) items.push_back(v.substr(b, e - b));
                             b = e + 1;
                         }
                         if (items.empty()) return std::string("empty list");
                         if (c)
                             for (const auto& x : items)
                                 if (!c->has(x)) return c->unknown(x);
                         take(std::move(items));
                         return std::string();
                     });
}

Flag real_flag(std::vector<std::string> names, std::string value, std::string help, double lo, double hi,
               std::function<void(double)> take, bool lo_open) {
    return text_flag(std::move(names), std::move(value), std::move(help), [=](const std::string& v) {
        char* end = nullptr;
        errno = 0;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || std::isspace(static_cast<unsigned char>(v[0])) || *end != '\0' || errno != 0 || !std::isfinite(d))
            return "'" + v + "' is not a number";
        if ((lo_open ? d <= lo : d < lo) || d > hi)
            return v + " is out of range (" + (lo_open ? "more than " + real_text(lo) + ", at most " + real_text(hi)
                                                       : real_text(lo) + ".." + real_text(hi)) + ")";
        take(d);
        return std::string();
    });
}

Flag whole_flag_u64(std::vector<std::string> names, std::string value, std::string help, uint64_t lo, uint64_t hi,
                    std::function<void(uint64_t)> take) {
    return text_flag(std::move(names), std::move(value), std::move(help), [=](const std::string& v) {
        const auto n = parse_whole<uint64_t>(v);
        if (!n) return looks_whole(v) ? v + " is out of range " + whole_range(lo, hi, true) : "'" + v + "' is not a whole number";
        if (*n < lo || *n > hi) return v + " is out of range " + whole_range(lo, hi, *n > hi);
        take(*n);
        return std::string();
    });
}

}  // namespace patchfuzz::cli
