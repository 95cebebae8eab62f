// patchfuzz rewrite IN [--patcher incremental|batched] [--arch x86_64|arm64|jit32] [--passes a,b,...]
//                     [--iter-inline v1|v3|v4|off] [--privilege root|bpf|unpriv] [--rnd-hi32 SEED] [--json]
// Runs the verifier's rewrite passes (bpf/passes/pass.hpp, kernel order) on a program with the
// chosen patcher and arch profile and prints the result in kernel syntax, or with --json every side
// table. Inputs without verifier facts (.s, raw bytes, .bpf.o) get them from infer_facts().
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/asm/assemble.hpp"
#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/loader/loader.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"
#include "harness/case/case_file.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/input_format.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {
namespace {

// A rewrite needs a program: an empty .bin is an error here (disasm prints nothing for it).
Expected<std::vector<isa::Insn>> raw_insns(const std::string& path) {
    auto insns = read_raw_insns(path);
    if (insns && insns->empty()) return Error{path, "empty program"};
    // Raw bytes carry no structure: reject what the kernel rejects before any rewrite (unknown
    // opcodes, broken ldimm64 pairs, wild jumps) with the insn named, as `disasm` does.
    // An input program holds no kernel-internal insn and no r11 (BPF_REG_AX): only rewritten code does.
    if (insns)
        if (auto v = isa::validate_insns(*insns, isa::ValidateOptions{.allow_internal = false}); !v)
            return v.error().with_context(path);
    return insns;
}

// ---- JSON output ---------------------------------------------------------------------------------
std::string jstr(std::string_view s) {
    std::string o = "\"";
    for (char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    o += b;
                } else {
                    o += c;
                }
        }
    }
    return o + "\"";
}
const char* jb(bool b) { return b ? "true" : "false"; }

std::string insn_hex(const isa::Insn& i) {
    unsigned char b[8];
    std::memcpy(b, &i, 8);
    char s[17];
    for (int k = 0; k < 8; ++k) std::snprintf(s + 2 * k, 3, "%02x", b[k]);
    return s;
}

const char* ptr_type_name(PtrType t) {
    switch (t) {
        case PtrType::None: return "none";
        case PtrType::Ctx: return "ctx";
        case PtrType::Stack: return "stack";
        case PtrType::MapValue: return "map_value";
        case PtrType::Packet: return "packet";
        case PtrType::Btf: return "btf";
        case PtrType::Arena: return "arena";
    }
    return "?";
}

std::string program_json(const Program& p, const passes::PipelineResult& r, const std::string& patcher, const std::string& arch) {
    std::ostringstream o;
    o << "{\"name\":" << jstr(p.name) << ",\"prog_type\":" << jstr(loader::prog_type_name(p.prog_type)) << ",\"patcher\":" << jstr(patcher)
      << ",\"arch\":" << jstr(arch) << ",\n \"outcome\":{\"ok\":" << jb(r.outcome.ok()) << ",\"err\":" << r.outcome.err
      << ",\"raw_err\":" << r.outcome.raw_err << ",\"log\":" << jstr(r.outcome.log) << ",\"failed_pass\":" << jstr(r.failed_pass) << "},\n \"passes\":[";
    for (size_t i = 0; i < r.patch_counts.size(); ++i)
        o << (i ? "," : "") << "{\"name\":" << jstr(r.patch_counts[i].first) << ",\"patches\":" << r.patch_counts[i].second << "}";
    o << "],\n \"insns\":[";
    std::vector<bool> second(p.insns.size(), false);  // second slots of ld_imm64, forward scan
    for (size_t i = 0; i + 1 < p.insns.size(); ++i)
        if (isa::is_ldimm64(p.insns[i])) second[++i] = true;
    for (size_t i = 0; i < p.insns.size(); ++i) {
        // the second slot of an ld_imm64 is printed with its first slot; its own text is empty
        std::string text = second[i] ? "" : assembly::disasm_insn(p.insns, i);
        o << (i ? ",\n  " : "\n  ") << "{\"idx\":" << i << ",\"text\":" << jstr(text) << ",\"hex\":\"" << insn_hex(p.insns[i]) << "\"}";
    }
    o << "],\n \"aux\":[";
    for (size_t i = 0; i < p.aux.size(); ++i) {
        const InsnAux& a = p.aux[i];
        o << (i ? ",\n  " : "\n  ") << "{\"orig_idx\":" << a.orig_idx << ",\"seen\":" << jb(a.seen) << ",\"zext_dst\":" << jb(a.zext_dst)
          << ",\"needs_zext\":" << jb(a.needs_zext) << ",\"nospec\":" << jb(a.nospec) << ",\"nospec_result\":" << jb(a.nospec_result)
          << ",\"alu_state\":" << unsigned{a.alu_state} << ",\"alu_limit\":" << a.alu_limit << ",\"ptr_type\":\"" << ptr_type_name(a.ptr_type)
          << "\",\"ctx_field_size\":" << unsigned{a.ctx_field_size} << ",\"map_index\":" << a.map_index
          << ",\"map_ptr_poisoned\":" << jb(a.map_ptr_poisoned) << ",\"map_key_poisoned\":" << jb(a.map_key_poisoned)
          << ",\"map_key\":" << a.map_key << ",\"map_key_known\":" << jb(a.map_key_known) << ",\"loop_fit_for_inline\":" << jb(a.loop_fit_for_inline)
          << ",\"loop_callback_subprogno\":" << a.loop_callback_subprogno << ",\"call_with_percpu_alloc_ptr\":" << jb(a.call_with_percpu_alloc_ptr)
          << ",\"arg_prog\":" << unsigned{a.arg_prog} << ",\"indirect_target\":" << jb(a.indirect_target) << "}";
    }
    o << "],\n \"subprogs\":[";
    for (size_t i = 0; i < p.subprogs.size(); ++i) {
        const SubprogInfo& s = p.subprogs[i];
        o << (i ? "," : "") << "\n  {\"start\":" << s.start << ",\"stack_depth\":" << s.stack_depth << ",\"stack_extra\":" << s.stack_extra
          << ",\"linfo_idx\":" << s.linfo_idx << ",\"has_tail_call\":" << jb(s.has_tail_call) << ",\"is_cb\":" << jb(s.is_cb)
          << ",\"is_async_cb\":" << jb(s.is_async_cb) << ",\"is_exception_cb\":" << jb(s.is_exception_cb) << ",\"is_hidden\":" << jb(s.is_hidden)
          << ",\"fake_exit\":" << jb(i + 1 == p.subprogs.size()) << "}";
    }
    o << "],\n \"linfo\":[";
    for (size_t i = 0; i < p.linfo.size(); ++i)
        o << (i ? "," : "") << "{\"insn_off\":" << p.linfo[i].insn_off << ",\"file_name_off\":" << p.linfo[i].file_name_off
          << ",\"line_off\":" << p.linfo[i].line_off << ",\"line\":" << (p.linfo[i].line_col >> 10) << ",\"col\":" << (p.linfo[i].line_col & 0x3ff)
          << "}";
    o << "],\n \"finfo\":[";
    for (size_t i = 0; i < p.finfo.size(); ++i)
        o << (i ? "," : "") << "{\"insn_off\":" << p.finfo[i].insn_off << ",\"type_id\":" << p.finfo[i].type_id << "}";
    o << "],\n \"insn_arrays\":[";
    for (size_t i = 0; i < p.insn_arrays.size(); ++i) {
        o << (i ? "," : "") << "{\"map_index\":" << p.insn_arrays[i].map_index << ",\"entries\":[";
        const auto& es = p.insn_arrays[i].entries;
        for (size_t k = 0; k < es.size(); ++k) {
            o << (k ? "," : "") << "{\"orig_off\":" << es[k].orig_off << ",\"xlated_off\":";
            if (es[k].xlated_off == isa::kInsnDeleted)
                o << "\"deleted\"";
            else
                o << es[k].xlated_off;
            o << "}";
        }
        o << "]}";
    }
    o << "],\n \"pokes\":[";
    for (size_t i = 0; i < p.pokes.size(); ++i)
        o << (i ? "," : "") << "{\"insn_idx\":" << p.pokes[i].insn_idx << ",\"map_index\":" << p.pokes[i].map_index << ",\"key\":" << p.pokes[i].key << "}";
    o << "],\n \"kfuncs\":[";
    for (size_t i = 0; i < p.kfuncs.size(); ++i)
        o << (i ? "," : "") << "{\"btf_id\":" << p.kfuncs[i].btf_id << ",\"offset\":" << p.kfuncs[i].offset << ",\"name\":" << jstr(p.kfuncs[i].name) << "}";
    o << "],\n \"maps\":[";
    for (size_t i = 0; i < p.maps.size(); ++i) {
        const MapDef& m = p.maps[i];
        o << (i ? "," : "") << "{\"name\":" << jstr(m.name) << ",\"type\":" << jstr(loader::map_type_name(m.type)) << ",\"key_size\":" << m.key_size
          << ",\"value_size\":" << m.value_size << ",\"max_entries\":" << m.max_entries << ",\"map_flags\":" << m.map_flags << "}";
    }
    o << "]}";
    return o.str();
}

struct Job {
    Program prog;
    std::string header;  // for multi-program objects
};

}  // namespace

int cmd_rewrite(Args args) {
    std::string path, patcher_name = "incremental", arch_name = "x86_64";
    bool json = false, have_rnd = false;
    std::optional<passes::Privilege> privilege;
    bool arch_given = false, iter_given = false;
    std::optional<passes::KernelProfile> kernel_profile;
    std::optional<passes::InlineFix> loop_fix, func_arg_fix, nop_fix;
    uint64_t rnd_seed = 0;
    passes::RewriteOptions opts;
    auto fix_flag = [](std::string name, std::string help, std::optional<passes::InlineFix>& target) {
        return choice_flag({std::move(name)}, "V", std::move(help), inline_fix_choices(),
                           [&target](const std::string& v) { target = passes::inline_fix_named(v).value(); });
    };
    const VerbFlags spec{
        .verb = "rewrite",
        .usage = {"patchfuzz rewrite IN [--patcher incremental|batched] [--arch x86_64|arm64|jit32]",
                  "                   [--passes a,b,...] [--iter-inline v1|v3|v4|off]",
                  "                   [--privilege root|bpf|unpriv] [--unprivileged] [--loop-inline buggy|fixed]",
                  "                   [--func-arg-inline buggy|fixed] [--nop-removal buggy|fixed]",
                  "                   [--rnd-hi32 SEED] [--kernel-profile 6.1|6.12|7.2|7.3|bpf-next] [--json]"},
        .about = "Run the BPF verifier's rewrite passes, in the kernel's order, on a program and print the\n"
                 "rewritten program in kernel syntax (bpftool prog dump xlated style).\n"
                 "IN is chosen by its content:\n"
                 "  a .case      a patchfuzz test case: program, verifier facts, maps, options (flags override)\n"
                 "  an ELF .o    a BPF ELF object (libbpf, in a child process): every program is rewritten\n"
                 "  text         kernel-syntax assembly\n"
                 "  anything else: raw little-endian struct bpf_insn bytes\n"
                 "Inputs other than .case carry no verifier facts: they are inferred (every insn seen, map\n"
                 "lookups on known maps inlined, bpf_loop with constant-zero flags and a fixed callback inlined,\n"
                 "32-bit defs marked zext_dst, stack depths from fp offsets, the ctx accesses of socket\n"
                 "filters, tc and XDP programs).",
        .flags = {choice_flag({"--patcher"}, "P", "incremental (kernel model, default) or batched",
                              Choices{"patcher", {"incremental", "batched"}}, [&](const std::string& v) { patcher_name = v; }),
                  choice_flag({"--arch"}, "A", "x86_64 (default), arm64, jit32, arm32", arch_choices(),
                              [&](const std::string& v) {
                                  arch_name = v;
                                  arch_given = true;
                              }),
                  list_flag({"--passes"}, "LIST",
                            "comma-separated subset of: const_branches, bpf_loop, dead_code, ctx_access, misc_fixups, iter_inline, zext",
                            choices("pass", passes::pass_names()), [&](std::vector<std::string> v) { opts.only = std::move(v); }),
                  choice_flag({"--iter-inline"}, "V", "numeric iterator inline: v4 (correct, default), v1 (bug class B3), v3 (bug class B2), off",
                              Choices{"variant", {"v4", "v1", "v3", "off"}},
                              [&](const std::string& v) {
                                  opts.iter_inline = v == "v1"   ? passes::IterInline::V1
                                                     : v == "v3" ? passes::IterInline::V3
                                                     : v == "off" ? passes::IterInline::Off
                                                                  : passes::IterInline::V4;
                                  iter_given = true;
                              }),
                  choice_flag({"--privilege"}, "P",
                              "the loader's level (bpf/passes/privilege.hpp): root (default), bpf (CAP_BPF alone: array lookups "
                              "keep the index mask) or unpriv (also: dead code sanitized, bounds-checked tail calls); a .case's "
                              "privilege= by default. The speculative verifier's per-insn facts come from the .case; inferred "
                              "facts have none",
                              privilege_choices(), [&](const std::string& v) { privilege = passes::privilege_named(v).value(); }),
                  switch_flag({"--unprivileged"}, "the same as --privilege unpriv", [&] { privilege = passes::Privilege::Unpriv; }),
                  whole_flag_u64({"--rnd-hi32"}, "SEED", "BPF_F_TEST_RND_HI32 with this seed for the random upper halves", 0, UINT64_MAX,
                                 [&](uint64_t n) {
                                     rnd_seed = n;
                                     have_rnd = true;
                                 }),
                  fix_flag("--loop-inline",
                           "bpf_loop inline: buggy (the kernel's, default) or fixed (u32 nr_loops, 64-bit -E2BIG: the fix for "
                           "findings 0007 and 0001-0006)",
                           loop_fix),
                  fix_flag("--func-arg-inline",
                           "bpf_get_func_arg inline: buggy (the kernel's, default) or fixed (the u32 index zero-extended "
                           "before addressing: the fix for finding 0008)",
                           func_arg_fix),
                  fix_flag("--nop-removal",
                           "bpf_opt_remove_nops: buggy (the kernel's, default) or fixed (a `goto +0` an instruction-array entry "
                           "names stays: the fix for finding 0003)",
                           nop_fix),
                  choice_flag({"--kernel-profile"}, "K",
                              "whose rewrite rules where kernels differ: bpf-next (default), 7.3, 7.2, 6.12 (untimed may_goto, "
                              "`w0 = &cpu_number`, no current-task inline) or 6.1 (no may_goto or sdiv/smod: rejected; no "
                              "per-CPU helper inlines)",
                              kernel_profile_choices(), [&](const std::string& v) { kernel_profile = passes::kernel_profile_named(v).value(); }),
                  switch_flag({"--json"}, "print every side table as JSON instead of the listing", json)},
        .positionals = Positionals{.name = "IN", .noun = "input", .required = true, .take = [&](const std::string& a) { path = a; }},
        .exit = "exit: 0 rewritten, 1 a pass failed (the verifier would reject: error and log printed),\n"
                "      2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    auto patcher = patch::make_patcher(patcher_name);
    auto arch = arch_by_name(arch_name);

    std::vector<Job> jobs;
    // The format by content, not by name (input_format.hpp).
    const auto fmt = detect_input_format(path);
    if (!fmt) return spec.error(fmt.error().to_string());
    if (*fmt == InputFormat::case_text) {
        auto c = harness::read_case(path);
        if (!c) return spec.error(c.error().to_string());
        // the case's options, overridden by explicit flags
        passes::RewriteOptions co = c->options;
        if (!arch_given) {
            if (auto a = arch_by_name(c->arch)) {
                arch = a;
                arch_name = c->arch;
            }
        }
        if (!iter_given) opts.iter_inline = co.iter_inline;
        if (!privilege) privilege = c->privilege;
        if (!have_rnd && co.test_rnd_hi32) {
            have_rnd = true;
            rnd_seed = co.rnd_hi32_seed;
        }
        if (!kernel_profile) opts.kernel = co.kernel;
        if (!loop_fix) opts.loop_inline = co.loop_inline;
        if (!func_arg_fix) opts.func_arg_inline = co.func_arg_inline;
        if (!nop_fix) opts.nop_removal = co.nop_removal;
        if (opts.only.empty()) opts.only = co.only;
        jobs.push_back({std::move(c->program), ""});
    } else if (*fmt == InputFormat::elf) {
        auto obj = loader::load_object(path, loader::LoadOptions{.privileged = passes::bypass_spec_v1(privilege.value_or(passes::Privilege::Root))});
        if (!obj) return spec.error(obj.error().to_string());
        for (size_t i = 0; i < obj->programs.size(); ++i) {
            Program p = std::move(obj->programs[i]);
            passes::infer_facts(p);
            const std::string h = "; program " + p.name + " (section " + obj->meta[i].section + ", type " + loader::prog_type_name(p.prog_type) + ")";
            jobs.push_back({std::move(p), h});
        }
        if (jobs.empty()) return spec.error(path + ": no programs in object");
    } else {
        std::vector<isa::Insn> insns;
        if (*fmt == InputFormat::asm_text) {
            auto text = read_file(path);
            if (!text) return spec.error(text.error().to_string());
            auto r = assembly::assemble(*text, path);
            if (!r) return spec.error(r.error().to_string());
            insns = std::move(*r);
            if (insns.empty()) return spec.error(path + ": empty program");
            if (auto v = isa::validate_insns(insns, isa::ValidateOptions{.allow_internal = false}); !v)
                return spec.error(v.error().with_context(path).to_string());
        } else {
            auto r = raw_insns(path);
            if (!r) return spec.error(r.error().to_string());
            insns = std::move(*r);
        }
        Program p;
        p.insns = std::move(insns);
        passes::infer_facts(p);
        jobs.push_back({std::move(p), ""});
    }
    opts.arch = *arch;
    if (kernel_profile) opts.kernel = *kernel_profile;
    const passes::Privilege level = privilege.value_or(passes::Privilege::Root);
    if (loop_fix) opts.loop_inline = *loop_fix;
    if (func_arg_fix) opts.func_arg_inline = *func_arg_fix;
    if (nop_fix) opts.nop_removal = *nop_fix;
    opts.privileged = passes::bpf_capable(level);
    opts.test_rnd_hi32 = have_rnd;
    opts.rnd_hi32_seed = rnd_seed;
    if (have_rnd) std::fprintf(stderr, "patchfuzz rewrite: rnd_hi32 seed %llu\n", static_cast<unsigned long long>(rnd_seed));

    int rc = 0;
    if (json) std::printf("{\"input\":%s,\"programs\":[\n", jstr(path).c_str());
    for (size_t j = 0; j < jobs.size(); ++j) {
        Program& p = jobs[j].prog;
        const uint32_t before = p.len();
        passes::PipelineResult r = passes::run_pipeline(p, *patcher, opts);
        if (!r.outcome.ok()) {
            rc = 1;
            std::fprintf(stderr, "patchfuzz rewrite: %s%spass %s failed: err %d (raw %d)%s%s\n", p.name.c_str(), p.name.empty() ? "" : ": ",
                         r.failed_pass.c_str(), r.outcome.err, r.outcome.raw_err, r.outcome.log.empty() ? "" : ": ", r.outcome.log.c_str());
        }
        if (json) {
            std::printf("%s%s", j ? ",\n" : "", program_json(p, r, patcher_name, arch_name).c_str());
            continue;
        }
        if (!r.outcome.ok()) continue;  // the program is unspecified after a failure
        if (!jobs[j].header.empty()) std::printf("%s%s\n", j ? "\n" : "", jobs[j].header.c_str());
        std::string counts;
        for (const auto& [n, c] : r.patch_counts) counts += " " + n + "=" + std::to_string(c);
        std::printf("; %s patcher, arch %s: %u -> %u insns; patches:%s\n", patcher_name.c_str(), arch_name.c_str(), before, p.len(), counts.c_str());
        assembly::DisasmOptions dopts;
        dopts.numbered = true;
        std::fputs(assembly::disassemble(p.insns, dopts).c_str(), stdout);
    }
    if (json) std::printf("\n]}\n");
    return rc;
}

}  // namespace patchfuzz::cli
