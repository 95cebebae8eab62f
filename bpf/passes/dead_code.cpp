// Pass "dead_code": the privileged trio bpf_opt_hard_wire_dead_code_branches(),
// bpf_opt_remove_dead_code(), bpf_opt_remove_nops() (kernel/bpf/fixups.c), or for unprivileged
// loads sanitize_dead_code() (kernel/bpf/verifier.c). docs/patching.md §4.6.
#include <algorithm>
#include <vector>

#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

bool is_may_goto0(const Insn& i) { return same(i, make(BPF_JMP | BPF_JCOND, 0, 0, 0, 0)); }

// In place, no patch: a conditional jump whose fall-through was never reached becomes an
// unconditional `goto` with the same off; one whose target was never reached becomes `ja +0`.
void hard_wire_dead_code_branches(Program& prog) {
    const int64_t n = prog.len();
    for (int64_t i = 0; i < n; ++i) {
        Insn& in = prog.insns[static_cast<size_t>(i)];
        if (!is_cond_jump(in)) continue;
        auto seen = [&](int64_t k) { return k >= 0 && k < n && prog.aux[static_cast<size_t>(k)].seen; };
        int16_t off;
        if (!seen(i + 1))
            off = in.off;
        else if (!seen(i + 1 + in.off))
            off = 0;
        else
            continue;
        in = ja(off);
    }
}

// bpf_opt_remove_dead_code: every maximal run of unseen insns goes, one verifier_remove_insns() per
// run; the runs are disjoint in the pass's input, so they form one batch.
patch::PatchBatch dead_code_removals(const Program& prog) {
    patch::PatchBatch b;
    const uint32_t n = prog.len();
    const InsnAux* const aux = prog.aux.data();
    for (uint32_t i = 0; i < n; ++i) {
        if (aux[i].seen) continue;
        uint32_t end = i + 1;  // the run is [i, end)
        while (end < n && !aux[end].seen) ++end;
        add_patch(b, {.kind = patch::PatchKind::Remove, .pos = i, .count = end - i});
        i = end;  // seen, or past the end
    }
    return b;
}

// bpf_opt_remove_nops' scan: it removes one nop at a time, resuming at the same index (or one back
// after a may_goto +0, to catch `may_goto +1; may_goto +0`). Returns the index of each removal in
// the program as it is at that moment, in order.
//
// Replayed on the insns' original indices instead of on a copy that is shifted and re-fixed after
// every removal: a removal only moves the displacements of the jumps across it (bpf_adj_branches),
// so a forward jump's displacement is always the number of insns still present strictly between
// it and its original target, and a backward one stays negative. A `goto`/`may_goto` with
// everything else zero is therefore a nop exactly when every insn between it and its original
// target has gone: when the next insn still present is at or past that target (a target past the
// end never qualifies, as the insns beyond the end are never removed).
std::vector<uint32_t> nop_removals(const std::vector<Insn>& insns, const std::vector<bool>& keep) {
    const auto n = static_cast<uint32_t>(insns.size());
    const auto with_zero_off = [](Insn in) {
        in.off = 0;
        return in;
    };
    std::vector<uint32_t> removals;
    // The common case first: with no nop to begin with, nothing is ever removed. Before the first
    // nop nothing is either: the scan starts there, at i == k.
    const auto is_nop = [](const Insn& in) { return is_ja0(in) || is_may_goto0(in); };
    const auto first_nop = std::find_if(insns.begin(), insns.end(), is_nop);
    if (first_nop == insns.end()) return removals;
    // The insns still present, as a doubly linked list over original indices (n: past the end).
    std::vector<uint32_t> next(n), prev(n);
    for (uint32_t k = 0; k < n; ++k) {
        next[k] = k + 1;
        prev[k] = k - 1;  // wraps for k == 0, never read: only an insn at i > 0 has one before it
    }
    // i: the scan's index in the current program, k: the original index of the insn there.
    const auto first = static_cast<uint32_t>(first_nop - insns.begin());
    for (uint32_t i = first, k = first; k < n;) {
        const Insn& in = insns[k];
        const Insn shape = with_zero_off(in);
        const bool nop = is_nop(shape) && in.off >= 0 && next[k] >= k + 1 + static_cast<uint32_t>(in.off) &&
                         (keep.empty() || !keep[k]);
        if (!nop) {
            ++i;
            k = next[k];
            continue;
        }
        removals.push_back(i);
        const uint32_t after = next[k], before = prev[k];
        if (i > 0) next[before] = after;
        if (after < n) prev[after] = before;
        if (is_may_goto0(shape) && i > 0) {
            --i;
            k = before;
        } else {
            k = after;
        }
    }
    return removals;
}

class DeadCodePass final : public Pass {
public:
    std::string_view name() const override { return "dead_code"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        if (!opts.privileged) {
            sanitize(prog);
            return {};
        }
        hard_wire_dead_code_branches(prog);
        PatchOutcome out = apply_batch(patcher, prog, dead_code_removals(prog));
        if (!out.ok()) return out;
        return remove_nops(prog, patcher, opts.nop_removal);
    }

private:
    // sanitize_dead_code: every unseen insn becomes the trap `ja -1`, and loses zext_dst.
    static void sanitize(Program& prog) {
        for (uint32_t i = 0; i < prog.len(); ++i) {
            if (prog.aux[i].seen) continue;
            prog.insns[i] = ja(-1);
            prog.aux[i].zext_dst = false;
        }
    }

    // bpf_opt_remove_nops: the sequence of removals nop_removals() replays, cut into batches of
    // ascending positions: a batch ends where the kernel steps back, so every batch is in the
    // coordinates of its own input.
    // With the fix for finding 0003 (InlineFix::Fixed) a nop an instruction array names stays.
    static PatchOutcome remove_nops(Program& prog, patch::Patcher& patcher, InlineFix fix) {
        std::vector<bool> keep;
        if (fix == InlineFix::Fixed) {
            keep.resize(prog.len());
            for (const InsnArray& ia : prog.insn_arrays)
                for (const InsnArrayEntry& e : ia.entries)
                    if (e.xlated_off != kInsnDeleted && e.xlated_off < prog.len()) keep[e.xlated_off] = true;
        }
        const std::vector<uint32_t> events = nop_removals(prog.insns, keep);  // current position at each removal
        size_t k = 0;
        while (k < events.size()) {
            patch::PatchBatch b;
            uint32_t removed = 0;
            uint32_t last = 0;
            while (k < events.size() && (b.patches.empty() || events[k] >= last)) {
                last = events[k];
                add_patch(b, {.kind = patch::PatchKind::Remove, .pos = events[k] + removed, .count = 1});
                ++removed;
                ++k;
            }
            PatchOutcome out = apply_batch(patcher, prog, b);
            if (!out.ok()) return out;
        }
        return {};
    }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_pass() { return std::make_unique<DeadCodePass>(); }

}  // namespace patchfuzz::passes
