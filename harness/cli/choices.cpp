#include "harness/cli/choices.hpp"

#include "bpf/arch/arch_profile.hpp"
#include "bpf/util/check.hpp"
#include "gen/profiles.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {

Choices arch_choices() { return choices("arch", arch_names()); }

std::vector<ArchProfile> profiles_named(const std::vector<std::string>& names) {
    std::vector<ArchProfile> out;
    for (const auto& n : names) {
        const auto arch = arch_by_name(n);
        PATCHFUZZ_CHECK(arch.has_value(), "an arch name is checked where it is read");
        out.push_back(*arch);
    }
    return out;
}

Choices privilege_choices() { return Choices{"privilege", {"root", "bpf", "unpriv"}}; }

Choices kernel_profile_choices() { return Choices{"profile", {"6.1", "6.12", "7.2", "7.3", "bpf-next"}}; }

Choices inline_fix_choices() { return Choices{"variant", {"buggy", "fixed"}}; }

Choices case_oracle_choices() {
    Choices c{"oracle", {}};
    for (auto id : oracles::kAllOracles)
        if (id != oracles::OracleId::Kernel) c.names.emplace_back(oracles::name_of(id));
    return c;
}

Choices gen_profile_choices() { return choices("profile", gen::profile_names()); }

}  // namespace patchfuzz::cli
