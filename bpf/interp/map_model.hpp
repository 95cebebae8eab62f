#pragma once
// In-memory models of the map types programs use: array / per-CPU array (one contiguous value
// area, elements rounded up to 8 bytes as kernel/bpf/arraymap.c does), hash / per-CPU hash / LRU
// hash (kernel/bpf/hashtab.c: one element per key; LRU evicts the least recently used element
// when full), prog array (tail-call slots, always empty here), insn array (gotox targets) and the
// map-in-map outer maps, array of maps and hash of maps (kernel/bpf/map_in_map.c).
// Per-CPU maps hold the executing CPU's copy only. Deleted hash elements stay readable, as after
// an RCU-deferred free in the kernel; they are just no longer reachable by key.
//
// Map-in-map: an outer map's in-kernel element is an 8-byte inner-map pointer (the user-space
// value is a 4-byte fd), stored where a value would be: array slot i at kArrayValueOffset + 8 * i
// of the map object (struct bpf_array's ptrs[]), a hash element's 8 bytes after its key. The
// inlines of bpf/passes (array_of_map_gen_lookup, htab_of_map_gen_lookup) load that slot, and
// bpf_map_lookup_elem returns its content, so both see the same pointer or NULL. Inner maps are
// not modelled: a slot holds inner_map_addr(n), a non-zero address outside every region, so any
// access through it faults. User-space values (ExecInput::maps, entries()) name inner maps by
// number; see exec_input.hpp.
#include <cstddef>
#include <cstdint>
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
// Inner map n (n >= 1) of a map-in-map is the fake pointer kInnerMapBase + (n << 12): distinct per
// inner map, deterministic, and below kRegionBase for every u32 n, so never dereferenceable.
inline constexpr uint64_t kInnerMapBase = 0xffff700000000000ULL;
constexpr uint64_t inner_map_addr(uint32_t n) { return n == 0 ? 0 : kInnerMapBase + (uint64_t{n} << 12); }
// The inner map number of a pointer value, or 0 when it is not one.
constexpr uint32_t inner_map_number(uint64_t addr) {
    if (addr < kInnerMapBase + (uint64_t{1} << 12) || (addr & 0xfff) != 0) return 0;
    const uint64_t n = (addr - kInnerMapBase) >> 12;
    return n > 0xffffffffULL ? 0 : static_cast<uint32_t>(n);
}

class MapModel {
public:
    enum class Kind : uint8_t { Array, Hash, Lru, ProgArray, InsnArray, ArrayOfMaps, HashOfMaps, Unsupported };

    // `def` (the Program's) must outlive the model's use: an execution builds one per map, so it
    // is not copied.
    MapModel(const MapDef& def, Memory& mem);
    // Everything a model holds besides its definition and memory: what it derived from `def`, the
    // regions it added to its memory, and its elements. Saved with the memory after a set-up
    // (Memory::save), it makes the same model again over that memory restored (Memory::restore):
    // the runs of one input on several programs fill their maps once (interp::PreparedInput).
    struct State;
    MapModel(const MapDef& def, Memory& mem, const State& saved);
    // This model made again as MapModel(def, mem) or MapModel(def, mem, saved) makes one, in the
    // storage of its keys and elements: an execution's models are kept per thread for the next
    // execution's maps, whose hash maps would otherwise allocate both again.
    void remake(const MapDef& def, Memory& mem);
    void remake(const MapDef& def, Memory& mem, const State& saved);
    // Map pointer value (what ld_imm64 MAP_FD/MAP_IDX loads): the map object's address.
    [[nodiscard]] uint64_t handle() const { return Memory::addr(s_.obj_region, 0); }
    [[nodiscard]] uint32_t object_region() const { return s_.obj_region; }
    [[nodiscard]] Kind kind() const { return s_.kind; }
    [[nodiscard]] const MapDef& def() const { return *def_; }
    // An outer map of map-in-map: BPF programs may only look up (the verifier's
    // check_map_func_compatibility allows no other map helper on it).
    [[nodiscard]] bool map_in_map() const { return s_.kind == Kind::ArrayOfMaps || s_.kind == Kind::HashOfMaps; }
    // Value address or 0. `key` has def().key_size bytes. For map-in-map: the inner map pointer
    // (the slot's content) or 0, as array_of_map_lookup_elem / htab_of_map_lookup_elem return it.
    uint64_t lookup(const uint8_t* key);
    // Element address (for __htab_map_lookup_elem) or 0: value address minus the key offset.
    uint64_t lookup_elem(const uint8_t* key);
    // 0 or a negative errno, as the helpers return them. Not for map-in-map (-EPERM: the
    // interpreter faults before, as the verifier rejects these helpers on outer maps).
    int64_t update(const uint8_t* key, const uint8_t* value, uint64_t flags);
    int64_t remove(const uint8_t* key);
    // An update from user space (ExecInput::maps; the bpf(BPF_MAP_UPDATE_ELEM) syscall, BPF_ANY):
    // update() for every map but map-in-map, whose 4-byte value names an inner map (0: none; the
    // array slot becomes NULL, the hash key is removed).
    int64_t user_update(const uint8_t* key, const uint8_t* value);
    // user_update() of every entry in order, their results ignored (how an execution fills its
    // maps from ExecInput::maps). False at the first entry whose key does not have def().key_size
    // bytes or whose value is shorter than def().value_size, the entries before it applied: the
    // execution then ends with a fault, so a map half filled is never seen.
    bool user_fill(const std::vector<MapEntry>& entries);
    // Value address of array element 0 + off (ld_imm64 MAP_VALUE), 0 when not an array.
    [[nodiscard]] uint64_t direct_value(uint32_t off) const {
        if ((s_.kind != Kind::Array && s_.kind != Kind::InsnArray) || s_.percpu) return 0;
        return Memory::addr(s_.obj_region, kArrayValueOffset + off);
    }
    // Per-CPU pointer (kPercpuBase + ...) of element 0 + off of a per-CPU array (bpf-next: ld_imm64
    // MAP_VALUE of a PERCPU_ARRAY), 0 for any other map or off >= value_size.
    uint64_t percpu_direct_value(uint32_t off) const;
    // Contents in key order, values as user space sees them (map-in-map: 4-byte inner map numbers;
    // an array of maps lists every slot, 0 for an empty one).
    [[nodiscard]] std::vector<MapEntry> entries();
    // A 64-bit digest of entries() (keys and values, in key order) computed without building them:
    // equal contents give equal digests, so two runs' maps compare cheaply.
    [[nodiscard]] uint64_t content_digest();
    [[nodiscard]] uint64_t content_digest_general();  // content_digest() of any kind, the slower way
    [[nodiscard]] uint32_t elem_size() const { return s_.elem_size; }
    [[nodiscard]] const State& state() const { return s_; }

    struct Elem {
        uint32_t region;
        uint64_t last_use;
    };
    struct State {
        Kind kind = Kind::Unsupported;
        uint32_t elem_size = 0;
        uint32_t obj_region = 0;
        bool percpu = false;
        // Per-CPU array: element i's value is region percpu_first + i (Memory::add_many).
        uint32_t percpu_first = 0;
        uint64_t clock = 0;
        // Hash elements in key order (what entries() lists and the LRU victim search walks): key
        // n is bytes [n * key_size, (n + 1) * key_size) of keys, its element elems[n]. All keys
        // have key_size bytes, so byte-wise (memcmp) order is the key order. A run inserts and
        // looks up a few keys only: sorted vectors do that without the allocation per element
        // and per lookup that a node map with vector keys costs.
        std::vector<uint8_t> keys;
        std::vector<Elem> elems;
    };

private:
    // What the constructors do with the definition (s_ is a fresh State, but for its vectors'
    // storage when remade).
    void make();

    // Pointers, not references: remake() points them at another definition and memory.
    const MapDef* def_;
    Memory* mem_;
    State s_;
    [[nodiscard]] uint32_t percpu_value(uint32_t idx) const { return s_.percpu_first + idx; }
    // Address of the value inside element region `reg` (follows the per-CPU pointer when percpu).
    uint64_t hash_value(uint32_t reg);
    // Where a hash element's value (or per-CPU pointer) starts: after the header and the key.
    [[nodiscard]] uint32_t elem_value_offset() const;
    // Host pointer of the 8 bytes after the key in hash element region `reg`: the value, or for a
    // per-CPU hash the per-CPU pointer, or for a hash of maps the inner map pointer.
    uint8_t* elem_slot(uint32_t reg);
    // Host pointer of array (or array of maps) slot `idx` < max_entries.
    uint8_t* array_slot(uint32_t idx) {
        return mem_->region(s_.obj_region).data + kArrayValueOffset + static_cast<size_t>(idx) * s_.elem_size;
    }
    // The value bytes entries() reports for the element at host pointer `p` (map-in-map: the
    // inner map number of the 8-byte pointer there, 4 bytes little-endian).
    void user_value(const uint8_t* p, std::vector<uint8_t>& out) const;

    struct KeyPos {
        size_t pos;  // the key's index, or where it would be inserted
        bool found;
    };
    [[nodiscard]] KeyPos find_key(const uint8_t* key) const;
    [[nodiscard]] const uint8_t* key_at(size_t n) const { return s_.keys.data() + n * def_->key_size; }
    void insert_key(size_t pos, const uint8_t* key, Elem e);
    void erase_key(size_t pos);
};

}  // namespace patchfuzz::interp
