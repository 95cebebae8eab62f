#pragma once
// Relocation coverage of the patching contract: which relocation cases of docs/patching.md a batch
// exercises, computed from the program a batch is applied to and the batch's patch list alone.
// Nothing here reads a patcher's output, so the map is the same whichever patcher is under test
// (ours, or a plugin behind include/patchfuzz/patcher.h).
//
// A cell is one relocation case. Four families (docs/relocation-coverage.md has the table):
//  * transfer cells "ref/<kind>/<relation>/<patch kind>": a relative transfer (jump off, gotol imm,
//    may_goto, bpf-to-bpf call, ld_imm64 PSEUDO_FUNC) whose source or target sits in a given place
//    relative to a patch of the batch (target at the patched insn, right after the patch's end,
//    beyond it, inside a removal; forward or backward; or the transfer is itself patched);
//  * index cells "idx/<kind>/<relation>/<patch kind>": an index-valued side field (line info,
//    func_info, subprog start, the fake exit, insn-array entry, poke descriptor, a subprog's
//    linfo_idx) naming the patched insn, the insn right after the patch, one beyond it, or one
//    inside a removal;
//  * patch cells "patch/<class>": each patch by kind and size class (Replace 1 / 2-3 / >= 4,
//    InsertBefore at insn 0 / at a subprog start / on a jump, Remove partial / of a subprog's head
//    / ending at a subprog start / of whole subprogs), and the outgoing transfers of a patch buffer;
//  * boundary cells "edge/<what>": adjacent patches, the last insn, batch sizes, lengths around
//    32767, relocated displacements exactly at the S16 limits or beyond, an overflow in a batch
//    after an earlier one, an overflowing patch whose insn is no longer at its load-time index.
//
// Every cell has a row in cells(): its id, what it is, the contract rule it exercises, and whether
// a default campaign can reach it (with the reason when not).
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::patch {

struct CoverageCell {
    std::string_view id;           // stable, e.g. "ref/call/bwd-over/replace"
    std::string_view family;       // "ref", "idx", "patch", "edge"
    std::string description;       // what the cell means, in one line
    std::string_view rule;         // the contract rule it exercises (docs/patching.md section)
    bool reachable = true;         // by a default campaign (generated programs + explicit batches)
    std::string_view unreachable_reason;  // when not
};

// At least coverage_cell_count(): room for fixed-size per-cell arrays (libFuzzer's extra counters).
inline constexpr size_t kCoverageCellsMax = 512;

// Every cell, in a fixed order (the index is the cell's number everywhere: hit vectors, counters).
std::span<const CoverageCell> coverage_cells();
size_t coverage_cell_count();
// The cell number of an id; SIZE_MAX for an unknown id.
size_t coverage_cell_index(std::string_view id);

// What a batch's caller knows beyond the program and the batch (both optional): the index of the
// batch in its rewrite (0 = first; > 0 means an earlier batch of the same rewrite succeeded).
struct BatchContext {
    uint32_t batch_index = 0;
};

// The cells one batch hits, as a set of cell numbers (each at most once), ascending. A batch that
// validate_batch() rejects hits nothing.
void batch_cells(const Program& prog, const PatchBatch& batch, const BatchContext& ctx, std::vector<uint32_t>& out);

// A bitmap of cells over many batches (a case, a campaign worker's feedback).
class CoverageSet {
public:
    CoverageSet() : bits_(coverage_cell_count(), 0) {}
    void add(const Program& prog, const PatchBatch& batch, const BatchContext& ctx);
    void add_cell(uint32_t cell) { bits_[cell] = 1; }
    [[nodiscard]] bool has(size_t cell) const { return bits_[cell] != 0; }
    [[nodiscard]] const std::vector<uint8_t>& bits() const { return bits_; }
    void clear() { std::fill(bits_.begin(), bits_.end(), uint8_t{0}); }
    void merge(const CoverageSet& o) {
        for (size_t i = 0; i < bits_.size(); ++i) bits_[i] |= o.bits_[i];
    }
    [[nodiscard]] size_t count() const;

private:
    std::vector<uint8_t> bits_;
};

// A patcher that adds the cells of every batch it is given to a CoverageSet, then hands the batch
// to `inner`: a rewrite's coverage without a runner (patchfuzz gen --json, load --coverage).
class CoverageRecordingPatcher final : public Patcher {
public:
    CoverageRecordingPatcher(Patcher& inner, CoverageSet& set) : inner_(inner), set_(set) {}
    [[nodiscard]] std::string_view name() const override { return inner_.name(); }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        set_.add(prog, batch, BatchContext{.batch_index = batches_++});
        return inner_.apply(prog, batch);
    }

private:
    Patcher& inner_;
    CoverageSet& set_;
    uint32_t batches_ = 0;
};

}  // namespace patchfuzz::patch
