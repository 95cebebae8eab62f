#pragma once
// TEST-ONLY: small, seeded generators of programs and patch batches for the patcher properties
// (patch_props_test.cpp, patch_algebra_test.cpp). Local stand-ins until gen/ provides its own; they
// cover every relative form (cond jumps, ja, gotol, may_goto, pseudo calls, PSEUDO_FUNC), plain
// ld_imm64, subprogs + fake exit, line/func info, insn arrays, pokes, and every patch kind.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::patch::testgen {

using namespace isa;

struct Layout {
    std::vector<uint32_t> starts;  // subprog starts (ascending), without the fake exit
    uint32_t len = 0;
    std::vector<char> second;      // 1 = second slot of an ld_imm64
    [[nodiscard]] uint32_t sub_of(uint32_t i) const {
        return static_cast<uint32_t>(std::upper_bound(starts.begin(), starts.end(), i) - starts.begin() - 1);
    }
    [[nodiscard]] uint32_t sub_end(uint32_t s) const { return s + 1 < starts.size() ? starts[s + 1] : len; }
};

inline Insn random_alu(Rng& r) {
    static constexpr uint8_t ops[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_OR, BPF_AND, BPF_XOR, BPF_MOV, BPF_LSH, BPF_RSH};
    const uint8_t op = ops[r.range(0, sizeof(ops) - 1)];
    const uint8_t dst = static_cast<uint8_t>(r.range(0, 9)), src = static_cast<uint8_t>(r.range(0, 9));
    switch (r.range(0, 5)) {
        case 0: return alu32_imm(op, dst, static_cast<int32_t>(r.range(0, 100)));
        case 1: return alu32_reg(op, dst, src);
        case 2: return ldx(BPF_W, dst, 10, -8);
        case 3: return stx(BPF_DW, 10, src, -16);
        case 4: return alu64_reg(op, dst, src);
        default: return alu64_imm(op, dst, static_cast<int32_t>(r.range(0, 100)));
    }
}

// A relative insn with displacement `d` (the kind chosen at random among the jump forms).
inline Insn random_jump(Rng& r, int64_t d, bool allow_call) {
    const auto off = static_cast<int16_t>(d);
    switch (r.range(0, allow_call ? 6 : 4)) {
        case 0: return jmp_imm(BPF_JEQ, static_cast<uint8_t>(r.range(0, 9)), 0, off);
        case 1: return jmp32_reg(BPF_JGT, 1, 2, off);
        case 2: return ja(off);
        case 3: return gotol(static_cast<int32_t>(d));
        case 4: return may_goto(off);
        default: return jmp_reg(BPF_JSLE, 3, 4, off);
    }
}

struct GenProgram {
    Program prog;
    Layout lay;
};

// A valid-shaped program of about `len` insns with `nsub` subprogs. Jumps stay inside their
// subprog and never target a second ld_imm64 slot; calls and PSEUDO_FUNC name subprog starts.
inline GenProgram gen_program(Rng& r, uint32_t len, uint32_t nsub) {
    len = std::max<uint32_t>(len, 3 * nsub);
    Layout lay;
    lay.len = len;
    std::set<uint32_t> st{0};
    while (st.size() < nsub) st.insert(static_cast<uint32_t>(r.range(1, len - 3)));
    // keep every subprog at least 3 insns long
    lay.starts.assign(st.begin(), st.end());
    for (size_t i = 1; i < lay.starts.size(); ++i) lay.starts[i] = std::max(lay.starts[i], lay.starts[i - 1] + 3);
    while (!lay.starts.empty() && lay.starts.back() + 3 > len) lay.starts.pop_back();
    std::vector<Insn> insns(len);
    lay.second.assign(len, 0);
    // kinds: 0 alu, 1 jump, 2 call, 3 pseudo_func, 4 ld_imm64 map, 5 helper, 6 exit
    std::vector<int> kind(len, 0);
    for (uint32_t s = 0; s < lay.starts.size(); ++s) {
        const uint32_t a = lay.starts[s], b = lay.sub_end(s);
        for (uint32_t i = a; i + 1 < b; ++i) {
            const uint64_t roll = r.range(0, 99);
            if (roll < 20) kind[i] = 1;
            else if (roll < 24) kind[i] = 2;
            else if (roll < 27 && i + 2 < b) kind[i] = 3;
            else if (roll < 30 && i + 2 < b) kind[i] = 4;
            else if (roll < 35) kind[i] = 5;
            else if (roll < 37) kind[i] = 6;
            if (kind[i] == 3 || kind[i] == 4) {
                lay.second[i + 1] = 1;
                kind[i + 1] = -1;
                ++i;
            }
        }
        kind[b - 1] = 6;
    }
    for (uint32_t i = 0; i < len; ++i) {
        const uint32_t s = lay.sub_of(i);
        const uint32_t a = lay.starts[s], b = lay.sub_end(s);
        switch (kind[i]) {
            case 0: insns[i] = random_alu(r); break;
            case 1: {
                uint32_t t;
                do t = static_cast<uint32_t>(r.range(a, b - 1)); while (lay.second[t]);
                insns[i] = random_jump(r, int64_t{t} - i - 1, false);
                break;
            }
            case 2:
            case 3: {
                const uint32_t t = lay.starts[r.range(0, lay.starts.size() - 1)];
                const int32_t d = static_cast<int32_t>(int64_t{t} - i - 1);
                insns[i] = kind[i] == 2 ? call_pseudo(d) : ldimm64_lo(2, BPF_PSEUDO_FUNC, d);
                if (kind[i] == 3) insns[i + 1] = ldimm64_hi(0);
                break;
            }
            case 4:
                insns[i] = ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 0);
                insns[i + 1] = ldimm64_hi(0);
                break;
            case 5: insns[i] = call_helper(static_cast<int32_t>(r.range(1, 200))); break;
            case 6: insns[i] = exit_insn(); break;
            default: break;
        }
    }
    Program p;
    p.name = "gen";
    p.insns = std::move(insns);
    p.aux.resize(len);
    for (uint32_t i = 0; i < len; ++i) {
        auto& a = p.aux[i];
        a.orig_idx = i;
        a.seen = r.chance(9, 10);
        a.zext_dst = r.chance(1, 3);
        a.alu_state = static_cast<uint8_t>(r.range(0, 3));
        a.map_index = static_cast<int32_t>(r.range(0, 3)) - 1;
    }
    // line info ~0.45/insn, always at 0, never on a second slot
    for (uint32_t i = 0; i < len; ++i)
        if ((i == 0 || r.chance(45, 100)) && !lay.second[i])
            p.linfo.push_back(LineInfo{.insn_off = i, .file_name_off = 1, .line_off = i, .line_col = (i + 1) << 10});
    for (uint32_t s : lay.starts) {
        SubprogInfo si{.start = s, .stack_depth = 8 * s};
        si.linfo_idx = static_cast<uint32_t>(std::lower_bound(p.linfo.begin(), p.linfo.end(), s,
                                                              [](const LineInfo& l, uint32_t v) { return l.insn_off < v; }) -
                                             p.linfo.begin());
        p.subprogs.push_back(si);
        p.finfo.push_back(FuncInfo{.insn_off = s, .type_id = 100 + s});
    }
    SubprogInfo fake{.start = len};
    fake.linfo_idx = static_cast<uint32_t>(p.linfo.size());
    p.subprogs.push_back(fake);
    InsnArray arr{.map_index = 0};
    for (int k = 0, n = static_cast<int>(r.range(0, 4)); k < n; ++k) {
        uint32_t t;
        do t = static_cast<uint32_t>(r.range(0, len - 1)); while (lay.second[t]);
        arr.entries.push_back({.orig_off = t, .xlated_off = r.chance(1, 8) ? kInsnDeleted : t});
    }
    if (!arr.entries.empty()) p.insn_arrays.push_back(arr);
    for (int k = 0, n = static_cast<int>(r.range(0, 3)); k < n; ++k)
        p.pokes.push_back(PokeDesc{.insn_idx = static_cast<uint32_t>(r.range(0, len - 1)), .map_index = 1, .key = static_cast<uint32_t>(k)});
    return GenProgram{std::move(p), std::move(lay)};
}

struct BatchOpts {
    uint32_t density_pct = 15;  // chance per insn to be patched
    bool removals = true;
    bool insert_before = true;
    uint32_t max_n = 6;
};

// One patch buffer of `n` slots (local length `nl`) at original `p`, with internal, outgoing
// forward/backward transfers whose targets are valid (same subprog, not a second slot, not removed).
inline std::vector<Insn> gen_buffer(Rng& r, const Layout& lay, const std::vector<char>& removed, uint32_t p,
                                    uint32_t n, uint32_t nl) {
    std::vector<Insn> buf(n);
    const uint32_t s = lay.sub_of(p);
    const uint32_t a = lay.starts[s], b = lay.sub_end(s);
    auto ok_target = [&](uint32_t t) { return !lay.second[t] && !removed[t]; };
    for (uint32_t j = 0; j < n; ++j) {
        const uint64_t roll = r.range(0, 99);
        if (roll < 45) {
            buf[j] = random_alu(r);
        } else if (roll < 60) {  // internal
            const int64_t L = static_cast<int64_t>(r.range(0, nl - 1));
            buf[j] = random_jump(r, L - j - 1, false);
        } else if (roll < 75) {  // outgoing forward
            if (p + 1 >= b) { buf[j] = random_alu(r); continue; }
            const uint32_t t = static_cast<uint32_t>(r.range(p + 1, b - 1));
            if (!ok_target(t)) { buf[j] = random_alu(r); continue; }
            const int64_t L = int64_t{nl} + (int64_t{t} - p - 1);
            buf[j] = random_jump(r, L - j - 1, false);
        } else if (roll < 88) {  // outgoing backward
            if (p == a) { buf[j] = random_alu(r); continue; }
            const uint32_t t = static_cast<uint32_t>(r.range(a, p - 1));
            if (!ok_target(t)) { buf[j] = random_alu(r); continue; }
            const int64_t L = int64_t{t} - p;
            buf[j] = random_jump(r, L - j - 1, false);
        } else if (roll < 94) {  // pseudo call / PSEUDO_FUNC to a subprog start
            const uint32_t t = lay.starts[r.range(0, lay.starts.size() - 1)];
            if (removed[t]) { buf[j] = random_alu(r); continue; }
            const int64_t L = t == p ? 0 : t > p ? int64_t{nl} + (int64_t{t} - p - 1) : int64_t{t} - p;
            const auto d = static_cast<int32_t>(L - j - 1);
            if (j + 1 < n && r.chance(1, 2)) {
                buf[j] = ldimm64_lo(3, BPF_PSEUDO_FUNC, d);
                buf[++j] = ldimm64_hi(0);
            } else {
                buf[j] = call_pseudo(d);
            }
        } else {
            buf[j] = call_helper(static_cast<int32_t>(r.range(1, 200)));
        }
    }
    return buf;
}

inline PatchBatch gen_batch(Rng& r, const Program& prog, const Layout& lay, const BatchOpts& o) {
    const uint32_t len = prog.len();
    std::vector<char> removed(len, 0);
    struct Slot { PatchKind kind; uint32_t pos, count, n; };
    std::vector<Slot> slots;
    std::set<uint32_t> starts(lay.starts.begin(), lay.starts.end());
    uint32_t removed_total = 0;
    for (uint32_t i = 0; i < len;) {
        if (lay.second[i]) { ++i; continue; }
        const bool edge = i == 0 || i + 1 == len;  // position 0 and the last insn get patched often
        const uint32_t roll = static_cast<uint32_t>(r.range(0, 99));
        if (o.insert_before && starts.count(i) && r.chance(1, 3)) {
            slots.push_back({PatchKind::InsertBefore, i, 0, static_cast<uint32_t>(r.range(1, 3))});
            ++i;
        } else if (o.removals && roll < 4 && i > 0) {
            uint32_t c = static_cast<uint32_t>(r.range(1, 3));
            // no subprog start strictly inside, do not end on a first ld_imm64 slot, keep >= 2 insns
            uint32_t e = i + 1;
            while (e < len && e < i + c && !starts.count(e)) ++e;
            if (e < len && lay.second[e]) --e;
            c = e - i;
            if (c == 0 || removed_total + c + 2 > len) { ++i; continue; }
            slots.push_back({PatchKind::Remove, i, c, 0});
            for (uint32_t k = i; k < e; ++k) removed[k] = 1;
            removed_total += c;
            i = e;
        } else if (roll < o.density_pct || (edge && r.chance(1, 2))) {
            slots.push_back({PatchKind::Replace, i, 0, static_cast<uint32_t>(r.range(1, o.max_n))});
            ++i;
        } else {
            ++i;
        }
    }
    PatchBatch batch;
    for (const Slot& s : slots) {
        Patch p{.kind = s.kind, .pos = s.pos, .count = s.count};
        if (s.kind == PatchKind::Replace) p.insns = gen_buffer(r, lay, removed, s.pos, s.n, s.n);
        if (s.kind == PatchKind::InsertBefore) p.insns = gen_buffer(r, lay, removed, s.pos, s.n, s.n + 1);
        batch.patches.push_back(std::move(p));
    }
    return batch;
}

}  // namespace patchfuzz::patch::testgen
