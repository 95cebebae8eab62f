#pragma once
// The context fields convert_ctx_accesses rewrites for the program types we generate, as facts of
// the kernel builds we boot: for each field, where the uapi struct has it (struct __sk_buff,
// struct xdp_md) and which accesses the verifier lets each program type make; for each build, the
// offsets of the kernel's own structs behind them (struct sk_buff, struct net_device, struct
// xdp_buff, struct xdp_rxq_info) and the instructions each access becomes there (the prog type's
// convert_ctx_access callback: bpf_convert_ctx_access / tc_cls_act_convert_ctx_access for
// __sk_buff, xdp_convert_ctx_access for xdp_md). Data only: the generic part of the rewrite (narrow
// reads, sign-extending reads, the barriers) is the ctx_access pass (ctx_access.cpp), and the
// interpreter builds the same kernel structs from these offsets (bpf/interp/ctx_image.hpp).
// Header-only, because the interpreter does not link the passes.
//
// How this was measured (docs/patching.md §5.6): one program per (program type, field, access
// size, byte offset inside the field, register choice, load/store/sign-extending load), each
// `r2 = *(uN *)(r1 +off); r0 = 0; exit` or a store, loaded by `patchfuzz kernel check X.case
// --kernel K --json` under qemu on Debian's 6.1.0-57 (6.1.192), 6.12.118, 7.2.13 and 7.3.4
// x86-64 kernels; the xlated code each returned is what the templates below say, with the
// registers of the access put in. 6.12.118, 7.2.13 and 7.3.4 rewrite every field alike (one
// layout, CtxLayout::Linux6_12); 6.1 has other sk_buff offsets, a vlan_present bit of its own, no
// sign-extending loads and no BPF_ST into the ctx. Which accesses the verifier refuses is measured
// the same way (the `read`/`write`/`narrow` columns of kUapiFields).
#include <linux/bpf.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::ctx_fields {

// Which uapi context a program type reads, by the rules of which of the kernel's ops: socket
// filters (sk_filter_*) and tc classifiers (tc_cls_act_*) both read __sk_buff but are allowed and
// rewritten differently; XDP reads xdp_md. None: not modelled here (tracing, kprobes: their ctx is
// read as it is; other skb types: not measured).
enum class CtxKind : uint8_t { None, SkbFilter, SkbTc, Xdp };
constexpr CtxKind ctx_kind(uint32_t prog_type) {
    switch (prog_type) {
        case BPF_PROG_TYPE_SOCKET_FILTER: return CtxKind::SkbFilter;
        case BPF_PROG_TYPE_SCHED_CLS: return CtxKind::SkbTc;
        case BPF_PROG_TYPE_XDP: return CtxKind::Xdp;
        default: return CtxKind::None;
    }
}
// A CtxKind as a bit, for the access masks below.
constexpr uint8_t kind_bit(CtxKind k) { return static_cast<uint8_t>(1u << static_cast<unsigned>(k)); }
inline constexpr uint8_t kFilter = 1u << static_cast<unsigned>(CtxKind::SkbFilter);
inline constexpr uint8_t kTc = 1u << static_cast<unsigned>(CtxKind::SkbTc);
inline constexpr uint8_t kXdp = 1u << static_cast<unsigned>(CtxKind::Xdp);
inline constexpr uint8_t kSkb = kFilter | kTc;

enum class Field : uint8_t {
    // struct __sk_buff
    Len, PktType, Mark, QueueMapping, Protocol, VlanPresent, VlanTci, VlanProto, Priority, IngressIfindex, Ifindex,
    TcIndex, Cb, Hash, Data, DataEnd, NapiId, DataMeta,
    // struct xdp_md
    XdpData, XdpDataEnd, XdpDataMeta, XdpIngressIfindex, XdpRxQueueIndex,
};

// What a 4-byte read of a field gives besides a number: the verifier types data, data_end and
// data_meta as packet pointers (the packet's start, its end, its metadata's start).
enum class PacketPtr : uint8_t { None, Start, End, Meta };

struct UapiField {
    Field field;
    const char* name;
    uint16_t off;   // in the uapi struct
    uint8_t size;   // bytes (cb: the five u32 together)
    uint8_t read;   // kinds (kind_bit) that may read it
    uint8_t write;  // kinds that may write it (a 4-byte store at `off`; cb: as its reads)
    // The verifier records ctx_field_size 4 and accepts 1- and 2-byte reads at any offset aligned
    // to their size inside the field (bpf_ctx_narrow_access_ok); else a read is 4 bytes at `off`.
    bool narrow;
    PacketPtr ptr;
};

// Every field we model; cb[] reads and writes take 1, 2 or 4 bytes at an offset aligned to their
// size, and 8 bytes at an 8-aligned offset that ends inside cb[4] (48 and 56).
inline constexpr UapiField kUapiFields[] = {
    {Field::Len, "len", 0, 4, kSkb, 0, true, PacketPtr::None},
    {Field::PktType, "pkt_type", 4, 4, kSkb, 0, true, PacketPtr::None},
    {Field::Mark, "mark", 8, 4, kSkb, kTc, true, PacketPtr::None},
    {Field::QueueMapping, "queue_mapping", 12, 4, kSkb, 0, true, PacketPtr::None},
    {Field::Protocol, "protocol", 16, 4, kSkb, 0, true, PacketPtr::None},
    {Field::VlanPresent, "vlan_present", 20, 4, kSkb, 0, true, PacketPtr::None},
    {Field::VlanTci, "vlan_tci", 24, 4, kSkb, 0, true, PacketPtr::None},
    {Field::VlanProto, "vlan_proto", 28, 4, kSkb, 0, true, PacketPtr::None},
    {Field::Priority, "priority", 32, 4, kSkb, kTc, true, PacketPtr::None},
    {Field::IngressIfindex, "ingress_ifindex", 36, 4, kSkb, 0, true, PacketPtr::None},
    {Field::Ifindex, "ifindex", 40, 4, kSkb, 0, true, PacketPtr::None},
    {Field::TcIndex, "tc_index", 44, 4, kSkb, kTc, true, PacketPtr::None},
    {Field::Cb, "cb", 48, 20, kSkb, kSkb, false, PacketPtr::None},
    {Field::Hash, "hash", 68, 4, kSkb, 0, true, PacketPtr::None},
    {Field::Data, "data", 76, 4, kTc, 0, false, PacketPtr::Start},
    {Field::DataEnd, "data_end", 80, 4, kTc, 0, false, PacketPtr::End},
    {Field::NapiId, "napi_id", 84, 4, kSkb, 0, true, PacketPtr::None},
    {Field::DataMeta, "data_meta", 140, 4, kTc, 0, false, PacketPtr::Meta},
    {Field::XdpData, "data", 0, 4, kXdp, 0, false, PacketPtr::Start},
    {Field::XdpDataEnd, "data_end", 4, 4, kXdp, 0, false, PacketPtr::End},
    {Field::XdpDataMeta, "data_meta", 8, 4, kXdp, 0, false, PacketPtr::Meta},
    {Field::XdpIngressIfindex, "ingress_ifindex", 12, 4, kXdp, 0, false, PacketPtr::None},
    {Field::XdpRxQueueIndex, "rx_queue_index", 16, 4, kXdp, 0, false, PacketPtr::None},
};
inline constexpr uint32_t kSkbUapiSize = 192;  // sizeof(struct __sk_buff)
inline constexpr uint32_t kXdpUapiSize = 24;   // sizeof(struct xdp_md)
inline constexpr uint32_t kCbSlots = 5;
// MIN_NAPI_ID (NR_CPUS + 1): a smaller skb->napi_id reads as 0 (the napi_id sequences below). A
// fact of the build's architecture: Debian's x86-64 kernels have 0x2001 (NR_CPUS 8192), its arm64
// ones 0x201 (512), measured on 6.12.118 and 7.3.4 of each; everything else in these tables the
// arm64 builds rewrite alike. The interpreter's view keeps the larger bound (a napi_id below
// 0x2001 is 0 there), which reads the same through either.
inline constexpr uint32_t kMinNapiId = 0x2001;
inline constexpr uint32_t kMinNapiIdArm64 = 0x201;
constexpr uint32_t min_napi_id(std::string_view arch) { return arch == "arm64" ? kMinNapiIdArm64 : kMinNapiId; }

constexpr const UapiField& uapi_field(Field f) {
    for (const UapiField& u : kUapiFields)
        if (u.field == f) return u;
    return kUapiFields[0];  // unreachable: every Field has a row
}

// The field an access of `size` bytes at uapi offset `off` by a program of kind `k` touches, when
// the verifier allows that access (reads; `write` for ST/STX), else nullptr.
constexpr const UapiField* allowed_access(CtxKind k, int32_t off, uint32_t size, bool write) {
    for (const UapiField& u : kUapiFields) {
        if (!((write ? u.write : u.read) & kind_bit(k))) continue;
        if (off < u.off || off >= u.off + u.size) continue;
        if (u.field == Field::Cb) {
            const bool sized = size == 1 || size == 2 || size == 4 || size == 8;
            const bool ok = sized && (off - u.off) % size == 0 && off + static_cast<int32_t>(size) <= u.off + u.size;
            return ok ? &u : nullptr;
        }
        if (!write && u.narrow && (size == 1 || size == 2)) return (off - u.off) % size == 0 ? &u : nullptr;
        return size == 4 && off == u.off ? &u : nullptr;
    }
    return nullptr;
}

// ---- kernel builds -----------------------------------------------------------------------------

// Register placeholders in a conversion's insns, replaced by the access's own registers.
inline constexpr uint8_t kCtxReg = 14;  // the register holding the ctx pointer (LDX src, ST/STX dst)
inline constexpr uint8_t kValReg = 15;  // LDX: the destination; STX: the register stored
// An immediate placeholder: the arch's MIN_NAPI_ID (min_napi_id) goes there.
inline constexpr int32_t kMinNapiIdImm = -0x2001;

// One field's rewrite in one build: the kernel's sequence for a full-width access (a narrow read
// gets the pass's shift and mask after it; a store is written in its STX form, and an ST store
// takes its immediate instead of kValReg).
struct Conversion {
    Field field;
    uint8_t kinds;        // kinds this shape is for (ifindex: socket filters test dev for NULL, tc does not)
    bool write;
    uint8_t target_size;  // bytes the sequence's value has in the kernel (a narrow read shifts and masks only below it)
    uint8_t len;
    isa::Insn insns[4];
};

// The kernel's struct offsets of one build (bytes), and its conversions.
struct KernelLayout {
    CtxLayout id;
    // struct sk_buff
    uint16_t skb_size;  // bytes of our image of it (past every field below)
    uint16_t skb_dev;   // struct net_device *dev
    uint16_t skb_cb;    // __sk_buff cb[0] (qdisc_skb_cb's data[], inside sk_buff's cb[])
    uint16_t skb_data_meta, skb_data_end;  // tc: struct bpf_skb_data_end, also inside cb[]
    uint16_t skb_len, skb_queue_mapping;
    uint16_t skb_pkt_type;      // a byte; the type in its low 3 bits
    uint16_t skb_vlan_present;  // a byte whose bit 0 is vlan_present; 0: none (read as vlan_all != 0)
    uint16_t skb_tc_index, skb_priority, skb_iif, skb_hash;
    uint16_t skb_vlan_proto, skb_vlan_tci;  // vlan_all: the u32 at skb_vlan_proto
    uint16_t skb_napi_id, skb_mark, skb_protocol, skb_data;
    // struct net_device
    uint16_t dev_size, dev_ifindex;
    // struct xdp_buff, struct xdp_rxq_info
    uint16_t xdp_size, xdp_data, xdp_data_end, xdp_data_meta, xdp_rxq;
    uint16_t rxq_size, rxq_dev, rxq_queue_index;
    std::span<const Conversion> conversions;
};

namespace detail {

using namespace isa;
inline constexpr uint8_t C = kCtxReg, V = kValReg;

// The sequences every build shares, at its offsets, then its own vlan_present.
inline constexpr size_t kSharedConversions = 25;
constexpr std::array<Conversion, kSharedConversions + 1> conversions_of(const KernelLayout& L, Conversion vlan_present) {
    return {{
        {Field::Len, kSkb, false, 4, 1, {ldx(BPF_W, V, C, L.skb_len)}},
        {Field::PktType, kSkb, false, 1, 2, {ldx(BPF_B, V, C, L.skb_pkt_type), alu32_imm(BPF_AND, V, 7)}},
        {Field::Mark, kSkb, false, 4, 1, {ldx(BPF_W, V, C, L.skb_mark)}},
        {Field::QueueMapping, kSkb, false, 2, 1, {ldx(BPF_H, V, C, L.skb_queue_mapping)}},
        {Field::Protocol, kSkb, false, 2, 1, {ldx(BPF_H, V, C, L.skb_protocol)}},
        {Field::VlanTci, kSkb, false, 2, 1, {ldx(BPF_H, V, C, L.skb_vlan_tci)}},
        {Field::VlanProto, kSkb, false, 2, 1, {ldx(BPF_H, V, C, L.skb_vlan_proto)}},
        {Field::Priority, kSkb, false, 4, 1, {ldx(BPF_W, V, C, L.skb_priority)}},
        {Field::IngressIfindex, kSkb, false, 4, 1, {ldx(BPF_W, V, C, L.skb_iif)}},
        {Field::Ifindex, kFilter, false, 4, 3,
         {ldx(BPF_DW, V, C, L.skb_dev), jmp_imm(BPF_JEQ, V, 0, 1), ldx(BPF_W, V, V, L.dev_ifindex)}},
        {Field::Ifindex, kTc, false, 4, 2, {ldx(BPF_DW, V, C, L.skb_dev), ldx(BPF_W, V, V, L.dev_ifindex)}},
        {Field::TcIndex, kSkb, false, 2, 1, {ldx(BPF_H, V, C, L.skb_tc_index)}},
        {Field::Hash, kSkb, false, 4, 1, {ldx(BPF_W, V, C, L.skb_hash)}},
        {Field::Data, kTc, false, 8, 1, {ldx(BPF_DW, V, C, L.skb_data)}},
        {Field::DataEnd, kTc, false, 8, 1, {ldx(BPF_DW, V, C, L.skb_data_end)}},
        {Field::DataMeta, kTc, false, 8, 1, {ldx(BPF_DW, V, C, L.skb_data_meta)}},
        {Field::NapiId, kSkb, false, 4, 3,
         {ldx(BPF_W, V, C, L.skb_napi_id), jmp_imm(BPF_JGE, V, kMinNapiIdImm, 1), mov64_imm(V, 0)}},
        {Field::Mark, kTc, true, 4, 1, {stx(BPF_W, C, V, L.skb_mark)}},
        {Field::Priority, kTc, true, 4, 1, {stx(BPF_W, C, V, L.skb_priority)}},
        {Field::TcIndex, kTc, true, 2, 1, {stx(BPF_H, C, V, L.skb_tc_index)}},
        {Field::XdpData, kXdp, false, 8, 1, {ldx(BPF_DW, V, C, L.xdp_data)}},
        {Field::XdpDataEnd, kXdp, false, 8, 1, {ldx(BPF_DW, V, C, L.xdp_data_end)}},
        {Field::XdpDataMeta, kXdp, false, 8, 1, {ldx(BPF_DW, V, C, L.xdp_data_meta)}},
        {Field::XdpIngressIfindex, kXdp, false, 4, 3,
         {ldx(BPF_DW, V, C, L.xdp_rxq), ldx(BPF_DW, V, V, L.rxq_dev), ldx(BPF_W, V, V, L.dev_ifindex)}},
        {Field::XdpRxQueueIndex, kXdp, false, 4, 2, {ldx(BPF_DW, V, C, L.xdp_rxq), ldx(BPF_W, V, V, L.rxq_queue_index)}},
        vlan_present,
    }};
}

// Debian 6.12.118 (and 7.2.13, 7.3.4: every sequence and offset alike).
inline constexpr KernelLayout kOffsets6_12{
    .id = CtxLayout::Linux6_12, .skb_size = 232, .skb_dev = 16, .skb_cb = 48, .skb_data_meta = 72, .skb_data_end = 80,
    .skb_len = 112, .skb_queue_mapping = 124, .skb_pkt_type = 128, .skb_vlan_present = 0, .skb_tc_index = 134,
    .skb_priority = 144, .skb_iif = 148, .skb_hash = 152, .skb_vlan_proto = 156, .skb_vlan_tci = 158, .skb_napi_id = 160,
    .skb_mark = 168, .skb_protocol = 180, .skb_data = 208, .dev_size = 232, .dev_ifindex = 224, .xdp_size = 56,
    .xdp_data = 0, .xdp_data_end = 8, .xdp_data_meta = 16, .xdp_rxq = 32, .rxq_size = 16, .rxq_dev = 0,
    .rxq_queue_index = 8, .conversions = {}};
// vlan_present is vlan_all != 0 (no bit of its own).
inline constexpr auto kConversions6_12 = conversions_of(
    kOffsets6_12, {Field::VlanPresent, kSkb, false, 4, 3,
                   {ldx(BPF_W, V, C, kOffsets6_12.skb_vlan_proto), jmp_imm(BPF_JEQ, V, 0, 1), mov32_imm(V, 1)}});

// Debian 6.1.0-57 (6.1.192).
inline constexpr KernelLayout kOffsets6_1{
    .id = CtxLayout::Linux6_1, .skb_size = 232, .skb_dev = 16, .skb_cb = 48, .skb_data_meta = 72, .skb_data_end = 80,
    .skb_len = 112, .skb_queue_mapping = 124, .skb_pkt_type = 128, .skb_vlan_present = 130, .skb_tc_index = 134,
    .skb_priority = 140, .skb_iif = 144, .skb_hash = 148, .skb_vlan_proto = 152, .skb_vlan_tci = 154, .skb_napi_id = 156,
    .skb_mark = 168, .skb_protocol = 180, .skb_data = 208, .dev_size = 224, .dev_ifindex = 216, .xdp_size = 56,
    .xdp_data = 0, .xdp_data_end = 8, .xdp_data_meta = 16, .xdp_rxq = 32, .rxq_size = 16, .rxq_dev = 0,
    .rxq_queue_index = 8, .conversions = {}};
// vlan_present is bit 0 of a byte of its own.
inline constexpr auto kConversions6_1 = conversions_of(
    kOffsets6_1, {Field::VlanPresent, kSkb, false, 1, 2, {ldx(BPF_B, V, C, kOffsets6_1.skb_vlan_present), alu32_imm(BPF_AND, V, 1)}});

constexpr KernelLayout with_conversions(KernelLayout l, std::span<const Conversion> c) {
    l.conversions = c;
    return l;
}

}  // namespace detail

inline constexpr KernelLayout kLayout6_12 = detail::with_conversions(detail::kOffsets6_12, detail::kConversions6_12);
inline constexpr KernelLayout kLayout6_1 = detail::with_conversions(detail::kOffsets6_1, detail::kConversions6_1);

// The build facts of a layout; nullptr for Uapi.
constexpr const KernelLayout* kernel_layout(CtxLayout l) {
    switch (l) {
        case CtxLayout::Linux6_1: return &kLayout6_1;
        case CtxLayout::Linux6_12: return &kLayout6_12;
        case CtxLayout::Uapi: break;
    }
    return nullptr;
}

// The sequence a build rewrites an access to field `f` into, for kind `k`; nullptr when we did not
// measure one (cb[] has none: its accesses keep their form at cb's kernel offset).
constexpr const Conversion* conversion(const KernelLayout& l, Field f, CtxKind k, bool write) {
    for (const Conversion& c : l.conversions)
        if (c.field == f && c.write == write && (c.kinds & kind_bit(k))) return &c;
    return nullptr;
}

}  // namespace patchfuzz::ctx_fields
