#include "gen/patch_batch_gen.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch_rules.hpp"
#include "gen/rng_source.hpp"

namespace patchfuzz::gen {
namespace {

using namespace isa;
using patch::Patch;
using patch::PatchBatch;
using patch::PatchKind;

// Shape of the program the batch is drawn for: where subprogs start and which slots are the second
// half of an ld_imm64 (never a patch position, jump target or removal boundary).
struct Layout {
    std::vector<uint32_t> starts;  // real subprog starts, ascending (fake exit excluded)
    uint32_t len = 0;
    std::vector<char> second;
    [[nodiscard]] uint32_t sub_of(uint32_t i) const {
        return static_cast<uint32_t>(std::upper_bound(starts.begin(), starts.end(), i) - starts.begin() - 1);
    }
    [[nodiscard]] uint32_t sub_end(uint32_t s) const { return s + 1 < starts.size() ? starts[s + 1] : len; }
    [[nodiscard]] bool is_start(uint32_t i) const { return std::binary_search(starts.begin(), starts.end(), i); }
};

Layout layout_of(const Program& prog) {
    Layout lay;
    lay.len = prog.len();
    for (size_t i = 0; i + 1 < prog.subprogs.size(); ++i) lay.starts.push_back(prog.subprogs[i].start);
    std::sort(lay.starts.begin(), lay.starts.end());
    lay.starts.erase(std::unique(lay.starts.begin(), lay.starts.end()), lay.starts.end());
    if (lay.starts.empty() || lay.starts.front() != 0) lay.starts.insert(lay.starts.begin(), 0);
    lay.second.assign(lay.len, 0);
    for (uint32_t i = 0; i + 1 < lay.len; ++i)
        if (is_ldimm64(prog.insns[i])) lay.second[++i] = 1;
    return lay;
}

// random_alu() makes this many draws whatever their values (gen_buffer() skips them).
constexpr uint32_t kAluDraws = 5;

Insn random_alu(ChoiceSource& src) {
    static constexpr uint8_t ops[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_OR, BPF_AND, BPF_XOR, BPF_MOV, BPF_LSH, BPF_RSH};
    const uint8_t op = ops[src.pick(sizeof(ops), Tag::Kind)];
    const auto dst = static_cast<uint8_t>(src.draw(0, 9, Tag::Reg)), rs = static_cast<uint8_t>(src.draw(0, 9, Tag::Reg));
    const auto imm = static_cast<int32_t>(src.draw(0, 100, Tag::Imm));
    switch (src.pick(6)) {
        case 0: return alu32_imm(op, dst, imm);
        case 1: return alu32_reg(op, dst, rs);
        case 2: return ldx(BPF_W, dst, BPF_REG_10, -8);
        case 3: return stx(BPF_DW, BPF_REG_10, rs, -16);
        case 4: return alu64_reg(op, dst, rs);
        default: return alu64_imm(op, dst, imm);
    }
}

// A relative jump with displacement `d` (|d| is small: the targets lie in one subprog of a
// generated program): conditional (JMP and JMP32), ja, gotol (imm field), may_goto.
Insn random_jump(ChoiceSource& src, int64_t d) {
    const auto off = static_cast<int16_t>(d);
    const auto reg = static_cast<uint8_t>(src.draw(0, 9, Tag::Reg));
    switch (src.pick(6)) {
        case 0: return jmp_imm(BPF_JEQ, reg, 0, off);
        case 1: return jmp32_reg(BPF_JGT, reg, BPF_REG_2, off);
        case 2: return ja(off);
        case 3: return gotol(static_cast<int32_t>(d));
        case 4: return may_goto(off);
        default: return jmp_reg(BPF_JSLE, reg, BPF_REG_4, off);
    }
}

// One patch buffer of `n` slots (patch-local length `nl`: n, or n + 1 for a prologue) at original
// position `p`, in the local encoding of patch.hpp: internal transfers, outgoing forward and
// backward transfers (same subprog, not a second slot, not removed, backward ones not below
// `low`), pseudo calls and PSEUDO_FUNC to subprog starts.
std::vector<Insn> gen_buffer(ChoiceSource& src, const Program& prog, const Layout& lay, const std::vector<char>& removed,
                             uint32_t p, uint32_t n, uint32_t nl, uint32_t low, uint32_t reach) {
    std::vector<Insn> buf(n);
    const uint32_t s = lay.sub_of(p);
    uint32_t a = std::max(lay.starts[s], low), b = lay.sub_end(s);
    if (reach != 0) {
        a = std::max(a, p > reach ? p - reach : 0);
        b = static_cast<uint32_t>(std::min<uint64_t>(b, uint64_t{p} + reach));
    }
    auto ok_target = [&](uint32_t t) { return !lay.second[t] && !removed[t]; };
    // Slot j by its `roll`: a transfer or a call in place of its ALU insn (true; j moves on past
    // an ld_imm64's second slot), or false: the ALU insn stays.
    const auto replace = [&](uint32_t& j, uint64_t roll) {
        if (roll < 45) return false;
        if (roll < 60) {  // internal: a slot of this patch (or, for a prologue, the copied insn)
            const auto l = static_cast<int64_t>(src.draw(0, nl - 1, Tag::Jump));
            buf[j] = random_jump(src, l - j - 1);
        } else if (roll < 75) {  // outgoing forward: original t > p
            if (p + 1 >= b) return false;
            const auto t = static_cast<uint32_t>(src.draw(p + 1, b - 1, Tag::Jump));
            if (!ok_target(t)) return false;
            buf[j] = random_jump(src, int64_t{nl} + (int64_t{t} - p - 1) - j - 1);
        } else if (roll < 88) {  // outgoing backward: original t < p
            if (p <= a) return false;
            const auto t = static_cast<uint32_t>(src.draw(a, p - 1, Tag::Jump));
            // An earlier prologue position is a fair target: the redirect does not apply to a
            // later patch's transfers (patch.hpp "batch semantics"; corpus/regression/patching 0008).
            if (!ok_target(t)) return false;
            buf[j] = random_jump(src, int64_t{t} - p - j - 1);
        } else if (roll < 94) {  // pseudo call / PSEUDO_FUNC naming a subprog start
            const uint32_t t = lay.starts[src.pick(static_cast<uint32_t>(lay.starts.size()))];
            if (removed[t]) return false;
            const int64_t l = t == p ? 0 : t > p ? int64_t{nl} + (int64_t{t} - p - 1) : int64_t{t} - p;
            const auto d = static_cast<int32_t>(l - j - 1);
            if (j + 1 < n && src.flag()) {
                buf[j] = ldimm64_lo(BPF_REG_3, BPF_PSEUDO_FUNC, d);
                buf[++j] = ldimm64_hi(0);
            } else {
                buf[j] = call_pseudo(d);
            }
        } else {
            buf[j] = call_helper(static_cast<int32_t>(src.draw(1, 200, Tag::Imm)));
        }
        return true;
    };
    for (uint32_t j = 0; j < n; ++j) {
        const uint64_t roll = src.draw(0, 99, Tag::Kind);
        // The ALU insn's draws come next, whether it stays or not (about half the slots replace
        // it): the seeded back end skips them and makes them only for a slot that keeps it.
        const std::optional<uint64_t> alu_draws = src.skip_draws(kAluDraws);
        if (!alu_draws) buf[j] = random_alu(src);
        const uint32_t slot = j;
        if (!replace(j, roll) && alu_draws) {
            RngSource again(*alu_draws);
            buf[slot] = random_alu(again);
        }
    }
    // A verbatim copy of the patched relative insn in a non-first slot is what the jump oracle's
    // "copied-relative-jump" intent check reports (a pass bug class, docs/patching.md §8): never emit one.
    const Insn& orig = prog.insns[p];
    if (relative_field(orig) != RelField::None)
        for (uint32_t j = 1; j < n; ++j)
            if (same(buf[j], orig)) {
                buf[j] = mov64_imm(BPF_REG_0, 0);
                if (is_ldimm64(orig) && j + 1 < n) buf[j + 1] = mov64_imm(BPF_REG_0, 0);
            }
    return buf;
}

// Where the oversized patch goes: a position strictly inside the span of some 16-bit jump (so that
// jump crosses it), plus the jump itself, which the batch then leaves alone; a random first slot
// (and no jump) when the program has no such jump. UINT32_MAX = none.
struct Crossing {
    uint32_t at = UINT32_MAX;
    uint32_t jumper = UINT32_MAX;
};

Crossing crossed_position(ChoiceSource& src, const Program& prog, const Layout& lay) {
    struct Span {
        uint32_t k, lo, hi;  // jump at k; positions lo+1 .. hi-1 are crossed
    };
    std::vector<Span> spans;
    for (uint32_t k = 0; k < lay.len; ++k) {
        if (lay.second[k] || relative_field(prog.insns[k]) != RelField::Off16) continue;
        const int64_t t = int64_t{k} + 1 + prog.insns[k].off;
        const int64_t lo = std::min<int64_t>(k, t), hi = std::max<int64_t>(k, t);
        if (hi - lo >= 2 && lo >= 0 && hi <= lay.len) spans.push_back({k, static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)});
    }
    for (int tries = 0; tries < 8; ++tries) {
        Crossing c;
        if (!spans.empty()) {
            const Span& s = spans[src.pick(static_cast<uint32_t>(spans.size()), Tag::Misc)];
            c.at = static_cast<uint32_t>(src.draw(s.lo + 1, s.hi - 1, Tag::Misc));
            c.jumper = s.k;
        } else {
            c.at = static_cast<uint32_t>(src.draw(0, lay.len - 1, Tag::Misc));
        }
        if (!lay.second[c.at]) return c;
    }
    return {};
}

// Longer than any 16-bit displacement can span: every jump across it overflows.
constexpr uint32_t kOversized = 32768;

// The size of the replacement at `huge` that gives the 16-bit jump at `k` (which crosses it)
// exactly the S16 limit of its direction once every slot is applied (docs/patching.md §6.3: the growth of
// every patch between source and target; a plain jump to a prologue's insn skips the prologue),
// or one past it; none when the other slots already leave no such size.
template <class Slot>
std::optional<uint32_t> aimed_size(ChoiceSource& src, const Program& prog, uint32_t k, uint32_t huge, const std::vector<Slot>& slots) {
    const Insn& in = prog.insns[k];
    const int64_t t = int64_t{k} + 1 + in.off;
    int64_t d = in.off;  // the displacement with every slot but `huge` applied
    for (const auto& s : slots) {
        if (s.pos == huge) continue;
        const int64_t g = s.kind == PatchKind::Remove ? -int64_t{s.count} : s.kind == PatchKind::InsertBefore ? int64_t{s.n} : int64_t{s.n} - 1;
        if (t > k && s.pos > k && s.pos < t) d += g;
        if (t <= k && s.pos >= t && s.pos < k) d -= g;
        if (s.kind == PatchKind::InsertBefore && s.pos == t && patch::jmp_off_field(in) != patch::Field::None) d += s.n;
        // A removal holding the target or the jump: the displacement follows rules this sum
        // does not model; no aim.
        if (s.kind == PatchKind::Remove && ((t > s.pos && t < int64_t{s.pos} + s.count) || (k >= s.pos && k < s.pos + s.count)))
            return std::nullopt;
    }
    const int64_t beyond = src.flag() ? 1 : 0;
    // Forward: d + (n - 1) == 32767 (+1); backward: d - (n - 1) == -32768 (-1).
    const int64_t n = t > k ? 32767 + beyond - d + 1 : d + 32768 + beyond + 1;
    if (n < 2 || n > 2 * int64_t{kOversized}) return std::nullopt;
    return static_cast<uint32_t>(n);
}

}  // namespace

std::vector<char> boundary_positions(const Program& prog) {
    const uint32_t len = prog.len();
    std::vector<char> b(len, 0);
    if (len == 0) return b;
    auto mark = [&](uint64_t i) {
        if (i < len) b[i] = 1;
    };
    mark(0);
    mark(len - 1);
    for (const auto& s : prog.subprogs) mark(s.start);  // the fake exit (== len) falls outside
    for (const auto& l : prog.linfo) mark(l.insn_off);
    for (const auto& a : prog.insn_arrays)
        for (const auto& e : a.entries)
            if (e.xlated_off != kInsnDeleted) mark(e.xlated_off);
    for (const auto& k : prog.pokes) mark(k.insn_idx);
    return b;
}

PatchBatch generate_patch_batch(ChoiceSource& src, const Program& prog, const BatchGenOptions& o) {
    PatchBatch batch;
    const Layout lay = layout_of(prog);
    const uint32_t len = lay.len;
    if (len == 0 || prog.aux.size() != len || prog.subprogs.empty()) return batch;
    const std::vector<char> boundary = boundary_positions(prog);

    const Crossing cross = o.overflow_pct && src.draw(0, 99, Tag::Flag) < o.overflow_pct ? crossed_position(src, prog, lay)
                                                                                           : Crossing{};
    const uint32_t huge = cross.at;
    // A 16-bit transfer across the oversized patch is left alone (like the jump it was placed
    // across): the kernel probes it at the oversized patch, before a later patch of the batch would
    // replace it, and fails there, while a displacement that no longer exists in the result fits
    // the contract's final-image reading (docs/patching.md §7.3). The two readings differ; see the report of
    // issue 28 (an open question for the jump oracle, not a case for every campaign to hit).
    const auto spans_huge = [&](uint32_t i) {
        if (huge == UINT32_MAX || relative_field(prog.insns[i]) != RelField::Off16) return false;
        const int64_t t = int64_t{i} + 1 + prog.insns[i].off, h = huge;
        // Backward: the oversized patch at or after the target stretches it (a target at the
        // patch's insn stays on its first slot); forward: only one strictly between.
        return t <= i ? (t <= h && h < i) : (i < h && h < t);
    };
    struct Slot {
        PatchKind kind;
        uint32_t pos, count, n;
    };
    std::vector<Slot> slots;
    std::vector<char> removed(len, 0);
    uint32_t removed_total = 0;
    // Where -ERANGE is possible (an oversized patch, or a program already past 32767 insns), no
    // removals: the batched contract equals the kernel's patch-by-patch -ERANGE only for batches
    // that do not shrink (docs/patching.md §7.3: a removal after a growing patch shrinks a
    // displacement the kernel has already found out of range), and no kernel pass mixes them.
    const uint32_t remove_pct = huge != UINT32_MAX || len > 32767 ? 0 : o.remove_pct;
    for (uint32_t i = 0; i < len;) {
        if (lay.second[i] || i == cross.jumper || spans_huge(i)) { ++i; continue; }
        if (i == huge) {
            slots.push_back({PatchKind::Replace, i, 0, kOversized + static_cast<uint32_t>(src.draw(0, 40, Tag::Len))});
            ++i;
            continue;
        }
        const uint32_t pct = boundary[i] ? o.boundary_pct : o.density_pct;
        if (src.draw(0, 99, Tag::Flag) >= pct) { ++i; continue; }
        // Not on a call or callback load whose target is at or before it: the kernel's copy of
        // that insn after the prologue keeps its displacement (docs/patching.md §8), a pass bug the jump
        // oracle reports (copied-relative-jump), not a patcher one.
        const Insn& at = prog.insns[i];
        const bool backward_ref = (is_pseudo_call(at) || is_pseudo_func(at)) && at.imm < 0;
        if (o.insert_before && lay.is_start(i) && !backward_ref && src.chance(1, 3)) {
            slots.push_back({PatchKind::InsertBefore, i, 0, static_cast<uint32_t>(src.draw(1, 3, Tag::Len))});
            ++i;
        } else if (i > 0 && remove_pct && src.draw(0, 99, Tag::Flag) < remove_pct) {
            // 1-3 insns; no subprog start strictly inside, never the oversized position, never
            // ending between the two slots of an ld_imm64, and at least 2 insns left.
            const auto want = static_cast<uint32_t>(src.draw(1, 3, Tag::Len));
            uint32_t e = i + 1;
            while (e < len && e < i + want && !lay.is_start(e) && e != huge && e != cross.jumper) ++e;
            if (e < len && lay.second[e]) --e;
            const uint32_t c = e - i;
            if (c == 0 || removed_total + c + 2 > len) { ++i; continue; }
            slots.push_back({PatchKind::Remove, i, c, 0});
            for (uint32_t k = i; k < e; ++k) removed[k] = 1;
            removed_total += c;
            i = e;
        } else {
            slots.push_back({PatchKind::Replace, i, 0, static_cast<uint32_t>(src.draw(1, std::max<uint32_t>(o.max_n, 1), Tag::Len))});
            ++i;
        }
    }
    if (o.aim_limit && huge != UINT32_MAX && cross.jumper != UINT32_MAX) {
        if (const auto n = aimed_size(src, prog, cross.jumper, huge, slots)) {
            for (Slot& s : slots)
                if (s.pos == huge) s.n = *n;
        }
    }
    for (const Slot& s : slots) {
        Patch p{.kind = s.kind, .pos = s.pos, .count = s.count};
        if (s.pos == huge) {
            // Plain ALU only: its own transfers could not even be encoded across 32k slots. Insn j
            // is `r(j % 10) += j` (patch::filler_insn(j): a .case writes the run as fill=N), so from the eleventh on each is the insn ten before with an imm
            // 10 larger: 32k copies, not 32k divisions and field packings (a third of all the
            // batch generator's work, though only 1 case in 1024 has such a patch).
            p.insns.resize(s.n);  // stores, not push_back's capacity checks
            Insn* const out = p.insns.data();
            const uint32_t first = std::min<uint32_t>(s.n, 10);
            for (uint32_t j = 0; j < first; ++j) out[j] = alu64_imm(BPF_ADD, static_cast<uint8_t>(j), static_cast<int32_t>(j));
            for (uint32_t j = first; j < s.n; ++j) {
                out[j] = out[j - 10];
                out[j].imm += 10;
            }
        } else {
            // After the oversized patch a backward transfer across it would not fit its field (a
            // precondition of patch.hpp, not a patcher behaviour): keep those above it.
            const uint32_t low = huge != UINT32_MAX && s.pos > huge ? huge + 1 : 0;
            if (s.kind == PatchKind::Replace) p.insns = gen_buffer(src, prog, lay, removed, s.pos, s.n, s.n, low, o.max_reach);
            if (s.kind == PatchKind::InsertBefore) {
                p.insns = gen_buffer(src, prog, lay, removed, s.pos, s.n, s.n + 1, low, o.max_reach);
                const auto later = std::upper_bound(lay.starts.begin(), lay.starts.end(), s.pos);
                if (o.prologue_call_pct && later != lay.starts.end() && !removed[*later] && !is_ldimm64(p.insns[0]) &&
                    src.draw(0, 99, Tag::Flag) < o.prologue_call_pct)
                    // slot 0, local target n + 1 + (t - pos - 1): original t
                    p.insns[0] = call_pseudo(static_cast<int32_t>(int64_t{s.n} + 1 + (int64_t{*later} - s.pos - 1) - 1));
            }
        }
        batch.patches.push_back(std::move(p));
    }
    return batch;
}

std::vector<PatchBatch> generate_patch_batches(ChoiceSource& src, const Program& prog, const BatchGenOptions& first,
                                               const BatchGenOptions& rest, uint32_t count) {
    std::vector<PatchBatch> out;
    Program cur = prog;
    const auto patcher = patch::make_incremental_patcher();
    for (uint32_t b = 0; b < count; ++b) {
        out.push_back(generate_patch_batch(src, cur, b == 0 ? first : rest));
        if (b + 1 == count) break;
        if (!patcher->apply(cur, out.back()).ok()) break;
    }
    return out;
}

void add_poke_descriptors(ChoiceSource& src, Program& prog, uint32_t max) {
    const Layout lay = layout_of(prog);
    if (lay.len == 0 || max == 0) return;
    std::set<uint32_t> have;
    for (const auto& k : prog.pokes) have.insert(k.insn_idx);
    std::vector<uint32_t> tail_calls;
    for (uint32_t i = 0; i < lay.len; ++i)
        if (!lay.second[i] && is_tail_call(prog.insns[i])) tail_calls.push_back(i);
    const auto want = static_cast<uint32_t>(src.draw(1, max, Tag::Len));
    const int32_t map = prog.maps.empty() ? -1 : 0;
    for (uint32_t k = 0, tries = 0; k < want && tries < 4 * max; ++tries) {
        uint32_t i = k < tail_calls.size() ? tail_calls[k] : static_cast<uint32_t>(src.draw(0, lay.len - 1, Tag::Misc));
        if (lay.second[i] || !have.insert(i).second) continue;
        prog.pokes.push_back(PokeDesc{.insn_idx = i, .map_index = map, .key = static_cast<uint32_t>(prog.pokes.size())});
        ++k;
    }
}

}  // namespace patchfuzz::gen
