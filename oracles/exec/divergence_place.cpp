#include "oracles/exec/divergence_place.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/index_map.hpp"
#include "bpf/patch/patch.hpp"
#include "oracles/exec/exec_diff.hpp"

namespace patchfuzz::oracles::exec {
namespace {

// The slots [start, end) one patch emitted, in the coordinates of the program as it now is.
struct Emitted {
    uint32_t start = 0, end = 0;
};

// Passes every batch on to `inner`. With `record`, keeps the slots each patch of the batch
// emitted (a Replace's replacement, an InsertBefore's prologue); every batch, recorded or not,
// moves the slots kept so far as it moves the insns around them (docs/patching.md §7.1: a batch
// applies its patches in ascending pos with a running delta).
class EmittedSlots final : public patch::Patcher {
public:
    EmittedSlots(patch::Patcher& inner, bool record) : inner_(inner), record_(record) {}
    std::string_view name() const override { return inner_.name(); }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& b) override {
        const uint32_t old_len = prog.len();
        patch::PatchOutcome o = inner_.apply(prog, b);
        if (!o.ok()) return o;
        if (!emitted.empty()) {
            // The batch's index map S (index_map.hpp). A sequence's start stays behind a prologue
            // inserted before it (S would put it on the prologue's first insn); its end, exclusive,
            // is where S puts the insn after it.
            const std::vector<uint32_t> s = patch::index_map(old_len, b);
            for (Emitted& e : emitted) {
                e.start = s[e.start] + prologue_at(b, e.start);
                e.end = s[e.end];
            }
        }
        if (!record_) return o;
        int64_t delta = 0;
        for (const patch::Patch& p : b.patches) {
            const auto at = static_cast<uint32_t>(p.pos + delta);
            const auto n = static_cast<uint32_t>(p.insns.size());
            switch (p.kind) {
                case patch::PatchKind::Replace:
                    emitted.push_back({at, at + n});
                    delta += int64_t{n} - 1;
                    break;
                case patch::PatchKind::InsertBefore:
                    emitted.push_back({at, at + n});
                    delta += n;
                    break;
                case patch::PatchKind::Remove: delta -= p.count; break;
            }
        }
        return o;
    }
    std::vector<Emitted> emitted;

private:
    // The size of the prologue the batch inserts before insn x (0: none).
    static uint32_t prologue_at(const patch::PatchBatch& b, uint32_t x) {
        for (const patch::Patch& p : b.patches)
            if (p.pos == x && p.kind == patch::PatchKind::InsertBefore) return static_cast<uint32_t>(p.insns.size());
        return 0;
    }

    patch::Patcher& inner_;
    bool record_;
};

// An insn whose width can be changed and still be a valid insn of the other width: ALU <-> ALU64
// (not byte swaps, whose two classes are different operations, nor sign-extending moves or the
// zext pass's markers) and a conditional JMP <-> JMP32 (not may_goto, not the tail call).
bool width_flippable(const isa::Insn& i) {
    const uint8_t c = isa::cls(i), o = isa::op(i);
    if (c == BPF_ALU || c == BPF_ALU64) return o != BPF_END && !(o == BPF_MOV && i.off != 0) && !isa::is_zext_marker(i);
    return isa::is_cond_jump(i) && o != BPF_JCOND && !isa::is_tail_call(i);
}

// ALU (0x04) <-> ALU64 (0x07), JMP (0x05) <-> JMP32 (0x06): the class bits differ by 3 in both.
// A 32-bit def made 64-bit loses the zero-extension the zext pass put right after it for a JIT
// that needs one (the marker exists only because the def was 32-bit): the marker becomes the
// 64-bit `rX = rX`, a no-op of the same length.
void flip_width(Program& prog, uint32_t at) {
    isa::Insn& i = prog.insns[at];
    i.code ^= 0x03;
    if (isa::cls(i) != BPF_ALU64 || at + 1 >= prog.len()) return;
    isa::Insn& next = prog.insns[at + 1];
    if (isa::is_zext_marker(next) && next.dst_reg == i.dst_reg) next = isa::alu64_reg(BPF_MOV, next.dst_reg, next.dst_reg);
}

}  // namespace

std::string divergence_place(const Program& prog, const ArchProfile& arch, const std::string& patcher,
                             const passes::RewriteOptions& one_pass, const interp::ExecInput& in,
                             const interp::ExecResult& ref, uint32_t depth, bool r0_full) {
    auto p = patch::make_patcher(patcher);
    if (!p) return {};
    Program q = prog;
    EmittedSlots slots(*p, true);
    if (!passes::run_pipeline(q, slots, one_pass).outcome.ok()) return {};
    if (arch.needs_zext) {
        passes::RewriteOptions zext = one_pass;
        zext.only = {"zext"};
        EmittedSlots moves(*p, false);
        moves.emitted = std::move(slots.emitted);
        if (!passes::run_pipeline(q, moves, zext).outcome.ok()) return {};
        slots.emitted = std::move(moves.emitted);
    }
    // Each emitted sequence as the program indices of its template slots: the zext pass's markers
    // are left out, so that slot K is the same template insn on every arch.
    std::vector<std::vector<uint32_t>> sites;
    for (const Emitted& e : slots.emitted) {
        std::vector<uint32_t>& at = sites.emplace_back();
        for (uint32_t pc = e.start; pc < e.end && pc < q.len(); ++pc)
            if (!isa::is_zext_marker(q.insns[pc])) at.push_back(pc);
    }
    // Template slots some emitted sequence can flip at, in slot order (at most 32: the pairs
    // tried grow with the square).
    size_t longest = 0;
    for (const auto& at : sites) longest = std::max(longest, at.size());
    std::vector<uint32_t> candidates;
    for (uint32_t k = 0; k < longest && candidates.size() < 32; ++k)
        for (const auto& at : sites)
            if (k < at.size() && width_flippable(q.insns[at[k]])) {
                candidates.push_back(k);
                break;
            }
    // A run made longer by a repair that unbounds a loop ends at a budget well above the
    // reference's (and is then no repair: its status differs).
    interp::ExecOptions opts;
    opts.step_budget = std::min<uint64_t>(in.step_budget, ref.steps * 8 + 10000);
    opts.collect_maps = true;
    auto repaired_by = [&](std::initializer_list<uint32_t> flips) {
        Program r = q;
        for (const auto& at : sites)
            for (uint32_t k : flips)
                if (k < at.size() && width_flippable(r.insns[at[k]])) flip_width(r, at[k]);
        const interp::ExecResult run = interp::execute(r, in, arch, opts);
        return run.status != interp::ExecResult::Status::Unsupported && !compare_runs(ref, run, depth, r0_full, &prog.maps);
    };
    for (uint32_t k : candidates)
        if (repaired_by({k})) return "@" + std::to_string(k);
    for (size_t a = 0; a < candidates.size(); ++a)
        for (size_t b = a + 1; b < candidates.size(); ++b)
            if (repaired_by({candidates[a], candidates[b]})) return "@" + std::to_string(candidates[a]);
    // Two sites of the pass, each with another of its bugs on this input (0007's two slots at one
    // bpf_loop, 0001's at the next): three slots. Only for short templates: the triples grow with
    // the cube.
    if (candidates.size() <= 16)
        for (size_t a = 0; a < candidates.size(); ++a)
            for (size_t b = a + 1; b < candidates.size(); ++b)
                for (size_t c = b + 1; c < candidates.size(); ++c)
                    if (repaired_by({candidates[a], candidates[b], candidates[c]})) return "@" + std::to_string(candidates[a]);
    return {};
}

}  // namespace patchfuzz::oracles::exec
