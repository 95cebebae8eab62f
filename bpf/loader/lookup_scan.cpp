#include "bpf/loader/lookup_scan.hpp"

namespace patchfuzz::loader {
namespace {

// Does `in` write register `r` (as a destination)? Calls clobber r0-r5.
bool writes(const isa::Insn& in, uint8_t r) {
    using namespace isa;
    if (is_call(in)) return r <= 5;
    if (is_alu_class(in) || is_ldimm64(in) || cls(in) == BPF_LDX || cls(in) == BPF_LD) return in.dst_reg == r;
    if (cls(in) == BPF_STX && mode(in) == BPF_ATOMIC) {
        if (in.imm == BPF_CMPXCHG) return r == 0;
        if (in.imm & BPF_FETCH) return in.src_reg == r;
    }
    return false;
}

}  // namespace

std::vector<LookupSite> find_map_lookups(const Program& p) {
    const size_t n = p.insns.size();
    // Block starts: jump targets and the insn after any jump (so a scan never crosses a join).
    std::vector<bool> leader(n + 1, false);
    std::vector<bool> second_slot(n, false);
    for (size_t i = 0; i < n; ++i) {
        const auto& in = p.insns[i];
        if (isa::is_ldimm64(in) && i + 1 < n) {
            second_slot[i + 1] = true;
            ++i;
            continue;
        }
        if (!isa::is_jmp_class(in) || isa::is_call(in)) continue;
        leader[i + 1] = true;
        if (isa::is_exit(in)) continue;
        const int64_t t = static_cast<int64_t>(i) + 1 + isa::displacement(in);
        if (t >= 0 && t <= static_cast<int64_t>(n)) leader[static_cast<size_t>(t)] = true;
    }
    for (const auto& s : p.subprogs)
        if (s.start <= n) leader[s.start] = true;
    std::vector<LookupSite> out;
    for (size_t i = 0; i < n; ++i) {
        const auto& in = p.insns[i];
        if (second_slot[i] || !isa::is_helper_call(in) || in.imm != BPF_FUNC_map_lookup_elem) continue;
        LookupSite site{.pc = static_cast<uint32_t>(i)};
        uint8_t want = 1;
        for (size_t j = i; j-- > 0;) {
            if (leader[j + 1]) break;  // j lies in an earlier block
            if (second_slot[j]) continue;
            const auto& w = p.insns[j];
            if (!writes(w, want)) continue;
            if (isa::is_ldimm64(w) && (w.src_reg == BPF_PSEUDO_MAP_FD || w.src_reg == BPF_PSEUDO_MAP_IDX) && w.imm >= 0 &&
                static_cast<size_t>(w.imm) < p.maps.size())
                site.map_index = w.imm;
            else if (w.code == (BPF_ALU64 | BPF_MOV | BPF_X) && w.off == 0) {
                want = w.src_reg;
                continue;
            }
            break;
        }
        out.push_back(site);
    }
    return out;
}

}  // namespace patchfuzz::loader
