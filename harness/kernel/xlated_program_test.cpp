// The xlated -> Program conversion and its execution on a console recorded from a real guest:
// Debian's 7.3.4 (x86-64 JIT) at root, `patchfuzz kernel check ... --kernel 7.3 --run` over
// testdata/xlated-7.3/ (four generated programs with hash, LRU hash and array maps, jiffies64 and
// may_goto), corpus/kernel7/current-task-fentry.case, and findings 0007 and 0008; the console's
// "@@" lines are kept in testdata/xlated-7.3/console.txt. The expected results are the kernel's
// own: its test runs, and what the findings' notes say its rewrite does.
#include "harness/kernel/xlated_program.hpp"

#include <gtest/gtest.h>


#include "bpf/interp/interp.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "harness/case/case_file.hpp"
#include "harness/kernel/recorded_guest_test_util.hpp"
#include "harness/kernel/xlated_exec.hpp"

namespace patchfuzz::kernel {
namespace {

const std::string kRoot = PATCHFUZZ_SOURCE_ROOT;
const std::string kData = kRoot + "/harness/kernel/testdata/xlated-7.3/";

// The cases in the order they were loaded.
const std::vector<std::string> kCases = {
    kData + "gen-51-0.case",  kData + "gen-51-27.case", kData + "gen-51-21.case", kData + "gen-51-32.case",
    kRoot + "/corpus/kernel7/current-task-fentry.case",
    kRoot + "/corpus/regression/findings/0007-bpf-loop-nr-loops-upper-half.case",
    kRoot + "/corpus/regression/findings/0008-get-func-arg-index-upper-half.case",
};
constexpr size_t kGenerated = 4, kCurrentTask = 4, k0007 = 5, k0008 = 6;

using Recording = RecordedGuest;

const Recording& recording() {
    static const Recording r = read_recorded_guest(kData + "console.txt", kCases);
    return r;
}

XlatedProgram convert(size_t i) {
    const auto& r = recording();
    return program_of_xlated(r.report.cases[i], r.cases[i].program, r.facts);
}

TEST(XlatedProgram, RecordingIsComplete) {
    const auto& r = recording();
    ASSERT_EQ(r.cases.size(), kCases.size());
    ASSERT_EQ(r.report.cases.size(), kCases.size());
    EXPECT_EQ(r.report.release, "7.3.4+deb13-amd64");
    for (const auto& c : r.report.cases) {
        EXPECT_TRUE(c.complete);
        EXPECT_EQ(c.rc, 0);
        EXPECT_FALSE(c.xlated.empty());
    }
    EXPECT_EQ(r.facts.kernel_ax_reg, 12);
    EXPECT_EQ(r.facts.kernel_array_value_off, 296);
    EXPECT_EQ(r.facts.kernel_ctx_layout, CtxLayout::Linux6_12);
    EXPECT_EQ(kernel_ctx_layout_of("6.1.0-57-amd64"), CtxLayout::Linux6_1);
    EXPECT_EQ(kernel_ctx_layout_of("6.12.118+deb12-amd64"), CtxLayout::Linux6_12);
    EXPECT_EQ(kernel_ctx_layout_of("5.10.0-30-amd64"), CtxLayout::Uapi);
    EXPECT_EQ(kernel_ctx_layout_of("7.3.4+deb13-arm64"), CtxLayout::Linux6_12);
    EXPECT_EQ(kernel_ctx_layout_of("6.12.118+deb12-armmp"), CtxLayout::Uapi);
}

// The converted program, run in our interpreter, computes what the kernel computed in its test
// runs: return value and the map contents the guest printed. This holds the whole conversion
// (symbols, map ids, layouts, AX) to the real kernel.
TEST(XlatedProgram, ConvertedProgramsReproduceTheKernelsTestRuns) {
    const auto& r = recording();
    size_t runs = 0;
    for (size_t i = 0; i < r.cases.size(); i++) {
        auto x = convert(i);
        ASSERT_TRUE(x.ok) << kCases[i] << ": " << x.failure << ": " << x.detail;
        const auto& g = r.report.cases[i];
        for (size_t k = 0; k < g.runs.size() && k < r.cases[i].inputs.size(); k++, runs++) {
            ASSERT_EQ(g.runs[k].rc, 0);
            auto res = interp::execute(x.program, r.cases[i].inputs[k], arch_x86_64());
            ASSERT_EQ(res.status, interp::ExecResult::Status::Ok) << kCases[i] << ": " << res.reason;
            EXPECT_EQ(static_cast<uint32_t>(res.r0), g.runs[k].retval) << kCases[i] << " run " << k;
            for (const auto& e : g.runs[k].maps) {
                ASSERT_LT(e.map, res.maps.size());
                std::vector<uint8_t> mine(e.value.size(), 0);
                for (const auto& me : res.maps[e.map])
                    if (me.key == e.key) mine = me.value;
                EXPECT_EQ(mine, e.value) << kCases[i] << " run " << k << " map " << e.map;
            }
        }
    }
    EXPECT_GE(runs, 9u);  // every generated case ran twice, 0007 once
}

TEST(XlatedProgram, CallsAreNamedThroughTheGuestsKallsyms) {
    const auto& r = recording();
    size_t htab = 0, updates = 0, may_goto = 0;
    for (size_t i = 0; i < kGenerated; i++) {
        auto x = convert(i);
        ASSERT_TRUE(x.ok);
        for (const auto& [pc, names] : r.report.cases[i].symbols) {
            const isa::Insn& in = x.program.insns[pc];
            if (names.empty() || !isa::is_call(in)) continue;
            if (names[0] == "__htab_map_lookup_elem") {
                EXPECT_EQ(in.imm, isa::kInternalHtabLookup);
                htab++;
            } else if (names[0] == "arch_bpf_timed_may_goto") {
                EXPECT_EQ(in.imm, isa::kInternalTimedMayGoto);
                may_goto++;
            } else {
                EXPECT_EQ(in.imm, BPF_FUNC_map_update_elem) << names[0];
                updates++;
            }
        }
    }
    EXPECT_GT(htab, 0u);
    EXPECT_GT(updates, 0u);
    EXPECT_GT(may_goto, 0u);
}

// 7.x numbers AX 12: the converted code names the interpreter's AX (r11) and never r12.
TEST(XlatedProgram, AxIsRenumbered) {
    const auto& r = recording();
    auto uses = [](const std::vector<isa::Insn>& v, uint8_t reg) {
        for (size_t i = 0; i < v.size(); i++) {
            if (v[i].dst_reg == reg || v[i].src_reg == reg) return true;
            if (isa::is_ldimm64(v[i])) i++;
        }
        return false;
    };
    bool seen = false;
    for (size_t i = 0; i < r.cases.size(); i++) {
        if (!uses(r.report.cases[i].xlated, 12)) continue;
        seen = true;
        auto x = convert(i);
        ASSERT_TRUE(x.ok);
        EXPECT_TRUE(uses(x.program.insns, isa::kRegAx));
        EXPECT_FALSE(uses(x.program.insns, 12));
    }
    EXPECT_TRUE(seen);  // the timed may_goto uses AX
}

// The array inline's `r1 += offsetof(struct bpf_array, value)` is the build's 296 in the kernel,
// the interpreter's stand-in after the conversion.
TEST(XlatedProgram, ArrayValueOffsetBecomesTheInterpretersLayout) {
    const auto& r = recording();
    size_t rewritten = 0;
    for (size_t i = 0; i < kGenerated; i++) {
        auto x = convert(i);
        const auto& k = r.report.cases[i].xlated;
        for (size_t pc = 0; pc + 1 < k.size(); pc++)
            if (k[pc].code == (BPF_ALU64 | BPF_ADD | BPF_K) && k[pc].dst_reg == BPF_REG_1 && k[pc].imm == 296 &&
                k[pc + 1].code == (BPF_LDX | BPF_MEM | BPF_W)) {
                EXPECT_EQ(x.program.insns[pc].imm, isa::kArrayValueOffset);
                rewritten++;
            }
    }
    EXPECT_GT(rewritten, 0u);
}

// Finding 0007: the inline's 64-bit `if r1 <= BPF_MAX_LOOPS` sends nr_loops = 0x100000003 to
// -E2BIG where the helper loops 3 times; located at that jump.
TEST(XlatedExec, Finding0007IsAKernelFindingAtTheNrLoopsTest) {
    const auto& r = recording();
    auto x = convert(k0007);
    ASSERT_TRUE(x.ok);
    auto e = run_xlated_vs_original(x.program, r.cases[k0007].program, r.cases[k0007].inputs, arch_x86_64());
    EXPECT_FALSE(e.agree);
    EXPECT_EQ(e.detail, "retval: xlated 4294967289, original 3");
    ASSERT_GE(e.diverging_pc, 0);
    const isa::Insn& at = x.program.insns[static_cast<size_t>(e.diverging_pc)];
    EXPECT_EQ(at.code, BPF_JMP | BPF_JLE | BPF_K);
    EXPECT_EQ(at.dst_reg, BPF_REG_1);
    EXPECT_EQ(at.imm, 0x800000);
}

// Finding 0008 (a tracing program: no test run) shows up from the xlated code alone: the inlined
// get_func_arg reads outside the ctx where the helper returns -EINVAL.
TEST(XlatedExec, Finding0008FaultsWhereTheHelperDoesNot) {
    const auto& r = recording();
    EXPECT_TRUE(r.report.cases[k0008].runs.empty());
    auto x = convert(k0008);
    ASSERT_TRUE(x.ok);
    auto e = run_xlated_vs_original(x.program, r.cases[k0008].program, r.cases[k0008].inputs, arch_x86_64());
    EXPECT_FALSE(e.agree);
    EXPECT_NE(e.detail.find("xlated fault"), std::string::npos) << e.detail;
    EXPECT_GE(e.diverging_pc, 0);
}

TEST(XlatedExec, KernelRewritesThatKeepTheMeaningAgree) {
    const auto& r = recording();
    for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, kCurrentTask}) {
        auto x = convert(i);
        ASSERT_TRUE(x.ok);
        auto e = run_xlated_vs_original(x.program, r.cases[i].program, r.cases[i].inputs, arch_x86_64());
        EXPECT_TRUE(e.agree) << kCases[i] << ": " << e.detail;
    }
}

// Every conversion failure has a class; none is silent.
TEST(XlatedProgram, FailuresAreClassified) {
    const auto& r = recording();
    GuestCaseResult g = r.report.cases[1];  // LRU lookup and update calls
    ASSERT_FALSE(g.symbols.empty());
    const uint32_t call_pc = g.symbols.begin()->first;

    GuestCaseResult no_sym = g;
    no_sym.symbols.erase(call_pc);
    EXPECT_EQ(program_of_xlated(no_sym, r.cases[1].program, r.facts).failure, "no-symbols");

    GuestCaseResult unknown = g;
    unknown.symbols[call_pc] = {"some_kernel_function"};
    auto u = program_of_xlated(unknown, r.cases[1].program, r.facts);
    EXPECT_EQ(u.failure, "unknown-symbol");
    EXPECT_NE(u.detail.find("some_kernel_function"), std::string::npos);

    GuestCaseResult inside = g;
    inside.symbols[call_pc] = {};
    EXPECT_EQ(program_of_xlated(inside, r.cases[1].program, r.facts).failure, "call-not-a-symbol");

    GuestCaseResult other_map = g;
    for (auto& id : other_map.map_ids) id += 1000;
    EXPECT_EQ(program_of_xlated(other_map, r.cases[1].program, r.facts).failure, "unknown-map-id");

    GuestCaseResult r11 = g;
    r11.xlated.insert(r11.xlated.begin(), isa::Insn{BPF_ALU64 | BPF_MOV | BPF_K, 11, 0, 0, 0});
    EXPECT_EQ(program_of_xlated(r11, r.cases[1].program, r.facts).failure, "kernel-r11");

    EXPECT_EQ(program_of_xlated(GuestCaseResult{}, r.cases[1].program, r.facts).failure, "no-xlated");

    // An ld_imm64 of a kernel-half value that names no symbol: the program's own constant passes,
    // anything else is an unknown address.
    GuestCaseResult constant = g;
    constant.xlated.insert(constant.xlated.begin(), {isa::Insn{BPF_LD | BPF_IMM | BPF_DW, 1, 0, 0, 0},
                                                     isa::Insn{0, 0, 0, 0, static_cast<int32_t>(0x80000000u)}});
    constant.symbols.clear();
    constant.symbols[0] = {};
    for (const auto& [pc, names] : g.symbols) constant.symbols[pc + 2] = names;
    auto c = program_of_xlated(constant, r.cases[1].program, r.facts);
    EXPECT_EQ(c.failure, "unknown-address");
    Program with_constant = r.cases[1].program;
    with_constant.insns.insert(with_constant.insns.begin(), constant.xlated.begin(), constant.xlated.begin() + 2);
    with_constant.aux.insert(with_constant.aux.begin(), 2, InsnAux{});
    EXPECT_TRUE(program_of_xlated(constant, with_constant, r.facts).ok);

    // A socket filter / XDP program reading its ctx runs on the booted build's ctx structs; a
    // program type, or a build, whose struct layout is not modelled is not executed.
    Program reads_ctx = r.cases[1].program;
    ASSERT_TRUE(reads_ctx.prog_type == BPF_PROG_TYPE_SOCKET_FILTER || reads_ctx.prog_type == BPF_PROG_TYPE_XDP);
    reads_ctx.aux[0].ptr_type = PtrType::Ctx;
    const XlatedProgram on_structs = program_of_xlated(g, reads_ctx, r.facts);
    EXPECT_TRUE(on_structs.ok) << on_structs.failure;
    EXPECT_EQ(on_structs.program.ctx_layout, CtxLayout::Linux6_12);
    Program cgroup = reads_ctx;
    cgroup.prog_type = BPF_PROG_TYPE_CGROUP_SKB;
    EXPECT_EQ(program_of_xlated(g, cgroup, r.facts).failure, "ctx-access");
    MaskFacts unknown_build = r.facts;
    unknown_build.kernel_ctx_layout = CtxLayout::Uapi;
    EXPECT_EQ(program_of_xlated(g, reads_ctx, unknown_build).failure, "ctx-access");
}

TEST(XlatedProgram, KernelSymbolsNameHelpers) {
    EXPECT_EQ(helper_of_kernel_symbol("__htab_map_lookup_elem"), isa::kInternalHtabLookup);
    EXPECT_EQ(helper_of_kernel_symbol("htab_lru_map_update_elem"), BPF_FUNC_map_update_elem);
    EXPECT_EQ(helper_of_kernel_symbol("array_map_lookup_elem"), BPF_FUNC_map_lookup_elem);
    EXPECT_EQ(helper_of_kernel_symbol("queue_stack_map_push_elem"), BPF_FUNC_map_push_elem);
    EXPECT_EQ(helper_of_kernel_symbol("bpf_ktime_get_ns"), BPF_FUNC_ktime_get_ns);
    EXPECT_EQ(helper_of_kernel_symbol("bpf_user_rnd_u32"), BPF_FUNC_get_prandom_u32);
    EXPECT_EQ(helper_of_kernel_symbol("arch_bpf_timed_may_goto"), isa::kInternalTimedMayGoto);
    EXPECT_FALSE(helper_of_kernel_symbol("kmalloc").has_value());
}

}  // namespace
}  // namespace patchfuzz::kernel
