// The kernel selftest snippet of a finding: the section a kernel developer's test_loader needs,
// and asm the selftests' LLVM inline assembler reads (64-bit immediates with `ll`, maps and
// helpers as operands). Expected texts are written from tools/testing/selftests/bpf/progs/
// verifier_*.c conventions, not taken from the code under test.
#include "harness/triage/reproducer.hpp"

#include <gtest/gtest.h>
#include <linux/bpf.h>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::harness {
namespace {

using namespace isa;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SelftestSnippet, SixtyFourBitImmediatesMapsAndHelpers) {
    Case c;
    c.program = make_program({ldimm64_lo(2, 0, 1), ldimm64_hi(1), ldimm64_lo(1, BPF_PSEUDO_MAP_IDX, 0), ldimm64_hi(0),
                              ldimm64_lo(3, BPF_PSEUDO_MAP_IDX_VALUE, 0), ldimm64_hi(8), call_helper(BPF_FUNC_ktime_get_ns),
                              exit_insn()});
    c.program.maps.push_back(MapDef{.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 1});
    const std::string s = to_selftest_snippet(c, c.program, "exec/-/-/r0-mismatch/x86_64", "f");
    EXPECT_TRUE(has(s, "r2 = 0x100000001 ll;")) << s;
    EXPECT_TRUE(has(s, "r1 = %[map_0] ll;")) << s;
    EXPECT_TRUE(has(s, "r3 = %[map_0] + 8 ll;")) << s;
    EXPECT_TRUE(has(s, "__imm_addr(map_0)")) << s;
    EXPECT_TRUE(has(s, "call %[bpf_ktime_get_ns];")) << s;
    EXPECT_TRUE(has(s, "__imm(bpf_ktime_get_ns)")) << s;
    EXPECT_TRUE(has(s, "SEC(\"socket\")")) << s;
}

TEST(SelftestSnippet, SubprogsAreFunctionsCalledByName) {
    // main: call the subprog at 4, pass the callback at 6 to bpf_loop; as in verifier_*.c, each is
    // a static __naked function, reached by `call NAME` and `rX = %[NAME] ll` (`call +N` would be
    // helper N to LLVM's assembler).
    Case c;
    c.program = make_program({call_pseudo(3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 4), ldimm64_hi(0), exit_insn(),
                              mov64_imm(0, 1), exit_insn(), mov64_imm(0, 0), exit_insn()});
    c.program.subprogs = {{.start = 0}, {.start = 4}, {.start = 6}, {.start = 8}};
    const std::string s = to_selftest_snippet(c, c.program, "sig", "f");
    EXPECT_TRUE(has(s, "\"call f_sub1;\"")) << s;
    EXPECT_TRUE(has(s, "\"r2 = %[f_sub2] ll;\"")) << s;
    EXPECT_TRUE(has(s, "__imm_addr(f_sub2)")) << s;
    EXPECT_TRUE(has(s, "static __used __naked __noinline void f_sub1(void)")) << s;
    EXPECT_TRUE(has(s, "static __used __naked __noinline void f_sub2(void)")) << s;
    // callees are defined before the main program that names them
    EXPECT_LT(s.find("void f_sub2(void)"), s.find("__naked void f(void)")) << s;
    // each function holds its own insns only
    const std::string sub1 = s.substr(s.find("void f_sub1(void)"), s.find("__clobber_all", s.find("void f_sub1(void)")) - s.find("void f_sub1(void)"));
    EXPECT_TRUE(has(sub1, "\"r0 = 1;\"")) << sub1;
    EXPECT_FALSE(has(sub1, "\"r0 = 0;\"")) << sub1;
}

TEST(SelftestSnippet, TracingProgramsNameATargetWithTheirArgumentCount) {
    Case c;
    c.program = make_program({mov64_imm(0, 0), exit_insn()});
    c.program.prog_type = BPF_PROG_TYPE_TRACING;
    c.program.attach = TraceAttach::Fentry;
    c.program.attach_btf_vlen = 2;
    EXPECT_TRUE(has(to_selftest_snippet(c, c.program, "s", "f"), "SEC(\"fentry/bpf_fentry_test2\")"));
    c.program.attach = TraceAttach::Fexit;
    c.program.attach_btf_vlen = 6;
    EXPECT_TRUE(has(to_selftest_snippet(c, c.program, "s", "f"), "SEC(\"fexit/bpf_fentry_test6\")"));
    c.program.attach_btf_vlen = 9;  // no bpf_fentry_test takes 9 arguments
    EXPECT_TRUE(has(to_selftest_snippet(c, c.program, "s", "f"), "SEC(\"fexit/bpf_fentry_test1\")"));
}

}  // namespace
}  // namespace patchfuzz::harness
