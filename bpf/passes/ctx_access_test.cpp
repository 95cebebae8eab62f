// Pass "ctx_access": bpf_convert_ctx_accesses. The nospec barriers' expected programs are written
// out by hand from the kernel's two patch shapes ([nospec, insn] and [store, nospec]); the 7.3.4
// guest showed the second after every first store into a stack slot below bypass_spec_v4. The ctx
// rewrites' expected insns are the kernels' own xlated code, as `patchfuzz kernel check --json`
// printed it for one-access programs (`<access>; r0 = 0; exit`) on Debian's 6.1.0-57, 6.12.118 and
// 7.3.4 (7.2.13 printed 7.3.4's): the table below holds the access and that text.
#include <linux/bpf.h>

#include "bpf/asm/assemble.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

TEST(CtxAccessPass, BarriersBeforeAndAfterAndJumpsStillLand) {
    Program p = make_program({
        st(BPF_DW, BPF_REG_10, -8, 1),      // 0 nospec_result: [st, nospec]
        jmp_imm(BPF_JEQ, BPF_REG_1, 0, 2),  // 1 -> 4
        ldx(BPF_DW, BPF_REG_0, BPF_REG_10, -8),  // 2 nospec: [nospec, ldx]
        stx(BPF_DW, BPF_REG_10, BPF_REG_0, -16),  // 3 both: [nospec, stx, nospec]
        mov64_imm(BPF_REG_0, 0),            // 4
        exit_insn(),                        // 5
    });
    p.aux[0].nospec_result = true;
    p.aux[2].nospec = true;
    p.aux[3].nospec = true;
    p.aux[3].nospec_result = true;
    p.aux[4].nospec_result = true;  // not a store: no barrier after it (the kernel's BPF_WRITE test)
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {st(BPF_DW, BPF_REG_10, -8, 1), nospec(), jmp_imm(BPF_JEQ, BPF_REG_1, 0, 5), nospec(),
                                     ldx(BPF_DW, BPF_REG_0, BPF_REG_10, -8), nospec(), stx(BPF_DW, BPF_REG_10, BPF_REG_0, -16),
                                     nospec(), mov64_imm(BPF_REG_0, 0), exit_insn()}));
}

TEST(CtxAccessPass, NoFactsNoPatch) {
    Program p = make_program({st(BPF_DW, BPF_REG_10, -8, 1), mov64_imm(BPF_REG_0, 0), exit_insn()});
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(p.len(), 3u);
}

std::vector<Insn> asm_of(const std::string& text) {
    auto a = assembly::assemble(text);
    EXPECT_TRUE(a.ok()) << text << (a.ok() ? "" : a.error().to_string());
    return a.ok() ? *a : std::vector<Insn>{};
}

struct Measured {
    const char* what;     // program type, field, access
    uint32_t prog_type;
    KernelProfile kernel;
    const char* access;   // the program's one access (then `r0 = 0; exit`)
    uint8_t ctx_field_size;  // as the verifier records it: 4 for a narrow-capable field's reads
    const char* xlated;   // the kernel's xlated code in its place
};

constexpr uint32_t kFilter = BPF_PROG_TYPE_SOCKET_FILTER, kTc = BPF_PROG_TYPE_SCHED_CLS, kXdp = BPF_PROG_TYPE_XDP;
constexpr KernelProfile k73 = KernelProfile::K7_3, k612 = KernelProfile::K6_12, k61 = KernelProfile::K6_1;

const Measured kMeasured[] = {
    {"socket_filter len", kFilter, k73, "r2 = *(u32 *)(r1 +0)", 4, "r2 = *(u32 *)(r1 +112)"},
    {"sched_cls len", kTc, k612, "r2 = *(u32 *)(r1 +0)", 4, "r2 = *(u32 *)(r1 +112)"},
    {"socket_filter ifindex", kFilter, k73, "r2 = *(u32 *)(r1 +40)", 4,
     "r2 = *(u64 *)(r1 +16); if r2 == 0x0 goto pc+1; r2 = *(u32 *)(r2 +224)"},
    {"sched_cls ifindex", kTc, k73, "r2 = *(u32 *)(r1 +40)", 4, "r2 = *(u64 *)(r1 +16); r2 = *(u32 *)(r2 +224)"},
    {"socket_filter ifindex, dst = src", kFilter, k73, "r1 = *(u32 *)(r1 +40)", 4,
     "r1 = *(u64 *)(r1 +16); if r1 == 0x0 goto pc+1; r1 = *(u32 *)(r1 +224)"},
    {"sched_cls ifindex, other base", kTc, k73, "r3 = *(u32 *)(r7 +40)", 4, "r3 = *(u64 *)(r7 +16); r3 = *(u32 *)(r3 +224)"},
    {"socket_filter pkt_type u8 at +1", kFilter, k73, "r2 = *(u8 *)(r1 +5)", 4, "r2 = *(u8 *)(r1 +128); w2 &= 7"},
    {"socket_filter hash u16 at +2", kFilter, k73, "r2 = *(u16 *)(r1 +70)", 4, "r2 = *(u32 *)(r1 +152); w2 >>= 16; w2 &= 65535"},
    {"sched_cls protocol u16 at +2", kTc, k73, "r2 = *(u16 *)(r1 +18)", 4, "r2 = *(u16 *)(r1 +180)"},
    {"sched_cls queue_mapping u8 at +1", kTc, k73, "r2 = *(u8 *)(r1 +13)", 4, "r2 = *(u16 *)(r1 +124); w2 >>= 8; w2 &= 255"},
    {"socket_filter tc_index u8 at +3", kFilter, k73, "r2 = *(u8 *)(r1 +47)", 4, "r2 = *(u16 *)(r1 +134); w2 >>= 24; w2 &= 255"},
    {"socket_filter napi_id u8 at +1", kFilter, k73, "r2 = *(u8 *)(r1 +85)", 4,
     "r2 = *(u32 *)(r1 +160); if r2 >= 0x2001 goto pc+1; r2 = 0; w2 >>= 8; w2 &= 255"},
    {"sched_cls vlan_present", kTc, k73, "r2 = *(u32 *)(r1 +20)", 4, "r2 = *(u32 *)(r1 +156); if r2 == 0x0 goto pc+1; w2 = 1"},
    {"socket_filter vlan_present u8 at +2", kFilter, k73, "r2 = *(u8 *)(r1 +22)", 4,
     "r2 = *(u32 *)(r1 +156); if r2 == 0x0 goto pc+1; w2 = 1; w2 >>= 16; w2 &= 255"},
    {"sched_cls vlan_tci u16 at +0", kTc, k73, "r2 = *(u16 *)(r1 +24)", 4, "r2 = *(u16 *)(r1 +158)"},
    {"socket_filter ingress_ifindex u16 at +0", kFilter, k73, "r2 = *(u16 *)(r1 +36)", 4, "r2 = *(u32 *)(r1 +148); w2 &= 65535"},
    {"sched_cls priority", kTc, k73, "r2 = *(u32 *)(r1 +32)", 4, "r2 = *(u32 *)(r1 +144)"},
    {"socket_filter cb[4] u8 store", kFilter, k73, "*(u8 *)(r1 +64) = r2", 0, "*(u8 *)(r1 +64) = r2"},
    {"socket_filter ldsx mark s8", kFilter, k73, "r2 = *(s8 *)(r1 +8)", 4, "r2 = *(u32 *)(r1 +168); w2 &= 255; r2 = (s8)r2"},
    {"sched_cls ldsx cb[0] s16", kTc, k73, "r2 = *(s16 *)(r1 +48)", 0, "r2 = *(u16 *)(r1 +48); r2 = (s16)r2"},
    {"socket_filter ldsx protocol s32", kFilter, k612, "r2 = *(s32 *)(r1 +16)", 4, "r2 = *(u16 *)(r1 +180); r2 = (s32)r2"},
    {"sched_cls mark st", kTc, k73, "*(u32 *)(r1 +8) = 7", 0, "*(u32 *)(r1 +168) = 7"},
    {"sched_cls tc_index stx", kTc, k73, "*(u32 *)(r1 +44) = r2", 0, "*(u16 *)(r1 +134) = r2"},
    {"sched_cls data", kTc, k73, "r2 = *(u32 *)(r1 +76)", 0, "r2 = *(u64 *)(r1 +208)"},
    {"sched_cls data_end", kTc, k73, "r2 = *(u32 *)(r1 +80)", 0, "r2 = *(u64 *)(r1 +80)"},
    {"sched_cls data_meta", kTc, k73, "r2 = *(u32 *)(r1 +140)", 0, "r2 = *(u64 *)(r1 +72)"},
    {"xdp data", kXdp, k73, "r2 = *(u32 *)(r1 +0)", 0, "r2 = *(u64 *)(r1 +0)"},
    {"xdp data_end", kXdp, k73, "r2 = *(u32 *)(r1 +4)", 0, "r2 = *(u64 *)(r1 +8)"},
    {"xdp data_meta", kXdp, k612, "r2 = *(u32 *)(r1 +8)", 0, "r2 = *(u64 *)(r1 +16)"},
    {"xdp ingress_ifindex", kXdp, k73, "r2 = *(u32 *)(r1 +12)", 0, "r2 = *(u64 *)(r1 +32); r2 = *(u64 *)(r2 +0); r2 = *(u32 *)(r2 +224)"},
    {"xdp rx_queue_index", kXdp, k73, "r2 = *(u32 *)(r1 +16)", 0, "r2 = *(u64 *)(r1 +32); r2 = *(u32 *)(r2 +8)"},
    // 6.1: other sk_buff and net_device offsets, vlan_present a bit of its own
    {"6.1 socket_filter ifindex", kFilter, k61, "r2 = *(u32 *)(r1 +40)", 4,
     "r2 = *(u64 *)(r1 +16); if r2 == 0x0 goto pc+1; r2 = *(u32 *)(r2 +216)"},
    {"6.1 sched_cls hash", kTc, k61, "r2 = *(u32 *)(r1 +68)", 4, "r2 = *(u32 *)(r1 +148)"},
    {"6.1 socket_filter priority", kFilter, k61, "r2 = *(u32 *)(r1 +32)", 4, "r2 = *(u32 *)(r1 +140)"},
    {"6.1 sched_cls ingress_ifindex", kTc, k61, "r2 = *(u32 *)(r1 +36)", 4, "r2 = *(u32 *)(r1 +144)"},
    {"6.1 socket_filter napi_id", kFilter, k61, "r2 = *(u32 *)(r1 +84)", 4, "r2 = *(u32 *)(r1 +156); if r2 >= 0x2001 goto pc+1; r2 = 0"},
    {"6.1 sched_cls vlan_present", kTc, k61, "r2 = *(u32 *)(r1 +20)", 4, "r2 = *(u8 *)(r1 +130); w2 &= 1"},
    {"6.1 socket_filter vlan_present u8 at +2", kFilter, k61, "r2 = *(u8 *)(r1 +22)", 4, "r2 = *(u8 *)(r1 +130); w2 &= 1"},
    {"6.1 xdp ingress_ifindex", kXdp, k61, "r2 = *(u32 *)(r1 +12)", 0, "r2 = *(u64 *)(r1 +32); r2 = *(u64 *)(r2 +0); r2 = *(u32 *)(r2 +216)"},
};

std::string lines(const char* semi_separated) {
    std::string s = semi_separated;
    for (char& c : s)
        if (c == ';') c = '\n';
    return s;
}

TEST(CtxAccessPass, EveryAccessBecomesWhatTheKernelsXlatedCodeHad) {
    for (const Measured& m : kMeasured) {
        SCOPED_TRACE(m.what);
        Program p = make_program(asm_of(std::string(m.access) + "\nr0 = 0\nexit"));
        p.prog_type = m.prog_type;
        p.aux[0].ptr_type = PtrType::Ctx;
        p.aux[0].ctx_field_size = m.ctx_field_size;
        RewriteOptions o = opts_for(arch_x86_64(), {"ctx_access"});
        o.kernel = m.kernel;
        auto r = run(p, o);
        ASSERT_TRUE(r.outcome.ok()) << r.outcome.log;
        EXPECT_TRUE(same_insns(p.insns, asm_of(lines(m.xlated) + "\nr0 = 0\nexit")));
        EXPECT_EQ(p.ctx_layout, m.kernel == k61 ? CtxLayout::Linux6_1 : CtxLayout::Linux6_12);
    }
}

// napi_id's bound is the architecture's MIN_NAPI_ID: arm64's Debian builds (6.12.118 and 7.3.4,
// measured the same way) emit 0x201 where x86-64 has 0x2001; the rewrites then differ, and
// rewrites_alike says so.
TEST(CtxAccessPass, NapiIdBoundIsTheArchitectures) {
    Program p = make_program(asm_of("r2 = *(u32 *)(r1 +84)\nr0 = 0\nexit"));
    p.prog_type = kTc;
    p.aux[0].ptr_type = PtrType::Ctx;
    p.aux[0].ctx_field_size = 4;
    const Program original = p;
    RewriteOptions o = opts_for(arch_arm64(), {"ctx_access"});
    o.kernel = k73;
    auto r = run(p, o);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, asm_of("r2 = *(u32 *)(r1 +160)\nif r2 >= 0x201 goto pc+1\nr2 = 0\nr0 = 0\nexit")));
    RewriteOptions x = o;
    x.arch = arch_x86_64();
    EXPECT_FALSE(rewrites_alike(original, o, x));
    Program no_napi = make_program(asm_of("r2 = *(u32 *)(r1 +8)\nr0 = 0\nexit"));
    no_napi.prog_type = kTc;
    no_napi.aux[0].ptr_type = PtrType::Ctx;
    EXPECT_TRUE(rewrites_alike(no_napi, o, x));
}

// The filter's ifindex NULL test jumps past its patch: it lands on the insn after the access,
// wherever that moved; a jump over the access lands after the whole sequence.
TEST(CtxAccessPass, JumpsAroundAConversionStillLand) {
    Program p = make_program(asm_of("r6 = r1\nif r2 == 0x0 goto pc+1\nr3 = *(u32 *)(r6 +40)\nr0 = r3\nexit"));
    p.prog_type = kFilter;
    p.aux[2].ptr_type = PtrType::Ctx;
    p.aux[2].ctx_field_size = 4;
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, asm_of("r6 = r1\nif r2 == 0x0 goto pc+3\nr3 = *(u64 *)(r6 +16)\nif r3 == 0x0 goto pc+1\n"
                                           "r3 = *(u32 *)(r3 +224)\nr0 = r3\nexit")));
}

// A barrier the verifier asked for before a ctx load comes first, then the conversion.
TEST(CtxAccessPass, NospecThenConversion) {
    Program p = make_program(asm_of("r2 = *(u32 *)(r1 +84)\nr0 = 0\nexit"));
    p.prog_type = kFilter;
    p.aux[0].ptr_type = PtrType::Ctx;
    p.aux[0].ctx_field_size = 4;
    p.aux[0].nospec = true;
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
    ASSERT_TRUE(r.outcome.ok());
    std::vector<Insn> want = {nospec()};
    for (const Insn& i : asm_of("r2 = *(u32 *)(r1 +160)\nif r2 >= 0x2001 goto pc+1\nr2 = 0\nr0 = 0\nexit")) want.push_back(i);
    EXPECT_TRUE(same_insns(p.insns, want));
}

// Nothing to convert: a program whose loads the verifier did not type as ctx accesses, or whose
// type's ctx is read as it is (tracing), keeps its code and its uapi layout.
TEST(CtxAccessPass, OnlyTypedAccessesOfModelledTypesAreConverted) {
    for (uint32_t type : {kFilter, static_cast<uint32_t>(BPF_PROG_TYPE_TRACING)}) {
        Program p = make_program(asm_of("r2 = *(u32 *)(r1 +8)\nr0 = 0\nexit"));
        p.prog_type = type;
        if (type != kFilter) p.aux[0].ptr_type = PtrType::Ctx;
        const std::vector<Insn> before = p.insns;
        auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
        ASSERT_TRUE(r.outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, before));
        EXPECT_EQ(p.ctx_layout, CtxLayout::Uapi);
    }
}

// An access the model has no measured conversion for fails the pass, naming the access, instead
// of leaving a uapi offset where the kernel has its own.
TEST(CtxAccessPass, AnUnmodelledAccessFailsLoudly) {
    struct Bad {
        uint32_t type;
        const char* access;
    };
    for (const Bad& b : {Bad{kFilter, "r2 = *(u64 *)(r1 +152)"},     // tstamp
                         Bad{kTc, "*(u32 *)(r1 +12) = r2"},           // queue_mapping store (not measured here)
                         Bad{kXdp, "r2 = *(u32 *)(r1 +20)"},          // egress_ifindex
                         Bad{kFilter, "r2 = *(u32 *)(r1 +76)"}}) {    // data: not a socket filter's
        SCOPED_TRACE(b.access);
        Program p = make_program(asm_of(std::string(b.access) + "\nr0 = 0\nexit"));
        p.prog_type = b.type;
        p.aux[0].ptr_type = PtrType::Ctx;
        auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
        EXPECT_EQ(r.outcome.err, -EINVAL);
        EXPECT_NE(r.outcome.log.find("insn 0"), std::string::npos) << r.outcome.log;
    }
}

}  // namespace
}  // namespace patchfuzz::passes::testing
