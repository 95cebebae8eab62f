// `patchfuzz load` and `patchfuzz disasm` as a user runs them: exit codes, messages, and the
// >= 50k-insn object printed in full. Bad objects are derived from good ones at run time.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/loader/loader.hpp"

namespace patchfuzz::loader {
namespace {

const std::string kBin = std::string(PATCHFUZZ_BINARY_DIR) + "/patchfuzz";
std::string obj(const std::string& stem) { return std::string(PATCHFUZZ_BINARY_DIR) + "/bpf_objs/" + stem + ".bpf.o"; }

struct CliRun {
    int code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

CliRun run(const std::string& args) {
    static int n = 0;
    const std::string errf = std::string(PATCHFUZZ_BINARY_DIR) + "/loader_cli_test." + std::to_string(getpid()) + "." + std::to_string(n++) + ".err";
    CliRun r;
    FILE* p = popen((kBin + " " + args + " 2>" + errf).c_str(), "r");
    if (!p) return r;
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, got);
    const int st = pclose(p);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::ifstream e(errf);
    r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
    unlink(errf.c_str());
    return r;
}

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::string(PATCHFUZZ_BINARY_DIR) + "/loader_cli_tmp." + std::to_string(getpid());
        mkdir(dir_.c_str(), 0755);
    }
    void TearDown() override {
        for (const auto& f : files_) unlink(f.c_str());
        rmdir(dir_.c_str());
    }
    std::string write(const std::string& name, const std::string& bytes) {
        const std::string p = dir_ + "/" + name;
        std::ofstream(p, std::ios::binary) << bytes;
        files_.push_back(p);
        return p;
    }
    static std::string read(const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::string dir_;
    std::vector<std::string> files_;
};

TEST_F(Cli, LoadSummarisesEveryProgram) {
    CliRun r = run("load " + obj("subprog_call"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("program subprog_call"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("program second_entry"), std::string::npos);
    EXPECT_NE(r.out.find("subprog 1 at 12: mix"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lookups: hash=1"), std::string::npos);
    CliRun k = run("load " + obj("iter_num"));
    ASSERT_EQ(k.code, 0) << k.err;
    EXPECT_NE(k.out.find("bpf_iter_num_next x2 (btf id 70002)"), std::string::npos) << k.out;
}

TEST_F(Cli, LoadLargeObjectJson) {
    CliRun r = run("load --json " + obj("large"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("\"name\": \"large\""), std::string::npos);
    EXPECT_NE(r.out.find("\"lru_hash\": 840"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"open_ms\": "), std::string::npos);
}

TEST_F(Cli, DisasmPrintsTheLargeObject) {
    CliRun r = run("disasm " + obj("large"));
    ASSERT_EQ(r.code, 0) << r.err;
    size_t lines = 0;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) lines += !l.empty() && l[0] != ';';
    auto o = load_object(obj("large"));
    ASSERT_TRUE(o);
    const Program& p = o->programs[0];
    ASSERT_GE(p.len(), 50000u);
    size_t ldimm64 = 0;
    for (size_t i = 0; i < p.insns.size(); ++i)
        if (isa::is_ldimm64(p.insns[i])) ++ldimm64, ++i;
    EXPECT_EQ(lines, p.len() - ldimm64);  // one line per insn, an ld_imm64 pair on one line
    EXPECT_EQ(r.out.rfind("; program large", 0), 0u);
}

TEST_F(Cli, DisasmInputKindsAgree) {
    // The same program as .bpf.o, raw .bin, .s and .case prints the same text.
    auto o = load_object(obj("loop_callback"));
    ASSERT_TRUE(o);
    const auto& insns = o->programs[0].insns;
    std::string bin(reinterpret_cast<const char*>(insns.data()), insns.size() * 8);
    CliRun b = run("disasm " + write("p.bin", bin));
    ASSERT_EQ(b.code, 0) << b.err;
    CliRun s = run("disasm " + write("p.s", b.out));
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.out, b.out);
    CliRun c = run("disasm " + write("p.case", "# from the .s\n-- program\n" + b.out));
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(c.out, b.out);
    CliRun e = run("disasm " + obj("loop_callback"));
    ASSERT_EQ(e.code, 0);
    EXPECT_NE(e.out.find(b.out), std::string::npos);
    CliRun n = run("disasm --numbered --opcodes " + write("q.bin", bin));
    ASSERT_EQ(n.code, 0);
    EXPECT_NE(n.out.find("   0: (b7) r2 = 0"), std::string::npos) << n.out;
}

TEST_F(Cli, DisasmBadInputs) {
    CliRun r = run("disasm " + write("x.bin", "0123456789abc"));
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "patchfuzz disasm: " + dir_ + "/x.bin: length 13 is not a multiple of 8\n");
    CliRun s = run("disasm " + write("bad.s", "r0 = 1\nr0 +== 2\nexit\n"));
    EXPECT_EQ(s.code, 2);
    EXPECT_EQ(s.err.rfind("patchfuzz disasm: " + dir_ + "/bad.s:2:", 0), 0u) << s.err;
    CliRun c = run("disasm " + write("bad.case", "-- program\nexit\n-- pach\n"));
    EXPECT_EQ(c.code, 2);
    EXPECT_EQ(c.err, "patchfuzz disasm: " + dir_ + "/bad.case:3: unknown section '-- pach'\n");
    EXPECT_EQ(run("disasm").code, 2);
    EXPECT_EQ(run("disasm --bogus x.bin").code, 2);
    EXPECT_EQ(run("disasm " + dir_ + "/missing.bin").code, 2);
}

TEST_F(Cli, LoadMalformedObjectsExitTwoWithAMessage) {
    const std::string good = read(obj("hash_lookup"));
    ASSERT_GT(good.size(), 64u);
    std::vector<std::pair<std::string, std::string>> bad = {
        {"empty.bpf.o", ""},
        {"trunc.bpf.o", good.substr(0, good.size() / 2)},
        {"header.bpf.o", good.substr(0, 40)},
        {"text.bpf.o", "this is not an ELF object\n"},
    };
    std::string c32 = good;
    c32[4] = 1;
    bad.emplace_back("class32.bpf.o", c32);
    std::string mach = good;
    mach[18] = 62;
    bad.emplace_back("machine.bpf.o", mach);
    for (const auto& [name, bytes] : bad) {
        const std::string p = write(name, bytes);
        CliRun r = run("load " + p);
        EXPECT_EQ(r.code, 2) << name;
        EXPECT_EQ(r.err.rfind("patchfuzz load: " + p + ": ", 0), 0u) << name << ": " << r.err;
        EXPECT_TRUE(r.out.empty());
        CliRun d = run("disasm " + p);
        EXPECT_EQ(d.code, 2) << name;
    }
    EXPECT_EQ(run("load").code, 2);
    EXPECT_EQ(run("load --help").code, 0);
    EXPECT_EQ(run("load a.o b.o").code, 2);
}

}  // namespace
}  // namespace patchfuzz::loader
