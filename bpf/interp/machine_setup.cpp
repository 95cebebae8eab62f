// The interpreter's set-up and results: the regions, ctx and map models a run starts from (built
// from the input, or restored from a PreparedInput's saved SetupImage), and the final ctx view and
// map digests it ends with.
#include <linux/bpf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "bpf/interp/ctx_image.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/interp/machine.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/util/check.hpp"

namespace patchfuzz::interp {
namespace detail {

bool Machine::setup() {
    // A tracing program's ctx is the trampoline's argument array, with two words below it that
    // the inlined get_func_* helpers read (arch_prepare_bpf_trampoline): ctx[-8] the number of
    // arguments, ctx[-16] the traced function's address.
    ctx_base_ = prog_.prog_type == BPF_PROG_TYPE_TRACING ? kTracingCtxPrefix : 0;
    ctx_kind_ = ctx_fields::ctx_kind(prog_.prog_type);
    kernel_ctx_ = ctx_kind_ == ctx_fields::CtxKind::None ? nullptr : ctx_fields::kernel_layout(prog_.ctx_layout);
    if (image_ != nullptr && image_->fits(prog_, ctx_base_)) {
        mem_.restore(image_->memory);
        keep_models(prog_.maps.size());
        for (size_t i = 0; i < prog_.maps.size(); ++i) {
            if (i < maps_.size()) maps_[i].remake(prog_.maps[i], mem_, image_->maps[i]);
            else maps_.emplace_back(prog_.maps[i], mem_, image_->maps[i]);
        }
    } else {
        if (!build_setup()) return false;
        if (image_ != nullptr) {
            // The maps' memory is watched from here on (record_map_digests), and so from the
            // start of every run that restores this set-up: the regions are saved watched.
            mem_.watch(kFirstMapRegion);
            image_->save(prog_, ctx_base_, mem_, maps_);
        }
    }
    // Instruction arrays: each entry's value is the code address of its (xlated) insn, what
    // gotox jumps through. Per program (a rewrite moves insns), so not part of a saved set-up.
    for (const InsnArray& ia : prog_.insn_arrays) {
        if (ia.map_index < 0 || static_cast<size_t>(ia.map_index) >= maps_.size()) continue;
        MapModel& m = maps_[static_cast<size_t>(ia.map_index)];
        if (m.kind() != MapModel::Kind::InsnArray) continue;
        for (size_t e = 0; e < ia.entries.size() && e < m.def().max_entries; ++e) {
            uint32_t r = 0, off = 0;
            uint64_t a = m.direct_value(static_cast<uint32_t>(e * 8));
            if (!mem_.region_of(a, r, off)) continue;
            uint64_t target = ia.entries[e].xlated_off == isa::kInsnDeleted ? 0 : kCodeBase + uint64_t{ia.entries[e].xlated_off} * 8;
            store_le(mem_.region(r).data + off, 8, target);
        }
    }
    return true;
}

// The regions and maps a run starts from, made from the input (and the program's type, attach
// target and map definitions).
bool Machine::build_setup() {
    // Frame f's stack is region f. Only the main frame's is used by every run; a callee's is
    // zeroed when it is entered (push_frame), so it gets storage only then (or on a stray access
    // before, through a pointer made by arithmetic, which reads zeros as from a fresh stack).
    // The main frame's stack starts with the input's bytes from its bottom up, zeros above.
    mem_.add_copy(kStackSize, 0, in_.stack.data(), std::min<size_t>(kStackSize, in_.stack.size()), RegionKind::Stack);
    mem_.add_lazy_many(kMaxFrames - 1, kStackSize, RegionKind::Stack);
    // A converted program's ctx is the kernel structs, filled once the regions they point at exist.
    uint32_t ctx = kernel_ctx_ ? mem_.add(kernel_ctx_size(*kernel_ctx_, ctx_kind_), RegionKind::Ctx)
                               : mem_.add_copy(ctx_base_ + static_cast<uint32_t>(in_.ctx.size()), ctx_base_, in_.ctx.data(),
                                               in_.ctx.size(), RegionKind::Ctx);
    if (!kernel_ctx_ && ctx_kind_ != ctx_fields::CtxKind::None)
        normalize_ctx_view(ctx_kind_, {mem_.region(ctx).data + ctx_base_, in_.ctx.size()});
    if (ctx_base_) {
        store_le(mem_.region(ctx).data, 8, kTracedFuncIp);
        store_le(mem_.region(ctx).data + 8, 8, tracing_nr_args(prog_));
    }
    mem_.add_copy(static_cast<uint32_t>(in_.packet.size()), 0, in_.packet.data(), in_.packet.size(), RegionKind::Packet);
    // pcpu_hot: current_task at +0, cpu_number at +12 (offsets of internal_calls.hpp).
    uint32_t pcpu = mem_.add(16, RegionKind::Ctx, false);
    store_le(mem_.region(pcpu).data, 8, kKsymBase + 0x100000);
    store_le(mem_.region(pcpu).data + (isa::kPcpuCpuNumber - isa::kPcpuCurrentTask), 4, in_.cpu);
    keep_models(prog_.maps.size());
    for (size_t i = 0; i < prog_.maps.size(); ++i) {
        if (i < maps_.size()) maps_[i].remake(prog_.maps[i], mem_);
        else maps_.emplace_back(prog_.maps[i], mem_);
        MapModel& m = maps_[i];
        if (m.kind() == MapModel::Kind::Unsupported) {
            fault(0, "map " + std::to_string(i) + " (type " + std::to_string(prog_.maps[i].type) + ", key size " +
                         std::to_string(prog_.maps[i].key_size) + ") is not modelled",
                  ExecResult::Status::Unsupported);
            return false;
        }
        // A wrong-sized entry ends the run before it starts (no result but the fault), so the
        // entries applied before it are never seen.
        if (i < in_.maps.size() && !m.user_fill(in_.maps[i])) {
            fault(0, "input for map " + std::to_string(i) + " has an entry of the wrong size", ExecResult::Status::Unsupported);
            return false;
        }
    }
    if (kernel_ctx_) build_kernel_ctx();
    return true;
}

// The kernel structs of a converted program's ctx (ctx_image.hpp): the ctx region (sk_buff or
// xdp_buff) and, after the maps' regions, the net_device and xdp_rxq_info it points at.
void Machine::build_kernel_ctx() {
    const ctx_fields::KernelLayout& l = *kernel_ctx_;
    KernelCtxBytes b;
    CtxPointers ptrs;
    const uint32_t dev = mem_.add(l.dev_size, RegionKind::Ctx, false);
    ptrs.dev = Memory::addr(dev, 0);
    if (ctx_kind_ == ctx_fields::CtxKind::Xdp) {
        const uint32_t rxq = mem_.add(l.rxq_size, RegionKind::Ctx, false);
        ptrs.rxq = Memory::addr(rxq, 0);
        b.rxq = mem_.region(rxq).data;
    }
    b.dev = mem_.region(dev).data;
    b.ctx = mem_.region(kRegionCtx).data;
    ptrs.packet = Memory::addr(kRegionPacket, 0);
    ptrs.packet_end = Memory::addr(kRegionPacket, mem_.region(kRegionPacket).size);
    std::array<uint8_t, ctx_fields::kSkbUapiSize> view{};
    const size_t n = std::min(view.size(), in_.ctx.size());
    std::copy_n(in_.ctx.begin(), n, view.begin());
    normalize_ctx_view(ctx_kind_, {view.data(), n});
    fill_kernel_ctx(l, ctx_kind_, {view.data(), n}, ptrs, b);
}

// res_.ctx: the ctx region's bytes, or for a socket filter, tc or XDP program the uapi view
// (normalized as it was made, or read back from the kernel structs), so the two forms compare.
void Machine::final_ctx() {
    if (!kernel_ctx_) {
        copy_bytes(res_.ctx, mem_.region(kRegionCtx).data, mem_.region(kRegionCtx).size);
        if (ctx_kind_ != ctx_fields::CtxKind::None) normalize_ctx_view(ctx_kind_, {res_.ctx.data() + ctx_base_, in_.ctx.size()});
        return;
    }
    const ctx_fields::KernelLayout& l = *kernel_ctx_;
    res_.ctx.assign(in_.ctx.begin(), in_.ctx.end());
    normalize_ctx_view(ctx_kind_, res_.ctx);
    KernelCtxBytes b;
    b.ctx = mem_.region(kRegionCtx).data;
    uint64_t dev = load_le(b.ctx + l.skb_dev, 8);
    if (ctx_kind_ == ctx_fields::CtxKind::Xdp) {
        b.rxq = mem_.translate(load_le(b.ctx + l.xdp_rxq, 8), l.rxq_size, false);
        PATCHFUZZ_CHECK(b.rxq != nullptr, "interp: the xdp_rxq_info image is gone");
        dev = load_le(b.rxq + l.rxq_dev, 8);
    }
    b.dev = mem_.translate(dev, l.dev_size, false);
    PATCHFUZZ_CHECK(b.dev != nullptr, "interp: the net_device image is gone");
    read_back_ctx_view(l, ctx_kind_, b, res_.ctx);
}

// res_.map_digests. Maps the run left as set up (no map helper changed one, no write reached
// their memory) have the digests of the set-up: taken from the saved set-up when a run before
// noted them there, else computed and noted.
void Machine::record_map_digests() {
    res_.map_digests.reserve(maps_.size());
    const bool as_set_up = image_ != nullptr && !maps_updated_ && !mem_.watched_written();
    const bool noted = as_set_up && image_->digests_saved;
    for (size_t i = 0; i < maps_.size(); ++i) {
        MapModel& m = maps_[i];
        const bool program_own = m.kind() == MapModel::Kind::InsnArray;  // (not part of the set-up)
        res_.map_digests.push_back(noted && !program_own ? image_->map_digests[i] : m.content_digest());
    }
    if (as_set_up && !noted) {
        image_->map_digests = res_.map_digests;
        image_->digests_saved = true;
    }
}

}  // namespace detail

PreparedInput::PreparedInput() : image_(std::make_unique<SetupImage>()) {}
PreparedInput::PreparedInput(const ExecInput& in) : in_(&in), image_(std::make_unique<SetupImage>()) {}
PreparedInput::~PreparedInput() = default;
PreparedInput::PreparedInput(PreparedInput&&) noexcept = default;
PreparedInput& PreparedInput::operator=(PreparedInput&&) noexcept = default;
void PreparedInput::reset(const ExecInput& in) {
    in_ = &in;
    image_->saved = false;
}
bool PreparedInput::has_setup() const { return image_->saved; }

}  // namespace patchfuzz::interp
