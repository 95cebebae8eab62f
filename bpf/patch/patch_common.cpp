// Shared by both patchers: outcome shapes, batch validation, the patcher factory.
#include <cerrno>
#include <string>

#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {

PatchOutcome erange_outcome(const Patch& p, uint32_t orig_idx) {
    PatchOutcome o;
    if (p.kind == PatchKind::Remove) {
        // verifier_remove_insns() passes bpf_remove_insns()' -ERANGE through (after a WARN); no log
        // line. Only reachable with targets outside the program.
        o.err = -ERANGE;
        o.raw_err = -ERANGE;
        return o;
    }
    // bpf_patch_insn_data(): log line, NULL; every verifier caller turns NULL into -ENOMEM.
    o.err = -ENOMEM;
    o.raw_err = -ERANGE;
    o.log = "insn " + std::to_string(orig_idx) + " cannot be patched due to 16-bit range\n";
    return o;
}

PatchOutcome invalid_outcome(const std::string& msg) {
    PatchOutcome o;
    o.err = -EINVAL;
    o.raw_err = -EINVAL;
    o.log = msg;
    return o;
}

std::string validate_batch(const Program& prog, const PatchBatch& batch) {
    const uint64_t n = prog.insns.size();
    uint64_t next_free = 0;  // first position not covered by an earlier patch
    for (size_t i = 0; i < batch.patches.size(); ++i) {
        const Patch& p = batch.patches[i];
        auto where = [&] { return "patch " + std::to_string(i) + " (pos " + std::to_string(p.pos) + "): "; };
        if (p.pos >= n) return where() + "position beyond the program (" + std::to_string(n) + " insns)";
        if (i > 0 && p.pos < next_free)
            return where() + "patches must be sorted by pos, one per position, removal ranges disjoint";
        switch (p.kind) {
            case PatchKind::Replace:
                if (p.insns.empty()) return where() + "empty replacement (the kernel needs len >= 1)";
                next_free = uint64_t{p.pos} + 1;
                break;
            case PatchKind::InsertBefore:
                next_free = uint64_t{p.pos} + 1;
                break;
            case PatchKind::Remove:
                if (p.count == 0) return where() + "removal of 0 insns";
                if (uint64_t{p.pos} + p.count > n) return where() + "removal range beyond the program";
                next_free = uint64_t{p.pos} + p.count;
                break;
        }
    }
    if (prog.aux.size() != n) return "program: aux has " + std::to_string(prog.aux.size()) + " entries for " +
                                     std::to_string(n) + " insns";
    if (prog.subprogs.empty()) return "program: no subprog table (needs at least the fake exit)";
    return {};
}

std::vector<std::string_view> patcher_names() { return {name_of(PatcherId::Incremental), name_of(PatcherId::Batched)}; }

std::string_view name_of(PatcherId id) { return id == PatcherId::Incremental ? "incremental" : "batched"; }

std::optional<PatcherId> parse_patcher(std::string_view name) {
    for (PatcherId id : {PatcherId::Incremental, PatcherId::Batched})
        if (name == name_of(id)) return id;
    return std::nullopt;
}

std::unique_ptr<Patcher> make_patcher(PatcherId id) {
    return id == PatcherId::Incremental ? make_incremental_patcher() : make_batched_patcher();
}

std::unique_ptr<Patcher> make_patcher(std::string_view name) {
    const auto id = parse_patcher(name);
    return id ? make_patcher(*id) : nullptr;
}

}  // namespace patchfuzz::patch
