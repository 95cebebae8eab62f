#include "bpf/interp/map_model.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::interp {
namespace {
constexpr int64_t kEnoent = -2, kE2big = -7, kEexist = -17, kEinval = -22, kEperm = -1;
constexpr uint32_t round8(uint32_t v) { return (v + 7) & ~7u; }
// Arrays bigger than this are not modelled (an execution must stay cheap).
constexpr uint64_t kMaxArrayBytes = 1u << 22;
// Hash elements a model has room for before its first regrowth.
constexpr size_t kHashRoom = 16;
}  // namespace

MapModel::MapModel(const MapDef& def, Memory& mem) : def_(&def), mem_(&mem) { make(); }

MapModel::MapModel(const MapDef& def, Memory& mem, const State& saved) : def_(&def), mem_(&mem), s_(saved) {}

void MapModel::remake(const MapDef& def, Memory& mem) {
    def_ = &def;
    mem_ = &mem;
    State fresh;  // but for the storage of the elements
    fresh.keys = std::move(s_.keys);
    fresh.keys.clear();
    fresh.elems = std::move(s_.elems);
    fresh.elems.clear();
    s_ = std::move(fresh);
    make();
}

void MapModel::remake(const MapDef& def, Memory& mem, const State& saved) {
    def_ = &def;
    mem_ = &mem;
    s_ = saved;  // (a vector's copy assignment keeps its storage when that is large enough)
}

void MapModel::make() {
    const MapDef& def = *def_;
    switch (def.type) {
        case BPF_MAP_TYPE_ARRAY: s_.kind = Kind::Array; break;
        case BPF_MAP_TYPE_PERCPU_ARRAY: s_.kind = Kind::Array; s_.percpu = true; break;
        case BPF_MAP_TYPE_HASH: s_.kind = Kind::Hash; break;
        case BPF_MAP_TYPE_PERCPU_HASH: s_.kind = Kind::Hash; s_.percpu = true; break;
        case BPF_MAP_TYPE_LRU_HASH: s_.kind = Kind::Lru; break;
        case BPF_MAP_TYPE_LRU_PERCPU_HASH: s_.kind = Kind::Lru; s_.percpu = true; break;
        case BPF_MAP_TYPE_PROG_ARRAY: s_.kind = Kind::ProgArray; break;
        case BPF_MAP_TYPE_ARRAY_OF_MAPS: s_.kind = Kind::ArrayOfMaps; break;
        case BPF_MAP_TYPE_HASH_OF_MAPS: s_.kind = Kind::HashOfMaps; break;
        default: s_.kind = def.type == isa::kMapTypeInsnArray ? Kind::InsnArray : Kind::Unsupported;
    }
    // The kernel creates an outer map only with a 4-byte (fd) value (fd_array_map_alloc_check,
    // fd_htab_map_alloc_check); its elements are 8-byte pointers.
    if (map_in_map() && def.value_size != 4) s_.kind = Kind::Unsupported;
    s_.elem_size = s_.kind == Kind::InsnArray || map_in_map() ? 8 : round8(def.value_size);
    uint64_t body = 0;
    if (s_.kind == Kind::Array || s_.kind == Kind::InsnArray || s_.kind == Kind::ArrayOfMaps) {
        if (def.key_size != 4) s_.kind = Kind::Unsupported;
        body = static_cast<uint64_t>(s_.percpu ? 8 : s_.elem_size) * def.max_entries;
        if (body > kMaxArrayBytes) {
            s_.kind = Kind::Unsupported;
            body = 0;
        }
    }
    s_.obj_region = mem_->add(static_cast<uint32_t>(kArrayValueOffset + body), RegionKind::MapValue, true);
    if (s_.kind == Kind::Array && s_.percpu) {
        s_.percpu_first = mem_->add_many(def.max_entries, s_.elem_size, RegionKind::MapValue);
        uint8_t* pptrs = mem_->region(s_.obj_region).data + kArrayValueOffset;
        for (uint32_t i = 0; i < def.max_entries; ++i)
            store_le(pptrs + 8 * i, 8, kPercpuBase + (Memory::addr(percpu_value(i), 0) - kRegionBase));
    }
    if (s_.kind == Kind::Hash || s_.kind == Kind::Lru || s_.kind == Kind::HashOfMaps) {
        // Room for what a run usually inserts (its input's entries and a few updates), in one
        // allocation each instead of a regrowth every few inserts.
        const size_t room = std::min<size_t>(def.max_entries, kHashRoom);
        s_.keys.reserve(room * def.key_size);
        s_.elems.reserve(room);
    }
}

namespace {
// memcpy(dst, src, n) for a map value: most are a few words, which two overlapping host moves
// per size class copy without a call.
inline void copy_value(uint8_t* dst, const uint8_t* src, size_t n) {
    if (n > 16 && n <= 32) {
        const uint64_t a = load_host<uint64_t>(src), b = load_host<uint64_t>(src + 8);
        const uint64_t c = load_host<uint64_t>(src + n - 16), d = load_host<uint64_t>(src + n - 8);
        store_host(dst, a);
        store_host(dst + 8, b);
        store_host(dst + n - 16, c);
        store_host(dst + n - 8, d);
    } else if (n >= 8 && n <= 16) {
        const uint64_t a = load_host<uint64_t>(src), b = load_host<uint64_t>(src + n - 8);
        store_host(dst, a);
        store_host(dst + n - 8, b);
    } else if (n >= 4 && n < 8) {
        const uint32_t a = load_host<uint32_t>(src), b = load_host<uint32_t>(src + n - 4);
        store_host(dst, a);
        store_host(dst + n - 4, b);
    } else if (n != 0) {
        std::memcpy(dst, src, n);
    }
}

// The N (4 or 8) bytes of a key as a big-endian number: for keys of one size, these numbers are
// in memcmp order. One host load, byte-swapped on a little-endian host (compilers make the
// shifts one instruction).
template <size_t N>
[[gnu::always_inline]] inline uint64_t key_rank(const uint8_t* p) {
    static_assert(N == 4 || N == 8);
    static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
    using Word = std::conditional_t<N == 4, uint32_t, uint64_t>;
    Word v;
    std::memcpy(&v, p, N);
    if constexpr (std::endian::native == std::endian::little) {
        if constexpr (N == 4)
            v = byte_swap32(v);
        else
            v = byte_swap64(v);
    }
    return v;
}
// Binary search of `count` sorted N-byte keys at `keys` for `key`: where it is or would go.
template <size_t N>
size_t lower_bound_fixed(const uint8_t* keys, size_t count, const uint8_t* key, bool& found) {
    const uint64_t k = key_rank<N>(key);
    size_t lo = 0, hi = count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (key_rank<N>(keys + mid * N) < k) lo = mid + 1;
        else hi = mid;
    }
    found = lo < count && key_rank<N>(keys + lo * N) == k;
    return lo;
}
}  // namespace

MapModel::KeyPos MapModel::find_key(const uint8_t* key) const {
    const size_t ks = def_->key_size;
    // Most keys are 4 or 8 bytes: compared as numbers, without a memcmp call per step.
    bool found = false;
    if (ks == 4) {
        const size_t pos = lower_bound_fixed<4>(s_.keys.data(), s_.elems.size(), key, found);
        return {pos, found};
    }
    if (ks == 8) {
        const size_t pos = lower_bound_fixed<8>(s_.keys.data(), s_.elems.size(), key, found);
        return {pos, found};
    }
    // memcmp is not called with size 0 (its pointers may then be null).
    auto cmp = [&](size_t n) { return ks == 0 ? 0 : std::memcmp(key_at(n), key, ks); };
    size_t lo = 0, hi = s_.elems.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cmp(mid) < 0) lo = mid + 1;
        else hi = mid;
    }
    return {lo, lo < s_.elems.size() && cmp(lo) == 0};
}

void MapModel::insert_key(size_t pos, const uint8_t* key, Elem e) {
    const size_t ks = def_->key_size;
    s_.keys.insert(s_.keys.begin() + static_cast<std::ptrdiff_t>(pos * ks), key, key + ks);
    s_.elems.insert(s_.elems.begin() + static_cast<std::ptrdiff_t>(pos), e);
}

void MapModel::erase_key(size_t pos) {
    const size_t ks = def_->key_size;
    s_.keys.erase(s_.keys.begin() + static_cast<std::ptrdiff_t>(pos * ks), s_.keys.begin() + static_cast<std::ptrdiff_t>((pos + 1) * ks));
    s_.elems.erase(s_.elems.begin() + static_cast<std::ptrdiff_t>(pos));
}

uint32_t MapModel::elem_value_offset() const { return kHtabElemKeyOffset + round8(def_->key_size); }

uint8_t* MapModel::elem_slot(uint32_t reg) { return mem_->region(reg).data + elem_value_offset(); }

uint64_t MapModel::hash_value(uint32_t reg) {
    uint64_t slot = Memory::addr(reg, elem_value_offset());
    if (!s_.percpu) return slot;
    return kRegionBase + (load_le(elem_slot(reg), 8) - kPercpuBase);
}

uint64_t MapModel::lookup(const uint8_t* key) {
    switch (s_.kind) {
        case Kind::Array:
        case Kind::InsnArray: {
            uint32_t idx = static_cast<uint32_t>(load_le(key, 4));
            if (idx >= def_->max_entries) return 0;
            if (s_.percpu) return Memory::addr(percpu_value(idx), 0);
            return Memory::addr(s_.obj_region, kArrayValueOffset + idx * s_.elem_size);
        }
        case Kind::ArrayOfMaps: {
            // array_of_map_lookup_elem: the slot's inner map pointer, NULL for an empty slot.
            uint32_t idx = static_cast<uint32_t>(load_le(key, 4));
            if (idx >= def_->max_entries) return 0;
            return load_le(array_slot(idx), 8);
        }
        case Kind::HashOfMaps: {
            // htab_of_map_lookup_elem: the element's inner map pointer (never NULL once inserted).
            const KeyPos k = find_key(key);
            if (!k.found) return 0;
            s_.elems[k.pos].last_use = ++s_.clock;
            return load_le(elem_slot(s_.elems[k.pos].region), 8);
        }
        case Kind::Hash:
        case Kind::Lru: {
            const KeyPos k = find_key(key);
            if (!k.found) return 0;
            s_.elems[k.pos].last_use = ++s_.clock;
            return hash_value(s_.elems[k.pos].region);
        }
        default:
            return 0;
    }
}

uint64_t MapModel::lookup_elem(const uint8_t* key) {
    if (s_.kind != Kind::Hash && s_.kind != Kind::Lru && s_.kind != Kind::HashOfMaps) return 0;
    const KeyPos k = find_key(key);
    if (!k.found) return 0;
    s_.elems[k.pos].last_use = ++s_.clock;
    return Memory::addr(s_.elems[k.pos].region, 0);
}

int64_t MapModel::update(const uint8_t* key, const uint8_t* value, uint64_t flags) {
    uint64_t f = flags & 0xff;
    if (f > BPF_EXIST) return kEinval;
    switch (s_.kind) {
        case Kind::Array: {
            // arraymap.c array_map_update_elem: every element exists, so NOEXIST fails.
            uint32_t idx = static_cast<uint32_t>(load_le(key, 4));
            if (idx >= def_->max_entries) return kE2big;
            if (f == BPF_NOEXIST) return kEexist;
            uint8_t* dst = s_.percpu ? mem_->region(percpu_value(idx)).data
                                     : mem_->region(s_.obj_region).data + kArrayValueOffset + static_cast<size_t>(idx) * s_.elem_size;
            std::memcpy(dst, value, def_->value_size);
            return 0;
        }
        case Kind::Hash:
        case Kind::Lru: {
            KeyPos k = find_key(key);
            if (k.found) {
                if (f == BPF_NOEXIST) return kEexist;
                uint32_t r = 0, off = 0;
                uint64_t v = hash_value(s_.elems[k.pos].region);
                if (mem_->region_of(v, r, off)) std::memcpy(mem_->region(r).data + off, value, def_->value_size);
                s_.elems[k.pos].last_use = ++s_.clock;
                return 0;
            }
            if (f == BPF_EXIST) return kEnoent;
            if (s_.elems.size() >= def_->max_entries) {
                if (s_.kind == Kind::Hash || s_.elems.empty()) return kE2big;
                // The least recently used element, the first in key order on a tie.
                size_t victim = 0;
                for (size_t i = 1; i < s_.elems.size(); ++i)
                    if (s_.elems[i].last_use < s_.elems[victim].last_use) victim = i;
                erase_key(victim);
                if (victim < k.pos) --k.pos;
            }
            const uint32_t voff = elem_value_offset();
            uint32_t reg = mem_->add(voff + (s_.percpu ? 8 : round8(def_->value_size)), RegionKind::MapValue);
            std::memcpy(mem_->region(reg).data + kHtabElemKeyOffset, key, def_->key_size);
            if (s_.percpu) {
                uint32_t vr = mem_->add(round8(def_->value_size), RegionKind::MapValue);
                std::memcpy(mem_->region(vr).data, value, def_->value_size);
                store_le(mem_->region(reg).data + voff, 8, kPercpuBase + (Memory::addr(vr, 0) - kRegionBase));
            } else {
                std::memcpy(mem_->region(reg).data + voff, value, def_->value_size);
            }
            insert_key(k.pos, key, Elem{reg, ++s_.clock});
            return 0;
        }
        default:
            return kEperm;  // prog arrays, insn arrays, map-in-map: not updatable from BPF
    }
}

int64_t MapModel::user_update(const uint8_t* key, const uint8_t* value) {
    if (s_.kind == Kind::Array && !s_.percpu) {
        // update(key, value, BPF_ANY) of a plain array, which most inputs fill: every run makes
        // these, so without the flag checks and the dispatch.
        const uint32_t idx = static_cast<uint32_t>(load_le(key, 4));
        if (idx >= def_->max_entries) return kE2big;
        std::memcpy(array_slot(idx), value, def_->value_size);
        return 0;
    }
    if (!map_in_map()) return update(key, value, BPF_ANY);
    // bpf_fd_array_map_update_elem / bpf_fd_htab_map_update_elem: the fd becomes the inner map's
    // pointer. Our "fd" is an inner map number; 0 stands for "no inner map".
    const uint64_t inner = inner_map_addr(static_cast<uint32_t>(load_le(value, 4)));
    if (s_.kind == Kind::ArrayOfMaps) {
        const uint32_t idx = static_cast<uint32_t>(load_le(key, 4));
        if (idx >= def_->max_entries) return kE2big;
        store_le(array_slot(idx), 8, inner);
        return 0;
    }
    const KeyPos k = find_key(key);
    if (inner == 0) {
        if (!k.found) return kEnoent;
        erase_key(k.pos);
        return 0;
    }
    const uint32_t voff = elem_value_offset();
    if (!k.found) {
        if (s_.elems.size() >= def_->max_entries) return kE2big;
        uint32_t reg = mem_->add(voff + 8, RegionKind::MapValue);
        std::memcpy(mem_->region(reg).data + kHtabElemKeyOffset, key, def_->key_size);
        insert_key(k.pos, key, Elem{reg, ++s_.clock});
    }
    store_le(elem_slot(s_.elems[k.pos].region), 8, inner);
    return 0;
}

bool MapModel::user_fill(const std::vector<MapEntry>& entries) {
    const uint32_t ks = def_->key_size, vs = def_->value_size;
    if (s_.kind == Kind::Array) {
        // user_update() of an array, plain or per-CPU (update(key, value, BPF_ANY)): the slot, or
        // this CPU's copy, takes the value; a key out of range fails (E2BIG), and nothing else
        // can. Most inputs fill arrays, and every run of every program fills them again: so one
        // loop without the dispatch per entry.
        for (const MapEntry& e : entries) {
            if (e.key.size() != ks || e.value.size() < vs) return false;
            const uint32_t idx = static_cast<uint32_t>(load_le(e.key.data(), 4));
            if (idx >= def_->max_entries) continue;
            copy_value(s_.percpu ? mem_->region(percpu_value(idx)).data : array_slot(idx), e.value.data(), vs);
        }
        return true;
    }
    for (const MapEntry& e : entries) {
        if (e.key.size() != ks || e.value.size() < vs) return false;
        (void)user_update(e.key.data(), e.value.data());
    }
    return true;
}

void MapModel::user_value(const uint8_t* p, std::vector<uint8_t>& out) const {
    const uint64_t ptr = load_le(p, 8);
    const uint32_t n = inner_map_number(ptr);
    if (ptr != 0 && n == 0) {
        out.assign(p, p + 8);  // not an inner map pointer (nothing writes one): shown raw
        return;
    }
    out = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 24)};
}

int64_t MapModel::remove(const uint8_t* key) {
    switch (s_.kind) {
        case Kind::Array:
            return kEinval;  // array_map_delete_elem
        case Kind::ArrayOfMaps:
        case Kind::HashOfMaps:
            return kEperm;  // not from BPF (see update)
        case Kind::Hash:
        case Kind::Lru: {
            const KeyPos k = find_key(key);
            if (!k.found) return kEnoent;
            erase_key(k.pos);
            return 0;
        }
        default:
            return kEinval;
    }
}

uint64_t MapModel::percpu_direct_value(uint32_t off) const {
    // bpf-next percpu_array direct value: element 0's per-CPU pointer + off, off < value_size.
    if (s_.kind != Kind::Array || !s_.percpu || def_->max_entries == 0 || off >= def_->value_size) return 0;
    return kPercpuBase + (Memory::addr(percpu_value(0), off) - kRegionBase);
}

namespace {
// A 64-bit digest for equality checks, not for security: 16 bytes at a time go through one
// 64x64->128-bit multiply whose two halves are xor-folded, so every input bit reaches every output
// bit in one step and a byte costs about half an instruction. Bytes are taken little-endian, a
// tail shorter than 8 bytes is zero-padded with its length folded in. The constants are digits
// of pi, e and the golden ratio; any odd ones would do, but they must never change between
// builds or hosts (digests are compared within a process only, yet tests and reports rely on
// runs being reproducible).
struct Digest {
    static constexpr uint64_t kPi = 0x243f6a8885a308d3ULL, kE = 0xb7e151628aed2a6bULL, kPhi = 0x9e3779b97f4a7c15ULL;
    uint64_t h = kPi;
    static uint64_t fold(uint64_t a, uint64_t b) {
        const unsigned __int128 m = static_cast<unsigned __int128>(a) * b;
        return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
    }
    void word(uint64_t v) { h = fold(h ^ v ^ kE, kPhi); }
    void bytes(const uint8_t* p, size_t n) {
        for (; n >= 16; p += 16, n -= 16) h = fold(h ^ load_le(p, 8) ^ kE, load_le(p + 8, 8) ^ kPhi);
        if (n >= 8) {
            word(load_le(p, 8));
            p += 8;
            n -= 8;
        }
        if (n) word(load_le(p, static_cast<uint32_t>(n)) ^ (uint64_t{n} << 56));
    }
};
}  // namespace

uint64_t MapModel::content_digest() {
    // What entries() would return is what is digested: for maps of one definition (the only ones
    // compared), equal digests mean equal entries(). Array keys are implied by the position.
    // Every run digests its maps, and arrays whose values fill their slots (a multiple of 8
    // bytes) are the common kind: their values are one contiguous run of bytes, digested here
    // without the set-up of the general case (content_digest_general computes the same).
    if (s_.kind == Kind::Array && !s_.percpu && def_->value_size == s_.elem_size) {
        Digest d;
        d.word(def_->max_entries);
        d.bytes(array_slot(0), size_t{s_.elem_size} * def_->max_entries);
        return d.h;
    }
    return content_digest_general();
}

uint64_t MapModel::content_digest_general() {
    Digest d;
    std::vector<uint8_t> uv;
    if (s_.kind == Kind::ArrayOfMaps) {
        for (uint32_t i = 0; i < def_->max_entries; ++i) {
            user_value(array_slot(i), uv);
            d.word(uv.size());
            d.bytes(uv.data(), uv.size());
        }
    } else if (s_.kind == Kind::HashOfMaps) {
        for (size_t n = 0; n < s_.elems.size(); ++n) {
            d.word(def_->key_size);
            d.bytes(key_at(n), def_->key_size);
            user_value(elem_slot(s_.elems[n].region), uv);
            d.word(uv.size());
            d.bytes(uv.data(), uv.size());
        }
    } else if (s_.kind == Kind::Array || s_.kind == Kind::InsnArray) {
        const uint32_t vs = s_.kind == Kind::InsnArray ? 8 : def_->value_size;
        d.word(def_->max_entries);
        if (s_.percpu) {
            for (uint32_t i = 0; i < def_->max_entries; ++i) d.bytes(mem_->region(percpu_value(i)).data, vs);
        } else if (vs == s_.elem_size) {
            // Values that fill their slots: one contiguous run of bytes.
            d.bytes(array_slot(0), size_t{vs} * def_->max_entries);
        } else {
            const uint8_t* p = array_slot(0);
            for (uint32_t i = 0; i < def_->max_entries; ++i, p += s_.elem_size) d.bytes(p, vs);
        }
    } else if (s_.kind == Kind::Hash || s_.kind == Kind::Lru) {
        for (size_t n = 0; n < s_.elems.size(); ++n) {
            d.word(def_->key_size);
            d.bytes(key_at(n), def_->key_size);
            uint32_t r = 0, off = 0;
            if (mem_->region_of(hash_value(s_.elems[n].region), r, off)) {
                d.word(def_->value_size);
                d.bytes(mem_->region(r).data + off, def_->value_size);
            } else {
                d.word(0);
            }
        }
    }
    return d.h;
}

std::vector<MapEntry> MapModel::entries() {
    std::vector<MapEntry> out;
    auto u32_key = [](uint32_t i) {
        return std::vector<uint8_t>{static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i >> 16),
                                    static_cast<uint8_t>(i >> 24)};
    };
    auto key = [&](size_t n) { return std::vector<uint8_t>(key_at(n), key_at(n) + def_->key_size); };
    if (s_.kind == Kind::ArrayOfMaps) {
        for (uint32_t i = 0; i < def_->max_entries; ++i) {
            MapEntry e{u32_key(i), {}};
            user_value(array_slot(i), e.value);
            out.push_back(std::move(e));
        }
    } else if (s_.kind == Kind::HashOfMaps) {
        for (size_t n = 0; n < s_.elems.size(); ++n) {
            MapEntry e{key(n), {}};
            user_value(elem_slot(s_.elems[n].region), e.value);
            out.push_back(std::move(e));
        }
    } else if (s_.kind == Kind::Array || s_.kind == Kind::InsnArray) {
        uint32_t vs = s_.kind == Kind::InsnArray ? 8 : def_->value_size;
        for (uint32_t i = 0; i < def_->max_entries; ++i) {
            MapEntry e;
            e.key = u32_key(i);
            const uint8_t* p = s_.percpu ? mem_->region(percpu_value(i)).data
                                       : array_slot(i);
            e.value.assign(p, p + vs);
            out.push_back(std::move(e));
        }
    } else if (s_.kind == Kind::Hash || s_.kind == Kind::Lru) {
        for (size_t n = 0; n < s_.elems.size(); ++n) {
            uint32_t r = 0, off = 0;
            MapEntry e{key(n), {}};
            if (mem_->region_of(hash_value(s_.elems[n].region), r, off)) {
                const uint8_t* p = mem_->region(r).data + off;
                e.value.assign(p, p + def_->value_size);
            }
            out.push_back(std::move(e));
        }
    }
    return out;
}

}  // namespace patchfuzz::interp
