#pragma once
// One declaration of a verb's command line: its usage lines, what it does, every flag (names, value
// placeholder, help, kind, where the value goes), its positional arguments and its exit codes. One
// parser reads every verb's arguments from it, and `--help` is printed from it, so the help cannot
// name a flag the parser does not take or miss one it does.
//
// The parser takes `--flag V` and `--flag=V` (`-o V` for short names), `--help` / `-h`, and
// positional arguments anywhere; `-` alone is a positional. Anything else starting with `-` is an
// unknown option. Every error is one line, `patchfuzz VERB: MESSAGE`, and exit code 2:
//   unknown option '--frob' (see --help)
//   --runs needs a value (K)
//   --seed: 'x1' is not a whole number          --jobs: 999 is out of range (1..256)
//   --seconds: 'nan' is not a number            --arch: unknown arch 'sparc' (expected x86_64, ...)
//   more than one input ('a.s' and 'b.s')       missing IN.s (see --help)
// Checks that span several flags (`--known` vs `--no-known`) stay in the verb, after parsing.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/cli/commands.hpp"

namespace patchfuzz::cli {

// What one value is wrong by, in the words that follow "--flag: "; empty when it was taken.
using TakeValue = std::function<std::string(const std::string& value)>;

struct Flag {
    std::vector<std::string> names;  // "--out", "-o": every spelling; --help shows them in this order
    std::string value;               // the placeholder of its value ("N", "DIR"); empty for a switch
    std::string help;                // one paragraph, wrapped by --help; '\n' starts a new line
    std::function<void()> on_switch;  // a switch: what giving it does
    TakeValue on_value;               // a value flag: checks and stores the value
    std::string section;              // the --help heading it is listed under ("" = "options")
    bool repeatable = false;          // may be given more than once, each adding to the last
    bool required = false;            // missing it is an error ("missing -o OUT.bin")

    Flag&& in(std::string heading) && {
        section = std::move(heading);
        return std::move(*this);
    }
    Flag&& repeat() && {
        repeatable = true;
        return std::move(*this);
    }
    Flag&& require() && {
        required = true;
        return std::move(*this);
    }
};

// The arguments that are not flags: one (`IN`) or many (`PATH...`).
struct Positionals {
    std::string name;   // as the usage and the messages write it: "IN.s", "CASE"
    std::string noun;   // "more than one <noun> ('a' and 'b')"
    bool required = false;
    bool many = false;
    std::function<void(const std::string&)> take;
};

// The names a choice or list value may take, and what one of them is called in messages.
struct Choices {
    std::string noun;                // "unknown <noun> 'x' (expected a, b or c)"
    std::vector<std::string> names;  // in the order the message lists them
    [[nodiscard]] bool has(std::string_view v) const;
    [[nodiscard]] std::string unknown(const std::string& v) const;
    [[nodiscard]] std::string listing() const;  // "a, b or c", for help texts
};
Choices choices(std::string noun, const std::vector<std::string_view>& names);

struct VerbFlags {
    std::string verb;                // "fuzz", "kernel": messages start "patchfuzz <verb>: "
    std::vector<std::string> usage;  // each line after "usage: " / the indent ("patchfuzz fuzz [...]")
    std::string about;               // what the verb does, as written (paragraphs, lists)
    std::vector<Flag> flags;
    std::optional<Positionals> positionals;
    std::string exit;                // "exit: 0 ok, 2 bad input or usage"

    // One error line on stderr ("patchfuzz VERB: msg"); returns 2, the usage exit code.
    int error(const std::string& msg) const;
};

// One error line on stderr, "patchfuzz VERB: msg"; returns 2, the exit code of bad input or usage.
int usage_error(std::string_view verb, const std::string& msg);

// The outcome of reading a command line against a table.
struct ParseResult {
    enum Kind { Ok, Help, Error } kind = Ok;
    std::string message;  // for Error, without the "patchfuzz VERB: " prefix
};
ParseResult parse_flags(const VerbFlags& spec, std::span<const std::string> args);

// parse_flags on the verb's arguments, printing the help (stdout) or the error (stderr). nullopt to
// go on; otherwise the exit code to return: 0 after --help, 2 after an error.
std::optional<int> parse_or_exit(const VerbFlags& spec, Args args);

// The --help text: usage, about, the flags under their headings (names aligned, help wrapped to
// 100 columns), exit codes.
std::string help_text(const VerbFlags& spec);

// ---- flag kinds ----------------------------------------------------------------------------------

// A switch that sets `target` to `value`.
Flag switch_flag(std::vector<std::string> names, std::string help, bool& target, bool value = true);
// A switch that does `act`.
Flag switch_flag(std::vector<std::string> names, std::string help, std::function<void()> act);
// Any text, stored as it is.
Flag text_flag(std::vector<std::string> names, std::string value, std::string help, std::string& target);
// Any text, checked and stored by `take` (an error text, or empty when taken).
Flag text_flag(std::vector<std::string> names, std::string value, std::string help, TakeValue take);
// One of `choices`, handed to `take`.
Flag choice_flag(std::vector<std::string> names, std::string value, std::string help, Choices choices,
                 std::function<void(const std::string&)> take);
// A comma list (empty items skipped, at least one item), each item one of `choices` when given.
Flag list_flag(std::vector<std::string> names, std::string value, std::string help, std::optional<Choices> choices,
               std::function<void(std::vector<std::string>)> take);
// A real number in [lo, hi] (or (lo, hi] with lo_open), handed to `take`.
Flag real_flag(std::vector<std::string> names, std::string value, std::string help, double lo, double hi,
               std::function<void(double)> take, bool lo_open = false);

// A whole number (cli_numbers.hpp: decimal or 0x hex) in [lo, hi], handed to `take`.
Flag whole_flag_u64(std::vector<std::string> names, std::string value, std::string help, uint64_t lo, uint64_t hi,
                    std::function<void(uint64_t)> take);
// The same, stored into `target` of any unsigned or signed integer type; hi defaults to its maximum.
template <class T>
Flag whole_flag(std::vector<std::string> names, std::string value, std::string help, T& target, uint64_t lo = 0,
                uint64_t hi = static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    T* t = &target;
    return whole_flag_u64(std::move(names), std::move(value), std::move(help), lo, hi, [t](uint64_t n) { *t = static_cast<T>(n); });
}

}  // namespace patchfuzz::cli
