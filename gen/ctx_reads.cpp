#include "gen/ctx_reads.hpp"

#include <algorithm>
#include <array>

namespace patchfuzz::gen {
namespace {

namespace cf = ctx_fields;

// The fewest bytes any modelled build keeps field `f` in (its conversion's target size): a narrow
// read of fewer bytes is shifted and masked in every build.
uint8_t min_target_size(cf::Field f, cf::CtxKind k) {
    uint8_t m = 8;
    for (const cf::KernelLayout* l : {&cf::kLayout6_1, &cf::kLayout6_12})
        if (const cf::Conversion* c = cf::conversion(*l, f, k, false)) m = std::min(m, c->target_size);
    return m;
}

std::vector<CtxRead> scalar_reads(cf::CtxKind k) {
    std::vector<CtxRead> out;
    for (const cf::UapiField& u : cf::kUapiFields) {
        if (!(u.read & cf::kind_bit(k)) || u.ptr != cf::PacketPtr::None) continue;
        if (u.field == cf::Field::Cb) {
            for (uint8_t size : {1, 2, 4, 8})
                for (uint16_t at = 0; at + size <= u.size; at = static_cast<uint16_t>(at + size))
                    if (cf::allowed_access(k, u.off + at, size, false))
                        out.push_back({u.field, static_cast<int16_t>(u.off + at), size, 0});
            continue;
        }
        const uint8_t cfs = u.narrow ? 4 : 0;
        out.push_back({u.field, static_cast<int16_t>(u.off), 4, cfs});
        if (!u.narrow) continue;
        const uint8_t target = min_target_size(u.field, k);
        for (uint8_t size : {1, 2})
            for (uint8_t at = 0; at < 4; at = static_cast<uint8_t>(at + size))
                if (at == 0 || size < target) out.push_back({u.field, static_cast<int16_t>(u.off + at), size, cfs});
    }
    return out;
}

std::vector<CtxRead> u32_stores(cf::CtxKind k) {
    std::vector<CtxRead> out;
    for (const cf::UapiField& u : cf::kUapiFields) {
        if (!(u.write & cf::kind_bit(k))) continue;
        for (uint16_t at = 0; at < u.size; at = static_cast<uint16_t>(at + 4))
            out.push_back({u.field, static_cast<int16_t>(u.off + at), 4, 0});
    }
    return out;
}

using PerKind = std::array<std::vector<CtxRead>, 4>;  // by CtxKind
PerKind per_kind(std::vector<CtxRead> (*make)(cf::CtxKind)) {
    PerKind a;
    for (cf::CtxKind x : {cf::CtxKind::SkbFilter, cf::CtxKind::SkbTc, cf::CtxKind::Xdp}) a[static_cast<size_t>(x)] = make(x);
    return a;
}

}  // namespace

CtxUse ctx_use(const Program& prog) {
    CtxUse u;
    for (size_t i = 0; i < prog.insns.size() && i < prog.aux.size(); ++i) {
        const uint8_t c = isa::cls(prog.insns[i]);
        if (prog.aux[i].ptr_type == PtrType::Ctx) {
            if (c == BPF_LDX) ++u.reads;
            else if (c == BPF_ST || c == BPF_STX) ++u.stores;
        } else if (prog.aux[i].ptr_type == PtrType::Packet && c == BPF_LDX) {
            ++u.packet;
        }
    }
    return u;
}

const std::vector<CtxRead>& ctx_scalar_reads(cf::CtxKind kind) {
    static const PerKind all = per_kind(scalar_reads);
    return all[static_cast<size_t>(kind)];
}
const std::vector<CtxRead>& ctx_u32_stores(cf::CtxKind kind) {
    static const PerKind all = per_kind(u32_stores);
    return all[static_cast<size_t>(kind)];
}

}  // namespace patchfuzz::gen
