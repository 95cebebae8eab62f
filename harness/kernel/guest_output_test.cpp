// The console parser on hand-written transcripts in the guest's documented format
// (guest/pfk_loader.c header), with kernel noise in between.
#include "harness/kernel/guest_output.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::kernel {
namespace {

constexpr const char* kConsole =
    "[    0.000000] Linux version 6.12.117+deb12-amd64\r\n"
    "@@PFK-BEGIN v=1 release=6.12.117+deb12-amd64 jit=1 cases=3 uptime_ms=2150\n"
    "@@FACT array_value_off 264\n"
    "@@FACT htab_elem_key_off 48\n"
    "@@CASE 0 rc=0 insns=3 xlated=2 verified=3 load_us=812 maps=7,9\n"
    "@@X 0 b700000001000000950000000000000000\n"  // 17 bytes: not whole insns
    "";

TEST(GuestOutput, ParsesCasesXlatedLogsRunsAndMaps) {
    std::string console =
        "[    0.000000] Linux version 6.12.117+deb12-amd64\r\n"
        "@@PFK-BEGIN v=1 release=6.12.117+deb12-amd64 jit=1 cases=3 uptime_ms=2150\n"
        "@@FACT array_value_off 264\n"
        "@@FACT htab_elem_key_off 48\n"
        "@@CASE 0 rc=0 insns=3 xlated=2 verified=3 load_us=812 maps=7,9 jited=88\n"
        "@@X 0 b7000000010000009500000000000000\n"
        "@@RUN 0 0 rc=0 retval=1\n"
        "@@MAP 0 0 1 00000000 2a00000000000000\n"
        "@@END 0\n"
        "[    3.100000] WARNING: CPU: 0 PID: 1 at kernel/bpf/verifier.c:1 do_check\r\n"
        "@@CASE 1 rc=-13 insns=2 xlated=0 verified=0 load_us=90 maps=-\n"
        "@@LOG 1 0: (79) r0 = *(u64 *)(r1 +0)\n"
        "@@LOG 1 R1 invalid mem access 'scalar'\n"
        "@@END 1\n"
        "@@CASE 2 rc=0 insns=1 xlated=1 verified=1 load_us=5 maps=- jited=0\n"
        "@@PFK-DONE ok=2 failed=1 us=907\n";
    auto r = parse_guest_output(console);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->begun);
    EXPECT_TRUE(r->done);
    EXPECT_EQ(r->release, "6.12.117+deb12-amd64");
    EXPECT_EQ(r->jit, 1);
    EXPECT_EQ(r->uptime_ms, 2150);
    EXPECT_EQ(r->facts.at("array_value_off"), 264);
    EXPECT_EQ(r->facts.at("htab_elem_key_off"), 48);
    ASSERT_EQ(r->cases.size(), 3u);
    const auto& c0 = r->cases[0];
    EXPECT_TRUE(c0.complete);
    EXPECT_EQ(c0.rc, 0);
    EXPECT_EQ(c0.load_us, 812u);
    EXPECT_EQ(c0.map_ids, (std::vector<uint32_t>{7, 9}));
    EXPECT_EQ(c0.jited, 88);
    EXPECT_EQ(r->cases[1].jited, -1);  // an older loader's line: not reported
    EXPECT_EQ(r->cases[2].jited, 0);   // the kernel interprets it
    ASSERT_EQ(c0.xlated.size(), 2u);
    EXPECT_EQ(c0.xlated[0].code, 0xb7);
    EXPECT_EQ(c0.xlated[0].imm, 1);
    EXPECT_EQ(c0.xlated[1].code, 0x95);
    ASSERT_EQ(c0.runs.size(), 1u);
    EXPECT_EQ(c0.runs[0].retval, 1u);
    ASSERT_EQ(c0.runs[0].maps.size(), 1u);
    EXPECT_EQ(c0.runs[0].maps[0].map, 1u);
    EXPECT_EQ(c0.runs[0].maps[0].value[0], 0x2a);
    const auto& c1 = r->cases[1];
    EXPECT_EQ(c1.rc, -13);
    ASSERT_EQ(c1.log.size(), 2u);
    EXPECT_EQ(c1.log[1], "R1 invalid mem access 'scalar'");
    EXPECT_FALSE(r->cases[2].complete);  // no @@END: the VM died there
    ASSERT_EQ(r->kernel_alerts.size(), 1u);
    EXPECT_EQ(r->ok, 2u);
    EXPECT_EQ(r->busy_us, 907u);
}

TEST(GuestOutput, MalformedTagLineIsLocated) {
    auto r = parse_guest_output(kConsole);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().where, "console:6");
}

TEST(GuestOutput, NoiseOnlyIsNotBegun) {
    auto r = parse_guest_output("random boot noise\nKernel panic - not syncing: x\n");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->begun);
    EXPECT_EQ(r->kernel_alerts.size(), 1u);
}

TEST(GuestOutput, CaseIndexOutOfRangeIsAnError) {
    auto r = parse_guest_output("@@PFK-BEGIN v=1 release=x jit=1 cases=1\n@@CASE 5 rc=0\n");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().where, "console:2");
}

// @@SYM: what the guest's kallsyms name at an xlated pc (aliases comma-separated, "?" = none).
TEST(GuestOutput, ParsesSymbolLines) {
    std::string console =
        "@@PFK-BEGIN v=3 release=7.3.4+deb13-amd64 jit=1 cases=1 uptime_ms=2000\n"
        "@@CASE 0 rc=0 insns=2 xlated=2 verified=2 load_us=1 maps=- jited=8\n"
        "@@SYM 0 3 htab_map_update_elem\n"
        "@@SYM 0 7 jiffies,jiffies_64\n"
        "@@SYM 0 9 ?\n"
        "@@END 0\n";
    auto rep = parse_guest_output(console);
    ASSERT_TRUE(static_cast<bool>(rep));
    const auto& s = rep->cases[0].symbols;
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s.at(3), std::vector<std::string>{"htab_map_update_elem"});
    EXPECT_EQ(s.at(7), (std::vector<std::string>{"jiffies", "jiffies_64"}));
    EXPECT_TRUE(s.at(9).empty());
    EXPECT_FALSE(static_cast<bool>(parse_guest_output(console + "@@SYM 0 x y\n")));
}

TEST(GuestOutput, ParsesInstructionArrayLines) {
    std::string console =
        "@@PFK-BEGIN v=4 release=7.3.4+deb13-amd64 jit=1 cases=1 uptime_ms=2000\n"
        "@@CASE 0 rc=0 insns=9 xlated=12 verified=9 load_us=1 maps=4,5 jited=80\n"
        "@@IA 0 1 7,4294967295,11\n"
        "@@END 0\n";
    auto rep = parse_guest_output(console);
    ASSERT_TRUE(static_cast<bool>(rep));
    const auto& ia = rep->cases[0].insn_arrays;
    ASSERT_EQ(ia.size(), 1u);
    EXPECT_EQ(ia.at(1), (std::vector<uint32_t>{7, 0xffffffffu, 11}));
    EXPECT_FALSE(static_cast<bool>(parse_guest_output(console + "@@IA 0 1 7,x\n")));
    EXPECT_FALSE(static_cast<bool>(parse_guest_output(console + "@@IA 0 1\n")));
}

}  // namespace
}  // namespace patchfuzz::kernel
