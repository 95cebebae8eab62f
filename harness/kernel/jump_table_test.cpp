// gotox through jump tables (BPF_MAP_TYPE_INSN_ARRAY) against a console recorded from a real
// guest: Debian's 7.3.4 (x86-64 JIT) at root, `patchfuzz kernel check ... --kernel 7.3 --run` over
// testdata/gotox-7.3/ (three generated programs, each with one jump table whose cases hold div/mod
// guards and map lookups). The guest printed each table's entries after the load (@@IA); the
// expected values below are those the kernel printed, read from the recording, never computed by
// the code under test.
#include <gtest/gtest.h>

#include <linux/bpf.h>


#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "harness/case/case_file.hpp"
#include "harness/kernel/kernel_check.hpp"
#include "harness/kernel/xlated_compare.hpp"
#include "harness/kernel/recorded_guest_test_util.hpp"
#include "harness/kernel/xlated_program.hpp"

namespace patchfuzz::kernel {
namespace {

const std::string kData = std::string(PATCHFUZZ_SOURCE_ROOT) + "/harness/kernel/testdata/gotox-7.3/";
const std::vector<std::string> kCases = {kData + "gen-61-0.case", kData + "gen-62-0.case", kData + "gen-63-0.case"};

using Recording = RecordedGuest;

const Recording& recording() {
    static const Recording r = read_recorded_guest(kData + "console.txt", kCases);
    return r;
}

TEST(JumpTables, TheKernelReportedEveryTable) {
    const auto& r = recording();
    ASSERT_EQ(r.cases.size(), kCases.size());
    ASSERT_EQ(r.report.cases.size(), kCases.size());
    EXPECT_EQ(r.report.release, "7.3.4+deb13-amd64");
    for (size_t i = 0; i < r.cases.size(); i++) {
        const auto& g = r.report.cases[i];
        EXPECT_TRUE(g.complete);
        EXPECT_EQ(g.rc, 0);
        ASSERT_EQ(r.cases[i].program.insn_arrays.size(), 1u) << kCases[i];
        const InsnArray& ia = r.cases[i].program.insn_arrays[0];
        ASSERT_TRUE(g.insn_arrays.count(static_cast<uint32_t>(ia.map_index))) << kCases[i];
        EXPECT_EQ(g.insn_arrays.at(static_cast<uint32_t>(ia.map_index)).size(), ia.entries.size());
    }
}

// The model's rewrite moves every table entry where the kernel moved it (bpf_insn_array_adjust
// with each patch): the comparison the kernel oracle makes after the xlated code agrees. In this
// recording the kernel moved entries (a div/mod guard or a lookup inline before or inside the
// cases), so agreeing is not the trivial orig_off == xlated_off.
TEST(JumpTables, TheModelMovesEveryEntryAsTheKernelDid) {
    const auto& r = recording();
    ASSERT_EQ(r.report.cases.size(), kCases.size());
    ASSERT_EQ(r.cases.size(), kCases.size());
    size_t moved = 0;
    for (size_t i = 0; i < r.cases.size(); i++) {
        const auto& c = r.cases[i];
        ModelResult m = run_model(c.program, passes::KernelProfile::K7_3, false, arch_x86_64(), true);
        ASSERT_TRUE(m.ok) << kCases[i] << ": " << m.error;
        const auto& g = r.report.cases[i];
        const auto cmp = compare_xlated(g.xlated, m.program, g.map_ids, r.facts);
        EXPECT_TRUE(cmp.equal) << kCases[i] << "\n" << cmp.diff;
        EXPECT_GE(cmp.masked, 2u);  // M7: the table load's two slots, at least
        ASSERT_EQ(m.program.insn_arrays.size(), 1u);
        const InsnArray& ia = m.program.insn_arrays[0];
        const auto& kernel = g.insn_arrays.at(static_cast<uint32_t>(ia.map_index));
        for (size_t e = 0; e < ia.entries.size(); e++) {
            EXPECT_EQ(ia.entries[e].xlated_off, kernel[e]) << kCases[i] << " entry " << e;
            moved += kernel[e] != ia.entries[e].orig_off;
        }
    }
    EXPECT_GT(moved, 0u);
}

// The kernel's xlated program, converted without the model: the raw table address becomes the
// table's map again, the entries are the kernel's, and the interpreter reproduces the VM's runs.
TEST(JumpTables, TheKernelsXlatedCodeRunsThroughItsOwnTables) {
    const auto& r = recording();
    ASSERT_EQ(r.report.cases.size(), kCases.size());
    ASSERT_EQ(r.cases.size(), kCases.size());
    size_t runs = 0;
    for (size_t i = 0; i < r.cases.size(); i++) {
        const auto& g = r.report.cases[i];
        XlatedProgram x = program_of_xlated(g, r.cases[i].program, r.facts);
        ASSERT_TRUE(x.ok) << kCases[i] << ": " << x.failure << ": " << x.detail;
        const InsnArray& ia = r.cases[i].program.insn_arrays[0];
        size_t table_loads = 0;
        for (size_t pc = 0; pc < x.program.insns.size(); pc++)
            if (isa::is_ldimm64(x.program.insns[pc]) && x.program.insns[pc].src_reg == BPF_PSEUDO_MAP_VALUE &&
                x.program.insns[pc].imm == ia.map_index)
                table_loads++;
        EXPECT_EQ(table_loads, 1u) << kCases[i];
        ASSERT_EQ(x.program.insn_arrays.size(), 1u);
        for (size_t e = 0; e < ia.entries.size(); e++)
            EXPECT_EQ(x.program.insn_arrays[0].entries[e].xlated_off, g.insn_arrays.at(static_cast<uint32_t>(ia.map_index))[e]);
        for (size_t k = 0; k < g.runs.size() && k < r.cases[i].inputs.size(); k++, runs++) {
            auto res = interp::execute(x.program, r.cases[i].inputs[k], arch_x86_64());
            ASSERT_EQ(res.status, interp::ExecResult::Status::Ok) << kCases[i] << ": " << res.reason;
            EXPECT_EQ(static_cast<uint32_t>(res.r0), g.runs[k].retval) << kCases[i] << " run " << k;
        }
    }
    EXPECT_EQ(runs, 6u);
}

// A guest that reports a table the model placed elsewhere is a difference, located at the entry.
TEST(JumpTables, AMovedEntryIsADifference) {
    const auto& r = recording();
    ASSERT_FALSE(r.report.cases.empty());
    ASSERT_FALSE(r.cases.empty());
    const auto& c = r.cases[0];
    ModelResult m = run_model(c.program, passes::KernelProfile::K7_3, false, arch_x86_64(), true);
    ASSERT_TRUE(m.ok);
    GuestCaseResult g = r.report.cases[0];
    const auto map = static_cast<uint32_t>(m.program.insn_arrays[0].map_index);
    g.insn_arrays[map][1] += 1;
    const std::string diff = insn_array_difference(g, m.program);
    EXPECT_NE(diff.find("entry 1"), std::string::npos) << diff;
    g.insn_arrays.erase(map);
    EXPECT_NE(insn_array_difference(g, m.program).find("not reported"), std::string::npos);
}

}  // namespace
}  // namespace patchfuzz::kernel
