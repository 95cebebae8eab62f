#include "gen/profiles.hpp"

#include <algorithm>

#include "gen/rng_source.hpp"

namespace patchfuzz::gen {
namespace {
constexpr ProfileSpec kProfiles[] = {
    {"pyperf180", 24000, 930, 2, BPF_PROG_TYPE_RAW_TRACEPOINT},
    {"pyperf600", 42000, 1530, 2, BPF_PROG_TYPE_RAW_TRACEPOINT},
    {"strobemeta", 17000, 200, 3, BPF_PROG_TYPE_KPROBE},
    {"verif_scale", 100000, 1000, 4, BPF_PROG_TYPE_SCHED_CLS},
};
}  // namespace

std::vector<std::string_view> profile_names() {
    std::vector<std::string_view> v;
    for (const auto& p : kProfiles) v.push_back(p.name);
    return v;
}

std::optional<ProfileSpec> profile_spec(std::string_view name) {
    for (const auto& p : kProfiles)
        if (p.name == name) return p;
    return std::nullopt;
}

GenOptions profile_options(const ProfileSpec& spec) {
    GenOptions o;
    o.min_insns = spec.insns;
    o.max_insns = spec.insns;
    o.subprogs_max = spec.subprogs;
    o.subprog_share = 0.1;
    o.patch_site_density = 0.08;
    o.exact_lookups = true;
    o.exact_hash_lookups = spec.hash_lookups;
    o.prog_type = spec.prog_type;
    o.inputs = 1;
    // one long jump: the real objects' largest displacements are about 16-17k (docs/workloads.md,
    // measured before verification), scaled down for the smaller profiles
    o.far_jump_prob = 1.0;
    o.max_far_jumps = 1;
    o.far_jump_distance = std::min<uint32_t>(16500, spec.insns / 3);
    o.far_jump_margin = 500;
    return o;
}

GeneratedCase generate_profile_case(std::string_view name, uint64_t seed) {
    const auto spec = profile_spec(name);
    if (!spec) return {};
    RngSource src(seed);
    GeneratedCase c = generate(src, profile_options(*spec));
    c.program.name = std::string(name);
    return c;
}

Program generate_profile(std::string_view name, uint64_t seed) { return generate_profile_case(name, seed).program; }

}  // namespace patchfuzz::gen
