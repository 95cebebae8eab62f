#pragma once
// Profiles: generated programs shaped like named real workloads, for the patcher benchmarks. The
// targets (gen/profiles.cpp) are measured on the kernel selftest objects of the same names
// (docs/workloads.md); scale100k is a synthetic size-scaling shape. generate_profile() hits its
// targets within 5% (tested).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "bpf/program/program.hpp"
#include "gen/program_gen.hpp"

namespace patchfuzz::gen {

struct ProfileSpec {
    std::string_view name;
    uint32_t insns;         // target length
    uint32_t hash_lookups;  // map_lookup_elem sites on a hash map (inline sites of do_misc_fixups)
    uint32_t subprogs;      // at most, besides the main function
    uint32_t prog_type;
    // GenOptions::patch_site_density of the other rewrite sites (div/mod, ctx loads, ...): none for
    // the real objects, whose 64-bit rewrite is their map lookups alone (docs/workloads.md).
    double other_sites;
};

std::vector<std::string_view> profile_names();
std::optional<ProfileSpec> profile_spec(std::string_view name);
// GenOptions that produce the profile's shape.
GenOptions profile_options(const ProfileSpec& spec);
// Deterministic in (name, seed). Unknown name: an empty Program (check profile_spec first).
Program generate_profile(std::string_view name, uint64_t seed);
GeneratedCase generate_profile_case(std::string_view name, uint64_t seed);

}  // namespace patchfuzz::gen
