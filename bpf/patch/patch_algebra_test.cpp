// Patch algebra (issue #3): applying batch A then batch B (re-expressed in A's output coordinates)
// incrementally equals one batch {A, B}; the two orders commute; splitting one patch into two
// consecutive patches equals the whole. The contract has exceptions, excluded here on purpose:
// InsertBefore redirects depend on application order, poke descriptors are not moved by removals
// (stale coordinates), and a jump into the interior of a removed range names whatever slides in.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "bpf/patch/index_map.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_rules.hpp"
#include "bpf/patch/patch_test_gen.hpp"

namespace patchfuzz::patch {
namespace {

using namespace isa;

// Re-express `p` (in the coordinates of the program `a` was applied to) in a's output coordinates.
Patch translate(const Patch& p, const std::vector<uint32_t>& s) {
    Patch out = p;
    out.pos = s[p.pos];
    const int64_t n = local_len(p);
    for (size_t j = 0; j < out.insns.size(); ++j) {
        const Field f = adj_field(out.insns[j]);
        if (f == Field::None) continue;
        const int64_t l = static_cast<int64_t>(j) + get_disp(out.insns[j], f) + 1;
        int64_t l2;
        if (l >= 0 && l < n) continue;
        if (l >= n)
            l2 = n + int64_t{s[static_cast<size_t>(int64_t{p.pos} + 1 + (l - n))]} - out.pos - 1;
        else
            l2 = int64_t{s[static_cast<size_t>(int64_t{p.pos} + l)]} - out.pos;
        set_disp(out.insns[j], f, l2 - static_cast<int64_t>(j) - 1);
    }
    return out;
}

bool jumps_into_removed_interior(const Program& prog, const PatchBatch& b) {
    for (uint32_t c = 0; c < prog.len(); ++c) {
        const Field f = adj_field(prog.insns[c]);
        if (f == Field::None) continue;
        const int64_t t = int64_t{c} + 1 + get_disp(prog.insns[c], f);
        for (const Patch& p : b.patches)
            if (p.kind == PatchKind::Remove && t > p.pos && t < int64_t{p.pos} + p.count) return true;
    }
    return false;
}

struct Case {
    Program prog;
    PatchBatch all, a, b;
};

Case gen_case(uint64_t seed) {
    Rng r(seed);
    auto g = testgen::gen_program(r, static_cast<uint32_t>(r.range(4, 80)), static_cast<uint32_t>(r.range(1, 3)));
    testgen::BatchOpts o{.density_pct = static_cast<uint32_t>(r.range(10, 50)), .removals = r.chance(1, 2), .insert_before = false};
    Case c{.prog = std::move(g.prog)};
    c.all = testgen::gen_batch(r, c.prog, g.lay, o);
    for (const Patch& p : c.all.patches) (r.chance(1, 2) ? c.a : c.b).patches.push_back(p);
    bool removal = false;
    for (const Patch& p : c.all.patches) removal |= p.kind == PatchKind::Remove;
    if (removal) c.prog.pokes.clear();
    return c;
}

Program apply_seq(const Program& prog, const PatchBatch& first, const PatchBatch& second, std::string_view patcher) {
    Program p = prog;
    auto pt = make_patcher(patcher);
    RC_ASSERT(pt->apply(p, first).ok());
    const auto s = index_map(prog.len(), first);
    PatchBatch t;
    for (const Patch& q : second.patches) t.patches.push_back(translate(q, s));
    RC_ASSERT(pt->apply(p, t).ok());
    return p;
}

RC_GTEST_PROP(PatchAlgebra, AThenBEqualsUnionAndCommutes, (uint64_t seed)) {
    Case c = gen_case(seed);
    RC_PRE(!jumps_into_removed_interior(c.prog, c.all));
    Program whole = c.prog;
    RC_ASSERT(make_patcher("incremental")->apply(whole, c.all).ok());
    const Program ab = apply_seq(c.prog, c.a, c.b, "incremental");
    const Program ba = apply_seq(c.prog, c.b, c.a, "incremental");
    RC_ASSERT(ab == whole);
    RC_ASSERT(ba == whole);
    RC_ASSERT(apply_seq(c.prog, c.a, c.b, "batched") == whole);
}

RC_GTEST_PROP(PatchAlgebra, SplittingAPatchEqualsTheWhole, (uint64_t seed)) {
    Rng r(seed);
    auto g = testgen::gen_program(r, static_cast<uint32_t>(r.range(3, 60)), static_cast<uint32_t>(r.range(1, 3)));
    uint32_t pos;
    do pos = static_cast<uint32_t>(r.range(0, g.prog.len() - 1)); while (g.lay.second[pos]);
    const uint32_t n = static_cast<uint32_t>(r.range(2, 8));
    const uint32_t k = static_cast<uint32_t>(r.range(1, n - 1));
    std::vector<char> none(g.prog.len(), 0);
    std::vector<Insn> buf = testgen::gen_buffer(r, g.lay, none, pos, n, n);
    RC_PRE(!is_ldimm64(buf[k - 1]));  // do not split an ld_imm64 pair
    // First-part jumps may name slots up to k (the split point), not the interior of the second part.
    for (uint32_t j = 0; j < k; ++j) {
        const Field f = adj_field(buf[j]);
        if (f == Field::None) continue;
        const int64_t l = int64_t{j} + get_disp(buf[j], f) + 1;
        if (l > k && l < n) buf[j] = mov64_imm(1, 1);
    }
    std::vector<Insn> first(buf.begin(), buf.begin() + k);
    first.push_back(g.prog.insns[pos]);
    for (uint32_t j = 0; j < k; ++j) {  // re-encode forward outgoing for local length k+1
        const Field f = adj_field(first[j]);
        if (f == Field::None) continue;
        const int64_t l = int64_t{j} + get_disp(first[j], f) + 1;
        if (l >= n) set_disp(first[j], f, l - n + (k + 1) - j - 1);
    }
    std::vector<Insn> second(buf.begin() + k, buf.end());  // local coordinates shift by k: same displacements
    for (const char* pname : {"incremental", "batched"}) {
        Program whole = g.prog, split = g.prog;
        auto pt = make_patcher(pname);
        RC_ASSERT(pt->apply(whole, PatchBatch{{Patch{.pos = pos, .insns = buf}}}).ok());
        RC_ASSERT(pt->apply(split, PatchBatch{{Patch{.pos = pos, .insns = first}}}).ok());
        RC_ASSERT(pt->apply(split, PatchBatch{{Patch{.pos = pos + k, .insns = second}}}).ok());
        RC_ASSERT(split == whole);
    }
}

}  // namespace
}  // namespace patchfuzz::patch
