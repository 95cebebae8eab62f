#include "oracles/oracle.hpp"

namespace patchfuzz::oracles {

std::string_view name_of(OracleId id) {
    switch (id) {
        case OracleId::Structural: return "structural";
        case OracleId::SmtJump: return "smt-jump";
        case OracleId::SmtInline: return "smt-inline";
        case OracleId::Exec: return "exec";
        case OracleId::Kernel: return "kernel";
    }
    return "?";
}

std::optional<OracleId> parse_oracle(std::string_view name) {
    for (OracleId id : kAllOracles)
        if (name_of(id) == name) return id;
    return std::nullopt;
}

std::string oracle_name_list() {
    std::string s;
    for (OracleId id : kAllOracles) s += (s.empty() ? "" : ", ") + std::string(name_of(id));
    return s;
}

std::optional<OracleSet> parse_oracle_set(const std::vector<std::string>& names, std::string* bad) {
    OracleSet set;
    for (const auto& n : names) {
        const auto id = parse_oracle(n);
        if (!id) {
            if (bad != nullptr) *bad = n;
            return std::nullopt;
        }
        set.add(*id);
    }
    return set;
}

}  // namespace patchfuzz::oracles
