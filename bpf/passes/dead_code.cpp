// Pass "dead_code": the privileged trio bpf_opt_hard_wire_dead_code_branches(),
// bpf_opt_remove_dead_code(), bpf_opt_remove_nops() (kernel/bpf/fixups.c), or for unprivileged
// loads sanitize_dead_code() (kernel/bpf/verifier.c). spec/patching.md §4.6.
#include <vector>

#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

bool is_ja0(const Insn& i) { return same(i, ja(0)); }
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
    for (uint32_t i = 0; i < n;) {
        uint32_t j = 0;
        while (i + j < n && !prog.aux[i + j].seen) ++j;
        if (j == 0) {
            ++i;
            continue;
        }
        b.patches.push_back({.kind = patch::PatchKind::Remove, .pos = i, .count = j});
        i += j;
    }
    return b;
}

// Branch fix-up of bpf_remove_insns() on a bare insn vector (used only to predict which nops the
// kernel's scan finds; the real removal goes through the patcher).
void simulate_remove(std::vector<Insn>& insns, uint32_t off, uint32_t cnt) {
    insns.erase(insns.begin() + off, insns.begin() + off + cnt);
    const int64_t pos = off, end_old = off + cnt, end_new = off, delta = -static_cast<int64_t>(cnt);
    for (int64_t curr = 0; curr < static_cast<int64_t>(insns.size()); ++curr) {
        Insn& in = insns[static_cast<size_t>(curr)];
        const RelField f = relative_field(in);
        if (f == RelField::None) continue;
        const int64_t disp = displacement(in);
        const int64_t t = curr + disp + 1;
        int64_t nd = disp;
        if (curr < pos && t >= end_old)
            nd = disp + delta;
        else if (curr >= end_new && t < end_new)
            nd = disp - delta;
        if (f == RelField::Off16)
            in.off = static_cast<int16_t>(nd);
        else
            in.imm = static_cast<int32_t>(nd);
    }
}

class DeadCodePass final : public Pass {
public:
    std::string_view name() const override { return "dead_code"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) override {
        if (!opts.privileged) {
            sanitize(prog);
            return {};
        }
        hard_wire_dead_code_branches(prog);
        PatchOutcome out = apply_batch(patcher, prog, dead_code_removals(prog));
        if (!out.ok()) return out;
        return remove_nops(prog, patcher);
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

    // bpf_opt_remove_nops: the kernel removes one nop at a time, resuming at the same index (or one
    // back after a may_goto +0, to catch `may_goto +1; may_goto +0`). We replay that scan on a copy
    // to learn the sequence of removals, then cut it into batches of ascending positions: a batch
    // ends where the kernel steps back, so every batch is in the coordinates of its own input.
    static PatchOutcome remove_nops(Program& prog, patch::Patcher& patcher) {
        std::vector<Insn> sim = prog.insns;
        std::vector<uint32_t> events;  // current position at the time of each removal
        for (int64_t i = 0; i < static_cast<int64_t>(sim.size()); ++i) {
            const Insn& in = sim[static_cast<size_t>(i)];
            const bool mg = is_may_goto0(in);
            if (!mg && !is_ja0(in)) continue;
            events.push_back(static_cast<uint32_t>(i));
            simulate_remove(sim, static_cast<uint32_t>(i), 1);
            i -= (mg && i > 0) ? 2 : 1;
        }
        size_t k = 0;
        while (k < events.size()) {
            patch::PatchBatch b;
            uint32_t removed = 0;
            uint32_t last = 0;
            while (k < events.size() && (b.patches.empty() || events[k] >= last)) {
                last = events[k];
                b.patches.push_back({.kind = patch::PatchKind::Remove, .pos = events[k] + removed, .count = 1});
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
