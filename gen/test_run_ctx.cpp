#include "gen/test_run_ctx.hpp"

#include <linux/bpf.h>

#include <algorithm>

#include "bpf/passes/ctx_fields.hpp"

namespace patchfuzz::gen {
namespace {

namespace cf = ctx_fields;
using cf::Field;

constexpr uint32_t kEthHeader = 14;
constexpr uint32_t kEthP8023Min = 0x600;  // ETH_P_802_3_MIN: smaller type fields are lengths
constexpr uint16_t kEthP8023 = 0x0001, kEthP8022 = 0x0004;
constexpr uint32_t kPacketHost = 0, kPacketMulticast = 2, kPacketOtherHost = 3;
constexpr uint32_t kLoopbackIfindex = 1;

void put_u32(std::vector<uint8_t>& v, Field f, uint32_t x) {
    const uint16_t off = cf::uapi_field(f).off;
    for (uint32_t k = 0; k < 4; ++k) v[off + k] = static_cast<uint8_t>(x >> (8 * k));
}
void copy_u32(std::vector<uint8_t>& to, std::span<const uint8_t> from, uint16_t off) {
    for (uint32_t k = 0; k < 4; ++k) to[off + k] = off + k < from.size() ? from[off + k] : 0;
}

}  // namespace

std::vector<uint8_t> test_run_ctx_view(uint32_t prog_type, std::span<const uint8_t> packet, const SkbCtxIn& in) {
    const cf::CtxKind kind = cf::ctx_kind(prog_type);
    if (kind == cf::CtxKind::Xdp) {
        std::vector<uint8_t> v(cf::kXdpUapiSize, 0);
        put_u32(v, Field::XdpIngressIfindex, kLoopbackIfindex);
        return v;
    }
    if (kind == cf::CtxKind::None || packet.size() < kEthHeader + 2) return {};
    std::vector<uint8_t> v(cf::kSkbUapiSize, 0);
    const auto size = static_cast<uint32_t>(packet.size());
    put_u32(v, Field::Len, kind == cf::CtxKind::SkbFilter ? size - kEthHeader : size);
    const bool group = packet[0] & 1;
    const bool ours = std::all_of(packet.begin(), packet.begin() + 6, [](uint8_t b) { return b == 0; });
    put_u32(v, Field::PktType, group ? kPacketMulticast : ours ? kPacketHost : kPacketOtherHost);
    uint16_t proto = static_cast<uint16_t>(packet[12] << 8 | packet[13]);
    if (proto < kEthP8023Min) proto = packet[14] == 0xff && packet[15] == 0xff ? kEthP8023 : kEthP8022;
    put_u32(v, Field::Protocol, static_cast<uint32_t>(proto >> 8 | (proto & 0xff) << 8));  // __be16, read as stored
    put_u32(v, Field::Ifindex, kLoopbackIfindex);
    put_u32(v, Field::Mark, in.mark);
    put_u32(v, Field::Priority, in.priority);
    put_u32(v, Field::IngressIfindex, in.ingress_ifindex);
    for (uint32_t k = 0; k < in.cb.size(); ++k)
        for (uint32_t b = 0; b < 4; ++b) v[cf::uapi_field(Field::Cb).off + 4 * k + b] = static_cast<uint8_t>(in.cb[k] >> (8 * b));
    return v;
}

std::vector<uint8_t> test_run_ctx_in(uint32_t prog_type, std::span<const uint8_t> view) {
    const cf::CtxKind kind = cf::ctx_kind(prog_type);
    if (view.empty() || kind == cf::CtxKind::Xdp) return {};
    if (kind == cf::CtxKind::None) return {view.begin(), view.end()};
    std::vector<uint8_t> in(cf::kSkbUapiSize, 0);
    for (Field f : {Field::Mark, Field::Priority, Field::IngressIfindex}) copy_u32(in, view, cf::uapi_field(f).off);
    for (uint16_t k = 0; k < cf::kCbSlots; ++k) copy_u32(in, view, static_cast<uint16_t>(cf::uapi_field(Field::Cb).off + 4 * k));
    return in;
}

}  // namespace patchfuzz::gen
