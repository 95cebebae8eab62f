// The interpreter's two forms of a socket filter / tc / XDP ctx (ctx_image.hpp): the same skb seen
// through the uapi offsets and through a kernel build's struct offsets. The converted programs are
// written by hand in the form the kernels' xlated code has (offsets of Debian 6.12.118 / 7.3.4 and
// 6.1.192, as `patchfuzz kernel check` printed them); the values are the view's.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstdint>
#include <vector>

#include "bpf/interp/ctx_image.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/isa/insn.hpp"

namespace patchfuzz::interp {
namespace {

using namespace isa;

void put32(std::vector<uint8_t>& v, uint32_t off, uint32_t x) {
    for (uint32_t k = 0; k < 4; ++k) v[off + k] = static_cast<uint8_t>(x >> (8 * k));
}
uint32_t get32(const std::vector<uint8_t>& v, uint32_t off) {
    return v[off] | v[off + 1] << 8 | v[off + 2] << 16 | uint32_t{v[off + 3]} << 24;
}

// A __sk_buff view with a distinct value in every modelled field.
ExecInput skb_input() {
    ExecInput in;
    in.ctx.assign(192, 0);
    put32(in.ctx, 0, 50);           // len
    put32(in.ctx, 4, 3);            // pkt_type
    put32(in.ctx, 8, 0x11223344);   // mark
    put32(in.ctx, 12, 5);           // queue_mapping
    put32(in.ctx, 16, 0x0008);      // protocol (ETH_P_IP as stored)
    put32(in.ctx, 20, 1);           // vlan_present
    put32(in.ctx, 24, 0x0123);      // vlan_tci
    put32(in.ctx, 28, 0x0081);      // vlan_proto
    put32(in.ctx, 32, 0xabcdef01);  // priority
    put32(in.ctx, 36, 7);           // ingress_ifindex
    put32(in.ctx, 40, 1);           // ifindex
    put32(in.ctx, 44, 0x4242);      // tc_index
    for (uint32_t k = 0; k < 5; ++k) put32(in.ctx, 48 + 4 * k, 0xc0 + k);
    put32(in.ctx, 68, 0x9999);      // hash
    put32(in.ctx, 84, 0x3000);      // napi_id
    in.packet.assign(64, 0xee);
    return in;
}

uint64_t r0_of(const Program& p, const ExecInput& in) {
    const ExecResult r = execute(p, in, arch_x86_64());
    EXPECT_EQ(r.status, ExecResult::Status::Ok) << r.reason;
    return r.r0;
}

Program prog(uint32_t type, CtxLayout layout, std::vector<Insn> code) {
    code.push_back(exit_insn());
    Program p = make_program(std::move(code));
    p.prog_type = type;
    p.ctx_layout = layout;
    return p;
}

TEST(CtxImage, AConvertedReadSeesTheViewsValue) {
    const ExecInput in = skb_input();
    struct Case {
        CtxLayout layout;
        std::vector<Insn> code;  // leaves the field in r0
        uint32_t uapi_off;
    };
    const Case cases[] = {
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 112)}, 0},
        {CtxLayout::Linux6_12, {ldx(BPF_B, 0, 1, 128), alu32_imm(BPF_AND, 0, 7)}, 4},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 168)}, 8},
        {CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 124)}, 12},
        {CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 180)}, 16},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 156), jmp_imm(BPF_JEQ, 0, 0, 1), mov32_imm(0, 1)}, 20},
        {CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 158)}, 24},
        {CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 156)}, 28},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 144)}, 32},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 148)}, 36},
        {CtxLayout::Linux6_12, {ldx(BPF_DW, 0, 1, 16), ldx(BPF_W, 0, 0, 224)}, 40},
        {CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 134)}, 44},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 56)}, 56},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 152)}, 68},
        {CtxLayout::Linux6_12, {ldx(BPF_W, 0, 1, 160)}, 84},
        {CtxLayout::Linux6_1, {ldx(BPF_B, 0, 1, 130), alu32_imm(BPF_AND, 0, 1)}, 20},
        {CtxLayout::Linux6_1, {ldx(BPF_H, 0, 1, 154)}, 24},
        {CtxLayout::Linux6_1, {ldx(BPF_W, 0, 1, 140)}, 32},
        {CtxLayout::Linux6_1, {ldx(BPF_DW, 0, 1, 16), ldx(BPF_W, 0, 0, 216)}, 40},
        {CtxLayout::Linux6_1, {ldx(BPF_W, 0, 1, 156)}, 84},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.uapi_off);
        for (uint32_t type : {BPF_PROG_TYPE_SOCKET_FILTER, BPF_PROG_TYPE_SCHED_CLS}) {
            EXPECT_EQ(r0_of(prog(type, c.layout, c.code), in), get32(in.ctx, c.uapi_off));
            EXPECT_EQ(r0_of(prog(type, CtxLayout::Uapi, {ldx(BPF_W, 0, 1, static_cast<int16_t>(c.uapi_off))}), in), get32(in.ctx, c.uapi_off));
        }
    }
}

// Values the kernel cannot hold are what both forms see: the low half of a 16-bit field, pkt_type's
// low 3 bits, vlan_present from the vlan fields, 0 for a napi_id below MIN_NAPI_ID.
TEST(CtxImage, TheViewHoldsOnlyWhatTheKernelCan) {
    ExecInput in = skb_input();
    put32(in.ctx, 4, 0x1234);       // pkt_type
    put32(in.ctx, 16, 0x56789abc);  // protocol
    put32(in.ctx, 20, 7);           // vlan_present, with vlan_tci and vlan_proto set
    put32(in.ctx, 84, 0x2000);      // napi_id
    const uint32_t want[][2] = {{4, 0x1234 & 7}, {16, 0x9abc}, {20, 1}, {84, 0}};
    for (const auto& [off, v] : want)
        EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_SOCKET_FILTER, CtxLayout::Uapi, {ldx(BPF_W, 0, 1, static_cast<int16_t>(off))}), in), v) << off;
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_SOCKET_FILTER, CtxLayout::Linux6_12, {ldx(BPF_H, 0, 1, 180)}), in), 0x9abcu);
    put32(in.ctx, 24, 0);
    put32(in.ctx, 28, 0);
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_SOCKET_FILTER, CtxLayout::Uapi, {ldx(BPF_W, 0, 1, 20)}), in), 0u);
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_SOCKET_FILTER, CtxLayout::Linux6_1,
                         {ldx(BPF_B, 0, 1, 130), alu32_imm(BPF_AND, 0, 1)}), in), 0u);
}

// Stores reach the final ctx as uapi bytes in both forms (tc_index as the kernel's u16).
TEST(CtxImage, StoresComeBackAsTheView) {
    const ExecInput in = skb_input();
    const std::vector<Insn> uapi = {mov64_imm(2, 0x12345), stx(BPF_W, 1, 2, 8), stx(BPF_W, 1, 2, 44), stx(BPF_W, 1, 2, 60),
                                    mov64_imm(0, 0)};
    const std::vector<Insn> kernel = {mov64_imm(2, 0x12345), stx(BPF_W, 1, 2, 168), stx(BPF_H, 1, 2, 134), stx(BPF_W, 1, 2, 60),
                                      mov64_imm(0, 0)};
    const ExecResult a = execute(prog(BPF_PROG_TYPE_SCHED_CLS, CtxLayout::Uapi, uapi), in, arch_x86_64());
    const ExecResult b = execute(prog(BPF_PROG_TYPE_SCHED_CLS, CtxLayout::Linux6_12, kernel), in, arch_x86_64());
    ASSERT_EQ(a.status, ExecResult::Status::Ok);
    ASSERT_EQ(b.status, ExecResult::Status::Ok);
    EXPECT_EQ(a.ctx, b.ctx);
    ASSERT_EQ(b.ctx.size(), 192u);
    EXPECT_EQ(get32(b.ctx, 8), 0x12345u);
    EXPECT_EQ(get32(b.ctx, 44), 0x2345u);
    EXPECT_EQ(get32(b.ctx, 60), 0x12345u);
    EXPECT_EQ(get32(b.ctx, 0), 50u);  // untouched fields keep the view's values
}

// data / data_end: packet pointers in both forms (a 4-byte uapi read typed as a ctx access, an
// 8-byte read of the kernel struct), so data_end - data is the packet's length and loads through
// data read the packet.
TEST(CtxImage, PacketPointersInBothForms) {
    ExecInput in = skb_input();
    in.packet[5] = 0x5a;
    struct Form {
        uint32_t type;
        CtxLayout layout;
        int16_t data, end;
        uint8_t size;
    };
    for (const Form& f : {Form{BPF_PROG_TYPE_SCHED_CLS, CtxLayout::Uapi, 76, 80, BPF_W},
                          Form{BPF_PROG_TYPE_SCHED_CLS, CtxLayout::Linux6_12, 208, 80, BPF_DW},
                          Form{BPF_PROG_TYPE_XDP, CtxLayout::Uapi, 0, 4, BPF_W},
                          Form{BPF_PROG_TYPE_XDP, CtxLayout::Linux6_1, 0, 8, BPF_DW}}) {
        Program p = prog(f.type, f.layout,
                         {ldx(f.size, 2, 1, f.data), ldx(f.size, 3, 1, f.end), mov64_reg(0, 3), alu64_reg(BPF_SUB, 0, 2),
                          ldx(BPF_B, 4, 2, 5), alu64_imm(BPF_LSH, 4, 8), alu64_reg(BPF_OR, 0, 4)});
        p.aux[0].ptr_type = p.aux[1].ptr_type = PtrType::Ctx;
        if (f.type == BPF_PROG_TYPE_XDP) in.ctx.assign(24, 0);
        EXPECT_EQ(r0_of(p, in), 64u | 0x5a00u) << f.type << " " << static_cast<int>(f.layout);
    }
}

// XDP's ifindex and queue come through xdp_rxq_info and its net_device.
TEST(CtxImage, XdpFieldsThroughTheRxQueue) {
    ExecInput in;
    in.ctx.assign(24, 0);
    put32(in.ctx, 12, 9);
    put32(in.ctx, 16, 3);
    in.packet.assign(20, 0);
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_XDP, CtxLayout::Linux6_12, {ldx(BPF_DW, 0, 1, 32), ldx(BPF_DW, 0, 0, 0), ldx(BPF_W, 0, 0, 224)}), in), 9u);
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_XDP, CtxLayout::Linux6_1, {ldx(BPF_DW, 0, 1, 32), ldx(BPF_DW, 0, 0, 0), ldx(BPF_W, 0, 0, 216)}), in), 9u);
    EXPECT_EQ(r0_of(prog(BPF_PROG_TYPE_XDP, CtxLayout::Linux6_12, {ldx(BPF_DW, 0, 1, 32), ldx(BPF_W, 0, 0, 8)}), in), 3u);
    const ExecResult r = execute(prog(BPF_PROG_TYPE_XDP, CtxLayout::Linux6_12, {mov64_imm(0, 0)}), in, arch_x86_64());
    EXPECT_EQ(r.ctx, in.ctx);
}

}  // namespace
}  // namespace patchfuzz::interp
