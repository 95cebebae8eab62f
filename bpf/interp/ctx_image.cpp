#include "bpf/interp/ctx_image.hpp"

#include <cstring>

namespace patchfuzz::interp {
namespace {

namespace cf = ctx_fields;
using cf::Field;

uint64_t get_le(const uint8_t* p, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t k = 0; k < n; ++k) v |= uint64_t{p[k]} << (8 * k);
    return v;
}
void put_le(uint8_t* p, uint32_t n, uint64_t v) {
    for (uint32_t k = 0; k < n; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

// A u32 field of the view (0 where the view ends before it).
uint32_t view_u32(std::span<const uint8_t> view, Field f) {
    const uint16_t off = cf::uapi_field(f).off;
    return off + 4u <= view.size() ? static_cast<uint32_t>(get_le(view.data() + off, 4)) : 0;
}
void set_view_u32(std::span<uint8_t> view, Field f, uint32_t v) {
    const uint16_t off = cf::uapi_field(f).off;
    if (off + 4u <= view.size()) put_le(view.data() + off, 4, v);
}

// The skb fields the kernel keeps as plain integers: where, and how wide.
struct Plain {
    Field field;
    uint16_t cf::KernelLayout::*off;
    uint8_t bytes;
};
constexpr Plain kSkbPlain[] = {
    {Field::Len, &cf::KernelLayout::skb_len, 4},
    {Field::Mark, &cf::KernelLayout::skb_mark, 4},
    {Field::QueueMapping, &cf::KernelLayout::skb_queue_mapping, 2},
    {Field::Protocol, &cf::KernelLayout::skb_protocol, 2},
    {Field::VlanTci, &cf::KernelLayout::skb_vlan_tci, 2},
    {Field::VlanProto, &cf::KernelLayout::skb_vlan_proto, 2},
    {Field::Priority, &cf::KernelLayout::skb_priority, 4},
    {Field::IngressIfindex, &cf::KernelLayout::skb_iif, 4},
    {Field::TcIndex, &cf::KernelLayout::skb_tc_index, 2},
    {Field::Hash, &cf::KernelLayout::skb_hash, 4},
    {Field::NapiId, &cf::KernelLayout::skb_napi_id, 4},
};

bool is_skb(cf::CtxKind k) { return k == cf::CtxKind::SkbFilter || k == cf::CtxKind::SkbTc; }

}  // namespace

uint32_t kernel_ctx_size(const cf::KernelLayout& layout, cf::CtxKind kind) {
    return kind == cf::CtxKind::Xdp ? layout.xdp_size : layout.skb_size;
}

void normalize_ctx_view(cf::CtxKind kind, std::span<uint8_t> view) {
    if (is_skb(kind)) {
        for (Field f : {Field::QueueMapping, Field::Protocol, Field::VlanTci, Field::VlanProto, Field::TcIndex})
            set_view_u32(view, f, view_u32(view, f) & 0xffff);
        set_view_u32(view, Field::PktType, view_u32(view, Field::PktType) & 7);
        set_view_u32(view, Field::VlanPresent, (view_u32(view, Field::VlanTci) | view_u32(view, Field::VlanProto)) != 0);
        if (view_u32(view, Field::NapiId) < cf::kMinNapiId) set_view_u32(view, Field::NapiId, 0);
        for (Field f : {Field::Data, Field::DataEnd, Field::DataMeta}) set_view_u32(view, f, 0);
    } else if (kind == cf::CtxKind::Xdp) {
        for (Field f : {Field::XdpData, Field::XdpDataEnd, Field::XdpDataMeta}) set_view_u32(view, f, 0);
    }
}

void fill_kernel_ctx(const cf::KernelLayout& L, cf::CtxKind kind, std::span<const uint8_t> view, const CtxPointers& ptrs,
                     const KernelCtxBytes& out) {
    std::memset(out.ctx, 0, kernel_ctx_size(L, kind));
    std::memset(out.dev, 0, L.dev_size);
    if (kind == cf::CtxKind::Xdp) {
        std::memset(out.rxq, 0, L.rxq_size);
        put_le(out.ctx + L.xdp_data, 8, ptrs.packet);
        put_le(out.ctx + L.xdp_data_end, 8, ptrs.packet_end);
        put_le(out.ctx + L.xdp_data_meta, 8, ptrs.packet);
        put_le(out.ctx + L.xdp_rxq, 8, ptrs.rxq);
        put_le(out.rxq + L.rxq_dev, 8, ptrs.dev);
        put_le(out.rxq + L.rxq_queue_index, 4, view_u32(view, Field::XdpRxQueueIndex));
        put_le(out.dev + L.dev_ifindex, 4, view_u32(view, Field::XdpIngressIfindex));
        return;
    }
    for (const Plain& p : kSkbPlain) put_le(out.ctx + L.*p.off, p.bytes, view_u32(view, p.field));
    out.ctx[L.skb_pkt_type] = static_cast<uint8_t>(view_u32(view, Field::PktType) & 7);
    if (L.skb_vlan_present) out.ctx[L.skb_vlan_present] = static_cast<uint8_t>(view_u32(view, Field::VlanPresent) & 1);
    put_le(out.ctx + L.skb_dev, 8, ptrs.dev);
    put_le(out.dev + L.dev_ifindex, 4, view_u32(view, Field::Ifindex));
    const cf::UapiField& cb = cf::uapi_field(Field::Cb);
    for (uint32_t k = 0; k < cb.size && cb.off + k < view.size(); ++k) out.ctx[L.skb_cb + k] = view[cb.off + k];
    put_le(out.ctx + L.skb_data, 8, ptrs.packet);
    put_le(out.ctx + L.skb_data_end, 8, ptrs.packet_end);
    put_le(out.ctx + L.skb_data_meta, 8, ptrs.packet);
}

void read_back_ctx_view(const cf::KernelLayout& L, cf::CtxKind kind, const KernelCtxBytes& in, std::span<uint8_t> view) {
    if (kind == cf::CtxKind::Xdp) {
        set_view_u32(view, Field::XdpRxQueueIndex, static_cast<uint32_t>(get_le(in.rxq + L.rxq_queue_index, 4)));
        set_view_u32(view, Field::XdpIngressIfindex, static_cast<uint32_t>(get_le(in.dev + L.dev_ifindex, 4)));
        return;
    }
    for (const Plain& p : kSkbPlain) set_view_u32(view, p.field, static_cast<uint32_t>(get_le(in.ctx + L.*p.off, p.bytes)));
    set_view_u32(view, Field::PktType, in.ctx[L.skb_pkt_type] & 7u);
    const uint32_t vlan_all = static_cast<uint32_t>(get_le(in.ctx + L.skb_vlan_proto, 4));
    set_view_u32(view, Field::VlanPresent, L.skb_vlan_present ? in.ctx[L.skb_vlan_present] & 1u : vlan_all != 0);
    set_view_u32(view, Field::Ifindex, static_cast<uint32_t>(get_le(in.dev + L.dev_ifindex, 4)));
    const cf::UapiField& cb = cf::uapi_field(Field::Cb);
    for (uint32_t k = 0; k < cb.size && cb.off + k < view.size(); ++k) view[cb.off + k] = in.ctx[L.skb_cb + k];
}

}  // namespace patchfuzz::interp
