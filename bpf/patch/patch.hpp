#pragma once
// The patch requests both patchers take, and the Patcher interface (docs/patching.md §2-§4, §7).
//
// Coordinates: every Patch in a PatchBatch names positions in the program the batch is applied to
// (the pass's input: "original" coordinates of docs/patching.md §7), sorted by `pos`, at most one patch per
// position, removal ranges disjoint from every other patch.
//
// Jump encoding inside Patch::insns is patch-local (the generator contract of docs/patching.md §7.2): a
// relative transfer (isa::relative_field() != None) at slot j with displacement d names the local
// index L = j + d + 1.  0 <= L < n: a slot of this patch (kept verbatim by both patchers).
// L >= n: original index pos + 1 + (L - n).  L < 0: original index pos + L.
// The incremental patcher turns outgoing transfers into the current coordinates the kernel's own
// generator would have used at that moment (backward targets already moved by earlier patches),
// then applies the patch exactly as bpf_patch_insn_data() does; the batched patcher maps them
// through the closed-form index map S of docs/patching.md §7.1. Both must produce identical Programs.
//
// Details both patchers implement identically (see bpf/patch/index_map.hpp for S):
//  * "relative transfer" is the set bpf_adj_branches() adjusts (patch_rules.hpp adj_field(); equal to
//    isa::relative_field() for every valid encoding).
//  * InsertBefore: the buffer the kernel applies is [insns..., copy of the insn at pos], so the
//    prologue's local encoding uses n = insns.size() + 1 (L == insns.size() is the copied insn,
//    L == n is original pos + 1). The copy keeps its current displacement verbatim (kernel), then
//    adjust_jmp_off(pos, insns.size()) runs with target-only matching; if it overflows, the kernel
//    only WARNs: the walk stops there and PatchOutcome::kernel_warn says so (err stays 0).
//  * Batch semantics = the kernel loop: patches applied in ascending pos with a running delta. So an
//    InsertBefore redirect affects jumps that exist when it is applied (unpatched insns, outgoing
//    transfers of earlier patches), not backward transfers of later patches.
//  * Preconditions (validate_batch() checks the structural ones): targets of unpatched relative
//    insns lie in [0, len] (otherwise the kernel would BUG in the real branch walk); outgoing
//    transfers of a patch do not name an insn inside a removal range, and a backward one fits its
//    field once converted to current coordinates (the kernel generator would wrap it silently;
//    modelled by the incremental patcher, not reproduced by the batched one).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::patch {

enum class PatchKind : uint8_t {
    Replace,       // replace the insn at `pos` by `insns` (n >= 1): bpf_patch_insn_data()
    Remove,        // remove `count` insns from `pos`: verifier_remove_insns()
    InsertBefore,  // prologue: the kernel patches `pos` with [insns..., copy of insn at pos] and then
                   // calls adjust_jmp_off(prog, pos, insns.size()) so plain jumps skip the prologue
};

// Slot j of a filler run: `r(j % 10) += j`. The generators' oversized patches (tens of thousands of
// slots, for the -ERANGE paths) are made of it, and a .case writes such a run as `fill=N`
// (docs/case-format.md) instead of N lines.
constexpr isa::Insn filler_insn(uint32_t j) {
    return isa::alu64_imm(BPF_ADD, static_cast<uint8_t>(j % 10), static_cast<int32_t>(j));
}

struct Patch {
    PatchKind kind = PatchKind::Replace;
    uint32_t pos = 0;
    std::vector<isa::Insn> insns;  // Replace: the replacement; InsertBefore: the prologue only
    uint32_t count = 0;            // Remove: how many insns
};

struct PatchBatch {
    std::vector<Patch> patches;  // sorted by pos; see the coordinate rules above
};

// What a batch application returns. `err` is what the verifier returns to user space; a patch
// whose displacements overflow is -ENOMEM there (bpf_patch_insn_data() returns NULL) with
// raw_err = -ERANGE and the log line "insn N cannot be patched due to 16-bit range" (N =
// aux[off].orig_idx of the failing patch). On failure the Program's contents are unspecified
// (the kernel discards the program); only err/raw_err/log are compared.
struct PatchOutcome {
    int err = 0;
    int raw_err = 0;
    std::string log;
    // A kernel WARN_ON that does not fail the load (adjust_jmp_off() overflow): dmesg, not the log.
    std::string kernel_warn;
    [[nodiscard]] bool ok() const { return err == 0; }
    bool operator==(const PatchOutcome&) const = default;
};

class Patcher {
public:
    virtual ~Patcher() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    virtual PatchOutcome apply(Program& prog, const PatchBatch& batch) = 0;
    // `out` becomes what apply() makes of a copy of `in` (outcome and program alike). For callers
    // that keep the input (a side-by-side run): a patcher that builds the new insns afresh
    // overrides it to skip copying the old ones first. `out`'s storage is reused.
    virtual PatchOutcome apply_to(const Program& in, Program& out, const PatchBatch& batch) {
        out = in;
        return apply(out, batch);
    }
};

// How the incremental patcher walks the program for branch fix-ups (bpf_adj_branches,
// adjust_jmp_off): EveryInsn visits every insn, the kernel's cost, what `patchfuzz bench` times;
// Indexed visits only the insns with a displacement, same order, same result (tested), for
// fuzzing.
enum class BranchWalk { EveryInsn, Indexed };
std::unique_ptr<Patcher> make_incremental_patcher(BranchWalk walk = BranchWalk::Indexed);  // incremental_patcher.cpp
std::unique_ptr<Patcher> make_batched_patcher();      // batched_patcher.cpp
// The built-in patchers, by id: what a run configuration and a .case hold, parsed once from the
// name where it is still text.
enum class PatcherId : uint8_t { Incremental, Batched };
std::string_view name_of(PatcherId id);
// nullopt for a name no built-in patcher has.
std::optional<PatcherId> parse_patcher(std::string_view name);
std::unique_ptr<Patcher> make_patcher(PatcherId id);
// "incremental" | "batched"; nullptr for an unknown name.
std::unique_ptr<Patcher> make_patcher(std::string_view name);
// The names make_patcher() accepts, in a stable order.
std::vector<std::string_view> patcher_names();

// Structural check of a batch against the program it is applied to (sorted, at most one patch per
// position, in range, non-empty Replace, disjoint removals). Empty string = valid; otherwise a
// located message ("patch 3 (pos 17): ..."). Both patchers return {-EINVAL, -EINVAL, message}
// for an invalid batch and leave the program untouched.
std::string validate_batch(const Program& prog, const PatchBatch& batch);

}  // namespace patchfuzz::patch
