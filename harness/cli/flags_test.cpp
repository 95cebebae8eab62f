// The flag table's parser and --help generator (harness/cli/flags.hpp), on a small verb of its own.
#include "harness/cli/flags.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace patchfuzz::cli {
namespace {

// A verb with one flag of every kind, and what parsing left in it.
struct Toy {
    bool json = false, quiet = true;
    std::string out, arch, seeds;
    uint32_t jobs = 1;
    uint64_t seed = 7;
    double timeout = 2;
    std::vector<std::string> oracles;
    std::vector<std::string> inputs;

    VerbFlags spec(bool many = false) {
        return VerbFlags{
            .verb = "toy",
            .usage = {"patchfuzz toy IN [--json] [-o OUT]", "                 [--jobs J]"},
            .about = "A verb for the tests.",
            .flags = {switch_flag({"--json"}, "JSON on stdout", json),
                      switch_flag({"--loud"}, "a status line", quiet, false),
                      text_flag({"-o", "--out"}, "OUT", "where it goes", out),
                      whole_flag({"--jobs"}, "J", "worker processes, 1..256", jobs, 1, 256),
                      whole_flag({"--seed"}, "S", "the seed", seed),
                      real_flag({"--timeout"}, "S", "seconds", 0, 3600, [this](double d) { timeout = d; }, true),
                      choice_flag({"--arch"}, "A", "one arch", Choices{"arch", {"x86_64", "arm64", "jit32"}},
                                  [this](const std::string& v) { arch = v; }),
                      list_flag({"--oracles"}, "LIST", "comma list", Choices{"oracle", {"structural", "exec"}},
                                [this](std::vector<std::string> v) { oracles = std::move(v); }),
                      text_flag({"--seeds"}, "PATH",
                                "a long help text that has to be wrapped because it does not fit on one line of the help "
                                "output at all, not even nearly, and goes on",
                                [this](const std::string& v) {
                                    if (v == "bad") return std::string("no such file");
                                    seeds += v + ";";
                                    return std::string();
                                })
                          .repeat()
                          .in("seeding")},
            .positionals = Positionals{.name = "IN", .noun = "input", .required = true, .many = many,
                                       .take = [this](const std::string& a) { inputs.push_back(a); }},
            .exit = "exit: 0 ok, 2 bad usage"};
    }
};

ParseResult run(Toy& t, std::vector<std::string> args, bool many = false) { return parse_flags(t.spec(many), args); }

TEST(Flags, ValuesGoWhereTheTableSays) {
    Toy t;
    const auto r = run(t, {"in.s", "--json", "-o", "x.bin", "--jobs", "0x10", "--seed=18446744073709551615", "--timeout", "0.5",
                           "--arch=arm64", "--oracles", "exec,,structural", "--loud", "--seeds", "a", "--seeds=b"});
    ASSERT_EQ(r.kind, ParseResult::Ok) << r.message;
    EXPECT_TRUE(t.json);
    EXPECT_FALSE(t.quiet);
    EXPECT_EQ(t.out, "x.bin");
    EXPECT_EQ(t.jobs, 16u);
    EXPECT_EQ(t.seed, 18446744073709551615ull);
    EXPECT_EQ(t.timeout, 0.5);
    EXPECT_EQ(t.arch, "arm64");
    EXPECT_EQ(t.oracles, (std::vector<std::string>{"exec", "structural"}));
    EXPECT_EQ(t.seeds, "a;b;");
    EXPECT_EQ(t.inputs, std::vector<std::string>{"in.s"});
}

TEST(Flags, DefaultsStayWhenNotGiven) {
    Toy t;
    ASSERT_EQ(run(t, {"in.s"}).kind, ParseResult::Ok);
    EXPECT_FALSE(t.json);
    EXPECT_EQ(t.jobs, 1u);
    EXPECT_EQ(t.seed, 7u);
    EXPECT_EQ(t.timeout, 2);
    EXPECT_TRUE(t.out.empty());
}

TEST(Flags, LongAndShortNamesAreOneFlag) {
    Toy t;
    ASSERT_EQ(run(t, {"in.s", "--out=a"}).kind, ParseResult::Ok);
    EXPECT_EQ(t.out, "a");
    ASSERT_EQ(run(t, {"in.s", "-o", "b"}).kind, ParseResult::Ok);
    EXPECT_EQ(t.out, "b");
}

TEST(Flags, HelpWinsWhereverItStands) {
    Toy t;
    EXPECT_EQ(run(t, {"--json", "--help"}).kind, ParseResult::Help);
    EXPECT_EQ(run(t, {"-h", "--frob"}).kind, ParseResult::Help);
    // An error before it is reported first, as the arguments are read in order.
    EXPECT_EQ(run(t, {"--frob", "--help"}).kind, ParseResult::Error);
}

void expect_error(std::vector<std::string> args, const std::string& message, bool many = false) {
    Toy t;
    const auto r = run(t, std::move(args), many);
    EXPECT_EQ(r.kind, ParseResult::Error);
    EXPECT_EQ(r.message, message);
}

TEST(Flags, EveryMistakeHasItsMessage) {
    expect_error({"in.s", "--frob"}, "unknown option '--frob' (see --help)");
    expect_error({"in.s", "--frob=3"}, "unknown option '--frob' (see --help)");
    expect_error({"in.s", "--json=1"}, "--json takes no value");
    expect_error({"in.s", "--jobs"}, "--jobs needs a value (J)");
    expect_error({"in.s", "--jobs", "x1"}, "--jobs: 'x1' is not a whole number");
    expect_error({"in.s", "--jobs", "-3"}, "--jobs: '-3' is not a whole number");
    expect_error({"in.s", "--jobs", "+3"}, "--jobs: '+3' is not a whole number");
    expect_error({"in.s", "--jobs", ""}, "--jobs: '' is not a whole number");
    expect_error({"in.s", "--jobs", "0"}, "--jobs: 0 is out of range (1..256)");
    expect_error({"in.s", "--jobs=257"}, "--jobs: 257 is out of range (1..256)");
    expect_error({"in.s", "--seed", "18446744073709551616"}, "--seed: 18446744073709551616 is out of range (at most 18446744073709551615)");
    expect_error({"in.s", "--timeout", "nan"}, "--timeout: 'nan' is not a number");
    expect_error({"in.s", "--timeout", "1s"}, "--timeout: '1s' is not a number");
    expect_error({"in.s", "--timeout", "0"}, "--timeout: 0 is out of range (more than 0, at most 3600)");
    expect_error({"in.s", "--timeout", "3600.5"}, "--timeout: 3600.5 is out of range (more than 0, at most 3600)");
    expect_error({"in.s", "--arch", "sparc"}, "--arch: unknown arch 'sparc' (expected x86_64, arm64 or jit32)");
    expect_error({"in.s", "--oracles", "exec,foo"}, "--oracles: unknown oracle 'foo' (expected structural or exec)");
    expect_error({"in.s", "--oracles", ","}, "--oracles: empty list");
    expect_error({"in.s", "--seeds", "bad"}, "--seeds: no such file");
    expect_error({"a.s", "b.s"}, "more than one input ('a.s' and 'b.s')");
    expect_error({"--json"}, "missing IN");
}

TEST(Flags, PositionalsMayBeManyAndDashIsOne) {
    Toy t;
    ASSERT_EQ(run(t, {"a", "--json", "-", "c"}, true).kind, ParseResult::Ok);
    EXPECT_EQ(t.inputs, (std::vector<std::string>{"a", "-", "c"}));
}

TEST(Flags, RequiredFlagAndNoPositionals) {
    std::string out;
    const VerbFlags spec{.verb = "x", .flags = {text_flag({"-o"}, "OUT.bin", "output", out).require()}};
    EXPECT_EQ(parse_flags(spec, std::vector<std::string>{}).message, "missing -o OUT.bin");
    EXPECT_EQ(parse_flags(spec, std::vector<std::string>{"-o", "y", "z"}).message, "unexpected argument 'z' (see --help)");
    EXPECT_EQ(parse_flags(spec, std::vector<std::string>{"-o", "y"}).kind, ParseResult::Ok);
    EXPECT_EQ(out, "y");
}

TEST(Flags, HelpIsMadeFromTheTable) {
    Toy t;
    const std::string h = help_text(t.spec());
    // usage lines, the about text, each section, every flag with its value, --help, exit codes
    EXPECT_EQ(h.rfind("usage: patchfuzz toy IN [--json] [-o OUT]\n                        [--jobs J]\n\nA verb for the tests.\n", 0), 0u) << h;
    EXPECT_NE(h.find("\noptions:\n  --json  "), std::string::npos) << h;
    EXPECT_NE(h.find("\n  -o, --out OUT  "), std::string::npos) << h;
    EXPECT_NE(h.find("\n  -h, --help  "), std::string::npos) << h;
    EXPECT_NE(h.find("\nseeding:\n  --seeds PATH  "), std::string::npos) << h;
    EXPECT_NE(h.find("(repeatable)"), std::string::npos) << h;
    EXPECT_NE(h.find("\nexit: 0 ok, 2 bad usage\n"), std::string::npos) << h;
    // Help columns line up, and no line is wider than 100 columns.
    std::istringstream in(h);
    size_t col = 0;
    for (std::string line; std::getline(in, line);) {
        EXPECT_LE(line.size(), 100u) << line;
        if (line.rfind("  -", 0) != 0) continue;
        const size_t at = line.find_first_not_of(' ', line.find("  ", 2));
        if (col == 0) col = at;
        EXPECT_EQ(at, col) << line;
    }
    EXPECT_GT(col, 0u);
    // The long help goes on in lines of its own, indented to the column.
    bool continued = false;
    std::istringstream again(h);
    for (std::string line; std::getline(again, line);)
        continued |= line.size() > col && line.find_first_not_of(' ') == col;
    EXPECT_TRUE(continued) << h;
}

}  // namespace
}  // namespace patchfuzz::cli
