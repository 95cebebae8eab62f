// patchfuzz fuzz: the main job — a differential fuzzing campaign over generated programs.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"
#include "gen/profiles.hpp"
#include "harness/campaign/campaign.hpp"
#include "harness/case/object_cases.hpp"
#include "harness/cli/cli_numbers.hpp"
#include "harness/cli/commands.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/kernel/process.hpp"
#include "harness/plugin/plugin_info.hpp"
#include "harness/plugin/plugin_patcher.hpp"
#include "harness/version/build_version.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {
namespace {

void fuzz_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz fuzz [--seconds N] [--runs K] [--seed S] [--jobs J] [--oracles LIST]\n"
                 "                      [--arch LIST] [--profile NAME] [--max-insns N] [--iter-inline v4|v1|v3|off]\n"
                 "                      [--loop-inline buggy|fixed] [--func-arg-inline buggy|fixed] [--nop-removal buggy|fixed]\n"
                 "                      [--corpus DIR] [--seeds PATH] [--out DIR] [--patcher-lib X.so] [--json] [--quiet]\n"
                 "                      [--kernel 6.1|6.12|7.2|7.3] [--kernel-arch A] [--kernel-profile P] [--kernel-batch N]\n"
                 "                      [--known DIR | --no-known]\n\n"
                 "Generate valid BPF programs, run the kernel's rewrite passes with the incremental (kernel\n"
                 "model) and the batched patcher under each arch profile, and check every result with the\n"
                 "oracles. Failures are minimized, bucketed by semantic signature and written atomically to\n"
                 "OUT/findings/<bucket>/ as .case (+ .data and a kernel selftest snippet) with a replay line.\n\n"
                 "  --seconds N      stop after N seconds (default 20 when --runs is not given)\n"
                 "  --runs K         stop after K generated cases\n"
                 "  --seed S         campaign seed (default 1; printed; case i is replayable alone)\n"
                 "  --jobs J         J worker processes, results merged (default 1)\n"
                 "  --oracles LIST   comma list of structural,smt-jump,smt-inline,exec (default all four),\n"
                 "                   and kernel: batches of verifier-acceptable programs through a real kernel\n"
                 "                   under qemu (xlated vs our model, test runs vs our interpreter); needs\n"
                 "                   `patchfuzz kernel fetch --kernel K` first\n"
                 "  --kernel K       the kernel oracle's Debian kernel: 6.1, 6.12, 7.2 or 7.3 (default 6.12)\n"
                 "  --kernel-arch A  the kernel oracle's architecture: amd64 (default), arm64 (6.12, 7.3) or armhf\n"
                 "                   (6.12); the model is held to the x86_64, arm64 or arm32 profile\n"
                 "  --kernel-profile P  the model's rewrite rules the kernel is held to: 6.1, 6.12, 7.2, 7.3, bpf-next\n"
                 "                   (default: as --kernel). Each new kernel finding is minimized in VM boots.\n"
                 "  --kernel-batch N programs per VM boot (default 200)\n"
                 "  --privilege P    the kernel oracle's loader level: root, bpf (CAP_BPF alone), unpriv, or mix\n"
                 "                   (default: the three in turn, program by program)\n"
                 "  --arch LIST      comma list of x86_64,arm64,jit32,arm32 (default the first three)\n"
                 "  --profile NAME   generate programs shaped like a real workload (see `patchfuzz gen --help`)\n"
                 "  --max-insns N    size bound of random programs (default 96)\n"
                 "  --iter-inline V  which numeric-iterator inline the passes emit (default v4, the correct one)\n"
                 "  --loop-inline V, --func-arg-inline V, --nop-removal V  buggy (the kernel's, default) or\n"
                 "                   fixed: the fixes for findings 0007 / 0008 / 0003 (bpf/passes/pass.hpp InlineFix)\n"
                 "  --corpus DIR     replay DIR/*.case first; save new-coverage cases there\n"
                 "  --seeds PATH     a .case, a BPF object (.bpf.o) or a directory of them (repeatable): half\n"
                 "                   the cases are then mutants of their programs (insns inserted, deleted,\n"
                 "                   replaced, jumps retargeted, rewrite sites added; facts re-inferred), so\n"
                 "                   real programs' shapes join the search\n"
                 "  --out DIR        findings and campaign output (default patchfuzz-out)\n"
                 "  --patcher-lib X  also check an external batched patcher (C ABI, include/patchfuzz/patcher.h),\n"
                 "                   in this process until it first crashes, hangs or writes into its input (a\n"
                 "                   finding), then in an isolated host process\n"
                 "  --plugin-isolated  run the plugin in the host process from the first call (slower)\n"
                 "  --plugin-stateful  call the plugin for every profile and pass, never reusing an answer\n"
                 "                   to an input it was given before (for a plugin that keeps state)\n"
                 "  --plugin-timeout S  seconds one plugin call may take before it counts as a hang (default 2)\n"
                 "  --known DIR      filed findings (*.case): failures matching one (signature, and for exec the\n"
                 "                   pass that causes it) are counted as known, not written as new buckets\n"
                 "                   (default: corpus/regression/findings of the source tree, when it exists)\n"
                 "  --no-known       treat every failure as new\n"
                 "  --json           print the summary as JSON on stdout\n"
                 "  --quiet          no live status line\n\n"
                 "exit: 0 no new finding (known ones allowed), 1 new findings, 2 bad usage\n");
}

int bad(const std::string& m) {
    std::fprintf(stderr, "patchfuzz fuzz: %s\n", m.c_str());
    return 2;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, ','))
        if (!x.empty()) out.push_back(x);
    return out;
}

bool parse_u64(const std::string& s, uint64_t& v) {
    const auto n = parse_whole<uint64_t>(s);
    if (n) v = *n;
    return n.has_value();
}

void on_signal(int) { harness::g_stop_campaign.store(true); }

}  // namespace

int cmd_fuzz(Args args) {
    harness::CampaignConfig cfg;
    bool json = false, have_seconds = false, want_kernel = false, no_known = false, have_known = false;
    double plugin_timeout = harness::PluginPatcher::kDefaultTimeoutSeconds;
    bool plugin_isolated = false;
    std::string plugin, kernel_tag = "6.12", kernel_profile, kernel_arch = "amd64";
    std::vector<passes::Privilege> privileges{passes::Privilege::Root, passes::Privilege::Bpf, passes::Privilege::Unpriv};
    uint32_t kernel_batch = 200;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        auto value = [&](std::string& out) -> bool {
            if (i + 1 >= args.size()) return false;
            out = args[++i];
            return true;
        };
        std::string v;
        uint64_t n = 0;
        if (a == "--help" || a == "-h") {
            fuzz_usage(stdout);
            return 0;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--quiet") {
            cfg.status_line = false;
        } else if (a == "--seconds") {
            if (!value(v) || !parse_u64(v, n) || n == 0 || n > 30 * 24 * 3600)
                return bad("--seconds takes a whole number from 1 to 2592000");
            cfg.seconds = double(n);
            have_seconds = true;
        } else if (a == "--runs") {
            if (!value(v) || !parse_u64(v, n) || n == 0) return bad("--runs takes a whole number >= 1");
            cfg.runs = n;
        } else if (a == "--seed") {
            if (!value(v) || !parse_u64(v, n)) return bad("--seed takes a whole number (0 .. 2^64-1)");
            cfg.seed = n;
        } else if (a == "--jobs") {
            if (!value(v) || !parse_u64(v, n) || n == 0 || n > 256) return bad("--jobs takes a whole number from 1 to 256");
            cfg.jobs = static_cast<uint32_t>(n);
        } else if (a == "--max-insns") {
            if (!value(v) || !parse_u64(v, n) || n < 4 || n > 1000000) return bad("--max-insns takes a whole number from 4 to 1000000");
            cfg.max_insns = static_cast<uint32_t>(n);
        } else if (a == "--oracles") {
            if (!value(v)) return bad("--oracles needs a list");
            cfg.run.oracles = split(v);
            std::string unknown;
            if (!oracles::parse_oracle_set(cfg.run.oracles, &unknown))
                return bad("unknown oracle '" + unknown + "' (" + oracles::oracle_name_list() + ")");
            // The kernel oracle is not a per-case oracle of the runner: the campaign batches it.
            auto k = std::find(cfg.run.oracles.begin(), cfg.run.oracles.end(), "kernel");
            want_kernel = k != cfg.run.oracles.end();
            if (want_kernel) cfg.run.oracles.erase(k);
        } else if (a == "--kernel") {
            if (!value(kernel_tag)) return bad("--kernel needs a value");
        } else if (a == "--kernel-arch") {
            if (!value(kernel_arch) || !kernel::arch_boot(kernel_arch))
                return bad("--kernel-arch takes one of " + kernel::arch_boot_list());
        } else if (a == "--kernel-profile") {
            if (!value(kernel_profile) || !passes::kernel_profile_named(kernel_profile))
                return bad(std::string("--kernel-profile takes ") + passes::kKernelProfileNames);
        } else if (a == "--privilege") {
            if (!value(v)) return bad("--privilege needs a value");
            if (v == "mix") {
                privileges = {passes::Privilege::Root, passes::Privilege::Bpf, passes::Privilege::Unpriv};
            } else if (auto pl = passes::privilege_named(v)) {
                privileges = {*pl};
            } else {
                return bad(std::string("--privilege takes ") + passes::kPrivilegeNames + " or mix");
            }
        } else if (a == "--kernel-batch") {
            if (!value(v) || !parse_u64(v, n) || n == 0 || n > 100000)
                return bad("--kernel-batch takes a whole number from 1 to 100000");
            kernel_batch = static_cast<uint32_t>(n);
        } else if (a == "--arch") {
            if (!value(v)) return bad("--arch needs a list");
            cfg.run.arches = split(v);
            for (const auto& x : cfg.run.arches)
                if (!arch_by_name(x)) return bad("unknown arch '" + x + "' (" + arch_name_list() + ")");
        } else if (a == "--profile") {
            if (!value(cfg.profile)) return bad("--profile needs a name");
            bool known = false;
            for (auto p : gen::profile_names()) known |= p == cfg.profile;
            if (!known) return bad("unknown profile '" + cfg.profile + "' (see `patchfuzz gen --help`)");
        } else if (a == "--iter-inline") {
            if (!value(cfg.iter_inline) ||
                (cfg.iter_inline != "v4" && cfg.iter_inline != "v1" && cfg.iter_inline != "v3" && cfg.iter_inline != "off"))
                return bad("--iter-inline takes v4, v1, v3 or off");
        } else if (a == "--loop-inline" || a == "--func-arg-inline" || a == "--nop-removal") {
            std::string v;
            auto f = value(v) ? passes::inline_fix_named(v) : std::nullopt;
            if (!f) return bad(a + " takes buggy or fixed");
            (a == "--loop-inline" ? cfg.loop_inline : a == "--func-arg-inline" ? cfg.func_arg_inline : cfg.nop_removal) = *f;
        } else if (a == "--corpus") {
            if (!value(cfg.corpus_dir)) return bad("--corpus needs a directory");
        } else if (a == "--seeds") {
            std::string path;
            if (!value(path)) return bad("--seeds needs a .case, a .bpf.o or a directory of them");
            auto loaded = harness::read_seeds(path);
            if (!loaded) return bad("--seeds: " + loaded.error().to_string());
            for (harness::Case& c : *loaded) cfg.seeds.push_back(std::move(c));
            cfg.seeds_from += (cfg.seeds_from.empty() ? std::string() : std::string(" --seeds ")) + path;
        } else if (a == "--out") {
            if (!value(cfg.out_dir)) return bad("--out needs a directory");
        } else if (a == "--known") {
            if (!value(cfg.known_dir)) return bad("--known needs a directory");
            std::error_code ec;
            if (!std::filesystem::is_directory(cfg.known_dir, ec)) return bad("--known: '" + cfg.known_dir + "' is not a directory");
            have_known = true;
        } else if (a == "--no-known") {
            no_known = true;
        } else if (a == "--patcher-lib") {
            if (!value(plugin)) return bad("--patcher-lib needs a shared library");
        } else if (a == "--plugin-stateful") {
            cfg.run.external_pure = false;
        } else if (a == "--plugin-isolated") {
            plugin_isolated = true;
        } else if (a == "--plugin-timeout") {
            std::string v;
            char* end = nullptr;
            if (!value(v) || (plugin_timeout = std::strtod(v.c_str(), &end), end == v.c_str() || *end != 0) ||
                !(plugin_timeout > 0 && plugin_timeout <= 3600))
                return bad("--plugin-timeout takes seconds from 0 to 3600 (e.g. 0.5)");
        } else {
            return bad("unknown option '" + a + "' (see --help)");
        }
    }
    if (!have_seconds && cfg.runs == 0) cfg.seconds = 20;
    if (!kernel_profile.empty() && !want_kernel) return bad("--kernel-profile is the kernel oracle's: add kernel to --oracles");
    if (no_known && have_known) return bad("--known and --no-known exclude each other");
    if (no_known) {
        cfg.known_dir.clear();
    } else if (!have_known) {
        const std::string def = std::string(PATCHFUZZ_SOURCE_ROOT) + "/corpus/regression/findings";
        std::error_code ec;
        if (std::filesystem::is_directory(def, ec)) cfg.known_dir = def;
    }
    std::unique_ptr<harness::PluginPatcher> ext;
    if (!plugin.empty()) {
        auto loaded = harness::PluginPatcher::open(plugin, plugin_timeout, plugin_isolated);
        if (!loaded) return bad(loaded.error().to_string());
        ext = std::move(*loaded);
        cfg.run.external = ext.get();
        cfg.run.external_name = std::string(ext->name());
        if (auto info = harness::read_plugin_info(plugin)) build::set_plugin(info->name, info->version);
    }
    if (!kernel::kernel_spec(kernel_tag, kernel_arch))
        return bad("--kernel takes one of " + kernel::kernel_tag_list(kernel_arch) + " (for " + kernel_arch + ")");
    if (want_kernel) {
        auto co = kernel::default_check_options(kernel_tag, kernel::default_cache_dir(), PATCHFUZZ_SOURCE_ROOT, kernel_arch);
        if (!co) return bad("kernel oracle: " + co.error().to_string());
        if (!kernel::find_in_path(co->vm.qemu))
            return bad("kernel oracle: '" + co->vm.qemu + "' not found (install " +
                       std::string(kernel::arch_boot(kernel_arch)->qemu_package) + ")");
        co->run = true;
        if (!kernel_profile.empty()) co->profile = *passes::kernel_profile_named(kernel_profile);
        cfg.kernel = harness::KernelStreamConfig{.tag = kernel_tag, .check = *co, .batch = kernel_batch};
        cfg.kernel->privileges = privileges;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::fprintf(stderr, "patchfuzz fuzz: seed %llu, %s, jobs %u, out %s (replay: patchfuzz fuzz --seed %llu%s)\n",
                 static_cast<unsigned long long>(cfg.seed),
                 cfg.runs ? (std::to_string(cfg.runs) + " cases").c_str() : (std::to_string(int(cfg.seconds)) + " s").c_str(),
                 cfg.jobs, cfg.out_dir.c_str(), static_cast<unsigned long long>(cfg.seed),
                 cfg.runs ? (" --runs " + std::to_string(cfg.runs)).c_str() : "");
    const auto summary = harness::run_campaign(cfg);
    if (json)
        std::printf("%s\n", summary.to_json().c_str());
    else
        std::printf("%s", summary.to_text().c_str());
    return summary.findings > 0 ? 1 : 0;
}

}  // namespace patchfuzz::cli
