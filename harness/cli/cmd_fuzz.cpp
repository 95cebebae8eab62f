// patchfuzz fuzz: the main job — a differential fuzzing campaign over generated programs.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"
#include "gen/profiles.hpp"
#include "harness/campaign/campaign.hpp"
#include "harness/case/object_cases.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/kernel_oracle_options.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/plugin/plugin_info.hpp"
#include "harness/plugin/plugin_patcher.hpp"
#include "harness/version/build_version.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {
namespace {

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
    Choices oracle_names{"oracle", {}};
    for (auto id : oracles::kAllOracles) oracle_names.names.emplace_back(oracles::name_of(id));
    const std::string plugin_section = "external patcher";
    const std::string kernel_section = "kernel oracle";
    const VerbFlags spec{
        .verb = "fuzz",
        .usage = {"patchfuzz fuzz [--seconds N] [--runs K] [--seed S] [--jobs J] [--oracles LIST]",
                  "               [--arch LIST] [--profile NAME] [--max-insns N] [--iter-inline v4|v1|v3|off]",
                  "               [--loop-inline buggy|fixed] [--func-arg-inline buggy|fixed]",
                  "               [--nop-removal buggy|fixed] [--corpus DIR] [--seeds PATH] [--out DIR]",
                  "               [--json] [--quiet] [--known DIR | --no-known]",
                  "               [--patcher-lib X.so] [--plugin-isolated] [--plugin-stateful]",
                  "               [--plugin-timeout S] [--kernel 6.1|6.12|7.2|7.3] [--kernel-arch A]",
                  "               [--kernel-profile P] [--kernel-batch N] [--privilege P]"},
        .about = "Generate valid BPF programs, run the kernel's rewrite passes with the incremental (kernel\n"
                 "model) and the batched patcher under each arch profile, and check every result with the\n"
                 "oracles. Failures are minimized, bucketed by semantic signature and written atomically to\n"
                 "OUT/findings/<bucket>/ as .case (+ .data and a kernel selftest snippet) with a replay line.",
        .flags = {
            whole_flag_u64({"--seconds"}, "N", "stop after N seconds, 1..2592000 (default 20 when --runs is not given)", 1, 30 * 24 * 3600,
                           [&](uint64_t n) {
                               cfg.seconds = double(n);
                               have_seconds = true;
                           }),
            whole_flag({"--runs"}, "K", "stop after K generated cases", cfg.runs, 1),
            whole_flag({"--seed"}, "S", "campaign seed (default 1; printed; case i is replayable alone)", cfg.seed),
            whole_flag({"--jobs"}, "J", "J worker processes, 1..256, results merged (default 1)", cfg.jobs, 1, 256),
            list_flag({"--oracles"}, "LIST",
                      "comma list of structural, smt-jump, smt-inline, exec (default all four), and kernel: batches of "
                      "verifier-acceptable programs through a real kernel under qemu (xlated vs our model, test runs vs "
                      "our interpreter); needs `patchfuzz kernel fetch --kernel K` first",
                      oracle_names,
                      [&](std::vector<std::string> v) {
                          // The kernel oracle is not a per-case oracle of the runner: the campaign batches it.
                          auto k = std::find(v.begin(), v.end(), "kernel");
                          want_kernel = k != v.end();
                          if (want_kernel) v.erase(k);
                          cfg.run.oracles = *oracles::parse_oracle_set(v);  // names the table checked
                      }),
            list_flag({"--arch"}, "LIST", "comma list of x86_64, arm64, jit32, arm32 (default the first three)", arch_choices(),
                      [&](std::vector<std::string> v) { cfg.run.arches = profiles_named(v); }),
            choice_flag({"--profile"}, "NAME", "generate programs shaped like a real workload (see `patchfuzz gen --help`)",
                        gen_profile_choices(), [&](const std::string& v) { cfg.profile = v; }),
            whole_flag({"--max-insns"}, "N", "size bound of random programs, 4..1000000 (default 96)", cfg.max_insns, 4, 1000000),
            choice_flag({"--iter-inline"}, "V", "which numeric-iterator inline the passes emit: v4 (the correct one, default), v1, v3 or off",
                        Choices{"variant", {"v4", "v1", "v3", "off"}}, [&](const std::string& v) { cfg.iter_inline = v; }),
            choice_flag({"--loop-inline"}, "V",
                        "buggy (the kernel's, default) or fixed: the fix for finding 0007 (bpf/passes/pass.hpp InlineFix)",
                        inline_fix_choices(), [&](const std::string& v) { cfg.loop_inline = passes::inline_fix_named(v).value(); }),
            choice_flag({"--func-arg-inline"}, "V", "buggy (the kernel's, default) or fixed: the fix for finding 0008",
                        inline_fix_choices(), [&](const std::string& v) { cfg.func_arg_inline = passes::inline_fix_named(v).value(); }),
            choice_flag({"--nop-removal"}, "V", "buggy (the kernel's, default) or fixed: the fix for finding 0003", inline_fix_choices(),
                        [&](const std::string& v) { cfg.nop_removal = passes::inline_fix_named(v).value(); }),
            text_flag({"--corpus"}, "DIR", "replay DIR/*.case first; save new-coverage cases there", cfg.corpus_dir),
            text_flag({"--seeds"}, "PATH",
                      "a .case, a BPF object (.bpf.o) or a directory of them: half the cases are then mutants of their "
                      "programs (insns inserted, deleted, replaced, jumps retargeted, rewrite sites added; facts "
                      "re-inferred), so real programs' shapes join the search",
                      [&](const std::string& path) {
                          auto loaded = harness::read_seeds(path);
                          if (!loaded) return loaded.error().to_string();
                          for (harness::Case& c : *loaded) cfg.seeds.push_back(std::move(c));
                          cfg.seeds_from += (cfg.seeds_from.empty() ? std::string() : std::string(" --seeds ")) + path;
                          return std::string();
                      })
                .repeat(),
            text_flag({"--out"}, "DIR", "findings and campaign output (default patchfuzz-out)", cfg.out_dir),
            text_flag({"--known"}, "DIR",
                      "filed findings (*.case): failures matching one (signature, and for exec the pass that causes it) are "
                      "counted as known, not written as new buckets (default: corpus/regression/findings of the source "
                      "tree, when it exists)",
                      [&](const std::string& dir) {
                          std::error_code ec;
                          if (!std::filesystem::is_directory(dir, ec)) return "'" + dir + "' is not a directory";
                          cfg.known_dir = dir;
                          have_known = true;
                          return std::string();
                      }),
            switch_flag({"--no-known"}, "treat every failure as new", no_known),
            switch_flag({"--json"}, "print the summary as JSON on stdout", json),
            switch_flag({"--quiet"}, "no live status line", cfg.status_line, false),
            text_flag({"--patcher-lib"}, "X.so",
                      "also check an external batched patcher (C ABI, include/patchfuzz/patcher.h), in this process until "
                      "it first crashes, hangs or writes into its input (a finding), then in an isolated host process",
                      plugin)
                .in(plugin_section),
            switch_flag({"--plugin-isolated"}, "run the plugin in the host process from the first call (slower)", plugin_isolated)
                .in(plugin_section),
            switch_flag({"--plugin-stateful"},
                        "call the plugin for every profile and pass, never reusing an answer to an input it was given "
                        "before (for a plugin that keeps state)",
                        cfg.run.external_pure, false)
                .in(plugin_section),
            real_flag({"--plugin-timeout"}, "S", "seconds one plugin call may take before it counts as a hang (default 2; e.g. 0.5)",
                      0, 3600, [&](double s) { plugin_timeout = s; }, true)
                .in(plugin_section),
            text_flag({"--kernel"}, "K", "the kernel oracle's Debian kernel: 6.1, 6.12, 7.2 or 7.3 (default 6.12)", kernel_tag)
                .in(kernel_section),
            text_flag({"--kernel-arch"}, "A",
                        "the kernel oracle's architecture: amd64 (default), arm64 (6.12, 7.3) or armhf (6.12); the model "
                        "is held to the x86_64, arm64 or arm32 profile",
                        [&](const std::string& v) {
                            if (!kernel::arch_boot(v)) return "unknown architecture '" + v + "' (expected " + kernel::arch_boot_list() + ")";
                            kernel_arch = v;
                            return std::string();
                        })
                .in(kernel_section),
            choice_flag({"--kernel-profile"}, "P",
                        "the model's rewrite rules the kernel is held to: 6.1, 6.12, 7.2, 7.3, bpf-next (default: as "
                        "--kernel). Each new kernel finding is minimized in VM boots.",
                        kernel_profile_choices(), [&](const std::string& v) { kernel_profile = v; })
                .in(kernel_section),
            whole_flag({"--kernel-batch"}, "N", "programs per VM boot, 1..100000 (default 200)", kernel_batch, 1, 100000)
                .in(kernel_section),
            choice_flag({"--privilege"}, "P",
                        "the kernel oracle's loader level: root, bpf (CAP_BPF alone), unpriv, or mix (default: the three "
                        "in turn, program by program)",
                        Choices{"privilege", {"root", "bpf", "unpriv", "mix"}},
                        [&](const std::string& v) {
                            if (v == "mix")
                                privileges = {passes::Privilege::Root, passes::Privilege::Bpf, passes::Privilege::Unpriv};
                            else
                                privileges = {passes::privilege_named(v).value()};
                        })
                .in(kernel_section)},
        .exit = "exit: 0 no new finding (known ones allowed), 1 new findings, 2 bad usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (!have_seconds && cfg.runs == 0) cfg.seconds = 20;
    if (!kernel_profile.empty() && !want_kernel) return spec.error("--kernel-profile is the kernel oracle's: add kernel to --oracles");
    if (no_known && have_known) return spec.error("--known and --no-known exclude each other");
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
        if (!loaded) return spec.error(loaded.error().to_string());
        ext = std::move(*loaded);
        cfg.run.external = ext.get();
        cfg.run.external_name = std::string(ext->name());
        if (auto info = harness::read_plugin_info(plugin)) build::set_plugin(info->name, info->version);
    }
    if (!kernel::kernel_spec(kernel_tag, kernel_arch))
        return spec.error("--kernel takes one of " + kernel::kernel_tag_list(kernel_arch) + " (for " + kernel_arch + ")");
    if (want_kernel) {
        auto co = kernel_oracle_options(kernel_tag, kernel_arch);
        if (!co) return spec.error(co.error().message);
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
