// patchfuzz gen: generate random valid programs (or a named profile, or a seed from a .bpf.o) as
// .case files. Every run prints its seed; the same arguments and seed give the same bytes.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "bpf/util/json.hpp"
#include "bpf/loader/loader.hpp"
#include "gen/acceptable_gen.hpp"
#include "gen/profiles.hpp"
#include "gen/program_gen.hpp"
#include "gen/rng_source.hpp"
#include "gen/seed_case.hpp"
#include "harness/case/case_file.hpp"
#include "harness/campaign/reloc_feedback.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {

int cmd_gen(Args args) {
    std::string profile, from, out;
    uint64_t seed = 0, size = 0, count = 1, subprogs = 4;
    double density = 0.1, far = 0.0;
    bool have_seed = false, json = false, cells = false;
    std::optional<passes::Privilege> privilege;
    const VerbFlags spec{
        .verb = "gen",
        .usage = {"patchfuzz gen [--profile NAME] [--from OBJ.bpf.o] [--seed S] [--size N] [--count K]",
                  "             [--density D] [--far-jumps P] [--subprogs N] [--privilege root|bpf|unpriv]",
                  "             [--json] -o OUT(.case|dir)",
                  "patchfuzz gen --cells"},
        .about = "Generates valid BPF programs with side tables, verifier facts and execution inputs, written\n"
                 "as .case files. With --count 1 (default) and OUT ending in .case, one file; otherwise OUT is a\n"
                 "directory that receives gen-<seed>.case files (case i uses seed S+i).\n"
                 "The seed is printed on stderr as 'patchfuzz gen: seed S'.",
        .flags = {choice_flag({"--profile"}, "NAME", "a named workload shape: " + gen_profile_choices().listing() + " (docs/workloads.md)",
                              gen_profile_choices(), [&](const std::string& v) { profile = v; }),
                  text_flag({"--from"}, "OBJ", "seed from a real object: each program of OBJ (libbpf loader) becomes a case", from),
                  whole_flag_u64({"--seed"}, "S", "random seed (default: drawn from the system and printed)", 0, UINT64_MAX,
                                 [&](uint64_t n) {
                                     seed = n;
                                     have_seed = true;
                                 }),
                  whole_flag({"--size"}, "N", "target insns per program, 4..1000000 (default: random in 4..128)", size, 4, 1000000),
                  whole_flag({"--count"}, "K", "number of cases, 1..1000000 (default 1)", count, 1, 1000000),
                  real_flag({"--density"}, "D", "share of items that are rewrite sites, 0..1 (default 0.1)", 0, 1,
                            [&](double d) { density = d; }),
                  real_flag({"--far-jumps"}, "P", "chance of a jump displacement near +-32767, 0..1 (needs --size > 32767)", 0, 1,
                            [&](double d) { far = d; }),
                  whole_flag({"--subprogs"}, "N", "at most N subprogs, 0..6 (default 4)", subprogs, 0, 6),
                  choice_flag({"--privilege"}, "P",
                              "verifier-acceptable programs (the kernel oracle's, gen/acceptable_gen.hpp) for a loader at level "
                              "P: root, bpf (CAP_BPF alone) or unpriv; the case records privilege=P and the facts the "
                              "speculative verifier decides at that level",
                              privilege_choices(), [&](const std::string& v) { privilege = passes::privilege_named(v).value(); }),
                  switch_flag({"--json"},
                              "print one JSON line of statistics per case on stdout, with \"reloc\": the relocation-coverage "
                              "cells its rewrite hits (every pass, x86_64 and jit32, incremental patcher) and where its calls, "
                              "callbacks and jumps point",
                              json),
                  text_flag({"-o", "--out"}, "OUT", "output file or directory", out),
                  switch_flag({"--cells"}, "print the relocation-coverage cell table (markdown) and exit", cells)},
        .exit = "exit: 0 ok, 2 bad usage or input"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (cells) {
        std::fputs(harness::coverage_cells_markdown().c_str(), stdout);
        return 0;
    }
    if (out.empty()) return spec.error("missing -o OUT");
    if (!profile.empty() && !from.empty()) return spec.error("--profile and --from exclude each other");
    if (privilege && (!profile.empty() || !from.empty())) return spec.error("--privilege excludes --profile and --from");
    if (!have_seed) seed = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
    std::fprintf(stderr, "patchfuzz gen: seed %llu\n", static_cast<unsigned long long>(seed));

    std::vector<gen::GeneratedCase> from_obj;
    if (!from.empty()) {
        auto obj = loader::load_object(from);
        if (!obj) return spec.error(from + ": " + obj.error().to_string());
        for (auto& p : obj->programs) from_obj.push_back(gen::case_from_program(std::move(p), seed));
        if (from_obj.empty()) return spec.error(from + ": no programs in object");
        count = from_obj.size();
    }
    const bool single = count == 1 && ends_with(out, ".case");
    if (!single) {
        if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST)
            return spec.error(out + ": cannot create directory: " + std::strerror(errno));
    }
    gen::GenOptions opts;
    if (size) opts.min_insns = opts.max_insns = static_cast<uint32_t>(size);
    opts.patch_site_density = density;
    opts.far_jump_prob = far;
    opts.subprogs_max = static_cast<uint32_t>(subprogs);
    for (uint64_t i = 0; i < count; ++i) {
        const uint64_t s = seed + i;
        gen::GeneratedCase c;
        std::string how;
        if (!from_obj.empty()) {
            c = std::move(from_obj[i]);
            how = "patchfuzz gen --from " + from + " --seed " + std::to_string(seed) + " (program " + std::to_string(i) + ")";
        } else if (!profile.empty()) {
            c = gen::generate_profile_case(profile, s);
            how = "patchfuzz gen --profile " + profile + " --seed " + std::to_string(s);
        } else if (privilege) {
            Rng rng(s);
            gen::AcceptableOptions ao;
            ao.privilege = *privilege;
            auto a = gen::generate_acceptable(rng, ao);
            c.program = std::move(a.program);
            c.inputs = std::move(a.inputs);
            how = "patchfuzz gen --privilege " + std::string(passes::to_string(*privilege)) + " --seed " + std::to_string(s);
        } else {
            gen::RngSource src(s);
            c = gen::generate(src, opts);
            how = "patchfuzz gen --seed " + std::to_string(s) + (size ? " --size " + std::to_string(size) : "");
        }
        harness::Case kc;
        if (privilege) {
            kc.privilege = *privilege;
            kc.options.privileged = passes::bpf_capable(*privilege);
        }
        kc.comments.push_back("generated-by: " + how);
        kc.program = std::move(c.program);
        kc.inputs = std::move(c.inputs);
        kc.seed = s;
        const std::string path = single ? out : out + "/gen-" + std::to_string(s) + (from.empty() ? "" : "-" + std::to_string(i)) + ".case";
        if (auto st = harness::write_case_file_atomic(kc, path); !st) return spec.error(path + ": " + st.error().to_string());
        if (json) {
            std::string j = gen::stats_json(c.stats);
            j.insert(1, "\"seed\":" + std::to_string(s) + ",\"file\":\"" + json_escape(path) + "\",");
            j.insert(j.size() - 1, ",\"reloc\":" + harness::coverage_json(harness::rewrite_coverage(kc.program, {"x86_64", "jit32"}),
                                                                       harness::ref_directions(kc.program)));
            std::printf("%s\n", j.c_str());
        }
    }
    return 0;
}

}  // namespace patchfuzz::cli
