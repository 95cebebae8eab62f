// The malformed-input catalogue (corpus/malformed/, format in corpus/README.md): every entry is a
// bad input for one input path of the `patchfuzz` CLI plus a hand-written `.expect` sidecar holding
// the command line, the exit code and the exact stderr. This test runs the built CLI on every entry
// and compares: a crash, a wrong exit code or a changed/vague message fails the entry.
//
// `.expect` lines (one key per line, `#` lines are comments):
//   run: VERB ARGS...        the CLI arguments; split at blanks
//   exit: N                  the expected exit code
//   stderr: TEXT             one line of the expected stderr (repeat for more lines; none = empty)
//   generate: OBJ OP...      (elf entries) the input is made from build/bpf_objs/OBJ.bpf.o by OPs
// Placeholders in `run:` and `stderr:`: {in} the entry's input (a file or directory named like the
// entry, relative: the CLI runs inside the entry's directory; a generated object lives in {tmp}),
// {tmp} a scratch directory, {bin} the build directory (where the test plugins are built).
//
// Generator OPs, applied in order to the bytes of a real object (ELF64 little-endian):
//   truncate N                     keep the first N bytes
//   set OFF HEX                    overwrite bytes at file offset OFF
//   ehdr FIELD VALUE               class machine shoff shnum shstrndx shentsize (e_ident[4] for class)
//   shdr SECTION FIELD VALUE       type offset size link info entsize of the named section
//   sect SECTION OFF HEX           overwrite bytes at OFF inside the named section's data
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kBinDir = PATCHFUZZ_BINARY_DIR;
const std::string kCatalogue = std::string(PATCHFUZZ_SOURCE_ROOT) + "/corpus/malformed";

std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

struct Entry {
    std::string kind, name, dir;
    std::string run;
    int exit = -1;
    std::vector<std::string> stderr_lines;
    std::string generate;
    std::string input;  // file or directory name inside dir, empty when none
};

// ---- ELF64 little-endian editing, for the generated objects ----------------------------------------
uint64_t get_le(const std::string& b, size_t off, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b.at(off + static_cast<size_t>(i)));
    return v;
}
void put_le(std::string& b, size_t off, int n, uint64_t v) {
    for (int i = 0; i < n; ++i) b.at(off + static_cast<size_t>(i)) = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_hex(std::string& b, size_t off, const std::string& hex) {
    for (size_t i = 0; i + 1 < hex.size(); i += 2) b.at(off + i / 2) = static_cast<char>(std::stoul(hex.substr(i, 2), nullptr, 16));
}

// The file offset of section NAME's header (Elf64_Shdr), found through e_shstrndx.
size_t shdr_of(const std::string& b, const std::string& name) {
    const uint64_t shoff = get_le(b, 0x28, 8);
    const uint64_t shnum = get_le(b, 0x3c, 2), shstrndx = get_le(b, 0x3e, 2);
    const uint64_t strtab = get_le(b, shoff + shstrndx * 64 + 0x18, 8);
    for (uint64_t i = 0; i < shnum; ++i) {
        const size_t h = shoff + i * 64;
        const char* n = b.data() + strtab + get_le(b, h, 4);
        if (name == n) return h;
    }
    throw std::runtime_error("no section '" + name + "'");
}

std::string generate(const std::string& recipe) {
    std::istringstream in(recipe);
    std::string obj;
    in >> obj;
    std::string b = slurp(kBinDir + "/bpf_objs/" + obj + ".bpf.o");
    if (b.size() < 64) throw std::runtime_error("base object " + obj + " missing (build patchfuzz_bpf_objs)");
    const std::map<std::string, std::pair<size_t, int>> ehdr = {{"class", {4, 1}},     {"machine", {0x12, 2}},
                                                                 {"shoff", {0x28, 8}},  {"shentsize", {0x3a, 2}},
                                                                 {"shnum", {0x3c, 2}},  {"shstrndx", {0x3e, 2}}};
    const std::map<std::string, std::pair<size_t, int>> shdr = {{"type", {4, 4}},  {"offset", {0x18, 8}}, {"size", {0x20, 8}},
                                                                 {"link", {0x28, 4}}, {"info", {0x2c, 4}}, {"entsize", {0x38, 8}}};
    for (std::string op; in >> op;) {
        if (op == "truncate") {
            size_t n;
            in >> n;
            b.resize(std::min(n, b.size()));
        } else if (op == "set") {
            size_t off;
            std::string hex;
            in >> off >> hex;
            put_hex(b, off, hex);
        } else if (op == "ehdr") {
            std::string f;
            uint64_t v;
            in >> f >> std::hex >> v >> std::dec;
            const auto [off, n] = ehdr.at(f);
            put_le(b, off, n, v);
        } else if (op == "shdr" || op == "sect") {
            std::string sec;
            in >> sec;
            const size_t h = shdr_of(b, sec);
            if (op == "shdr") {
                std::string f;
                uint64_t v;
                in >> f >> std::hex >> v >> std::dec;
                const auto [off, n] = shdr.at(f);
                put_le(b, h + off, n, v);
            } else {
                size_t off;
                std::string hex;
                in >> off >> hex;
                put_hex(b, get_le(b, h + 0x18, 8) + off, hex);
            }
        } else {
            throw std::runtime_error("unknown generator op '" + op + "'");
        }
    }
    return b;
}

// ---- the catalogue ---------------------------------------------------------------------------------
std::vector<Entry> read_catalogue() {
    std::vector<Entry> out;
    for (const auto& k : fs::directory_iterator(kCatalogue)) {
        if (!k.is_directory()) continue;
        for (const auto& f : fs::directory_iterator(k.path())) {
            if (f.path().extension() != ".expect") continue;
            Entry e;
            e.kind = k.path().filename().string();
            e.name = f.path().stem().string();
            e.dir = k.path().string();
            std::istringstream in(slurp(f.path().string()));
            for (std::string line; std::getline(in, line);) {
                if (line.empty() || line[0] == '#') continue;
                const size_t colon = line.find(": ");
                const std::string key = line.substr(0, colon);
                const std::string val = colon == std::string::npos ? "" : line.substr(colon + 2);
                if (key == "run") e.run = val;
                else if (key == "exit") e.exit = std::stoi(val);
                else if (key == "stderr") e.stderr_lines.push_back(val);
                else if (key == "generate") e.generate = val;
                else ADD_FAILURE() << f.path() << ": unknown key '" << key << "'";
            }
            for (const auto& g : fs::directory_iterator(k.path())) {
                const std::string gn = g.path().filename().string();
                if (gn != e.name + ".expect" && (gn == e.name || gn.rfind(e.name + ".", 0) == 0)) e.input = gn;
            }
            out.push_back(std::move(e));
        }
    }
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.kind + "/" + a.name < b.kind + "/" + b.name; });
    return out;
}

struct Outcome {
    int code = -1;
    std::string err;
};

// Runs the CLI in `cwd` with blank-separated `args` (no shell: arguments are exec'd verbatim).
Outcome run_cli(const std::string& cwd, const std::string& args, const std::string& errfile) {
    std::vector<std::string> argv{kBinDir + "/patchfuzz"};
    std::istringstream in(args);
    for (std::string a; in >> a;) argv.push_back(a);
    Outcome o;
    const pid_t pid = fork();
    if (pid == 0) {
        if (chdir(cwd.c_str()) != 0) _exit(126);
        FILE* e = std::freopen(errfile.c_str(), "w", stderr);
        FILE* d = std::freopen("/dev/null", "w", stdout);
        if (!e || !d) _exit(126);
        std::vector<char*> av;
        for (auto& a : argv) av.push_back(a.data());
        av.push_back(nullptr);
        execv(av[0], av.data());
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    o.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    o.err = slurp(errfile);
    return o;
}

TEST(MalformedCatalogue, EveryEntryIsRejectedWithItsLocatedMessage) {
    const std::vector<Entry> entries = read_catalogue();
    const std::string tmp = kBinDir + "/malformed_tmp." + std::to_string(getpid());
    fs::create_directories(tmp);
    std::map<std::string, size_t> per_kind;
    for (const Entry& e : entries) {
        SCOPED_TRACE(e.kind + "/" + e.name);
        ++per_kind[e.kind];
        ASSERT_FALSE(e.run.empty()) << "no run: line";
        ASSERT_GE(e.exit, 0) << "no exit: line";
        std::string in = e.input;
        if (!e.generate.empty()) {
            ASSERT_TRUE(in.empty()) << "a generated entry has no input file";
            in = tmp + "/" + e.name + ".bpf.o";
            std::ofstream(in, std::ios::binary) << generate(e.generate);
        }
        auto subst = [&](std::string s) {
            return replace_all(replace_all(replace_all(std::move(s), "{in}", in), "{tmp}", tmp), "{bin}", kBinDir);
        };
        std::string want;
        for (const auto& l : e.stderr_lines) want += subst(l) + "\n";
        const Outcome got = run_cli(e.dir, subst(e.run), tmp + "/stderr.txt");
        EXPECT_EQ(got.code, e.exit) << "stderr: " << got.err;
        EXPECT_EQ(got.err, want);
    }
    std::string summary;
    for (const auto& [k, n] : per_kind) summary += " " + k + "=" + std::to_string(n);
    std::printf("malformed catalogue: %zu entries:%s\n", entries.size(), summary.c_str());
    EXPECT_GE(entries.size(), 60u);
    fs::remove_all(tmp);
}

}  // namespace
