#pragma once
// Profiles: generated programs shaped like named real workloads, for the patcher benchmarks.
// Targets are the rewrite-time figures (after the verifier removed dead code), see
// docs/workloads.md "Real workloads": pyperf180 ~24k insns / 930 hash-map lookups,
// pyperf600 ~42k / 1530. strobemeta and verif_scale have no published rewrite-time lookup count:
// their targets below are our own choice (strobemeta: 17k insns as measured before verification,
// 200 lookups; verif_scale: the 100k-insn scale test shape, loops and 1000 lookups).
// generate_profile() hits its targets within 5% (tested).
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
    uint32_t subprogs;      // at most
    uint32_t prog_type;
};

std::vector<std::string_view> profile_names();
std::optional<ProfileSpec> profile_spec(std::string_view name);
// GenOptions that produce the profile's shape.
GenOptions profile_options(const ProfileSpec& spec);
// Deterministic in (name, seed). Unknown name: an empty Program (check profile_spec first).
Program generate_profile(std::string_view name, uint64_t seed);
GeneratedCase generate_profile_case(std::string_view name, uint64_t seed);

}  // namespace patchfuzz::gen
