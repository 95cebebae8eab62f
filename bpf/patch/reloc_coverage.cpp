#include "bpf/patch/reloc_coverage.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <unordered_map>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {
namespace {

// ---- the axes of the table -------------------------------------------------------------------

enum class PK : uint8_t { Replace, Insert, Remove };
constexpr std::array<std::string_view, 3> kPatchKindNames = {"replace", "insert", "remove"};

enum class TK : uint8_t { Jump, Gotol, MayGoto, Call, Func };
struct TransferKind {
    std::string_view name, what;
};
constexpr std::array<TransferKind, 5> kTransferKinds = {{
    {"jump", "a jump with a 16-bit off (conditional, ja, JMP32)"},
    {"gotol", "a gotol (JMP32|JA, 32-bit imm)"},
    {"may_goto", "a may_goto"},
    {"call", "a bpf-to-bpf call (imm)"},
    {"func", "an ld_imm64 PSEUDO_FUNC (callback address, imm)"},
}};

enum class TR : uint8_t { FwdAt, FwdEnd, FwdOver, FwdInside, BwdAt, BwdEnd, BwdOver, BwdInside, SrcAt };
struct Relation {
    std::string_view name, what, rule;
    bool remove_only;
};
constexpr std::array<Relation, 9> kTransferRelations = {{
    {"fwd-at", "forward to the patched insn", "§2.1 a target at pos lands on the patch's first insn; §3.7 plain jumps skip a prologue", false},
    {"fwd-end", "forward to the insn right after the patch", "§2.1 t >= end_old moves by delta (t == end_old is the edge)", false},
    {"fwd-over", "forward across the whole patch", "§2.1 curr < pos and t >= end_old: disp += delta", false},
    {"fwd-inside", "forward into a removed range", "§4.1 a target inside [off, off+cnt) keeps its disp", true},
    {"bwd-at", "backward (from after the patch) to the patched insn", "§2.1 curr >= end_new and t < end_new: disp -= delta; §3.7 redirect", false},
    {"bwd-end", "backward to the insn right after the patch", "§2.1 t == end_new is not moved", false},
    {"bwd-over", "backward across the whole patch", "§2.1 curr >= end_new and t < end_new: disp -= delta", false},
    {"bwd-inside", "backward into a removed range", "§4.1 from after, T < off+cnt: disp += cnt", true},
    {"src-at", "the transfer is the patched insn itself", "§7.2 a copied transfer is kept verbatim; §3.7 a prologue's copied insn; §4 removed", false},
}};

enum class IK : uint8_t { Linfo, Finfo, Subprog, FakeExit, InsnArray, Poke, LinfoIdx };
struct IndexKind {
    std::string_view name, what, rule;
};
constexpr std::array<IndexKind, 7> kIndexKinds = {{
    {"linfo", "a line-info record's insn_off", "§2.2 insn_off > off shifts; §4.4 removal (inheritance of the last removed line)"},
    {"finfo", "a func_info record's insn_off", "§3.4 untouched by insertion (rewritten from the starts later); §4.3 deleted with a whole subprog"},
    {"subprog", "a subprog start", "§3.2 start <= off stays; §4.3 after remove"},
    {"fake-exit", "the fake exit subprog's start (the length)", "§3.2 the fake exit moves to the new length"},
    {"insn-array", "an insn-array entry's xlated_off", "§3.5 xlated_off <= off stays; §4.5 INSN_DELETED"},
    {"poke", "a poke descriptor's insn_idx", "§3.3 insn_idx <= off stays; not moved by removal (§4.2)"},
    {"linfo-idx", "a subprog's linfo_idx (index into line info)", "§4.4 step 5: linfo_idx > l_off strictly"},
}};

enum class IR : uint8_t { At, End, After, Inside };
constexpr std::array<Relation, 4> kIndexRelations = {{
    {"at", "names the patched insn (a removal's first insn)", "", false},
    {"end", "names the insn right after the patch", "", false},
    {"after", "names an insn beyond the patch (moved by its growth)", "", false},
    {"inside", "names an insn inside a removed range", "", true},
}};

struct Simple {
    std::string_view id, what, rule;
    std::string_view unreachable_reason = {};
};
// Patch classes and the outgoing transfers of patch buffers.
constexpr std::array<Simple, 15> kPatchCells = {{
    {"patch/replace-1", "Replace by 1 insn (the fast path: nothing moves)", "§2 step 1, §8 fast path"},
    {"patch/replace-2-3", "Replace by 2-3 insns", "§2, §3"},
    {"patch/replace-4plus", "Replace by >= 4 insns", "§2, §3"},
    {"patch/insert-at-0", "InsertBefore at insn 0 (ctx prologue shape)", "§3.7 adjust_jmp_off(prog, 0, delta)"},
    {"patch/insert-at-subprog", "InsertBefore at a subprog start > 0 (may_goto prologue)", "§5.3.1, §3.7"},
    {"patch/insert-on-jump", "InsertBefore on an insn that is itself a relative transfer", "§3.7 the copied insn is examined like any other"},
    {"patch/insert-other", "InsertBefore anywhere else", "§3.7",
     "the kernel inserts prologues only at insn 0 and at subprog starts (docs/patching.md §3.7), and the jump oracle's "
     "intent checks assume those places"},
    {"patch/remove-partial", "Remove inside a subprog (neither its head nor up to the next start)", "§4.1, §4.3"},
    {"patch/remove-head", "Remove starting at a subprog start, not the whole subprog", "§4.3 start[i] == off: the subprog keeps start == off"},
    {"patch/remove-to-subprog-start", "Remove ending exactly at the next subprog start", "§4.3 start[j] == off+cnt"},
    {"patch/remove-whole-subprog", "Remove of one or more whole subprogs", "§4.3 subprogs [i, j) and their func_info vanish"},
    {"patch/out-end", "a patch buffer's outgoing transfer to local n (original pos+1)", "§7.2 L == n names pos+1"},
    {"patch/out-fwd", "a patch buffer's outgoing transfer beyond pos+1", "§7.2 L > n"},
    {"patch/out-bwd", "a patch buffer's outgoing backward transfer", "§7.2 L < 0 names pos+L"},
    {"patch/out-cross", "a patch buffer's outgoing transfer that reaches or crosses another patch", "§7.2 later patches move a forward target by S; backward ones are final"},
}};
enum class PC : uint8_t {
    Replace1, Replace23, Replace4, InsertAt0, InsertAtSubprog, InsertOnJump, InsertOther, RemovePartial,
    RemoveHead, RemoveToStart, RemoveWhole, OutEnd, OutFwd, OutBwd, OutCross
};

constexpr std::array<Simple, 12> kEdgeCells = {{
    {"edge/adjacent", "a patch starting right where the previous one ends", "§6.3 S over consecutive patches"},
    {"edge/last-insn", "a patch of the last insn (or a removal up to the end)", "§3.2 fake exit; §2 probe quirk"},
    {"edge/batch-1", "a batch of 1 patch", "§5.1 loop with running delta"},
    {"edge/batch-2-7", "a batch of 2-7 patches", "§5.1"},
    {"edge/batch-8plus", "a batch of >= 8 patches", "§5.1"},
    {"edge/len-crosses-32767", "the program grows from <= 32767 to > 32767 insns", "§2 step 3 the probe runs only above S16_MAX"},
    {"edge/len-over-32767", "a program already longer than 32767 insns is patched", "§2 step 3"},
    {"edge/disp-s16-max", "a relocated 16-bit displacement lands exactly on +32767", "§2.1 range check (fits)"},
    {"edge/disp-s16-min", "a relocated 16-bit displacement lands exactly on -32768", "§2.1 range check (fits)"},
    {"edge/disp-overflow", "a relocated 16-bit displacement leaves the S16 range (-ERANGE)", "§3 step 2, §7.3"},
    {"edge/err-after-batch", "the overflow happens in a batch after an earlier successful one", "§7.3 earlier patches stay applied"},
    {"edge/err-orig-moved", "the failing patch's insn is no longer at its load-time index", "§3 step 2 the log names aux[off].orig_idx"},
}};
enum class EC : uint8_t {
    Adjacent, LastInsn, Batch1, Batch2to7, Batch8, LenCrosses, LenOver, DispMax, DispMin, DispOverflow, ErrAfterBatch,
    ErrOrigMoved
};

constexpr size_t kTransferBase = 0;
constexpr size_t kTransferCount = kTransferKinds.size() * kTransferRelations.size() * 3;
constexpr size_t kIndexBase = kTransferBase + kTransferCount;
constexpr size_t kIndexCount = kIndexKinds.size() * kIndexRelations.size() * 3;
constexpr size_t kPatchBase = kIndexBase + kIndexCount;
constexpr size_t kEdgeBase = kPatchBase + kPatchCells.size();
constexpr size_t kCellCount = kEdgeBase + kEdgeCells.size();
static_assert(kCellCount <= kCoverageCellsMax, "raise kCoverageCellsMax");

constexpr uint32_t cell_of(TK k, TR r, PK p) {
    return static_cast<uint32_t>(kTransferBase + (static_cast<size_t>(k) * kTransferRelations.size() + static_cast<size_t>(r)) * 3 +
                                 static_cast<size_t>(p));
}
constexpr uint32_t cell_of(IK k, IR r, PK p) {
    return static_cast<uint32_t>(kIndexBase + (static_cast<size_t>(k) * kIndexRelations.size() + static_cast<size_t>(r)) * 3 +
                                 static_cast<size_t>(p));
}
constexpr uint32_t cell_of(PC c) { return static_cast<uint32_t>(kPatchBase + static_cast<size_t>(c)); }
constexpr uint32_t cell_of(EC c) { return static_cast<uint32_t>(kEdgeBase + static_cast<size_t>(c)); }

// Why a combination cannot occur (empty: it can). Stated once per rule, not per cell.
std::string_view transfer_unreachable(TK k, TR r, PK p) {
    const bool inside = r == TR::FwdInside || r == TR::BwdInside;
    if (inside && p != PK::Remove) return "only a removal has an inside";
    if (inside && (k == TK::Call || k == TK::Func))
        return "calls and callback loads name subprog starts, and no subprog start lies strictly inside a removal "
               "unless its whole subprog goes (docs/patching.md §4.3 precondition)";
    // InsertBefore goes only where the kernel's two callers put it (insn 0 and subprog starts,
    // docs/patching.md §3.7; the oracles' intent checks assume it), and no jump leaves its subprog.
    if (p == PK::Insert && (k == TK::Jump || k == TK::Gotol || k == TK::MayGoto) &&
        (r == TR::FwdEnd || r == TR::FwdOver || r == TR::BwdOver))
        return "a prologue sits at a subprog start and jumps stay inside their subprog: none can cross it or "
               "target the insn right after its insn from before it";
    // Both need a shape the verifier rejects: a forward jump to a subprog start leaves the previous
    // subprog, and the insn right after a prologue's insn starts a subprog only when that subprog
    // is a lone `exit` (R0 never set). An explicit removal that leaves a jump naming a removed insn
    // can make either for the next batch; the generators avoid both.
    if (p == PK::Insert && (k == TK::Jump || k == TK::Gotol || k == TK::MayGoto) && r == TR::FwdAt)
        return "a forward jump to a prologue's insn (a subprog start) would leave the previous subprog";
    if (p == PK::Insert && (k == TK::Call || k == TK::Func) && (r == TR::FwdEnd || r == TR::BwdEnd))
        return "a call to the insn right after a prologue's insn needs a one-insn subprog (a lone exit, which the "
               "verifier rejects: R0 is never set)";
    if ((k == TK::Gotol || k == TK::MayGoto) && r == TR::BwdInside)
        return "the generated backward gotol and may_goto target their function's first insn, where a removal can "
               "only start (no removal spans a subprog start), never strictly inside one";
    return {};
}

std::string_view index_unreachable(IK k, IR r, PK p) {
    if (r == IR::Inside && p != PK::Remove) return "only a removal has an inside";
    if (k == IK::LinfoIdx && p != PK::Remove)
        return "linfo_idx names line-info records, and insertion neither adds nor removes one (§3.2): only a "
               "removal relates a record to a patch";
    if (k == IK::FakeExit && (r == IR::At || r == IR::Inside))
        return "the fake exit's start is the length: it names no insn a patch could start at or remove";
    if (p == PK::Insert && (k == IK::Subprog || k == IK::FakeExit) && r == IR::End)
        return "the insn right after a prologue's insn starts a subprog or ends the program only when the "
               "prologue's subprog is a lone exit (which the verifier rejects: R0 is never set)";
    if (p == PK::Insert && k == IK::InsnArray && (r == IR::At || r == IR::End))
        return "generated insn arrays hold gotox case blocks, never a subprog start or the insn after one";
    return {};
}

std::vector<CoverageCell> build_table() {
    std::vector<CoverageCell> t;
    t.reserve(kCellCount);
    static std::vector<std::string> ids;  // the ids' storage (CoverageCell holds views)
    ids.reserve(kCellCount);
    for (size_t k = 0; k < kTransferKinds.size(); ++k)
        for (size_t r = 0; r < kTransferRelations.size(); ++r)
            for (size_t p = 0; p < 3; ++p) {
                ids.push_back("ref/" + std::string(kTransferKinds[k].name) + "/" + std::string(kTransferRelations[r].name) + "/" +
                              std::string(kPatchKindNames[p]));
                CoverageCell c;
                c.id = ids.back();
                c.family = "ref";
                c.description = std::string(kTransferKinds[k].what) + ", " + std::string(kTransferRelations[r].what) + " of a " +
                                std::string(kPatchKindNames[p]) + " patch";
                c.rule = kTransferRelations[r].rule;
                c.unreachable_reason = transfer_unreachable(static_cast<TK>(k), static_cast<TR>(r), static_cast<PK>(p));
                c.reachable = c.unreachable_reason.empty();
                t.push_back(std::move(c));
            }
    for (size_t k = 0; k < kIndexKinds.size(); ++k)
        for (size_t r = 0; r < kIndexRelations.size(); ++r)
            for (size_t p = 0; p < 3; ++p) {
                ids.push_back("idx/" + std::string(kIndexKinds[k].name) + "/" + std::string(kIndexRelations[r].name) + "/" +
                              std::string(kPatchKindNames[p]));
                CoverageCell c;
                c.id = ids.back();
                c.family = "idx";
                c.description = std::string(kIndexKinds[k].what) + " that " + std::string(kIndexRelations[r].what) + " of a " +
                                std::string(kPatchKindNames[p]) + " patch";
                c.rule = kIndexKinds[k].rule;
                c.unreachable_reason = index_unreachable(static_cast<IK>(k), static_cast<IR>(r), static_cast<PK>(p));
                c.reachable = c.unreachable_reason.empty();
                t.push_back(std::move(c));
            }
    for (const auto& s : kPatchCells)
        t.push_back(CoverageCell{s.id, "patch", std::string(s.what), s.rule, s.unreachable_reason.empty(), s.unreachable_reason});
    for (const auto& s : kEdgeCells) t.push_back(CoverageCell{s.id, "edge", std::string(s.what), s.rule, true, {}});
    return t;
}

const std::vector<CoverageCell>& table() {
    static const std::vector<CoverageCell> t = build_table();
    return t;
}

// ---- the computation ----------------------------------------------------------------------------

constexpr PK kind_of(PatchKind k) {
    return k == PatchKind::Replace ? PK::Replace : k == PatchKind::InsertBefore ? PK::Insert : PK::Remove;
}

// The batch's patches as sorted positions and ends (end = first original insn after the patch).
struct Spans {
    std::vector<uint32_t> pos, end;
    std::vector<PK> kind;
    std::vector<int64_t> cum;  // growth of the patches before patch q (cum[m] = total)

    // Last patch with pos <= k, or -1.
    [[nodiscard]] int64_t le(int64_t k) const {
        return static_cast<int64_t>(std::upper_bound(pos.begin(), pos.end(), k, [](int64_t v, uint32_t p) { return v < p; }) -
                                    pos.begin()) - 1;
    }
    // Last patch with pos < k, or -1.
    [[nodiscard]] int64_t lt(int64_t k) const { return le(k - 1); }
    // S[k] of docs/patching.md §6.3 (a removed insn maps to where its removal's survivors start).
    [[nodiscard]] int64_t smap(int64_t k) const {
        const int64_t q = lt(k);
        if (q < 0) return k;
        const auto uq = static_cast<size_t>(q);
        if (kind[uq] == PK::Remove && k < end[uq]) return pos[uq] + cum[uq];
        return k + cum[uq + 1];
    }
};

std::unordered_map<std::string_view, size_t> index_by_id() {
    std::unordered_map<std::string_view, size_t> m;
    const auto& t = table();
    for (size_t i = 0; i < t.size(); ++i) m.emplace(t[i].id, i);
    return m;
}

bool is_transfer(const isa::Insn& in) {
    return isa::relative_field(in) != isa::RelField::None && !isa::is_gotox(in) && !isa::is_tail_call(in);
}

TK transfer_kind(const isa::Insn& in) {
    if (isa::is_pseudo_func(in)) return TK::Func;
    if (isa::is_pseudo_call(in)) return TK::Call;
    if (isa::is_gotol(in)) return TK::Gotol;
    if (isa::is_may_goto(in)) return TK::MayGoto;
    return TK::Jump;
}

// A thread's working storage, kept from one batch to the next: a campaign maps every batch of
// tens of thousands of cases a second, and fresh vectors per batch cost a fifth of its time.
struct Scratch {
    Spans sp;
    std::vector<uint32_t> starts;
};

class Mapper {
public:
    // Sets bits[c] for every cell c the batch hits (bits has coverage_cell_count() entries).
    Mapper(const Program& prog, const PatchBatch& batch, const BatchContext& ctx, std::vector<uint8_t>& bits, Scratch& scratch)
        : prog_(prog), batch_(batch), ctx_(ctx), hit_(bits), sp_(scratch.sp), starts_(scratch.starts) {}

    void run() {
        const auto& ps = batch_.patches;
        const size_t m = ps.size();
        if (m == 0) return;
        sp_.pos.resize(m);
        sp_.end.resize(m);
        sp_.kind.resize(m);
        sp_.cum.assign(m + 1, 0);
        for (size_t q = 0; q < m; ++q) {
            sp_.pos[q] = ps[q].pos;
            sp_.kind[q] = kind_of(ps[q].kind);
            sp_.end[q] = ps[q].pos + (ps[q].kind == PatchKind::Remove ? ps[q].count : 1);
            sp_.cum[q + 1] = sp_.cum[q] + growth(ps[q]);
        }
        const uint32_t cnt = prog_.subprog_cnt();
        starts_.clear();
        for (uint32_t i = 0; i < cnt; ++i) starts_.push_back(prog_.subprogs[i].start);
        if (!std::is_sorted(starts_.begin(), starts_.end())) std::sort(starts_.begin(), starts_.end());
        patches();
        edges();
        transfers();
        indexes();
    }

private:
    void hit(uint32_t c) { hit_[c] = 1; }
    [[nodiscard]] bool is_start(int64_t v) const { return std::binary_search(starts_.begin(), starts_.end(), v); }
    [[nodiscard]] int64_t len() const { return prog_.len(); }

    void patches() {
        const auto& ps = batch_.patches;
        for (size_t q = 0; q < ps.size(); ++q) {
            const Patch& p = ps[q];
            switch (p.kind) {
                case PatchKind::Replace:
                    hit(cell_of(p.insns.size() <= 1 ? PC::Replace1 : p.insns.size() <= 3 ? PC::Replace23 : PC::Replace4));
                    break;
                case PatchKind::InsertBefore:
                    if (p.pos == 0) hit(cell_of(PC::InsertAt0));
                    else if (is_start(p.pos)) hit(cell_of(PC::InsertAtSubprog));
                    else hit(cell_of(PC::InsertOther));
                    if (p.pos < len() && is_transfer(prog_.insns[p.pos])) hit(cell_of(PC::InsertOnJump));
                    break;
                case PatchKind::Remove: {
                    const int64_t e = sp_.end[q];
                    const bool head = is_start(p.pos), to_start = is_start(e);
                    if (head && (to_start || e == len())) hit(cell_of(PC::RemoveWhole));
                    else if (head) hit(cell_of(PC::RemoveHead));
                    else if (to_start) hit(cell_of(PC::RemoveToStart));
                    else hit(cell_of(PC::RemovePartial));
                    break;
                }
            }
            if (p.kind != PatchKind::Remove) outgoing(q);
        }
    }

    // Outgoing transfers of patch q's buffer, in the local encoding of patch.hpp.
    void outgoing(size_t q) {
        const Patch& p = batch_.patches[q];
        const int64_t n = local_len(p);
        for (size_t j = 0; j < p.insns.size(); ++j) {
            const isa::Insn& in = p.insns[j];
            if (isa::is_ldimm64(in)) {
                if (isa::is_pseudo_func(in)) outgoing_one(q, n, static_cast<int64_t>(j) + in.imm + 1);
                ++j;
                continue;
            }
            if (!is_transfer(in)) continue;
            outgoing_one(q, n, static_cast<int64_t>(j) + isa::displacement(in) + 1);
        }
    }
    void outgoing_one(size_t q, int64_t n, int64_t l) {
        const int64_t p = sp_.pos[q];
        if (l >= 0 && l < n) return;  // internal
        const auto m = sp_.pos.size();
        if (l >= n) {
            const int64_t t = p + 1 + (l - n);
            hit(cell_of(l == n ? PC::OutEnd : PC::OutFwd));
            if (q + 1 < m && sp_.pos[q + 1] <= t) hit(cell_of(PC::OutCross));
        } else {
            const int64_t t = p + l;
            hit(cell_of(PC::OutBwd));
            if (q > 0 && sp_.end[q - 1] > t) hit(cell_of(PC::OutCross));
        }
    }

    void edges() {
        const size_t m = sp_.pos.size();
        hit(cell_of(m == 1 ? EC::Batch1 : m < 8 ? EC::Batch2to7 : EC::Batch8));
        for (size_t q = 1; q < m; ++q)
            if (sp_.pos[q] == sp_.end[q - 1]) {
                hit(cell_of(EC::Adjacent));
                break;
            }
        if (sp_.end[m - 1] >= len()) hit(cell_of(EC::LastInsn));
        constexpr int64_t kS16Max = std::numeric_limits<int16_t>::max();
        const int64_t new_len = len() + sp_.cum[m];
        if (len() > kS16Max) hit(cell_of(EC::LenOver));
        else if (new_len > kS16Max) hit(cell_of(EC::LenCrosses));
    }

    // Where the insn at `k` is after the batch when it is not patched itself (a prologue's insn
    // moves past the prologue).
    [[nodiscard]] int64_t new_pos(int64_t k) const { return sp_.smap(k); }

    void transfers() {
        const int64_t n = len();
        for (int64_t i = 0; i < n; ++i) {
            const isa::Insn& in = prog_.insns[static_cast<size_t>(i)];
            if (!may_adjust(in)) continue;  // most insns: neither a transfer nor an ld_imm64
            const bool wide = isa::is_ldimm64(in);
            if (is_transfer(in)) one_transfer(i, in);
            if (wide) ++i;
        }
        if (fail_patch_ >= 0) {
            hit(cell_of(EC::DispOverflow));
            if (ctx_.batch_index > 0) hit(cell_of(EC::ErrAfterBatch));
            const auto pos = sp_.pos[static_cast<size_t>(fail_patch_)];
            if (pos < prog_.aux.size() && prog_.aux[pos].orig_idx != pos) hit(cell_of(EC::ErrOrigMoved));
        }
    }

    void one_transfer(int64_t i, const isa::Insn& in) {
        const TK k = transfer_kind(in);
        const int64_t t = i + 1 + isa::displacement(in);
        if (t < 0 || t > len()) return;
        // Its own patch, if the transfer is patched or removed.
        const int64_t own = sp_.le(i);
        if (own >= 0) {
            const auto uo = static_cast<size_t>(own);
            if (sp_.pos[uo] == i || (sp_.kind[uo] == PK::Remove && i < sp_.end[uo])) {
                hit(cell_of(k, TR::SrcAt, sp_.kind[uo]));
                if (sp_.kind[uo] != PK::Insert) return;  // replaced or removed: no relocation of its own
            }
        }
        const int64_t at = sp_.le(t);
        const int64_t before_t = sp_.lt(t);
        if (t > i) {
            if (at >= 0 && sp_.pos[static_cast<size_t>(at)] == t) hit(cell_of(k, TR::FwdAt, sp_.kind[static_cast<size_t>(at)]));
            if (before_t >= 0 && sp_.pos[static_cast<size_t>(before_t)] > i) {
                const auto ub = static_cast<size_t>(before_t);
                if (sp_.end[ub] == t) hit(cell_of(k, TR::FwdEnd, sp_.kind[ub]));
                if (sp_.kind[ub] == PK::Remove && t < sp_.end[ub]) hit(cell_of(k, TR::FwdInside, PK::Remove));
            }
            const int64_t first = sp_.le(i) + 1;  // first patch after the source
            if (first < static_cast<int64_t>(sp_.pos.size()) && sp_.end[static_cast<size_t>(first)] < t)
                hit(cell_of(k, TR::FwdOver, sp_.kind[static_cast<size_t>(first)]));
        } else {
            if (at >= 0 && sp_.pos[static_cast<size_t>(at)] == t && sp_.end[static_cast<size_t>(at)] <= i)
                hit(cell_of(k, TR::BwdAt, sp_.kind[static_cast<size_t>(at)]));
            if (before_t >= 0) {
                const auto ub = static_cast<size_t>(before_t);
                if (sp_.end[ub] == t) hit(cell_of(k, TR::BwdEnd, sp_.kind[ub]));
                if (sp_.kind[ub] == PK::Remove && t < sp_.end[ub] && sp_.end[ub] <= i) hit(cell_of(k, TR::BwdInside, PK::Remove));
            }
            int64_t last = sp_.lt(i);  // last patch before the source that ends at or before it
            if (last >= 0 && sp_.end[static_cast<size_t>(last)] > i) --last;
            if (last >= 0 && sp_.pos[static_cast<size_t>(last)] > t) hit(cell_of(k, TR::BwdOver, sp_.kind[static_cast<size_t>(last)]));
        }
        if (isa::relative_field(in) == isa::RelField::Off16) relocate(i, t, in);
    }

    // The displacement the batch gives an unpatched 16-bit transfer (docs/patching.md §6.3), against the S16
    // limits; on overflow, the patch after which it first leaves the range (patches in ascending
    // order, as the kernel applies them).
    void relocate(int64_t i, int64_t t, const isa::Insn& in) {
        const int64_t own = sp_.le(i);
        if (own >= 0 && sp_.pos[static_cast<size_t>(own)] == i) return;  // a prologue's copied insn: kept verbatim
        int64_t target = new_pos(t);
        const int64_t at = sp_.le(t);
        // adjust_jmp_off: a plain jump to a prologue's insn skips the prologue.
        if (at >= 0 && sp_.pos[static_cast<size_t>(at)] == t && sp_.kind[static_cast<size_t>(at)] == PK::Insert &&
            jmp_off_field(in) != Field::None)
            target += static_cast<int64_t>(batch_.patches[static_cast<size_t>(at)].insns.size());
        const int64_t d = target - new_pos(i) - 1;
        if (d == isa::displacement(in)) return;
        constexpr int64_t kMax = std::numeric_limits<int16_t>::max(), kMin = std::numeric_limits<int16_t>::min();
        if (d == kMax) hit(cell_of(EC::DispMax));
        if (d == kMin) hit(cell_of(EC::DispMin));
        if (d >= kMin && d <= kMax) return;
        // Overflow: walk the patches between source and target in application order.
        const int64_t lo = std::min(i, t), hi = std::max(i, t);
        int64_t q = sp_.lt(lo) + 1, disp = isa::displacement(in);
        for (; q < static_cast<int64_t>(sp_.pos.size()) && sp_.pos[static_cast<size_t>(q)] < hi; ++q) {
            const auto uq = static_cast<size_t>(q);
            if (t > i && sp_.pos[uq] == t) break;  // a forward target's own patch does not stretch it
            disp += t > i ? growth(batch_.patches[uq]) : -growth(batch_.patches[uq]);
            if (disp < kMin || disp > kMax) break;
        }
        if (q >= static_cast<int64_t>(sp_.pos.size()) || sp_.pos[static_cast<size_t>(q)] >= hi) q = sp_.lt(hi);
        if (q >= 0 && (fail_patch_ < 0 || q < fail_patch_)) fail_patch_ = q;
    }

    void one_index(IK k, int64_t v) { one_index(k, v, sp_.le(v), sp_.lt(v)); }
    // `at` = the last patch with pos <= v, `before` = the last with pos < v (-1: none).
    void one_index(IK k, int64_t v, int64_t at, int64_t before) {
        if (v < 0) return;
        if (at >= 0) {
            const auto ua = static_cast<size_t>(at);
            if (sp_.pos[ua] == v) hit(cell_of(k, IR::At, sp_.kind[ua]));
            else if (sp_.kind[ua] == PK::Remove && v < sp_.end[ua]) hit(cell_of(k, IR::Inside, PK::Remove));
        }
        if (before >= 0 && sp_.end[static_cast<size_t>(before)] == v) hit(cell_of(k, IR::End, sp_.kind[static_cast<size_t>(before)]));
        if (before >= 0 && sp_.end[static_cast<size_t>(before)] >= v) --before;
        if (before >= 0) hit(cell_of(k, IR::After, sp_.kind[static_cast<size_t>(before)]));
    }

    void indexes() {
        // Line info is sorted and dense (a record for about every other insn): one merge with the
        // patches instead of two binary searches per record.
        const auto m = static_cast<int64_t>(sp_.pos.size());
        int64_t q = 0;  // the first patch with pos >= the record's insn_off
        uint32_t last = 0;
        for (const auto& l : prog_.linfo) {
            const int64_t v = l.insn_off;
            if (v < last) {  // not sorted (a malformed table): no merge
                one_index(IK::Linfo, v);
                continue;
            }
            last = l.insn_off;
            while (q < m && sp_.pos[static_cast<size_t>(q)] < v) ++q;
            one_index(IK::Linfo, v, q < m && sp_.pos[static_cast<size_t>(q)] == v ? q : q - 1, q - 1);
        }
        for (const auto& f : prog_.finfo) one_index(IK::Finfo, f.insn_off);
        const uint32_t cnt = prog_.subprog_cnt();
        for (uint32_t i = 0; i < cnt; ++i) one_index(IK::Subprog, prog_.subprogs[i].start);
        if (!prog_.subprogs.empty()) one_index(IK::FakeExit, prog_.subprogs[cnt].start);
        for (const auto& a : prog_.insn_arrays)
            for (const auto& e : a.entries)
                if (e.xlated_off != isa::kInsnDeleted) one_index(IK::InsnArray, e.xlated_off);
        for (const auto& p : prog_.pokes) one_index(IK::Poke, p.insn_idx);
        // linfo_idx against each removal's range of line-info records (§4.4 step 5).
        if (prog_.linfo.empty()) return;
        for (size_t q = 0; q < sp_.pos.size(); ++q) {
            if (sp_.kind[q] != PK::Remove) continue;
            const auto first = std::lower_bound(prog_.linfo.begin(), prog_.linfo.end(), sp_.pos[q],
                                                [](const LineInfo& l, uint32_t v) { return l.insn_off < v; });
            const auto past = std::lower_bound(first, prog_.linfo.end(), sp_.end[q],
                                               [](const LineInfo& l, uint32_t v) { return l.insn_off < v; });
            const auto l_off = static_cast<uint32_t>(first - prog_.linfo.begin());
            const auto l_cnt = static_cast<uint32_t>(past - first);
            if (l_cnt == 0) continue;
            for (const auto& s : prog_.subprogs) {
                const uint32_t v = s.linfo_idx;
                if (v == l_off) hit(cell_of(IK::LinfoIdx, IR::At, PK::Remove));
                else if (v > l_off && v < l_off + l_cnt) hit(cell_of(IK::LinfoIdx, IR::Inside, PK::Remove));
                else if (v == l_off + l_cnt) hit(cell_of(IK::LinfoIdx, IR::End, PK::Remove));
                else if (v > l_off + l_cnt) hit(cell_of(IK::LinfoIdx, IR::After, PK::Remove));
            }
        }
    }

    const Program& prog_;
    const PatchBatch& batch_;
    const BatchContext& ctx_;
    std::vector<uint8_t>& hit_;
    Spans& sp_;
    std::vector<uint32_t>& starts_;
    int64_t fail_patch_ = -1;
};

}  // namespace

std::span<const CoverageCell> coverage_cells() { return table(); }
size_t coverage_cell_count() { return kCellCount; }

size_t coverage_cell_index(std::string_view id) {
    static const auto m = index_by_id();
    const auto it = m.find(id);
    return it == m.end() ? SIZE_MAX : it->second;
}

namespace {

void map_batch(const Program& prog, const PatchBatch& batch, const BatchContext& ctx, std::vector<uint8_t>& bits) {
    if (prog.aux.size() != prog.insns.size() || !validate_batch(prog, batch).empty()) return;
    thread_local Scratch scratch;
    Mapper(prog, batch, ctx, bits, scratch).run();
}

}  // namespace

void batch_cells(const Program& prog, const PatchBatch& batch, const BatchContext& ctx, std::vector<uint32_t>& out) {
    out.clear();
    std::vector<uint8_t> bits(kCellCount, 0);
    map_batch(prog, batch, ctx, bits);
    for (uint32_t c = 0; c < kCellCount; ++c)
        if (bits[c]) out.push_back(c);
}

void CoverageSet::add(const Program& prog, const PatchBatch& batch, const BatchContext& ctx) { map_batch(prog, batch, ctx, bits_); }

size_t CoverageSet::count() const {
    size_t n = 0;
    for (uint8_t b : bits_) n += b != 0;
    return n;
}

}  // namespace patchfuzz::patch
