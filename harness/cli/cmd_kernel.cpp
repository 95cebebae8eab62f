// patchfuzz kernel: real Linux verifiers under qemu as an oracle (issue 9).
//   kernel fetch [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]
//   kernel check CASES... [--kernel 6.12] [--kernel-profile 6.1|6.12|bpf-next] [--run] [--json] ...
//   kernel gen [--count N] [--seed S] [--kernel 6.12] ...   (verifier-acceptable generation)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bpf/util/read_file.hpp"
#include "bpf/util/rng.hpp"
#include "gen/acceptable_gen.hpp"
#include "gen/ctx_reads.hpp"
#include "harness/case/case_file.hpp"
#include "harness/case/object_cases.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/kernel/kernel_check.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/kernel/kernel_minimize.hpp"
#include "harness/kernel/process.hpp"
#include "harness/kernel/vm_runner.hpp"

namespace patchfuzz::cli {
namespace {

struct Opts {
    std::string sub;
    std::string kernel = "6.12";
    std::string arch = "amd64";
    std::string profile;
    std::string cache;
    bool run = false, json = false, verbose = false, expect_accept = false, compare = true, rnd_hi32 = false;
    size_t per_boot = 5000;
    int timeout = 900;
    uint32_t prog_type = 1;
    uint64_t count = 1000, seed = 1;
    std::string save;
    std::string out;
    uint64_t rounds = 16, seconds = 300;
    std::optional<passes::Privilege> privilege;
    std::vector<std::string> files;
};

// The verb's flags (every sub-verb takes the same ones), stored into `o`.
VerbFlags kernel_flags(Opts& o) {
    const std::string sub = "check, gen and minimize";
    return VerbFlags{
        .verb = "kernel",
        .usage = {"patchfuzz kernel fetch [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]",
                  "patchfuzz kernel check CASE... [--kernel 6.1|6.12|7.2|7.3] [options]",
                  "patchfuzz kernel gen [--count N] [--seed S] [--kernel 6.1|6.12|7.2|7.3] [options]",
                  "patchfuzz kernel minimize CASE [--out FILE] [--rounds N] [--seconds S] [options]",
                  "patchfuzz kernel status [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]"},
        .about =
            "Real Linux verifiers under qemu (TCG; KVM when /dev/kvm runs a guest: probed once per host\n"
            "boot, remembered in the cache; PATCHFUZZ_QEMU_ACCEL=kvm|tcg decides instead) as an oracle for\n"
            "the model.\n"
            "fetch  apt-get download the Debian kernel image (never installs it), unpack the image and the\n"
            "       ELF vmlinux (fast PVH boot) into the cache. 6.1 = linux-image-amd64, 6.12 =\n"
            "       linux-image-6.12-amd64 (the machine's own bookworm sources); 7.3 =\n"
            "       linux-binary-7.3.4+deb13-amd64 (trixie-backports), 7.2 = linux-binary-7.2.13+deb14-amd64\n"
            "       (sid), through an apt state folder of our own in <cache>/apt/<suite> (the mirror the\n"
            "       machine's sources name, Debian's archive keyring; the machine's apt set-up is untouched).\n"
            "       Each kernel is pinned to the build its model profile was measured on: 7.x refuses\n"
            "       another build, 6.x warns.\n"
            "check  load every case (.case files, BPF objects: each program as OBJECT:PROGRAM with its\n"
            "       verifier facts inferred, or raw .bin instruction files) in one VM boot per batch;\n"
            "       per case: accepted or not (with the verifier log), the real xlated program vs our\n"
            "       incremental patcher's rewrite (x86_64, --kernel-profile) compared bit-exactly after the\n"
            "       mask documented in harness/kernel/xlated_compare.hpp; with --run, BPF_PROG_TEST_RUN vs\n"
            "       our interpreter on the case's inputs.\n"
            "status exit 0 when the kernel is cached and qemu and the guest loader are usable, else 2.\n"
            "gen    the same over N verifier-acceptable generated programs (gen/acceptable_gen.hpp);\n"
            "       reports the acceptance rate and the agreement.\n"
            "minimize  shrink a disagreeing case (from `gen --save`, a campaign's kernel finding, or your own)\n"
            "       to the smallest program the real verifier still accepts and that still disagrees the same\n"
            "       way (same class and first difference); each round judges every shrink candidate in one VM\n"
            "       boot (harness/kernel/kernel_minimize.hpp). Writes FILE (default CASE.min.case) atomically,\n"
            "       with the real-vs-model report of the result; exit 1 when the case does not disagree.",
        .flags =
            {text_flag({"--kernel"}, "T", "kernel to boot: 6.1, 6.12, 7.2 or 7.3 (default 6.12)", o.kernel),
             text_flag({"--arch"}, "A",
                       "the kernel's Debian architecture: amd64 (default), arm64 (6.12, 7.3; booted under "
                       "qemu-system-aarch64 -M virt, TCG) or armhf (6.12; qemu-system-arm -M virt). The model follows: "
                       "x86_64, arm64 or arm32 rewrites and interpreter semantics; the guest loader is cross-compiled "
                       "(pfk-guest-<arch>)",
                       [&o](const std::string& v) {
                           if (!kernel::arch_boot(v)) return "unknown architecture '" + v + "' (expected " + kernel::arch_boot_list() + ")";
                           o.arch = v;
                           return std::string();
                       }),
             choice_flag({"--kernel-profile"}, "P", "the model's rewrite rules: 6.1, 6.12, 7.2, 7.3 or bpf-next (default: as --kernel)",
                         kernel_profile_choices(), [&o](const std::string& v) { o.profile = v; }),
             text_flag({"--cache"}, "DIR", "kernel cache (default $XDG_CACHE_HOME/patchfuzz or ~/.cache/patchfuzz)", o.cache),
             switch_flag({"--run"}, "also BPF_PROG_TEST_RUN each accepted case and compare with the interpreter", o.run),
             switch_flag({"--rnd-hi32"},
                         "load with BPF_F_TEST_RND_HI32: the kernel poisons the upper half of every 32-bit def it did not "
                         "mark zext_dst, and the model does the same with the marks of passes::add_zext_marks (the "
                         "verifier's marking, modelled), so the comparison checks the marks too (a case file's rnd-hi32=1 "
                         "option does the same)",
                         o.rnd_hi32),
             choice_flag({"--privilege"}, "P",
                         "load at level root (all capabilities), bpf (CAP_BPF alone) or unpriv (uid 65534, no "
                         "capabilities): gen makes programs that level accepts; check and minimize override each case's "
                         "privilege= option (default: the case's, root)",
                         privilege_choices(), [&o](const std::string& v) { o.privilege = passes::privilege_named(v).value(); }),
             switch_flag({"--json"}, "machine-readable report on stdout", o.json),
             switch_flag({"--verbose"}, "list agreeing cases too", o.verbose),
             switch_flag({"--expect-accept"}, "a rejected case is a failure (exit 1)", o.expect_accept),
             switch_flag({"--no-compare"}, "only load (acceptance, logs, timings); no model comparison", o.compare, false),
             whole_flag({"--per-boot"}, "N", "cases per VM boot (default 5000)", o.per_boot, 1),
             whole_flag({"--timeout"}, "S", "seconds per VM boot (default 900)", o.timeout, 1),
             whole_flag({"--prog-type"}, "N", "BPF_PROG_TYPE of raw .bin inputs (default 1, socket filter)", o.prog_type, 1),
             whole_flag({"--count"}, "N", "how many programs (default 1000)", o.count, 1).in("gen"),
             whole_flag({"--seed"}, "S", "the seed (default 1; printed)", o.seed).in("gen"),
             text_flag({"--save"}, "DIR", "write every disagreeing or rejected program as DIR/<seed>-<i>.case", o.save).in("gen"),
             text_flag({"--out"}, "FILE", "where the minimized case goes (default CASE.min.case)", o.out).in("minimize"),
             whole_flag({"--rounds"}, "N", "at most N rounds, one VM boot each (default 16)", o.rounds, 1).in("minimize"),
             whole_flag({"--seconds"}, "S", "no round starts after S seconds (default 300)", o.seconds, 1).in("minimize")},
        .positionals = Positionals{.name = "CASE", .noun = "case", .many = true,
                                   .take = [&o](const std::string& a) { o.files.push_back(a); }},
        .exit = "exit: 0 all agree (minimize: minimized), 1 a disagreement (or a crash, or --expect-accept and a\n"
                "rejection; minimize: nothing to minimize), 2 usage/input errors or no usable qemu/kernel."};
}

// The sub-verb and its flags; -1 to go on, otherwise the exit code.
int parse(Args args, Opts& o) {
    const VerbFlags spec = kernel_flags(o);
    if (args.empty()) return spec.error("missing subcommand (fetch, check, gen, minimize, status)");
    o.sub = args[0];
    if (o.sub == "--help" || o.sub == "-h") {
        std::fputs(help_text(spec).c_str(), stdout);
        return 0;
    }
    if (auto rc = parse_or_exit(spec, args.subspan(1))) return *rc;
    if (!kernel::kernel_spec(o.kernel, o.arch))
        return spec.error("unknown kernel '" + o.kernel + "' for " + o.arch + " (" + kernel::kernel_tag_list(o.arch) + ")");
    if (o.profile.empty()) o.profile = o.kernel;
    if (!passes::kernel_profile_named(o.profile))
        return spec.error("unknown kernel profile '" + o.profile + "' (" + passes::kKernelProfileNames + ")");
    if (o.cache.empty()) o.cache = kernel::default_cache_dir();
    return -1;
}

Expected<kernel::KernelCase> load_input(const std::string& path, uint32_t prog_type, bool rnd_hi32,
                                       std::optional<passes::Privilege> privilege) {
    if (path.size() > 4 && path.substr(path.size() - 4) == ".bin") {
        auto read = read_file(path);
        if (!read) return read.error();
        const std::string& b = *read;
        if (b.empty() || b.size() % 8) return make_error(path, "raw program size " + std::to_string(b.size()) + " is not a positive multiple of 8");
        std::vector<isa::Insn> insns(b.size() / 8);
        std::memcpy(insns.data(), b.data(), b.size());
        kernel::KernelCase kc{path, make_program(std::move(insns)), {}};
        kc.program.prog_type = prog_type;
        kc.privilege = privilege.value_or(passes::Privilege::Root);
        if (rnd_hi32) kernel::with_rnd_hi32(kc);
        return kc;
    }
    auto c = harness::read_case(path);
    if (!c) return c.error();
    kernel::KernelCase kc{path, std::move(c->program), std::move(c->inputs)};
    kc.privilege = privilege.value_or(c->privilege);
    if (rnd_hi32 || c->options.test_rnd_hi32) kernel::with_rnd_hi32(kc);
    return kc;
}

Expected<kernel::CheckOptions> check_options(const Opts& o) {
    auto base = kernel::default_check_options(o.kernel, o.cache, PATCHFUZZ_SOURCE_ROOT, o.arch);
    if (!base) return base.error();
    if (auto img = kernel::find_cached_kernel(o.kernel, o.cache, o.arch); img)
        if (auto w = kernel::pin_warning(*img); !w.empty()) std::fprintf(stderr, "patchfuzz kernel: %s\n", w.c_str());
    kernel::CheckOptions co = *base;
    co.vm.timeout_s = o.timeout;
    co.profile = *passes::kernel_profile_named(o.profile);
    co.run = o.run;
    co.compare = o.compare;
    co.per_boot = o.per_boot;
    return co;
}

int report(const Opts& o, const kernel::CheckReport& r) {
    if (o.json) kernel::print_json_report(std::cout, r);
    else kernel::print_text_report(std::cout, r, o.verbose);
    bool rejected = r.accepted < r.cases.size() - r.crashed;
    return r.ok() && !(o.expect_accept && rejected) ? 0 : 1;
}

int do_fetch(const Opts& o) {
    auto img = kernel::fetch_kernel(o.kernel, o.cache, std::cerr, o.arch);
    if (!img) return usage_error("kernel", img.error().to_string());
    std::printf("kernel %s: %s (%s %s)\nvmlinux: %s\n", img->tag.c_str(), img->release.c_str(), img->package.c_str(),
                img->version.c_str(), img->vmlinux.c_str());
    return 0;
}

int do_status(const Opts& o) {
    auto co = check_options(o);
    if (!co) return usage_error("kernel", co.error().to_string());
    if (!kernel::find_in_path(co->vm.qemu))
        return usage_error("kernel", "'" + co->vm.qemu + "' not found (install " + std::string(kernel::arch_boot(o.arch)->qemu_package) + ")");
    std::printf("kernel %s: %s\nguest loader: %s\n", o.kernel.c_str(), co->vm.kernel_image.c_str(), co->vm.guest_loader.c_str());
    if (auto img = kernel::find_cached_kernel(o.kernel, o.cache, o.arch); img) {
        auto spec = kernel::kernel_spec(o.kernel, o.arch);
        std::printf("build: %s (%s %s); pinned: %s (%s)\n", img->release.c_str(), img->package.c_str(), img->version.c_str(),
                    std::string(spec->pinned_release).c_str(), std::string(spec->pinned_version).c_str());
        if (auto w = kernel::pin_warning(*img); !w.empty()) std::fprintf(stderr, "patchfuzz kernel: %s\n", w.c_str());
    }
    return 0;
}

// Every program of a BPF object as a kernel case, named OBJECT:PROGRAM, loaded at the given level
// (root by default) with its maps' bypass_spec_v1 to match.
Expected<std::vector<kernel::KernelCase>> object_inputs(const std::string& path, bool rnd_hi32, std::optional<passes::Privilege> privilege) {
    const passes::Privilege level = privilege.value_or(passes::Privilege::Root);
    auto cases = harness::cases_from_object(path, passes::bpf_capable(level));
    if (!cases) return cases.error();
    std::vector<kernel::KernelCase> out;
    for (auto& c : *cases) {
        kernel::KernelCase kc{path + ":" + c.program.name, std::move(c.program), std::move(c.inputs)};
        kc.privilege = level;
        if (rnd_hi32) kernel::with_rnd_hi32(kc);
        out.push_back(std::move(kc));
    }
    return out;
}

int do_check(const Opts& o) {
    if (o.files.empty()) return usage_error("kernel", "check needs at least one case file");
    std::vector<kernel::KernelCase> cases;
    for (const auto& f : o.files) {
        if (harness::is_elf_file(f)) {
            auto objs = object_inputs(f, o.rnd_hi32, o.privilege);
            if (!objs) return usage_error("kernel", objs.error().to_string());
            for (auto& kc : *objs) cases.push_back(std::move(kc));
            continue;
        }
        auto c = load_input(f, o.prog_type, o.rnd_hi32, o.privilege);
        if (!c) return usage_error("kernel", c.error().to_string());
        cases.push_back(std::move(*c));
    }
    auto co = check_options(o);
    if (!co) return usage_error("kernel", co.error().to_string());
    auto r = kernel::check_cases(cases, *co);
    if (!r) return usage_error("kernel", r.error().to_string());
    return report(o, *r);
}

int do_gen(const Opts& o) {
    std::fprintf(stderr, "patchfuzz kernel: seed %llu\n", static_cast<unsigned long long>(o.seed));
    auto co = check_options(o);
    if (!co) return usage_error("kernel", co.error().to_string());
    Rng rng(o.seed);
    gen::AcceptableOptions go;
    go.v612 = o.kernel != "6.1";
    go.calls = o.arch != "armhf";  // the 32-bit ARM JIT has no bpf-to-bpf calls (gen/acceptable_gen.hpp)
    go.ctx = o.arch != "armhf";    // the ctx_access tables are the 64-bit builds'
    go.privilege = o.privilege.value_or(passes::Privilege::Root);
    const auto spec = kernel::kernel_spec(o.kernel, o.arch);
    go.gotox = spec && spec->gotox;
    std::vector<kernel::KernelCase> cases;
    uint64_t ctx_reads = 0, ctx_stores = 0, packet_reads = 0, jump_tables = 0;
    for (uint64_t i = 0; i < o.count; i++) {
        auto g = gen::generate_acceptable(rng, go);
        jump_tables += !g.program.insn_arrays.empty();
        const gen::CtxUse use = gen::ctx_use(g.program);
        ctx_reads += use.reads > 0;
        ctx_stores += use.stores > 0;
        packet_reads += use.packet > 0;
        cases.push_back({"gen-" + std::to_string(o.seed) + "-" + std::to_string(i), std::move(g.program), std::move(g.inputs)});
        cases.back().privilege = go.privilege;
        if (o.rnd_hi32) kernel::with_rnd_hi32(cases.back());
    }
    std::fprintf(stderr, "patchfuzz kernel: programs that read the ctx %llu, store to it %llu, read the packet through it %llu, "
                 "gotox through jump tables %llu (of %llu)\n",
                 static_cast<unsigned long long>(ctx_reads), static_cast<unsigned long long>(ctx_stores),
                 static_cast<unsigned long long>(packet_reads), static_cast<unsigned long long>(jump_tables),
                 static_cast<unsigned long long>(o.count));
    auto r = kernel::check_cases(cases, *co);
    if (!r) return usage_error("kernel", r.error().to_string());
    if (!o.save.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(o.save, ec);
        for (size_t i = 0; i < cases.size(); i++) {
            if (r->cases[i].agreement == kernel::Agreement::Agree && r->cases[i].runs_agree()) continue;
            const harness::Case c = kernel::as_case(
                cases[i], o.seed,
                {"found-by: patchfuzz kernel gen --kernel " + o.kernel + (o.arch == "amd64" ? "" : " --arch " + o.arch) +
                 " --privilege " + passes::to_string(go.privilege) +
                 " --seed " + std::to_string(o.seed) + " (program " +
                 std::to_string(i) + "): " + std::string(kernel::to_string(r->cases[i].agreement))});
            auto s = harness::write_case_file_atomic(c, o.save + "/" + cases[i].name + ".case");
            if (!s) std::fprintf(stderr, "patchfuzz kernel: %s\n", s.error().to_string().c_str());
        }
    }
    return report(o, *r);
}

int do_minimize(const Opts& o) {
    if (o.files.size() != 1) return usage_error("kernel", "minimize takes exactly one case file");
    const std::string& in = o.files[0];
    auto c = load_input(in, o.prog_type, o.rnd_hi32, o.privilege);
    if (!c) return usage_error("kernel", c.error().to_string());
    auto co = check_options(o);
    if (!co) return usage_error("kernel", co.error().to_string());
    const kernel::BatchChecker check = [&co](const std::vector<kernel::KernelCase>& cases) { return kernel::check_cases(cases, *co); };
    auto first = check({*c});
    if (!first) return usage_error("kernel", first.error().to_string());
    const kernel::CaseOutcome& found = first->cases.at(0);
    const char* divergence = kernel::divergence_of(found);
    if (divergence == nullptr) {
        std::fprintf(stderr, "patchfuzz kernel: %s: %s on %s: nothing to minimize\n", in.c_str(),
                     std::string(kernel::to_string(found.agreement)).c_str(), first->release.c_str());
        return 1;
    }
    std::fprintf(stderr, "patchfuzz kernel: %s: %s (%s) on %s, %u insns; minimizing\n", in.c_str(), divergence, found.key.c_str(),
                 first->release.c_str(), c->program.len());
    kernel::KernelMinimizeOptions mo;
    mo.max_rounds = static_cast<uint32_t>(std::min<uint64_t>(o.rounds, UINT32_MAX));
    mo.max_seconds = static_cast<double>(o.seconds);
    const kernel::KernelMinimizeResult m = kernel::minimize_kernel_finding(*c, found, check, mo);
    harness::Case out = kernel::as_case(m.minimized, 0, {});
    out.comments.push_back("minimized-by: patchfuzz kernel minimize " + in + " --kernel " + o.kernel +
                           (o.arch == "amd64" ? "" : " --arch " + o.arch) + " --kernel-profile " + o.profile +
                           (o.run ? " --run" : "") + (o.rnd_hi32 ? " --rnd-hi32" : "") + " (" + std::to_string(c->program.len()) + " -> " +
                           std::to_string(m.minimized.program.len()) + " insns, " + std::to_string(m.rounds) + " boots, " +
                           std::to_string(m.tried) + " candidates, ended: " + m.ended + ")");
    out.comments.push_back(std::string("signature: kernel-") + o.kernel + "/-/-/" + divergence + "/" + std::string(co->arch.name) +
                           " (" + m.outcome.key + ")");
    const std::string path = o.out.empty() ? in + ".min.case" : o.out;
    if (auto s = harness::write_case_file_atomic(out, path); !s) return usage_error("kernel", s.error().to_string());
    kernel::CaseOutcome shown = m.outcome;
    shown.name = path;
    kernel::print_case_outcome(std::cout, shown);
    std::printf("minimized %s: %u -> %u insns, %zu -> %zu inputs, %u boots, %llu candidates judged (ended: %s) -> %s\n", in.c_str(),
                c->program.len(), m.minimized.program.len(), c->inputs.size(), m.minimized.inputs.size(), m.rounds,
                static_cast<unsigned long long>(m.tried), m.ended.c_str(), path.c_str());
    return 0;
}

}  // namespace

int cmd_kernel(Args args) {
    Opts o;
    int rc = parse(args, o);
    if (rc >= 0) return rc;
    if (o.sub == "fetch") return do_fetch(o);
    if (o.sub == "check") return do_check(o);
    if (o.sub == "gen") return do_gen(o);
    if (o.sub == "minimize") return do_minimize(o);
    if (o.sub == "status") return do_status(o);
    return usage_error("kernel", "unknown subcommand '" + o.sub + "' (fetch, check, gen, minimize, status)");
}

}  // namespace patchfuzz::cli
