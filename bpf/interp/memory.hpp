#pragma once
// Memory of one execution: a table of typed regions addressed by 64-bit pointer values
// (kRegionBase + (region << 32) + offset, see interp.hpp). Storage is owned here and never moves
// while the execution runs, so translated host pointers stay valid.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bpf/interp/interp.hpp"

namespace patchfuzz::interp {

enum class RegionKind : uint8_t { Stack, Ctx, Packet, MapValue, Dead };

// Always made with every field given. Trivial (no member initializers), so that a table of
// regions is copied with one memcpy (Memory::restore), not element by element.
struct Region {
    uint8_t* data;
    uint32_t size;
    bool writable;
    RegionKind kind;
    // Writable, but its first write through translate() is to be noticed (Memory::watch): until
    // then `writable` is false, so that the write leaves translate()'s fast path.
    bool watched;
};
static_assert(std::is_trivial_v<Region>);

class Memory {
public:
    // The storage of the previous execution on this thread is reused (a run of a small program
    // is short enough for the mallocs of its own tables and chunks to count).
    Memory() : ws_(Workspace::take()) {
        ws_->regions.clear();
        sync_regions();
        Chunk& c = ws_->chunks.front();
        chunk_next_ = c.data.get();
        chunk_left_ = c.size;
    }
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;
    ~Memory() { Workspace::give_back(ws_); }
    // Adds a zero-filled region of `size` bytes; returns its index.
    uint32_t add(uint32_t size, RegionKind kind, bool writable = true) {
        ws_->regions.push_back(Region{allocate(size), size, writable, kind, false});
        sync_regions();
        return static_cast<uint32_t>(count_ - 1);
    }
    // A region of `size` bytes holding the `n` bytes at `src` from offset `at` on, zero elsewhere
    // (at + n <= size): what add() and a copy make, without zeroing what is copied over.
    uint32_t add_copy(uint32_t size, uint32_t at, const uint8_t* src, size_t n, RegionKind kind, bool writable = true) {
        uint8_t* p = allocate_bytes_uninit(round16(size));
        // Most calls copy the whole region: no call for an empty part.
        if (at) std::memset(p, 0, at);
        if (n) std::memcpy(p + at, src, n);
        if (const size_t rest = size - at - n) std::memset(p + at + n, 0, rest);
        ws_->regions.push_back(Region{p, size, writable, kind, false});
        sync_regions();
        return static_cast<uint32_t>(count_ - 1);
    }
    // `count` regions of `size` bytes each, as that many add() calls make them (consecutive
    // indices; returns the first), from one allocation: a per-CPU array adds one per element.
    uint32_t add_many(uint32_t count, uint32_t size, RegionKind kind, bool writable = true) {
        const uint32_t first = static_cast<uint32_t>(count_);
        const size_t stride = round16(size);
        uint8_t* p = count ? allocate_bytes(stride * count) : nullptr;
        std::vector<Region>& regions = ws_->regions;
        regions.reserve(regions.size() + count);
        for (uint32_t i = 0; i < count; ++i, p += stride) regions.push_back(Region{p, size, writable, kind, false});
        sync_regions();
        return first;
    }
    // The same region, but its storage is allocated (zeroed) only when it is first used, by an
    // access through translate(). Until then it has size 0, so the fast path of translate() sees
    // no difference; an access that fails there looks for a lazy region before it fails. An
    // execution adds eight frame stacks and most runs enter none but the first.
    uint32_t add_lazy(uint32_t size, RegionKind kind, bool writable = true) {
        const uint32_t r = static_cast<uint32_t>(count_);
        if (r >= kMaxLazy) return add(size, kind, writable);
        ws_->regions.push_back(Region{nullptr, 0, writable, kind, false});
        sync_regions();
        lazy_size_[r] = size;
        lazy_mask_ |= uint32_t{1} << r;
        return r;
    }
    // `count` regions as that many add_lazy() calls make them (consecutive indices; returns the
    // first), with the table grown once: an execution adds its seven callee stacks so.
    uint32_t add_lazy_many(uint32_t count, uint32_t size, RegionKind kind, bool writable = true) {
        const uint32_t first = static_cast<uint32_t>(count_);
        if (first + count > kMaxLazy) [[unlikely]] {
            for (uint32_t k = 0; k < count; ++k) add_lazy(size, kind, writable);
            return first;
        }
        ws_->regions.insert(ws_->regions.end(), count, Region{nullptr, 0, writable, kind, false});
        sync_regions();
        std::fill_n(lazy_size_ + first, count, size);
        lazy_mask_ |= ((uint32_t{1} << count) - 1) << first;
        return first;
    }
    // Region `r` reads as all zeros from now on (a frame's stack on entry). A lazy one already
    // does; any other among the first kMaxLazy becomes lazy again, keeping its storage, which is
    // cleared only when an access first reaches it: many frames (bpf_loop callbacks, small
    // subprograms) never touch their stack, and clearing 512 bytes per call was most of a call's
    // cost. Whether it is cleared now or at its first access, every access sees the same bytes.
    void fresh(uint32_t r) {
        if (r >= kMaxLazy) [[unlikely]] {
            std::memset(regions_[r].data, 0, regions_[r].size);
            return;
        }
        const uint32_t bit = uint32_t{1} << r;
        if (lazy_mask_ & bit) return;
        Region& reg = regions_[r];
        lazy_size_[r] = reg.size;
        reg.size = 0;
        lazy_mask_ |= bit;
    }
    static constexpr uint64_t addr(uint32_t region, uint32_t off) {
        return kRegionBase + (static_cast<uint64_t>(region) << 32) + off;
    }
    // Host pointer for [addr, addr+size), or nullptr when the access leaves every region.
    uint8_t* translate(uint64_t a, uint32_t size, bool write) { return translate_in<false>(a, size, write); }
    // translate() of an access of one byte or more (what every insn makes). A region such an
    // access fits in has storage, so success is never a null pointer: the compiler is told, so
    // that an insn's test of the result, inlined, is left with the failures to test.
    uint8_t* translate_access(uint64_t a, uint32_t size, bool write) { return translate_in<true>(a, size, write); }
    // Every writable region from `first` on is watched from now on: watched_written() tells
    // whether a write through translate() reached one of them since. Writes made otherwise (the
    // map models write their memory directly) are not seen. Costs nothing per access: a watched
    // region is not writable until its first write, which takes translate()'s slow path.
    void watch(uint32_t first) {
        for (size_t r = first; r < count_; ++r) {
            Region& reg = regions_[r];
            if (!reg.writable) continue;
            reg.writable = false;
            reg.watched = true;
        }
    }
    [[nodiscard]] bool watched_written() const { return watched_written_; }
    Region& region(uint32_t r) { return regions_[r]; }
    [[nodiscard]] uint32_t count() const { return static_cast<uint32_t>(count_); }
    // Region index of a pointer value when it points into (or one past) a known region.
    [[nodiscard]] bool region_of(uint64_t a, uint32_t& r, uint32_t& off) const {
        uint64_t d = a - kRegionBase;
        if ((d >> 32) >= count_) return false;
        r = static_cast<uint32_t>(d >> 32);
        off = static_cast<uint32_t>(d);
        return true;
    }

    // A copy of a memory's regions and their bytes (lazy regions stay lazy): Memory::save() makes
    // it, Memory::restore() makes a fresh memory equal to the saved one again, region for region
    // and byte for byte. What the runs of one input on several programs start from
    // (interp::PreparedInput): one memcpy instead of every region built and filled again.
    static constexpr uint32_t kMaxLazy = 16;  // add_lazy() of a later region adds a plain one
    struct Image {
        // The regions as they were, lazy ones with data nullptr. When `base` is not 0 the bytes
        // were one block at address `base` (all in the first chunk), and each region's data still
        // points where it was: its bytes are at data - base in `bytes`. Else `offsets` says where.
        std::vector<Region> regions;
        uintptr_t base = 0;
        std::vector<uint32_t> offsets;  // when base == 0: where region r's bytes start in `bytes` (a multiple of 16), or kLazy
        std::vector<uint8_t> bytes;
        uint32_t lazy_mask = 0;
        uint32_t lazy_size[kMaxLazy] = {};
        static constexpr uint32_t kLazy = ~0u;
    };
    void save(Image& img) const {
        img.regions.clear();  // (as in restore())
        img.regions.insert(img.regions.end(), regions_, regions_ + count_);
        for (uint32_t m = lazy_mask_; m != 0; m &= m - 1) img.regions[static_cast<size_t>(std::countr_zero(m))].data = nullptr;
        if (ws_->current == 0) {
            // Every region was cut from the first chunk, one after the other from its start: one
            // copy of what was cut (set-ups are a few KiB, far less than a chunk).
            const uint8_t* const start = ws_->chunks.front().data.get();
            img.bytes.assign(start, static_cast<const uint8_t*>(chunk_next_));
            img.base = reinterpret_cast<uintptr_t>(start);
            img.offsets.clear();
        } else {
            img.base = 0;
            img.offsets.resize(count_);
            size_t total = 0;
            for (size_t r = 0; r < count_; ++r) total += is_lazy(static_cast<uint32_t>(r)) ? 0 : round16(regions_[r].size);
            img.bytes.resize(total);
            size_t at = 0;
            for (size_t r = 0; r < count_; ++r) {
                if (is_lazy(static_cast<uint32_t>(r))) {
                    img.offsets[r] = Image::kLazy;
                    continue;
                }
                img.offsets[r] = static_cast<uint32_t>(at);
                if (regions_[r].size) std::memcpy(img.bytes.data() + at, regions_[r].data, regions_[r].size);
                at += round16(regions_[r].size);
            }
        }
        img.lazy_mask = lazy_mask_;
        std::memcpy(img.lazy_size, lazy_size_, sizeof lazy_size_);  // (std::copy calls memmove)
    }
    // Only on a memory that has no region yet.
    void restore(const Image& img) {
        uint8_t* base = allocate_bytes_uninit(img.bytes.size());
        if (!img.bytes.empty()) std::memcpy(base, img.bytes.data(), img.bytes.size());
        std::vector<Region>& regions = ws_->regions;
        // Emptied first: the table of the run before is mostly longer or shorter, and assign()
        // then copies in two parts.
        regions.clear();
        regions.insert(regions.end(), img.regions.begin(), img.regions.end());
        const uintptr_t at = reinterpret_cast<uintptr_t>(base);
        // A memory saved from this thread's first chunk and restored there (what the runs of one
        // input on one thread do) has its regions where they were: the table is right as it is.
        if (img.base != at) {
            for (size_t r = 0; r < regions.size(); ++r) {
                Region& reg = regions[r];
                if (img.base != 0) reg.data = reg.data ? base + (reinterpret_cast<uintptr_t>(reg.data) - img.base) : nullptr;
                else reg.data = img.offsets[r] == Image::kLazy ? nullptr : base + img.offsets[r];
            }
        }
        sync_regions();
        lazy_mask_ = img.lazy_mask;
        std::memcpy(lazy_size_, img.lazy_size, sizeof lazy_size_);
    }

private:
    static constexpr size_t kChunkSize = 16 * 1024;
    // A block of storage regions are cut from.
    struct Chunk {
        std::unique_ptr<uint8_t[]> data;
        size_t size = 0;
    };
    // What an execution's memory is made in, kept per thread from one execution to the next:
    // chunks [0, current] are this execution's. Regions are zeroed when they are cut (one
    // memset of all a run used, at its end, measured as more instructions: a few KiB are enough
    // for glibc's `rep stosb`).
    struct Workspace {
        std::vector<Chunk> chunks;  // never empty
        size_t current = 0;
        bool grew = false;  // a chunk was added during this execution
        std::vector<Region> regions;
        bool busy = false;
        bool own = false;  // made for one execution because the thread's was busy: deleted after it

        Workspace() { chunks.push_back(Chunk{std::unique_ptr<uint8_t[]>(new uint8_t[kChunkSize]), kChunkSize}); }
        static Workspace* take() {
            static thread_local Workspace mine;
            if (!mine.busy) {
                mine.busy = true;
                return &mine;
            }
            // Another execution on this thread is running (none does today): one of its own.
            Workspace* w = new Workspace;
            w->busy = w->own = true;
            return w;
        }
        static void give_back(Workspace* w) {
            w->current = 0;
            if (w->grew) {
                // Chunks beyond the standard size served one execution's big regions: not kept.
                std::erase_if(w->chunks, [](const Chunk& c) { return c.size != kChunkSize; });
                if (w->chunks.empty()) w->chunks.push_back(Chunk{std::unique_ptr<uint8_t[]>(new uint8_t[kChunkSize]), kChunkSize});
                if (w->chunks.size() > kMaxChunksKept) w->chunks.resize(kMaxChunksKept);
                w->grew = false;
            }
            w->busy = false;
            if (w->own) delete w;
        }
    };
    static constexpr size_t kMaxChunksKept = 8;

    // Zeroed bytes from a bump arena of chunks that are never moved or freed before the Memory
    // is. Bounds are enforced by translate(), not by the allocator.
    static constexpr size_t round16(uint32_t size) { return (size_t{size} + 15) & ~size_t{15}; }
    uint8_t* allocate(uint32_t size) { return allocate_bytes(round16(size)); }
    uint8_t* allocate_bytes(size_t need) {
        uint8_t* p = allocate_bytes_uninit(need);
        std::memset(p, 0, need);
        return p;
    }
    uint8_t* allocate_bytes_uninit(size_t need) {
        if (chunk_left_ < need) [[unlikely]]
            next_chunk(need);
        uint8_t* p = chunk_next_;
        chunk_next_ += need;
        chunk_left_ -= need;
        return p;
    }
    // Makes the current chunk one with at least `need` free bytes: the next kept one when it is
    // big enough, else a new one in its place.
    [[gnu::noinline]] void next_chunk(size_t need) {
        Workspace& w = *ws_;
        ++w.current;
        if (w.current == w.chunks.size() || w.chunks[w.current].size < need) {
            const size_t size = std::max(kChunkSize, need);
            w.chunks.insert(w.chunks.begin() + static_cast<std::ptrdiff_t>(w.current),
                            Chunk{std::unique_ptr<uint8_t[]>(new uint8_t[size]), size});
            w.grew = true;
        }
        chunk_next_ = w.chunks[w.current].data.get();
        chunk_left_ = w.chunks[w.current].size;
    }
    // Lazy regions (add_lazy): those among the first kMaxLazy whose storage is not allocated yet.
    [[nodiscard]] bool is_lazy(uint32_t r) const { return r < kMaxLazy && ((lazy_mask_ >> r) & 1) != 0; }
    // A lazy region gets zeroed storage: its own again when fresh() made it lazy, else new.
    void materialize(uint32_t r) {
        Region& reg = regions_[r];
        if (reg.data) std::memset(reg.data, 0, lazy_size_[r]);
        else reg.data = allocate(lazy_size_[r]);
        reg.size = lazy_size_[r];
        lazy_mask_ &= ~(uint32_t{1} << r);
    }
    // translate() of an access beyond the size of region r: nullptr, unless the region is lazy
    // and this is its first use, which allocates it. Out of line, so that translate(), inlined
    // at every access of the interpreter, stays small.
    [[gnu::noinline]] uint8_t* translate_lazy(uint32_t r, uint64_t off, uint32_t size, bool write) {
        if (!is_lazy(r)) return nullptr;
        materialize(r);
        const Region& reg = regions_[r];
        if (off + size > reg.size) return nullptr;
        if (write && !reg.writable) return translate_watched(r, off);
        return reg.data + off;
    }
    template <bool kSomeBytes>
    uint8_t* translate_in(uint64_t a, uint32_t size, bool write) {
        uint64_t d = a - kRegionBase;
        uint64_t r = d >> 32;
        if (r >= count_) return nullptr;
        const Region& reg = regions_[r];
        uint64_t off = static_cast<uint32_t>(d);
        if (off + size > reg.size) [[unlikely]]
            return translate_lazy(static_cast<uint32_t>(r), off, size, write);
        if (write && !reg.writable) [[unlikely]]
            return translate_watched(static_cast<uint32_t>(r), off);
        uint8_t* const p = reg.data + off;
        // (size >= 1 fits: the region's size is not 0, and only a lazy region has no storage.)
        if constexpr (kSomeBytes)
            if (p == nullptr) __builtin_unreachable();
        return p;
    }
    // translate() of a write to a region that is not writable: nullptr, unless the region is
    // watched and this is its first write, which is noted and makes it writable.
    [[gnu::noinline]] uint8_t* translate_watched(uint32_t r, uint64_t off) {
        Region& reg = regions_[r];
        if (!reg.watched) return nullptr;
        reg.watched = false;
        reg.writable = true;
        watched_written_ = true;
        return reg.data + off;
    }
    // The region table as translate() reads it (two loads, no vector size arithmetic), redone
    // after every change of ws_->regions.
    void sync_regions() {
        regions_ = ws_->regions.data();
        count_ = ws_->regions.size();
    }

    Workspace* const ws_;
    Region* regions_ = nullptr;
    size_t count_ = 0;
    uint8_t* chunk_next_ = nullptr;  // free bytes of the current chunk
    size_t chunk_left_ = 0;
    uint32_t lazy_mask_ = 0;  // bit r: region r is lazy
    bool watched_written_ = false;
    uint32_t lazy_size_[kMaxLazy];  // of lazy regions only
};

// Little-endian loads/stores independent of the host's byte order: BPF targets we model (x86-64,
// arm64) are little-endian. On a little-endian host the sizes of BPF accesses are one host move
// each (compilers keep the byte loop a loop); any other host or size takes the byte loop.
template <typename T>
inline T load_host(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <typename T>
inline void store_host(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof v);
}
// The bytes of a 16-, 32- or 64-bit word in reverse order (BPF_END; key order in map_model.cpp).
// Written as shifts, which compilers make one instruction.
constexpr uint16_t byte_swap16(uint16_t v) { return static_cast<uint16_t>((v << 8) | (v >> 8)); }
constexpr uint32_t byte_swap32(uint32_t v) { return ((v & 0xffu) << 24) | ((v & 0xff00u) << 8) | ((v >> 8) & 0xff00u) | (v >> 24); }
constexpr uint64_t byte_swap64(uint64_t v) {
    return (uint64_t{byte_swap32(static_cast<uint32_t>(v))} << 32) | byte_swap32(static_cast<uint32_t>(v >> 32));
}
inline uint64_t load_le(const uint8_t* p, uint32_t size) {
    if constexpr (std::endian::native == std::endian::little) {
        switch (size) {
            case 1: return p[0];
            case 2: return load_host<uint16_t>(p);
            case 4: return load_host<uint32_t>(p);
            case 8: return load_host<uint64_t>(p);
            default: break;
        }
    }
    uint64_t v = 0;
    for (uint32_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}
inline void store_le(uint8_t* p, uint32_t size, uint64_t v) {
    if constexpr (std::endian::native == std::endian::little) {
        switch (size) {
            case 1: p[0] = static_cast<uint8_t>(v); return;
            case 2: store_host(p, static_cast<uint16_t>(v)); return;
            case 4: store_host(p, static_cast<uint32_t>(v)); return;
            case 8: store_host(p, v); return;
            default: break;
        }
    }
    for (uint32_t i = 0; i < size; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace patchfuzz::interp
