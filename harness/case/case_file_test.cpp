// The .case format: exact round trips (hand-built and random cases), the meaning of hand-written
// text, defaults for missing sections, and every error kind with its location.
#include "harness/case/case_file.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "bpf/arch/arch_profile.hpp"

namespace patchfuzz::harness {
namespace {

using namespace isa;

Case parse_ok(const std::string& text) {
    auto c = parse_case(text, "t.case");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().to_string()) << "\n" << text;
    return c.ok() ? std::move(*c) : Case{};
}

std::string parse_err(const std::string& text) {
    auto c = parse_case(text, "t.case");
    EXPECT_FALSE(c.ok()) << "parsed:\n" << text;
    return c.ok() ? std::string() : c.error().to_string();
}

void expect_round_trip(const Case& c) {
    const std::string text = write_case(c);
    auto back = parse_case(text, "rt.case");
    ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << text;
    EXPECT_TRUE(same_case(c, *back)) << text << "\n---- rewritten:\n" << write_case(*back);
    EXPECT_EQ(write_case(*back), text);
}

Case rich_case() {
    Case c;
    c.comments = {"found-by: patchfuzz fuzz --seed 42", "replay: patchfuzz check x.case", "", "  indented"};
    std::vector<Insn> insns = {
        mov64_imm(1, 0),                       // 0
        ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 0),   // 1
        ldimm64_hi(0),                         // 2
        call_helper(BPF_FUNC_map_lookup_elem), // 3
        jmp_imm(BPF_JEQ, 0, 0, 2),             // 4
        call_pseudo(2),                        // 5 -> 8
        call_kfunc(70001),                     // 6
        exit_insn(),                           // 7
        mov64_imm(0, 7),                       // 8
        exit_insn(),                           // 9
    };
    c.program = make_program(insns);
    c.program.name = "my prog \"x\"";
    c.program.prog_type = BPF_PROG_TYPE_XDP;
    c.program.maps = {MapDef{.name = "counts", .type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 1024},
                      MapDef{.name = "odd name", .type = 77, .key_size = 1, .value_size = 2, .max_entries = 3, .map_flags = 0x400,
                             .bypass_spec_v1 = true, .unpriv_array = true}};
    c.program.kfuncs = {KfuncDesc{.btf_id = 70001, .kind = 1, .name = "bpf_iter_num_new"},
                        KfuncDesc{.btf_id = 80000, .offset = -3, .kind = 0, .name = "mystery"}};
    c.program.aux[3].map_index = 0;
    c.program.aux[3].map_ptr_poisoned = true;
    c.program.aux[4].seen = false;
    c.program.aux[4].orig_idx = 99;
    c.program.aux[8].zext_dst = true;
    c.program.aux[8].ptr_type = PtrType::Ctx;
    c.program.aux[8].ctx_field_size = 4;
    c.program.aux[9].loop_fit_for_inline = true;
    c.program.aux[9].loop_callback_subprogno = 1;
    c.program.aux[0].alu_state = 3;
    c.program.aux[0].alu_limit = 0xffffffff;
    c.program.aux[0].arg_prog = 2;
    c.program.aux[0].indirect_target = true;
    c.program.aux[0].nospec = c.program.aux[0].nospec_result = c.program.aux[0].needs_zext = true;
    c.program.aux[0].map_key = 5;
    c.program.aux[0].map_key_known = c.program.aux[0].map_key_poisoned = c.program.aux[0].call_with_percpu_alloc_ptr = true;
    c.program.subprogs[0].stack_depth = 16;
    c.program.subprogs[1].is_cb = true;
    c.program.subprogs[1].stack_extra = 8;
    c.program.subprogs[1].linfo_idx = 1;
    c.program.linfo = {LineInfo{0, 1, 2, (7u << 10) | 3}, LineInfo{8, 1, 9, (4095u << 10) | 1023}};
    c.program.finfo = {FuncInfo{0, 5}, FuncInfo{8, 6}};
    c.program.insn_arrays = {InsnArray{.map_index = 1, .entries = {{0, 0}, {4, kInsnDeleted}, {8, 9}}}};
    c.program.pokes = {PokeDesc{.insn_idx = 5, .map_index = 1, .key = 2}};
    c.patches = {patch::PatchBatch{}, patch::PatchBatch{{
                                   patch::Patch{.kind = patch::PatchKind::Replace, .pos = 0, .insns = {mov64_imm(1, 1), ja(-2)}},
                                   patch::Patch{.kind = patch::PatchKind::Remove, .pos = 4, .count = 1},
                                   patch::Patch{.kind = patch::PatchKind::InsertBefore, .pos = 8, .insns = {mov64_imm(2, 0)}},
                               }}};
    c.arch = "jit32";
    c.options.arch = arch_jit32();
    c.options.iter_inline = passes::IterInline::V3;
    c.options.kernel = passes::KernelProfile::K6_1;
    c.options.privileged = false;
    c.privilege = passes::Privilege::Unpriv;
    c.options.test_rnd_hi32 = true;
    c.options.rnd_hi32_seed = 123456789012345ULL;
    c.options.only = {"bpf_loop", "zext"};
    c.patchers = {patch::PatcherId::Incremental, patch::PatcherId::Batched};
    interp::ExecInput in;
    in.ctx = {0, 1, 2, 0xff};
    in.packet = {0xde, 0xad};
    in.regs[2] = 0xffffffff00000005ULL;
    in.regs[9] = 1;
    in.maps = {{interp::MapEntry{{1, 0, 0, 0}, {5, 0, 0, 0, 0, 0, 0, 0}}}, {}};
    in.cpu = 3;
    in.prandom_seed = 77;
    in.step_budget = 1000;
    c.inputs = {in, interp::ExecInput{}};
    c.expect = "fail structural/misc_fixups/replace/wrong-jump-target/jit32";
    c.seed = 42;
    return c;
}

TEST(CaseFile, RichCaseRoundTrips) { expect_round_trip(rich_case()); }

TEST(CaseFile, MinimalCaseRoundTrips) {
    Case c;
    c.program = make_program({mov64_imm(0, 0), exit_insn()});
    c.options.arch = arch_x86_64();
    expect_round_trip(c);
    Case empty;
    expect_round_trip(empty);  // no insns at all, default options
}

TEST(CaseFile, HandWrittenTextMeansWhatItSays) {
    const Case c = parse_ok(
        "# found-by: hand\n"
        "-- program name=lookup type=xdp\n"
        "  r1 = map[id:0]\n"
        "  call bpf_map_lookup_elem\n"
        "loop:\n"
        "  if r0 == 0x0 goto loop\n"
        "  exit\n"
        "-- maps\n"
        "0 counts type=hash key=4 value=8 max_entries=1024 flags=0x400\n"
        "-- aux\n"
        "2 map=0 seen=0 zext_dst=1 ptr=map_value loop_inline=1 loop_cb=2\n"
        "-- linfo\n"
        "0 file=1 line_off=5 line=12:4\n"
        "-- options\n"
        "arch=arm64 iter-inline=v1 privileged=0\n"
        "passes=bpf_loop,zext seed=99\n"
        "-- input\n"
        "ctx 0102\n"
        "r3 0x10\n"
        "maps 1\n"
        "map 0 key=01000000 value=2a00000000000000\n"
        "-- expect\n"
        "fail exec/iter_inline/r0\n");
    EXPECT_EQ(c.comments, std::vector<std::string>{"found-by: hand"});
    EXPECT_EQ(c.program.name, "lookup");
    EXPECT_EQ(c.program.prog_type, static_cast<uint32_t>(BPF_PROG_TYPE_XDP));
    ASSERT_EQ(c.program.len(), 5u);  // ld_imm64 is two slots
    EXPECT_EQ(c.program.insns[0].src_reg, BPF_PSEUDO_MAP_FD);
    EXPECT_EQ(c.program.insns[3].off, -1);  // the label resolved to the jump itself
    ASSERT_EQ(c.program.maps.size(), 1u);
    EXPECT_EQ(c.program.maps[0].name, "counts");
    EXPECT_EQ(c.program.maps[0].max_entries, 1024u);
    EXPECT_EQ(c.program.maps[0].map_flags, 0x400u);
    const InsnAux& a = c.program.aux[2];
    EXPECT_EQ(a.map_index, 0);
    EXPECT_FALSE(a.seen);
    EXPECT_TRUE(a.zext_dst);
    EXPECT_EQ(a.ptr_type, PtrType::MapValue);
    EXPECT_TRUE(a.loop_fit_for_inline);
    EXPECT_EQ(a.loop_callback_subprogno, 2u);
    EXPECT_EQ(a.orig_idx, 2u);  // untouched fields keep make_program's defaults
    EXPECT_TRUE(c.program.aux[1].seen);
    ASSERT_EQ(c.program.linfo.size(), 1u);
    EXPECT_EQ(c.program.linfo[0].line_col, (12u << 10) | 4);
    EXPECT_EQ(c.arch, "arm64");
    EXPECT_EQ(c.options.arch.name, "arm64");
    EXPECT_EQ(c.options.iter_inline, passes::IterInline::V1);
    EXPECT_FALSE(c.options.privileged);
    EXPECT_EQ(c.privilege, passes::Privilege::Unpriv);  // an older file's privileged=0
    EXPECT_EQ(c.options.only, (std::vector<std::string>{"bpf_loop", "zext"}));
    EXPECT_EQ(c.seed, 99u);
    ASSERT_EQ(c.inputs.size(), 1u);
    EXPECT_EQ(c.inputs[0].ctx, (std::vector<uint8_t>{1, 2}));
    EXPECT_EQ(c.inputs[0].regs[3], 0x10u);
    ASSERT_EQ(c.inputs[0].maps.size(), 1u);
    ASSERT_EQ(c.inputs[0].maps[0].size(), 1u);
    EXPECT_EQ(c.inputs[0].maps[0][0].value[0], 42);
    EXPECT_EQ(c.expect, "fail exec/iter_inline/r0");
}

TEST(CaseFile, MissingSectionsMatchMakeProgram) {
    const Case c = parse_ok("-- program\ncall pc+1\nexit\nr0 = 0\nexit\n");
    const Program d = make_program(c.program.insns);
    EXPECT_TRUE(c.program == d);
    EXPECT_EQ(c.program.subprogs.size(), 3u);  // 0, the callee at 2, fake exit
    EXPECT_EQ(c.arch, "x86_64");
    EXPECT_EQ(c.options.arch.name, "x86_64");
    EXPECT_EQ(c.expect, "pass");
    EXPECT_TRUE(c.inputs.empty());
    EXPECT_TRUE(c.patches.empty());
}

TEST(CaseFile, PatchSectionParses) {
    const Case c = parse_ok(
        "-- program\nr0 = 0\nr1 = 1\nexit\n"
        "-- patches\n"
        "batch\n"
        "replace 1\n"
        "  r1 = 2\n"
        "  goto pc-2\n"
        "remove 0 1\n"
        "batch\n"
        "insert-before 0\n"
        "  r2 = 0\n");
    ASSERT_EQ(c.patches.size(), 2u);
    ASSERT_EQ(c.patches[0].patches.size(), 2u);
    EXPECT_EQ(c.patches[0].patches[0].kind, patch::PatchKind::Replace);
    EXPECT_EQ(c.patches[0].patches[0].pos, 1u);
    ASSERT_EQ(c.patches[0].patches[0].insns.size(), 2u);
    EXPECT_EQ(c.patches[0].patches[0].insns[1].off, -2);
    EXPECT_EQ(c.patches[0].patches[1].kind, patch::PatchKind::Remove);
    EXPECT_EQ(c.patches[0].patches[1].count, 1u);
    EXPECT_EQ(c.patches[1].patches[0].kind, patch::PatchKind::InsertBefore);
    EXPECT_EQ(c.patches[1].patches[0].insns.size(), 1u);
}

// `fill=N`: N filler slots (`r(j % 10) += j`, slot j) before the patch's own lines; the writer
// uses it for a leading filler run of 64 slots or more, so a 32k-slot patch is one line.
TEST(CaseFile, FilledPatchesParseAndRoundTrip) {
    const Case c = parse_ok(
        "-- program\nr0 = 0\nr1 = 1\nexit\n"
        "-- patches\n"
        "batch\n"
        "replace 1 fill=100\n"
        "  goto pc-2\n");
    ASSERT_EQ(c.patches.size(), 1u);
    const auto& insns = c.patches[0].patches[0].insns;
    ASSERT_EQ(insns.size(), 101u);
    EXPECT_TRUE(same(insns[0], alu64_imm(BPF_ADD, 0, 0)));
    EXPECT_TRUE(same(insns[37], alu64_imm(BPF_ADD, 7, 37)));
    EXPECT_TRUE(same(insns[99], alu64_imm(BPF_ADD, 9, 99)));
    EXPECT_EQ(insns[100].off, -2);
    const std::string text = write_case(c);
    EXPECT_NE(text.find("replace 1 fill=100\n  goto pc-2\n"), std::string::npos) << text;
    expect_round_trip(c);
    // Short runs are written out: fill= is for the oversized patches.
    Case small = c;
    small.patches[0].patches[0].insns.erase(small.patches[0].patches[0].insns.begin() + 10, small.patches[0].patches[0].insns.end());
    EXPECT_EQ(write_case(small).find("fill="), std::string::npos);
    expect_round_trip(small);
    const std::string head = "-- program\nr0 = 0\nexit\n-- patches\nbatch\n";
    EXPECT_EQ(parse_err(head + "replace 0 fill=x\n"), "t.case:6:16: expected a number for fill, got 'x'");
    EXPECT_EQ(parse_err(head + "replace 0 fill=2000000\n"), "t.case:6:11: fill=2000000 is more than 1048576 slots");
    EXPECT_EQ(parse_err(head + "replace 0 fil=3\n"), "t.case:6:1: expected 'replace POS [fill=N]'");
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(CaseFile, ErrorsAreLocated) {
    const std::string prog = "-- program\nr0 = 0\nexit\n";  // lines 1-3
    EXPECT_EQ(parse_err(prog + "-- pach\n"), "t.case:4: unknown section '-- pach'");
    EXPECT_EQ(parse_err(prog + "--maps\n"), "t.case:4: unknown section '--maps'");
    EXPECT_EQ(parse_err(prog + "-- maps\n-- maps\n"), "t.case:5: duplicate section '-- maps' (first at line 4)");
    EXPECT_EQ(parse_err("# only a comment\n"), "t.case:1: missing section '-- program'");
    EXPECT_EQ(parse_err("hello\n" + prog), "t.case:1:1: expected a '# comment' or a section such as '-- program'");
    EXPECT_EQ(parse_err(prog + "-- maps x\n"), "t.case:4:9: section '-- maps' takes no arguments");
    EXPECT_EQ(parse_err("-- program flavour=x\nexit\n"), "t.case:1:12: unknown program attribute 'flavour=x' (name=, type=, attach=, attach-vlen=)");
    EXPECT_EQ(parse_err("-- program type=tracing attach=fexitt\nexit\n"),
              "t.case:1:32: unknown attach type 'fexitt' (other, raw_tp, fentry, fexit, fmod_ret, fsession, fentry_multi, fexit_multi, fsession_multi)");
    EXPECT_EQ(parse_err("-- program attach-vlen=256\nexit\n"), "t.case:1:24: attach-vlen 256 is out of range");
    EXPECT_EQ(parse_err("-- program type=nosuch\nexit\n"), "t.case:1:17: unknown program type 'nosuch'");
    // maps
    EXPECT_EQ(parse_err(prog + "-- maps\n1 m type=hash\n"), "t.case:5:1: map index 1 out of order (expected 0)");
    EXPECT_EQ(parse_err(prog + "-- maps\n0 m type=bogus\n"), "t.case:5:10: unknown map type 'bogus'");
    EXPECT_EQ(parse_err(prog + "-- maps\n0 m key=4x\n"), "t.case:5:9: expected a number for key size, got '4x'");
    EXPECT_EQ(parse_err(prog + "-- maps\n0 m key=99999999999\n"), "t.case:5:9: key size 99999999999 is out of range");
    EXPECT_EQ(parse_err(prog + "-- maps\n0 \"m\n"), "t.case:5:3: unterminated quoted name");
    EXPECT_EQ(parse_err(prog + "-- maps\n0 m colour=red\n"), "t.case:5:5: unknown map attribute 'colour=red'");
    // aux
    EXPECT_EQ(parse_err(prog + "-- aux\n2 seen=0\n"), "t.case:5:1: aux for insn 2 but the program has 2 insns");
    EXPECT_EQ(parse_err(prog + "-- aux\n1 seen=2\n"), "t.case:5:8: expected 0 or 1 for seen");
    EXPECT_EQ(parse_err(prog + "-- aux\n1 colour=1\n"), "t.case:5:3: unknown aux field 'colour'");
    EXPECT_EQ(parse_err(prog + "-- aux\n1 seen=0\n1 zext_dst=1\n"), "t.case:6:1: aux for insn 1 already given at line 5");
    EXPECT_EQ(parse_err(prog + "-- aux\n0 ptr=heap\n"), "t.case:5:7: unknown pointer type 'heap'");
    EXPECT_EQ(parse_err(prog + "-- aux\n0 map=-1x\n"), "t.case:5:7: expected a number for map, got '-1x'");
    // side tables
    EXPECT_EQ(parse_err(prog + "-- linfo\n0 line=12\n"), "t.case:5:3: expected line=LINE:COL");
    EXPECT_EQ(parse_err(prog + "-- linfo\n0 line=1:1024\n"), "t.case:5:3: line 1:1024 out of range (line < 2^22, col < 1024)");
    EXPECT_EQ(parse_err(prog + "-- insn-arrays\n0:1\n"), "t.case:5:1: expected 'map=N ORIG:XLATED ...'");
    EXPECT_EQ(parse_err(prog + "-- insn-arrays\nmap=0 3\n"), "t.case:5:7: expected ORIG:XLATED or ORIG:del, got '3'");
    EXPECT_EQ(parse_err(prog + "-- pokes\ninsn=1 slot=2\n"), "t.case:5:8: unknown poke attribute 'slot=2' (insn=, map=, key=)");
    EXPECT_EQ(parse_err(prog + "-- subprogs\n0 big\n"), "t.case:5:3: unknown subprog attribute 'big' (stack=, extra=, linfo=, tail_call, cb, async_cb, exception_cb, hidden)");
    EXPECT_EQ(parse_err(prog + "-- kfuncs\n70001\n"), "t.case:5:1: expected 'BTF_ID NAME [kind=...] [off=N]'");
    EXPECT_EQ(parse_err(prog + "-- kfuncs\n70001 f kind=weird\n"), "t.case:5:14: unknown kfunc kind 'weird'");
    // patches
    EXPECT_EQ(parse_err(prog + "-- patches\nreplace 0\n"), "t.case:5:1: expected 'batch' before the first patch");
    EXPECT_EQ(parse_err(prog + "-- patches\nbatch\npatch 0\n"),
              "t.case:6:1: unknown patch 'patch' (batch, replace POS, remove POS COUNT, insert-before POS)");
    EXPECT_EQ(parse_err(prog + "-- patches\nbatch\nremove 0\n"), "t.case:6:1: expected 'remove POS COUNT'");
    EXPECT_EQ(parse_err(prog + "-- patches\n  r0 = 1\n"), "t.case:5:1: assembly line outside a 'replace' or 'insert-before'");
    // options
    EXPECT_EQ(parse_err(prog + "-- options\narch=sparc\n"), "t.case:5:6: unknown arch 'sparc' (x86_64, arm64, jit32, arm32)");
    EXPECT_EQ(parse_err(prog + "-- options\niter-inline=v2\n"), "t.case:5:13: unknown iter-inline 'v2' (v4, v1, v3, off)");
    EXPECT_EQ(parse_err(prog + "-- options\nkernel=5.15\n"), "t.case:5:8: unknown kernel '5.15' (bpf-next, 6.1, 6.12, 7.2, 7.3)");
    EXPECT_EQ(parse_err(prog + "-- options\nprivileged\n"), "t.case:5:1: expected key=value, got 'privileged'");
    EXPECT_EQ(parse_err(prog + "-- options\nprivilege=admin\n"), "t.case:5:11: unknown privilege 'admin' (root, bpf or unpriv)");
    EXPECT_EQ(parse_err(prog + "-- options\nprivilege=bpf privileged=0\n"),
              "t.case:5:26: privileged=0 contradicts privilege=bpf (CAP_BPF is bpf_capable)");
    EXPECT_EQ(parse_err(prog + "-- options\nspeed=9\n"),
              "t.case:5:1: unknown option 'speed' (arch, passes, iter-inline, kernel, loop-inline, func-arg-inline, nop-removal, privileged, privilege, rnd-hi32, rnd-hi32-seed, "
                            "patchers, seed)");
    EXPECT_EQ(parse_err(prog + "-- options\nseed=-1\n"), "t.case:5:6: seed must not be negative");
    // input
    EXPECT_EQ(parse_err(prog + "-- input\nctx 012\n"), "t.case:5:5: odd number of hex digits");
    EXPECT_EQ(parse_err(prog + "-- input\nctx 0g\n"), "t.case:5:5: bad hex byte '0g'");
    EXPECT_EQ(parse_err(prog + "-- input\nmap 0 key=00 value=00\n"), "t.case:5:5: map index 0 but 'maps' declared 0");
    EXPECT_EQ(parse_err(prog + "-- input\nr1\n"), "t.case:5:1: 'r1' takes 1 argument");
    EXPECT_EQ(parse_err(prog + "-- input\nflags 3\n"),
              "t.case:5:1: unknown input field 'flags' (ctx, packet, r0..r9, cpu, prandom, budget, maps, map)");
    // expect
    EXPECT_EQ(parse_err(prog + "-- expect\n"), "t.case:4: '-- expect' is empty (pass, or fail <signature>)");
    EXPECT_EQ(parse_err(prog + "-- expect\nfail\n"), "t.case:5:1: expected 'pass', 'fail <signature>', 'unknown' or 'skip', got 'fail'");
    EXPECT_EQ(parse_err(prog + "-- expect\npass\npass\n"), "t.case:6:1: '-- expect' holds one line");
    EXPECT_EQ(parse_err(prog + "-- expect\nfail a\x01b\n"), "t.case:5:7: control character in '-- expect'");
}

// Found by case_parse_fuzz in CI: a verdict line ending in several '\r' lost one per round trip.
TEST(CaseFile, TrailingCarriageReturnsAfterTheVerdictAreBlanks) {
    auto c = parse_case("-- program\nexit\n-- expect\nfail x/y\r\r\r\n", "t.case");
    ASSERT_TRUE(c) << c.error().to_string();
    EXPECT_EQ(c->expect, "fail x/y");
}

TEST(CaseFile, AssemblerErrorsPointIntoTheCaseFile) {
    // The program starts on line 3 (after a comment and the header); the bad line is line 5.
    const std::string e = parse_err("# c\n-- program\nr0 = 0\nr1 = 1\nr0 +== 2\nexit\n");
    EXPECT_EQ(e.rfind("t.case:5:", 0), 0u) << e;
    const std::string p = parse_err("-- program\nexit\n-- patches\nbatch\nreplace 0\n  r0 = 1\n  bogus insn\n");
    EXPECT_EQ(p.rfind("t.case:7:", 0), 0u) << p;
}

// Found by the malformed-input catalogue (issue 8): a value with more than 64 bits of digits was
// reported as "expected a number" although it is one; it is a range error.
TEST(CaseFile, NumbersPast64BitsAreOutOfRange) {
    const std::string prog = "-- program\nr0 = 0\nexit\n";
    EXPECT_EQ(parse_err(prog + "-- input\nr1 0x1ffffffffffffffff\n"), "t.case:5:4: r1 0x1ffffffffffffffff is out of range");
    EXPECT_EQ(parse_err(prog + "-- options\nseed=18446744073709551616\n"), "t.case:5:6: seed 18446744073709551616 is out of range");
    EXPECT_EQ(parse_err(prog + "-- input\nr1 0x1fffffffffffffffg\n"), "t.case:5:4: expected a number for r1, got '0x1fffffffffffffffg'");
}

// read_case() is the file boundary: besides the syntax it validates the program, so a verb never
// runs (or rewrites) a program the kernel would have rejected up front. Found by the catalogue:
// `patchfuzz replay` passed a program that falls off its end and one that jumps into an ldimm64.
TEST(CaseFile, ReadCaseValidatesTheProgram) {
    const std::string dir = std::string(PATCHFUZZ_BINARY_DIR) + "/case_file_test_dir." + std::to_string(getpid());
    const std::string path = dir + ".case";
    auto read_text = [&](const std::string& text) {
        std::ofstream(path, std::ios::binary) << text;
        auto c = read_case(path);
        return c ? std::string("ok") : c.error().to_string();
    };
    EXPECT_EQ(read_text("-- program\nr0 = 0\nexit\n"), "ok");
    EXPECT_EQ(read_text("-- program\nr0 = 0\n"), path + ": pc 0: last insn falls through off the end");
    EXPECT_EQ(read_text("-- program\ngoto pc+1\nr1 = 0x100000000\nexit\n"),
              path + ": pc 0: jump to pc 2 lands in the second half of ldimm64 at pc 1");
    EXPECT_EQ(read_text("-- program\nr0 = 0\nexit\n-- subprogs\n0\n"),
              path + ": subprogs: need at least 2 entries (subprog 0 and the fake exit), got 1");
    // parse_case() alone keeps accepting it: tests build broken programs on purpose.
    EXPECT_TRUE(parse_case("-- program\nr0 = 0\n", "t.case").ok());
    std::remove(path.c_str());
    // A directory is named as one, not read as an empty file.
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    auto d = read_case(dir);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().to_string(), dir + ": cannot read: Is a directory");
    rmdir(dir.c_str());
}

TEST(CaseFile, AtomicWriteThenRead) {
    const std::string path = std::string(PATCHFUZZ_BINARY_DIR) + "/case_file_test." + std::to_string(getpid()) + ".case";
    const Case c = rich_case();
    ASSERT_TRUE(write_case_file_atomic(c, path).ok());
    auto back = read_case(path);
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_TRUE(same_case(c, *back));
    EXPECT_EQ(back->path, path);
    // overwrite in place: still one complete file
    Case d = c;
    d.seed = 1;
    ASSERT_TRUE(write_case_file_atomic(d, path).ok());
    EXPECT_EQ(read_case(path)->seed, 1u);
    std::remove(path.c_str());
    auto missing = read_case(path);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().where, path);
    EXPECT_FALSE(write_case_file_atomic(c, "/nonexistent-dir/x.case").ok());
}

// ---- random cases ---------------------------------------------------------------------------------

rc::Gen<std::string> ident() {
    return rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::elementOf(std::string("abcdefghijklmnopqrstuvwxyz_0123456789"))));
}
rc::Gen<std::string> any_text() {  // printable and hostile characters, no line breaks
    return rc::gen::container<std::string>(
        rc::gen::oneOf(rc::gen::inRange<char>(' ', '~'), rc::gen::elementOf(std::string("\"\\#=\t\x01\x7f\xc3\xa9"))));
}

Insn gen_insn() {
    const Insn legal[] = {
        mov64_imm(*rc::gen::inRange<uint8_t>(0, 10), *rc::gen::arbitrary<int32_t>()),
        alu64_reg(BPF_ADD, *rc::gen::inRange<uint8_t>(0, 10), *rc::gen::inRange<uint8_t>(0, 11)),
        alu32_imm(BPF_XOR, *rc::gen::inRange<uint8_t>(0, 10), *rc::gen::arbitrary<int32_t>()),
        jmp_imm(BPF_JSGT, *rc::gen::inRange<uint8_t>(0, 11), *rc::gen::arbitrary<int32_t>(), *rc::gen::arbitrary<int16_t>()),
        jmp32_reg(BPF_JLE, 1, 2, *rc::gen::arbitrary<int16_t>()),
        ja(*rc::gen::arbitrary<int16_t>()),
        gotol(*rc::gen::arbitrary<int32_t>()),
        ldx(BPF_W, 0, 1, *rc::gen::arbitrary<int16_t>()),
        stx(BPF_DW, 10, 1, *rc::gen::arbitrary<int16_t>()),
        st(BPF_B, 10, -8, *rc::gen::arbitrary<int32_t>()),
        call_helper(*rc::gen::inRange<int32_t>(1, 200)),
        call_pseudo(*rc::gen::arbitrary<int32_t>()),
        call_kfunc(*rc::gen::elementOf(std::vector<int32_t>{70001, 70002, 70003})),
        exit_insn(),
        nospec(),
        zext_marker(3),
    };
    if (*rc::gen::inRange(0, 10) == 0)  // arbitrary bytes: the disassembler prints them raw
        return make(*rc::gen::arbitrary<uint8_t>(), *rc::gen::inRange<uint8_t>(0, 16), *rc::gen::inRange<uint8_t>(0, 16),
                    *rc::gen::arbitrary<int16_t>(), *rc::gen::arbitrary<int32_t>());
    return legal[*rc::gen::inRange<size_t>(0, std::size(legal))];
}

std::vector<Insn> gen_insns(size_t max) {
    std::vector<Insn> v;
    const auto n = *rc::gen::inRange<size_t>(0, max);
    while (v.size() < n) {
        if (*rc::gen::inRange(0, 8) == 0) {
            v.push_back(ldimm64_lo(*rc::gen::inRange<uint8_t>(0, 10), *rc::gen::elementOf(std::vector<uint8_t>{0, 1, 2}),
                                   *rc::gen::inRange<int32_t>(0, 3)));
            v.push_back(ldimm64_hi(*rc::gen::arbitrary<int32_t>()));
        } else {
            v.push_back(gen_insn());
        }
    }
    return v;
}

Case gen_case() {
    Case c;
    c.comments = *rc::gen::container<std::vector<std::string>>(any_text());
    c.program = make_program(gen_insns(30));
    Program& p = c.program;
    if (*rc::gen::arbitrary<bool>()) p.name = *any_text();
    p.prog_type = *rc::gen::inRange<uint32_t>(0, 40);
    const auto nm = *rc::gen::inRange<size_t>(0, 4);
    for (size_t i = 0; i < nm; ++i)
        p.maps.push_back(MapDef{*any_text(), *rc::gen::inRange<uint32_t>(0, 40), *rc::gen::arbitrary<uint32_t>(),
                                *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>()});
    const auto nk = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < nk; ++i)
        p.kfuncs.push_back(KfuncDesc{*rc::gen::arbitrary<int32_t>(), *rc::gen::arbitrary<int16_t>(), *rc::gen::inRange<uint32_t>(0, 9),
                                     *any_text()});
    for (uint32_t i = 0; i < p.aux.size(); ++i) {
        if (*rc::gen::inRange(0, 3) != 0) continue;
        InsnAux& a = p.aux[i];
        a.orig_idx = *rc::gen::arbitrary<uint32_t>();
        a.seen = *rc::gen::arbitrary<bool>();
        a.zext_dst = *rc::gen::arbitrary<bool>();
        a.needs_zext = *rc::gen::arbitrary<bool>();
        a.nospec = *rc::gen::arbitrary<bool>();
        a.nospec_result = *rc::gen::arbitrary<bool>();
        a.alu_state = *rc::gen::arbitrary<uint8_t>();
        a.alu_limit = *rc::gen::arbitrary<uint32_t>();
        a.ptr_type = static_cast<PtrType>(*rc::gen::inRange<uint8_t>(0, 7));
        a.ctx_field_size = *rc::gen::arbitrary<uint8_t>();
        a.map_index = *rc::gen::arbitrary<int32_t>();
        a.map_ptr_poisoned = *rc::gen::arbitrary<bool>();
        a.map_key_poisoned = *rc::gen::arbitrary<bool>();
        a.map_key = *rc::gen::arbitrary<uint32_t>();
        a.map_key_known = *rc::gen::arbitrary<bool>();
        a.loop_fit_for_inline = *rc::gen::arbitrary<bool>();
        a.loop_callback_subprogno = *rc::gen::arbitrary<uint32_t>();
        a.call_with_percpu_alloc_ptr = *rc::gen::arbitrary<bool>();
        a.arg_prog = *rc::gen::arbitrary<uint8_t>();
        a.indirect_target = *rc::gen::arbitrary<bool>();
    }
    if (*rc::gen::arbitrary<bool>()) {
        p.subprogs.clear();
        const auto ns = *rc::gen::inRange<size_t>(0, 4);
        for (size_t i = 0; i < ns; ++i)
            p.subprogs.push_back(SubprogInfo{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                             *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>(),
                                             *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>()});
    }
    const auto nl = *rc::gen::inRange<size_t>(0, 4);
    for (size_t i = 0; i < nl; ++i)
        p.linfo.push_back(LineInfo{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                   *rc::gen::arbitrary<uint32_t>()});
    const auto nf = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < nf; ++i) p.finfo.push_back(FuncInfo{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>()});
    const auto na = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < na; ++i) {
        InsnArray a{.map_index = *rc::gen::arbitrary<int32_t>()};
        const auto ne = *rc::gen::inRange<size_t>(0, 4);
        for (size_t j = 0; j < ne; ++j)
            a.entries.push_back(InsnArrayEntry{*rc::gen::arbitrary<uint32_t>(),
                                               *rc::gen::arbitrary<bool>() ? kInsnDeleted : *rc::gen::arbitrary<uint32_t>()});
        p.insn_arrays.push_back(a);
    }
    const auto np = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < np; ++i)
        p.pokes.push_back(PokeDesc{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<int32_t>(), *rc::gen::arbitrary<uint32_t>()});
    const auto nb = *rc::gen::inRange<size_t>(0, 3);
    for (size_t b = 0; b < nb; ++b) {
        patch::PatchBatch batch;
        const auto n = *rc::gen::inRange<size_t>(0, 4);
        for (size_t i = 0; i < n; ++i) {
            patch::Patch pt;
            pt.kind = static_cast<patch::PatchKind>(*rc::gen::inRange(0, 3));
            pt.pos = *rc::gen::arbitrary<uint32_t>();
            if (pt.kind == patch::PatchKind::Remove) pt.count = *rc::gen::arbitrary<uint32_t>();
            else pt.insns = gen_insns(5);
            batch.patches.push_back(pt);
        }
        c.patches.push_back(batch);
    }
    c.arch = *rc::gen::elementOf(std::vector<std::string>{"x86_64", "arm64", "jit32"});
    c.options.arch = *arch_by_name(c.arch);
    c.options.iter_inline = static_cast<passes::IterInline>(*rc::gen::inRange(0, 4));
    c.options.kernel = static_cast<passes::KernelProfile>(*rc::gen::inRange(0, 3));
    c.privilege = static_cast<passes::Privilege>(*rc::gen::inRange(0, 3));
    c.options.privileged = passes::bpf_capable(c.privilege);
    c.options.test_rnd_hi32 = *rc::gen::arbitrary<bool>();
    c.options.rnd_hi32_seed = *rc::gen::arbitrary<uint64_t>();
    c.options.only = *rc::gen::container<std::vector<std::string>>(ident());
    c.patchers = *rc::gen::container<std::vector<patch::PatcherId>>(rc::gen::element(patch::PatcherId::Incremental, patch::PatcherId::Batched));
    const auto ni = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < ni; ++i) {
        interp::ExecInput in;
        in.ctx = *rc::gen::arbitrary<std::vector<uint8_t>>();
        in.packet = *rc::gen::arbitrary<std::vector<uint8_t>>();
        for (auto& r : in.regs)
            if (*rc::gen::arbitrary<bool>()) r = *rc::gen::arbitrary<uint64_t>();
        const auto maps = *rc::gen::inRange<size_t>(0, 3);
        in.maps.resize(maps);
        for (auto& m : in.maps) {
            const auto ne = *rc::gen::inRange<size_t>(0, 3);
            for (size_t e = 0; e < ne; ++e)
                m.push_back(interp::MapEntry{*rc::gen::arbitrary<std::vector<uint8_t>>(), *rc::gen::arbitrary<std::vector<uint8_t>>()});
        }
        in.cpu = *rc::gen::arbitrary<uint32_t>();
        in.prandom_seed = *rc::gen::arbitrary<uint64_t>();
        in.step_budget = *rc::gen::arbitrary<bool>() ? in.step_budget : *rc::gen::arbitrary<uint64_t>();
        c.inputs.push_back(in);
    }
    if (*rc::gen::arbitrary<bool>()) c.expect = "fail " + *ident() + "/" + *ident();
    c.seed = *rc::gen::arbitrary<uint64_t>();
    return c;
}

RC_GTEST_PROP(CaseFile, WriteThenParseIsIdentity, ()) {
    const Case c = gen_case();
    const std::string text = write_case(c);
    auto back = parse_case(text, "rc.case");
    RC_ASSERT(back.ok());
    RC_ASSERT(same_case(c, *back));
    RC_ASSERT(write_case(*back) == text);
}

// Any mutation of a valid file parses or fails with a located error; never a crash.
RC_GTEST_PROP(CaseFile, MutatedTextNeverCrashes, ()) {
    std::string text = write_case(gen_case());
    const auto edits = *rc::gen::inRange(1, 6);
    for (int i = 0; i < edits && !text.empty(); ++i) {
        const auto at = *rc::gen::inRange<size_t>(0, text.size());
        switch (*rc::gen::inRange(0, 3)) {
            case 0: text[at] = *rc::gen::arbitrary<char>(); break;
            case 1: text.erase(at, *rc::gen::inRange<size_t>(1, 20)); break;
            default: text.insert(at, *rc::gen::elementOf(std::vector<std::string>{"-- ", "\n", "=", "\"", " 0x", "-- aux\n9999 seen=0\n"}));
        }
    }
    auto r = parse_case(text, "m.case");
    if (!r.ok()) RC_ASSERT(r.error().where.rfind("m.case", 0) == 0);
}

}  // namespace
}  // namespace patchfuzz::harness
