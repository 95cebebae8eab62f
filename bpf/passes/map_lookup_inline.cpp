// Models htab_map_gen_lookup, htab_lru_map_gen_lookup, htab_of_map_gen_lookup,
// htab_percpu_map_gen_lookup (kernel/bpf/hashtab.c), array_map_gen_lookup,
// percpu_array_map_gen_lookup, array_of_map_gen_lookup (kernel/bpf/arraymap.c).
#include "bpf/passes/map_lookup_inline.hpp"

#include <optional>

#include "bpf/isa/internal_calls.hpp"

namespace patchfuzz::passes {

using namespace isa;

namespace {

uint32_t round_up8(uint32_t v) { return (v + 7) & ~7u; }
bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
int32_t ilog2(uint64_t v) {
    int32_t r = 0;
    while (v > 1) {
        v >>= 1;
        ++r;
    }
    return r;
}
// index_mask = roundup_pow_of_two(max_entries) - 1 (array_map_alloc)
uint32_t index_mask(uint32_t max_entries) {
    uint64_t p = 1;
    while (p < max_entries) p <<= 1;
    return static_cast<uint32_t>(p - 1);
}
Insn percpu(uint8_t reg) { return make(BPF_ALU64 | BPF_MOV | BPF_X, reg, reg, kAddrPercpuOff, 0); }
Insn scale(uint32_t elem) {
    return is_pow2(elem) ? alu64_imm(BPF_LSH, BPF_REG_0, ilog2(elem)) : alu64_imm(BPF_MUL, BPF_REG_0, static_cast<int32_t>(elem));
}

// The start both arrays of 8-byte elements (per-CPU pointers, inner maps) share: r1 at the
// values, the index loaded from the key, out of range to the sequence's end (5 insns on, one more
// with the Spectre index mask), masked when `mask` holds the mask, then the element's pointer in r0.
std::vector<Insn> load_pointer_element(int32_t max, std::optional<int32_t> mask) {
    std::vector<Insn> p{alu64_imm(BPF_ADD, BPF_REG_1, kArrayValueOffset), ldx(BPF_W, BPF_REG_0, BPF_REG_2, 0),
                        jmp_imm(BPF_JGE, BPF_REG_0, max, static_cast<int16_t>(mask ? 6 : 5))};
    if (mask) p.push_back(alu32_imm(BPF_AND, BPF_REG_0, *mask));
    p.push_back(alu64_imm(BPF_LSH, BPF_REG_0, 3));
    p.push_back(alu64_reg(BPF_ADD, BPF_REG_0, BPF_REG_1));
    p.push_back(ldx(BPF_DW, BPF_REG_0, BPF_REG_0, 0));
    return p;
}

}  // namespace

std::vector<Insn> emit_map_lookup_inline(const MapDef& map, const ArchProfile& arch) {
    const int32_t hval = kHtabElemKeyOffset + static_cast<int32_t>(round_up8(map.key_size));
    const bool mask = !map.bypass_spec_v1;
    const auto max = static_cast<int32_t>(map.max_entries);
    const auto m = static_cast<int32_t>(index_mask(map.max_entries));
    switch (map.type) {
        case BPF_MAP_TYPE_HASH:
            return {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, BPF_REG_0, 0, 1),
                    alu64_imm(BPF_ADD, BPF_REG_0, hval)};
        case BPF_MAP_TYPE_LRU_HASH:
            return {call_helper(kInternalHtabLookup),
                    jmp_imm(BPF_JEQ, BPF_REG_0, 0, 4),                    // -> end
                    ldx(BPF_B, BPF_REG_1, BPF_REG_0, kHtabElemLruRefOffset),
                    jmp_imm(BPF_JNE, BPF_REG_1, 0, 1),                    // -> last
                    st(BPF_B, BPF_REG_0, kHtabElemLruRefOffset, 1),
                    alu64_imm(BPF_ADD, BPF_REG_0, hval)};
        case BPF_MAP_TYPE_HASH_OF_MAPS:
            return {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, BPF_REG_0, 0, 2),
                    alu64_imm(BPF_ADD, BPF_REG_0, hval), ldx(BPF_DW, BPF_REG_0, BPF_REG_0, 0)};
        case BPF_MAP_TYPE_PERCPU_HASH:
            if (!arch.supports_percpu_insn) return {};
            return {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, BPF_REG_0, 0, 3),
                    alu64_imm(BPF_ADD, BPF_REG_0, hval), ldx(BPF_DW, BPF_REG_0, BPF_REG_0, 0), percpu(BPF_REG_0)};
        case BPF_MAP_TYPE_ARRAY: {
            if (map.map_flags & BPF_F_INNER_MAP) return {};
            std::vector<Insn> p{alu64_imm(BPF_ADD, BPF_REG_1, kArrayValueOffset), ldx(BPF_W, BPF_REG_0, BPF_REG_2, 0),
                                jmp_imm(BPF_JGE, BPF_REG_0, max, static_cast<int16_t>(mask ? 4 : 3))};
            if (mask) p.push_back(alu32_imm(BPF_AND, BPF_REG_0, m));
            p.push_back(scale(round_up8(map.value_size)));
            p.push_back(alu64_reg(BPF_ADD, BPF_REG_0, BPF_REG_1));
            p.push_back(ja(1));
            p.push_back(mov64_imm(BPF_REG_0, 0));
            return p;
        }
        case BPF_MAP_TYPE_PERCPU_ARRAY: {
            if (!arch.supports_percpu_insn || (map.map_flags & BPF_F_INNER_MAP)) return {};
            std::vector<Insn> p = load_pointer_element(max, mask ? std::optional<int32_t>(m) : std::nullopt);
            p.push_back(percpu(BPF_REG_0));
            p.push_back(ja(1));
            p.push_back(mov64_imm(BPF_REG_0, 0));
            return p;
        }
        case BPF_MAP_TYPE_ARRAY_OF_MAPS: {
            // elements are map pointers: elem_size = 8
            std::vector<Insn> p = load_pointer_element(max, mask ? std::optional<int32_t>(m) : std::nullopt);
            p.push_back(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 1));  // -> last
            p.push_back(ja(1));                              // -> end
            p.push_back(mov64_imm(BPF_REG_0, 0));
            return p;
        }
        default:
            return {};
    }
}

}  // namespace patchfuzz::passes
