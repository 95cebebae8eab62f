#pragma once
// The ctx BPF_PROG_TEST_RUN shows a socket filter, tc or XDP program, as measured on Debian's 6.1,
// 6.12, 7.2 and 7.3 kernels under qemu (programs returning one field each, `patchfuzz kernel check
// --run`): the uapi view our interpreter must start from for its runs to agree with the kernel's,
// and the ctx_in the guest passes for a view.
//  __sk_buff: the test run builds the skb from the packet on the loopback device (ifindex 1) and
//    runs eth_type_trans() on it: `protocol` is the Ethernet type in network byte order (below
//    0x600, an 802.3 length: ETH_P_802_3 when the payload starts ff ff, else ETH_P_802_2);
//    `pkt_type` is PACKET_HOST (0) for the loopback's all-zero address, PACKET_MULTICAST (2) for a
//    group address (also ff:ff:ff:ff:ff:ff: the loopback's broadcast address is all zeros) and
//    PACKET_OTHERHOST (3) else; a socket filter runs after the Ethernet header is pulled (`len` =
//    packet - 14), tc before (`len` = packet). mark, priority, ingress_ifindex and cb[] come from
//    ctx_in; hash, queue_mapping, tc_index, napi_id and the vlan fields are 0. ctx_in may set
//    only mark, priority, ingress_ifindex, ifindex, cb[], tstamp, wire_len, gso_* and hwtstamp
//    (any other nonzero byte: -EINVAL).
//  xdp_md: the loopback's receive queue 0: ingress_ifindex 1, rx_queue_index 0 (no ctx_in sent).
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace patchfuzz::gen {

// The __sk_buff fields a test run takes from ctx_in that the generators set.
struct SkbCtxIn {
    uint32_t mark = 0;
    uint32_t priority = 0;
    uint32_t ingress_ifindex = 0;
    std::array<uint32_t, 5> cb{};
};

// The uapi ctx bytes a test run of a `prog_type` program on `packet` (at least 16 bytes) shows it;
// empty for a type without a modelled ctx.
std::vector<uint8_t> test_run_ctx_view(uint32_t prog_type, std::span<const uint8_t> packet, const SkbCtxIn& in);
// The ctx_in to pass for a case input's ctx bytes: for __sk_buff, the fields ctx_in may set (every
// other byte zero); nothing for XDP (the test run's defaults are its view) or an empty view.
std::vector<uint8_t> test_run_ctx_in(uint32_t prog_type, std::span<const uint8_t> view);

}  // namespace patchfuzz::gen
