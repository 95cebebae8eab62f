#include "bench/bench_workload.hpp"

#include <algorithm>
#include <vector>

#include "bpf/patch/index_map.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::patch {

using namespace isa;

namespace {
// Stand-in for the address delta of __htab_map_lookup_elem the kernel writes into the call's imm.
constexpr int32_t kHtabLookupElemImm = 0x7ff0;
constexpr uint32_t kSiteLen = 6;  // r2 = r10; r2 += -8; r1 = map (2 slots); call; if r0 == 0 goto
}  // namespace

Program synthetic_program(uint32_t insns, uint32_t lookups, uint64_t seed) {
    PATCHFUZZ_CHECK(insns >= 16 && uint64_t{lookups} * 8 <= insns, "synthetic_program: too many lookups");
    Rng r(seed);
    const uint32_t n = insns;
    // Subprogs: main keeps ~3/4, the rest split evenly (pyperf: a few big subprogs).
    const uint32_t nsub = std::clamp<uint32_t>(n / 6000, 2, 16);
    std::vector<uint32_t> starts{0};
    const uint32_t main_len = n - (n / 4);
    for (uint32_t s = 1; s < nsub; ++s) starts.push_back(main_len + (n - main_len) * (s - 1) / (nsub - 1));
    auto sub_of = [&](uint32_t i) {
        return static_cast<uint32_t>(std::upper_bound(starts.begin(), starts.end(), i) - starts.begin() - 1);
    };
    auto sub_end = [&](uint32_t s) { return s + 1 < starts.size() ? starts[s + 1] : n; };

    std::vector<Insn> code(n);
    std::vector<char> second(n, 0), taken(n, 0);
    // Lookup sites spread evenly with jitter, never across a subprog boundary or its last insn.
    std::vector<uint32_t> sites;
    const double stride = static_cast<double>(n) / lookups;
    for (uint32_t k = 0; k < lookups; ++k) {
        uint32_t at = static_cast<uint32_t>(k * stride + r.range(0, static_cast<uint64_t>(stride / 2)));
        const uint32_t s = sub_of(std::min(at, n - 1));
        at = std::max(at, starts[s] + (s == 0 ? nsub : 1));  // main starts with the subprog calls
        if (at + kSiteLen + 1 >= sub_end(s)) at = sub_end(s) - kSiteLen - 2;
        bool clash = false;
        for (uint32_t x = at; x < at + kSiteLen; ++x) clash |= taken[x] != 0;
        if (clash) {  // slide forward to the next free window in the same subprog
            uint32_t y = at;
            while (y + kSiteLen + 1 < sub_end(s)) {
                bool ok = true;
                for (uint32_t x = y; x < y + kSiteLen; ++x) ok &= taken[x] == 0;
                if (ok) break;
                ++y;
            }
            at = y;
        }
        for (uint32_t x = at; x < at + kSiteLen; ++x) taken[x] = 1;
        sites.push_back(at);
    }
    std::sort(sites.begin(), sites.end());
    // Kinds: 0 filler, 1 cond jump, 2 ja, 3 exit
    for (uint32_t i = 0; i < n; ++i) {
        if (taken[i]) continue;
        const uint32_t s = sub_of(i);
        if (i + 1 == sub_end(s)) {
            code[i] = exit_insn();
            taken[i] = 1;
            continue;
        }
        if (s == 0 && i >= 1 && i < nsub) {  // main calls every other subprog first
            code[i] = call_pseudo(static_cast<int32_t>(int64_t{starts[i]} - i - 1));
            taken[i] = 1;
        }
    }
    auto pick_target = [&](uint32_t i, int64_t dist) {
        const uint32_t s = sub_of(i);
        int64_t t = std::clamp<int64_t>(int64_t{i} + dist, starts[s], sub_end(s) - 1);
        if (second[static_cast<size_t>(t)]) t -= 1;
        return t;
    };
    for (uint32_t at : sites) {
        code[at] = mov64_reg(2, 10);
        code[at + 1] = alu64_imm(BPF_ADD, 2, -8);
        code[at + 2] = ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 0);
        code[at + 3] = ldimm64_hi(0);
        second[at + 3] = 1;
        code[at + 4] = call_helper(BPF_FUNC_map_lookup_elem);
    }
    for (uint32_t at : sites) {  // the null check jumps a little forward, across the next code
        const int64_t t = pick_target(at + 5, static_cast<int64_t>(r.range(2, 40)));
        code[at + 5] = jmp_imm(BPF_JEQ, 0, 0, static_cast<int16_t>(t - (at + 5) - 1));
    }
    for (uint32_t i = 0; i < n; ++i) {
        if (taken[i]) continue;
        const uint64_t roll = r.range(0, 999);
        if (roll < 90) {  // short forward branch
            const int64_t t = pick_target(i, static_cast<int64_t>(r.range(2, 60)));
            code[i] = jmp_imm(BPF_JNE, static_cast<uint8_t>(r.range(0, 9)), 0, static_cast<int16_t>(t - i - 1));
        } else if (roll < 105) {  // long forward branch, crossing many patch sites
            const int64_t t = pick_target(i, static_cast<int64_t>(r.range(200, 20000)));
            code[i] = jmp_reg(BPF_JGT, 1, 2, static_cast<int16_t>(t - i - 1));
        } else if (roll < 125) {  // loop back edge
            const int64_t t = pick_target(i, -static_cast<int64_t>(r.range(3, 400)));
            code[i] = jmp_imm(BPF_JSLT, 3, 10, static_cast<int16_t>(t - i - 1));
        } else if (roll < 140) {
            const int64_t t = pick_target(i, static_cast<int64_t>(r.range(1, 30)));
            code[i] = ja(static_cast<int16_t>(t - i - 1));
        } else if (roll < 400) {
            code[i] = ldx(BPF_DW, static_cast<uint8_t>(r.range(0, 9)), 10, static_cast<int16_t>(-8 * static_cast<int>(r.range(1, 60))));
        } else if (roll < 550) {
            code[i] = stx(BPF_DW, 10, static_cast<uint8_t>(r.range(0, 9)), static_cast<int16_t>(-8 * static_cast<int>(r.range(1, 60))));
        } else {
            code[i] = alu64_imm(BPF_ADD, static_cast<uint8_t>(r.range(0, 9)), static_cast<int32_t>(r.range(0, 1000)));
        }
    }
    Program p;
    p.name = "synthetic";
    p.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    p.insns = std::move(code);
    p.maps.push_back(MapDef{.name = "hash", .type = BPF_MAP_TYPE_HASH, .key_size = 8, .value_size = 64, .max_entries = 1024});
    p.aux.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        p.aux[i].orig_idx = i;
        p.aux[i].seen = true;
    }
    for (uint32_t at : sites) p.aux[at + 4].map_index = 0;
    for (uint32_t i = 0; i < n; ++i)
        if (!second[i] && (i == 0 || r.chance(45, 100)))
            p.linfo.push_back(LineInfo{.insn_off = i, .file_name_off = 1, .line_off = 7, .line_col = (i + 1) << 10});
    for (uint32_t s : starts) {
        SubprogInfo si{.start = s};
        si.linfo_idx = static_cast<uint32_t>(std::lower_bound(p.linfo.begin(), p.linfo.end(), s,
                                                              [](const LineInfo& l, uint32_t v) { return l.insn_off < v; }) -
                                             p.linfo.begin());
        p.subprogs.push_back(si);
        p.finfo.push_back(FuncInfo{.insn_off = s, .type_id = 1 + s});
    }
    p.subprogs.push_back(SubprogInfo{.start = n, .linfo_idx = static_cast<uint32_t>(p.linfo.size())});
    return p;
}

PatchBatch hash_lookup_batch(const Program& prog) {
    PatchBatch b;
    bool any_facts = false;
    for (uint32_t i = 0; i < prog.len(); ++i)
        any_facts |= is_helper_call(prog.insns[i]) && prog.insns[i].imm == BPF_FUNC_map_lookup_elem && prog.aux[i].map_index >= 0;
    for (uint32_t i = 0; i < prog.len(); ++i) {
        const Insn& in = prog.insns[i];
        if (!is_helper_call(in) || in.imm != BPF_FUNC_map_lookup_elem) continue;
        uint32_t key_size = 8;
        if (any_facts) {
            const InsnAux& a = prog.aux[i];
            if (a.map_index < 0 || a.map_ptr_poisoned || static_cast<size_t>(a.map_index) >= prog.maps.size()) continue;
            const MapDef& m = prog.maps[static_cast<size_t>(a.map_index)];
            if (m.type != BPF_MAP_TYPE_HASH) continue;
            key_size = m.key_size;
        }
        const int32_t val_off = static_cast<int32_t>(48 + ((key_size + 7) / 8) * 8);
        b.patches.push_back(Patch{.pos = i, .insns = {call_helper(kHtabLookupElemImm), jmp_imm(BPF_JEQ, 0, 0, 1),
                                                      alu64_imm(BPF_ADD, 0, val_off)}});
    }
    return b;
}

Workload synthetic_workload(uint32_t insns, uint32_t lookups, uint64_t seed) {
    Workload w;
    w.name = "synthetic-" + std::to_string(insns) + "/" + std::to_string(lookups);
    w.prog = synthetic_program(insns, lookups, seed);
    w.batch = hash_lookup_batch(w.prog);
    return w;
}

size_t moved_bytes(const Program& prog, const PatchBatch& batch) {
    const size_t new_len = index_map(prog.len(), batch).back();
    size_t entries = 0;
    for (const auto& a : prog.insn_arrays) entries += a.entries.size();
    return new_len * (sizeof(Insn) + sizeof(InsnAux)) + prog.linfo.size() * sizeof(LineInfo) +
           prog.subprogs.size() * sizeof(SubprogInfo) + entries * sizeof(InsnArrayEntry) + prog.pokes.size() * sizeof(PokeDesc);
}

}  // namespace patchfuzz::patch
