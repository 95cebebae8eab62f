#pragma once
// In-memory models of the map types programs use: array / per-CPU array (one contiguous value
// area, elements rounded up to 8 bytes as kernel/bpf/arraymap.c does), hash / per-CPU hash / LRU
// hash (kernel/bpf/hashtab.c: one element per key; LRU evicts the least recently used element
// when full), prog array (tail-call slots, always empty here) and insn array (gotox targets).
// Per-CPU maps hold the executing CPU's copy only. Deleted hash elements stay readable, as after
// an RCU-deferred free in the kernel; they are just no longer reachable by key.
#include <cstdint>
#include <map>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/interp/memory.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::interp {

// Layout shared with the inlines of bpf/passes (internal_calls.hpp): a hash element is
// [kHtabElemKeyOffset header][key rounded to 8][value]; __htab_map_lookup_elem returns the element.
// A map pointer points at a map object whose array values (or per-CPU pointers) start at
// kArrayValueOffset, as struct bpf_array's value[]/pptrs[] do. Per-CPU values are reached through
// a per-CPU pointer (kPercpuBase + ...) that BPF_MOV64_PERCPU_REG turns into this CPU's address.
inline constexpr uint32_t kHtabElemKeyOffset = 48;
inline constexpr uint32_t kArrayValueOffset = 320;
inline constexpr uint64_t kPercpuBase = 0x0000100000000000ULL;  // + the region address bits

class MapModel {
public:
    enum class Kind : uint8_t { Array, Hash, Lru, ProgArray, InsnArray, Unsupported };

    MapModel(const MapDef& def, Memory& mem);
    // Map pointer value (what ld_imm64 MAP_FD/MAP_IDX loads): the map object's address.
    [[nodiscard]] uint64_t handle() const { return Memory::addr(obj_region_, 0); }
    [[nodiscard]] uint32_t object_region() const { return obj_region_; }
    [[nodiscard]] Kind kind() const { return kind_; }
    [[nodiscard]] const MapDef& def() const { return def_; }
    // Value address or 0. `key` has def().key_size bytes.
    uint64_t lookup(const uint8_t* key);
    // Element address (for __htab_map_lookup_elem) or 0: value address minus the key offset.
    uint64_t lookup_elem(const uint8_t* key);
    // 0 or a negative errno, as the helpers return them.
    int64_t update(const uint8_t* key, const uint8_t* value, uint64_t flags);
    int64_t remove(const uint8_t* key);
    // Value address of array element 0 + off (ld_imm64 MAP_VALUE), 0 when not an array.
    uint64_t direct_value(uint32_t off) const;
    // Per-CPU pointer (kPercpuBase + ...) of element 0 + off of a per-CPU array (bpf-next: ld_imm64
    // MAP_VALUE of a PERCPU_ARRAY), 0 for any other map or off >= value_size.
    uint64_t percpu_direct_value(uint32_t off) const;
    [[nodiscard]] std::vector<MapEntry> entries();
    // A 64-bit digest of entries() (keys and values, in key order) computed without building them:
    // equal contents give equal digests, so two runs' maps compare cheaply.
    [[nodiscard]] uint64_t content_digest();
    [[nodiscard]] uint32_t elem_size() const { return elem_size_; }

private:
    struct Elem {
        uint32_t region;
        uint64_t last_use;
    };
    MapDef def_;
    Memory& mem_;
    Kind kind_ = Kind::Unsupported;
    uint32_t elem_size_ = 0;
    uint32_t obj_region_ = 0;
    bool percpu_ = false;
    std::vector<uint32_t> percpu_values_;  // per-CPU array: value region of each element
    // Address of the value inside element region `reg` (follows the per-CPU pointer when percpu).
    uint64_t hash_value(uint32_t reg);
    uint64_t clock_ = 0;
    std::map<std::vector<uint8_t>, Elem> hash_;
};

}  // namespace patchfuzz::interp
