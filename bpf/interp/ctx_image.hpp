#pragma once
// The context a socket filter, tc or XDP program runs on. The program as loaded reads the uapi
// struct (__sk_buff, xdp_md); after the ctx_access pass it reads the kernel's own structs at one
// build's offsets (Program::ctx_layout, bpf/passes/ctx_fields.hpp). Both must see the same skb, so
// the interpreter keeps one truth, the uapi view (ExecInput::ctx), and
//  * makes it hold only what the kernel's structs can (normalize_ctx_view): a 16-bit field keeps
//    its low half, pkt_type its low 3 bits, vlan_present is vlan_tci or vlan_proto being set,
//    napi_id below MIN_NAPI_ID is 0, and the packet pointers' bytes are 0 (a 4-byte read there
//    gives the packet pointer the verifier typed it as, not these bytes);
//  * builds the kernel structs from it for a converted program (fill_kernel_ctx): sk_buff with its
//    net_device, or xdp_buff with its xdp_rxq_info and net_device, pointers included;
//  * reads the view back from those structs after a run (read_back_ctx_view), so the final ctx of
//    both forms compares byte for byte (stores to mark, priority, tc_index and cb[] included).
#include <cstdint>
#include <span>

#include "bpf/passes/ctx_fields.hpp"

namespace patchfuzz::interp {

// The addresses the kernel structs hold (interpreter pointers).
struct CtxPointers {
    uint64_t packet = 0;      // data and data_meta (no metadata)
    uint64_t packet_end = 0;  // data_end
    uint64_t dev = 0;         // the net_device image
    uint64_t rxq = 0;         // the xdp_rxq_info image
};

// The kernel objects behind a converted ctx: their bytes, sized by the layout (skb_size or
// xdp_size, dev_size, rxq_size).
struct KernelCtxBytes {
    uint8_t* ctx = nullptr;  // struct sk_buff or struct xdp_buff
    uint8_t* dev = nullptr;  // struct net_device
    uint8_t* rxq = nullptr;  // struct xdp_rxq_info (XDP only)
};

// Bytes of the struct the ctx pointer points at under `layout` for a program of `kind`.
uint32_t kernel_ctx_size(const ctx_fields::KernelLayout& layout, ctx_fields::CtxKind kind);

void normalize_ctx_view(ctx_fields::CtxKind kind, std::span<uint8_t> view);
// `view` as the kernel structs hold it (zeroed first, then every modelled field written); a view
// shorter than the uapi struct reads as zeros past its end.
void fill_kernel_ctx(const ctx_fields::KernelLayout& layout, ctx_fields::CtxKind kind, std::span<const uint8_t> view,
                     const CtxPointers& ptrs, const KernelCtxBytes& out);
// Every modelled field of `view` (within its size) as the kernel structs hold it now; the other
// bytes are left as they are.
void read_back_ctx_view(const ctx_fields::KernelLayout& layout, ctx_fields::CtxKind kind, const KernelCtxBytes& in,
                        std::span<uint8_t> view);

}  // namespace patchfuzz::interp
