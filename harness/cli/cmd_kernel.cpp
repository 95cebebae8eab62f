// patchfuzz kernel: real Linux verifiers under qemu as an oracle (issue 9).
//   kernel fetch [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]
//   kernel check CASES... [--kernel 6.12] [--kernel-profile 6.1|6.12|bpf-next] [--run] [--json] ...
//   kernel gen [--count N] [--seed S] [--kernel 6.12] ...   (verifier-acceptable generation)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "bpf/util/rng.hpp"
#include "gen/acceptable_gen.hpp"
#include "gen/ctx_reads.hpp"
#include "harness/case/case_file.hpp"
#include "harness/cli/cli_numbers.hpp"
#include "harness/cli/commands.hpp"
#include "harness/kernel/kernel_check.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/kernel/kernel_minimize.hpp"
#include "harness/kernel/process.hpp"
#include "harness/kernel/vm_runner.hpp"

namespace patchfuzz::cli {
namespace {

constexpr const char* kUsage =
    "usage: patchfuzz kernel fetch [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]\n"
    "       patchfuzz kernel check CASE... [--kernel 6.1|6.12|7.2|7.3] [options]\n"
    "       patchfuzz kernel gen [--count N] [--seed S] [--kernel 6.1|6.12|7.2|7.3] [options]\n"
    "       patchfuzz kernel minimize CASE [--out FILE] [--rounds N] [--seconds S] [options]\n"
    "       patchfuzz kernel status [--kernel 6.1|6.12|7.2|7.3] [--cache DIR]\n"
    "\n"
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
    "check  load every case (.case files, or raw .bin instruction files) in one VM boot per batch;\n"
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
    "       with the real-vs-model report of the result; exit 1 when the case does not disagree.\n"
    "\n"
    "options:\n"
    "  --kernel T          kernel to boot: 6.1, 6.12, 7.2 or 7.3 (default 6.12)\n"
    "  --arch A            the kernel's Debian architecture: amd64 (default), arm64 (6.12, 7.3; booted\n"
    "                      under qemu-system-aarch64 -M virt, TCG) or armhf (6.12; qemu-system-arm -M\n"
    "                      virt). The model follows: x86_64, arm64 or arm32 rewrites and interpreter\n"
    "                      semantics; the guest loader is cross-compiled (pfk-guest-<arch>)\n"
    "  --kernel-profile P  the model's rewrite rules: 6.1, 6.12, 7.2, 7.3 or bpf-next (default: as --kernel)\n"
    "  --cache DIR         kernel cache (default $XDG_CACHE_HOME/patchfuzz or ~/.cache/patchfuzz)\n"
    "  --run               also BPF_PROG_TEST_RUN each accepted case and compare with the interpreter\n"
    "  --rnd-hi32          load with BPF_F_TEST_RND_HI32: the kernel poisons the upper half of every\n"
    "                      32-bit def it did not mark zext_dst, and the model does the same with the\n"
    "                      marks of passes::add_zext_marks (the verifier's marking, modelled), so the\n"
    "                      comparison checks the marks too (a case file's rnd-hi32=1 option does the same)\n"
    "  --privilege P       load at level root (all capabilities), bpf (CAP_BPF alone) or unpriv (uid\n"
    "                      65534, no capabilities): gen makes programs that level accepts; check and\n"
    "                      minimize override each case's privilege= option (default: the case's, root)\n"
    "  --json              machine-readable report on stdout\n"
    "  --verbose           list agreeing cases too\n"
    "  --expect-accept     a rejected case is a failure (exit 1)\n"
    "  --no-compare        only load (acceptance, logs, timings); no model comparison\n"
    "  --per-boot N        cases per VM boot (default 5000)\n"
    "  --timeout S         seconds per VM boot (default 900)\n"
    "  --prog-type N       BPF_PROG_TYPE of raw .bin inputs (default 1, socket filter)\n"
    "  --count N --seed S  gen: how many programs, and the seed (printed)\n"
    "  --save DIR          gen: write every disagreeing or rejected program as DIR/<seed>-<i>.case\n"
    "  --out FILE          minimize: where the minimized case goes (default CASE.min.case)\n"
    "  --rounds N          minimize: at most N rounds, one VM boot each (default 16)\n"
    "  --seconds S         minimize: no round starts after S seconds (default 300)\n"
    "\n"
    "exit: 0 all agree (minimize: minimized), 1 a disagreement (or a crash, or --expect-accept and a\n"
    "rejection; minimize: nothing to minimize), 2 usage/input errors or no usable qemu/kernel.\n";

int usage_error(const std::string& msg) {
    std::fprintf(stderr, "patchfuzz kernel: %s (see --help)\n", msg.c_str());
    return 2;
}

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

bool parse_u64(const char* s, uint64_t& v) {
    const auto n = parse_whole<uint64_t>(s);
    if (n) v = *n;
    return n.has_value();
}

int parse(Args args, Opts& o) {
    if (args.empty()) return usage_error("missing subcommand (fetch, check, gen, minimize, status)");
    o.sub = args[0];
    for (size_t i = 1; i < args.size(); i++) {
        std::string a = args[i];
        auto value = [&](std::string& out) -> bool {
            if (i + 1 >= args.size()) return false;
            out = args[++i];
            return true;
        };
        std::string v;
        uint64_t n = 0;
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "--kernel") {
            if (!value(o.kernel)) return usage_error("--kernel needs a value");
        } else if (a == "--arch") {
            if (!value(o.arch)) return usage_error("--arch needs a value");
        } else if (a == "--kernel-profile") {
            if (!value(o.profile)) return usage_error("--kernel-profile needs a value");
        } else if (a == "--cache") {
            if (!value(o.cache)) return usage_error("--cache needs a value");
        } else if (a == "--save") {
            if (!value(o.save)) return usage_error("--save needs a value");
        } else if (a == "--out") {
            if (!value(o.out)) return usage_error("--out needs a value");
        } else if (a == "--privilege") {
            if (!value(v)) return usage_error("--privilege needs a value");
            o.privilege = passes::privilege_named(v);
            if (!o.privilege) return usage_error("unknown privilege '" + v + "' (" + passes::kPrivilegeNames + ")");
        } else if (a == "--run") {
            o.run = true;
        } else if (a == "--rnd-hi32") {
            o.rnd_hi32 = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else if (a == "--expect-accept") {
            o.expect_accept = true;
        } else if (a == "--no-compare") {
            o.compare = false;
        } else if (a == "--per-boot" || a == "--timeout" || a == "--prog-type" || a == "--count" || a == "--seed" ||
                   a == "--rounds" || a == "--seconds") {
            if (!value(v) || !parse_u64(v.c_str(), n) || (a != "--seed" && n == 0))
                return usage_error(a + " needs a positive number, got '" + v + "'");
            if (a == "--per-boot") o.per_boot = n;
            if (a == "--timeout") o.timeout = static_cast<int>(n);
            if (a == "--prog-type") o.prog_type = static_cast<uint32_t>(n);
            if (a == "--count") o.count = n;
            if (a == "--seed") o.seed = n;
            if (a == "--rounds") o.rounds = n;
            if (a == "--seconds") o.seconds = n;
        } else if (!a.empty() && a[0] == '-') {
            return usage_error("unknown option '" + a + "'");
        } else {
            o.files.push_back(a);
        }
    }
    if (!kernel::arch_boot(o.arch))
        return usage_error("unknown --arch '" + o.arch + "' (" + kernel::arch_boot_list() + ")");
    if (!kernel::kernel_spec(o.kernel, o.arch))
        return usage_error("unknown kernel '" + o.kernel + "' for " + o.arch + " (" + kernel::kernel_tag_list(o.arch) + ")");
    if (o.profile.empty()) o.profile = o.kernel;
    if (!passes::kernel_profile_named(o.profile))
        return usage_error("unknown kernel profile '" + o.profile + "' (" + passes::kKernelProfileNames + ")");
    if (o.cache.empty()) o.cache = kernel::default_cache_dir();
    return -1;
}

Expected<kernel::KernelCase> load_input(const std::string& path, uint32_t prog_type, bool rnd_hi32,
                                       std::optional<passes::Privilege> privilege) {
    if (path.size() > 4 && path.substr(path.size() - 4) == ".bin") {
        std::ifstream f(path, std::ios::binary);
        if (!f) return make_error(path, "cannot open");
        std::vector<char> b((std::istreambuf_iterator<char>(f)), {});
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
    if (!img) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", img.error().to_string().c_str());
        return 2;
    }
    std::printf("kernel %s: %s (%s %s)\nvmlinux: %s\n", img->tag.c_str(), img->release.c_str(), img->package.c_str(),
                img->version.c_str(), img->vmlinux.c_str());
    return 0;
}

int do_status(const Opts& o) {
    auto co = check_options(o);
    if (!co) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", co.error().to_string().c_str());
        return 2;
    }
    if (!kernel::find_in_path(co->vm.qemu)) {
        std::fprintf(stderr, "patchfuzz kernel: '%s' not found (install %s)\n", co->vm.qemu.c_str(),
                     std::string(kernel::arch_boot(o.arch)->qemu_package).c_str());
        return 2;
    }
    std::printf("kernel %s: %s\nguest loader: %s\n", o.kernel.c_str(), co->vm.kernel_image.c_str(), co->vm.guest_loader.c_str());
    if (auto img = kernel::find_cached_kernel(o.kernel, o.cache, o.arch); img) {
        auto spec = kernel::kernel_spec(o.kernel, o.arch);
        std::printf("build: %s (%s %s); pinned: %s (%s)\n", img->release.c_str(), img->package.c_str(), img->version.c_str(),
                    std::string(spec->pinned_release).c_str(), std::string(spec->pinned_version).c_str());
        if (auto w = kernel::pin_warning(*img); !w.empty()) std::fprintf(stderr, "patchfuzz kernel: %s\n", w.c_str());
    }
    return 0;
}

int do_check(const Opts& o) {
    if (o.files.empty()) return usage_error("check needs at least one case file");
    std::vector<kernel::KernelCase> cases;
    for (const auto& f : o.files) {
        auto c = load_input(f, o.prog_type, o.rnd_hi32, o.privilege);
        if (!c) {
            std::fprintf(stderr, "patchfuzz kernel: %s\n", c.error().to_string().c_str());
            return 2;
        }
        cases.push_back(std::move(*c));
    }
    auto co = check_options(o);
    if (!co) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", co.error().to_string().c_str());
        return 2;
    }
    auto r = kernel::check_cases(cases, *co);
    if (!r) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", r.error().to_string().c_str());
        return 2;
    }
    return report(o, *r);
}

int do_gen(const Opts& o) {
    std::fprintf(stderr, "patchfuzz kernel: seed %llu\n", static_cast<unsigned long long>(o.seed));
    auto co = check_options(o);
    if (!co) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", co.error().to_string().c_str());
        return 2;
    }
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
    if (!r) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", r.error().to_string().c_str());
        return 2;
    }
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
    if (o.files.size() != 1) return usage_error("minimize takes exactly one case file");
    const std::string& in = o.files[0];
    auto c = load_input(in, o.prog_type, o.rnd_hi32, o.privilege);
    if (!c) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", c.error().to_string().c_str());
        return 2;
    }
    auto co = check_options(o);
    if (!co) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", co.error().to_string().c_str());
        return 2;
    }
    const kernel::BatchChecker check = [&co](const std::vector<kernel::KernelCase>& cases) { return kernel::check_cases(cases, *co); };
    auto first = check({*c});
    if (!first) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", first.error().to_string().c_str());
        return 2;
    }
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
    if (auto s = harness::write_case_file_atomic(out, path); !s) {
        std::fprintf(stderr, "patchfuzz kernel: %s\n", s.error().to_string().c_str());
        return 2;
    }
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
    if (o.sub == "--help" || o.sub == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    return usage_error("unknown subcommand '" + o.sub + "' (fetch, check, gen, minimize, status)");
}

}  // namespace patchfuzz::cli
