// patchfuzz fuzz: the main job — a differential fuzzing campaign over generated programs.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/patch/patch.hpp"
#include "gen/profiles.hpp"
#include "harness/campaign/campaign.hpp"
#include "harness/cli/commands.hpp"
#include "harness/plugin/plugin_patcher.hpp"

namespace patchfuzz::cli {
namespace {

void fuzz_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz fuzz [--seconds N] [--runs K] [--seed S] [--jobs J] [--oracles LIST]\n"
                 "                      [--arch LIST] [--profile NAME] [--max-insns N] [--iter-inline v4|v1|v3|off]\n"
                 "                      [--corpus DIR] [--out DIR] [--patcher-lib X.so] [--json] [--quiet]\n\n"
                 "Generate valid BPF programs, run the kernel's rewrite passes with the incremental (kernel\n"
                 "model) and the batched patcher under each arch profile, and check every result with the\n"
                 "oracles. Failures are minimized, bucketed by semantic signature and written atomically to\n"
                 "OUT/findings/<bucket>/ as .case (+ .data and a kernel selftest snippet) with a replay line.\n\n"
                 "  --seconds N      stop after N seconds (default 20 when --runs is not given)\n"
                 "  --runs K         stop after K generated cases\n"
                 "  --seed S         campaign seed (default 1; printed; case i is replayable alone)\n"
                 "  --jobs J         J worker processes, results merged (default 1)\n"
                 "  --oracles LIST   comma list of structural,smt-jump,smt-inline,exec (default all four)\n"
                 "  --arch LIST      comma list of x86_64,arm64,jit32 (default all three)\n"
                 "  --profile NAME   generate programs shaped like a real workload (see `patchfuzz gen --help`)\n"
                 "  --max-insns N    size bound of random programs (default 96)\n"
                 "  --iter-inline V  which numeric-iterator inline the passes emit (default v4, the correct one)\n"
                 "  --corpus DIR     replay DIR/*.case first; save new-coverage cases there\n"
                 "  --out DIR        findings and campaign output (default patchfuzz-out)\n"
                 "  --patcher-lib X  also check an external batched patcher (C ABI, include/patchfuzz/patcher.h)\n"
                 "  --json           print the summary as JSON on stdout\n"
                 "  --quiet          no live status line\n\n"
                 "exit: 0 no finding, 1 findings, 2 bad usage\n");
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
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19) return false;
    v = std::stoull(s);
    return true;
}

void on_signal(int) { harness::g_stop_campaign.store(true); }

}  // namespace

int cmd_fuzz(Args args) {
    harness::CampaignConfig cfg;
    bool json = false, have_seconds = false;
    std::string plugin;
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
            for (const auto& o : cfg.run.oracles) {
                bool known = false;
                for (const char* k : harness::kOracleNames) known |= o == k;
                if (!known || o == "kernel")
                    return bad("unknown oracle '" + o + "' (structural, smt-jump, smt-inline, exec)");
            }
        } else if (a == "--arch") {
            if (!value(v)) return bad("--arch needs a list");
            cfg.run.arches = split(v);
            for (const auto& x : cfg.run.arches)
                if (!arch_by_name(x)) return bad("unknown arch '" + x + "' (x86_64, arm64, jit32)");
        } else if (a == "--profile") {
            if (!value(cfg.profile)) return bad("--profile needs a name");
            bool known = false;
            for (auto p : gen::profile_names()) known |= p == cfg.profile;
            if (!known) return bad("unknown profile '" + cfg.profile + "' (see `patchfuzz gen --help`)");
        } else if (a == "--iter-inline") {
            if (!value(cfg.iter_inline) ||
                (cfg.iter_inline != "v4" && cfg.iter_inline != "v1" && cfg.iter_inline != "v3" && cfg.iter_inline != "off"))
                return bad("--iter-inline takes v4, v1, v3 or off");
        } else if (a == "--corpus") {
            if (!value(cfg.corpus_dir)) return bad("--corpus needs a directory");
        } else if (a == "--out") {
            if (!value(cfg.out_dir)) return bad("--out needs a directory");
        } else if (a == "--patcher-lib") {
            if (!value(plugin)) return bad("--patcher-lib needs a shared library");
        } else {
            return bad("unknown option '" + a + "' (see --help)");
        }
    }
    if (!have_seconds && cfg.runs == 0) cfg.seconds = 20;
    std::unique_ptr<harness::PluginPatcher> ext;
    if (!plugin.empty()) {
        auto loaded = harness::PluginPatcher::open(plugin);
        if (!loaded) return bad(loaded.error().to_string());
        ext = std::move(*loaded);
        cfg.run.external = ext.get();
        cfg.run.external_name = std::string(ext->name());
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
