#pragma once
// The oracles by name, and the interface each of them implements.
//
// An oracle is chosen by an OracleId, parsed once where a name is still a string (the CLI's
// --oracles, a .case file): the runner asks an OracleSet, never compares names. Each oracle
// judges one kind of evidence (its Scope): one patcher's result on one batch, one arch profile,
// or the whole case; `applies_to` says whether given evidence is something it judges at all.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/exec_input.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/passes/privilege.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles {

enum class OracleId : uint8_t { Structural, SmtJump, SmtInline, Exec, Kernel };

inline constexpr std::array<OracleId, 5> kAllOracles = {OracleId::Structural, OracleId::SmtJump, OracleId::SmtInline,
                                                        OracleId::Exec, OracleId::Kernel};

// The name a Verdict, --oracles and a .case file use.
std::string_view name_of(OracleId id);
// nullopt for a name no oracle has.
std::optional<OracleId> parse_oracle(std::string_view name);
// "structural, smt-jump, smt-inline, exec, kernel": for error messages.
std::string oracle_name_list();

// A set of oracles, asked in the runner's inner loops (a bit per OracleId).
class OracleSet {
public:
    OracleSet() = default;
    OracleSet(std::initializer_list<OracleId> ids) {
        for (OracleId id : ids) add(id);
    }
    void add(OracleId id) { bits_ |= bit(id); }
    void remove(OracleId id) { bits_ &= static_cast<uint8_t>(~bit(id)); }
    [[nodiscard]] bool has(OracleId id) const { return (bits_ & bit(id)) != 0; }
    [[nodiscard]] bool empty() const { return bits_ == 0; }
    bool operator==(const OracleSet&) const = default;

private:
    static uint8_t bit(OracleId id) { return static_cast<uint8_t>(1u << static_cast<unsigned>(id)); }
    uint8_t bits_ = 0;
};

// Names to a set; nullopt, and the first unknown name in `bad`, when one is not an oracle's.
std::optional<OracleSet> parse_oracle_set(const std::vector<std::string>& names, std::string* bad = nullptr);

// ---- the interface -----------------------------------------------------------------------------

// What an oracle judges.
enum class Scope : uint8_t {
    Batch,  // one patcher's result on one batch, next to the reference patcher's
    Arch,   // one arch profile of a case (smt-inline: the profile's inline sequences)
    Case,   // the whole case, every profile and patcher (exec: runs; kernel: a guest's verifier)
};

// One patcher's run of a batch.
struct BatchRun {
    std::string_view patcher;
    const Program* program = nullptr;  // its result
    patch::PatchOutcome outcome;
};

// The evidence of one judgement; the fields of the oracle's Scope are set.
struct Evidence {
    // Batch: the program the batch was given, the batch, and the reference's and one other
    // patcher's results (`candidate` is the reference itself for the oracles that judge the
    // reference alone, smt-jump). `same_as_reference`: the candidate's outcome and program are
    // known to be the reference's (its result need not be compared again).
    const Program* before = nullptr;
    const patch::PatchBatch* batch = nullptr;
    BatchRun reference, candidate;
    bool same_as_reference = false;
    // Arch and Case.
    const ArchProfile* arch = nullptr;
    const passes::RewriteOptions* options = nullptr;
    const Program* program = nullptr;  // Case: the case's program, before any rewrite
    // Case: the profiles judged together in one verdict (exec: runs two profiles share are made
    // once); empty: `arch` alone, or the oracle's own choice when that is unset too.
    std::span<const ArchProfile> arches;
    // Case: the case's own inputs (run first by exec, test-run by the kernel) and its loader level.
    std::span<const interp::ExecInput> inputs;
    passes::Privilege privilege = passes::Privilege::Root;
};

class Oracle {
public:
    virtual ~Oracle() = default;
    [[nodiscard]] virtual OracleId id() const = 0;
    [[nodiscard]] std::string_view name() const { return name_of(id()); }
    [[nodiscard]] virtual Scope scope() const = 0;
    // Whether this evidence is something the oracle judges (false: no verdict at all, not a Skip).
    [[nodiscard]] virtual bool applies_to(const Evidence& e) const = 0;
    // The verdicts on `e` (one for Batch; one per proof or run for Arch and Case).
    virtual std::vector<Verdict> judge(const Evidence& e) = 0;
};

}  // namespace patchfuzz::oracles
