#include "gen/profiles.hpp"

#include <algorithm>

#include "gen/rng_source.hpp"

namespace patchfuzz::gen {
namespace {
// Sized from the kernel selftest objects of the same name (docs/workloads.md: built from Linux
// 6.12's tools/testing/selftests/bpf with clang-14 -mcpu=v3, loaded with libbpf, measured with
// `patchfuzz load` and `patchfuzz rewrite`): insns as libbpf hands them to BPF_PROG_LOAD, and the
// map lookups that do_misc_fixups inlines on a 64-bit JIT (hash and array; all generated as hash
// lookups). scale100k is no real object: a size-scaling shape of our own.
constexpr ProfileSpec kProfiles[] = {
    {"pyperf180", 47428, 920, 0, BPF_PROG_TYPE_RAW_TRACEPOINT, 0.0},
    {"pyperf600", 80643, 1520, 0, BPF_PROG_TYPE_RAW_TRACEPOINT, 0.0},
    {"strobemeta", 16813, 2, 0, BPF_PROG_TYPE_RAW_TRACEPOINT, 0.0},
    {"scale100k", 100000, 1000, 4, BPF_PROG_TYPE_SCHED_CLS, 0.08},
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
    o.patch_site_density = spec.other_sites;
    o.exact_lookups = true;
    o.exact_hash_lookups = spec.hash_lookups;
    o.prog_type = spec.prog_type;
    o.inputs = 1;
    // one long jump: the real objects' largest displacements are about 16-17k (docs/workloads.md),
    // scaled down for the smaller profiles
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
