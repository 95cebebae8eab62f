#include "harness/kernel/batch_writer.hpp"

#include <linux/bpf.h>

#include <cstring>
#include <optional>

#include "gen/test_run_ctx.hpp"
#include "bpf/isa/insn.hpp"
#include "guest/pfk_batch.h"
#include "harness/kernel/tracing_target.hpp"

namespace patchfuzz::kernel {
namespace {

struct Out {
    std::vector<uint8_t> b;
    void u16(uint16_t v) { b.insert(b.end(), reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 2); }
    void u32(uint32_t v) { b.insert(b.end(), reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 4); }
    void bytes(const void* p, size_t n) { b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); }
};

static_assert(PFK_MAP_TYPE_INSN_ARRAY == isa::kMapTypeInsnArray);

}  // namespace

Expected<std::vector<uint8_t>> encode_batch(const std::vector<KernelCase>& cases, BatchFlags flags) {
    Out o;
    o.bytes(PFK_BATCH_MAGIC, 4);
    o.u32(PFK_BATCH_VERSION);
    o.u32(static_cast<uint32_t>(cases.size()));
    o.u32((flags.test_run ? PFK_FLAG_TEST_RUN : 0u) | (flags.always_log ? PFK_FLAG_ALWAYS_LOG : 0u));
    for (const auto& c : cases) {
        const Program& p = c.program;
        if (p.maps.size() > PFK_MAX_MAPS) return make_error(c.name, "more than 64 maps");
        if (p.kfuncs.size() > PFK_MAX_KFUNCS) return make_error(c.name, "more than 64 kfuncs");
        if (p.insns.empty() || p.insns.size() > PFK_MAX_INSNS) return make_error(c.name, "no instructions or too many");
        if (c.inputs.size() > 0xffff) return make_error(c.name, "too many inputs");
        size_t start = o.b.size();
        o.u32(0);  // record size, patched below
        o.u32(p.prog_type);
        o.u32(c.test_rnd_hi32 ? BPF_F_TEST_RND_HI32 : 0u);  // prog_flags
        switch (c.privilege) {
            case passes::Privilege::Root: o.u32(PFK_PRIV_ROOT); break;
            case passes::Privilege::Bpf: o.u32(PFK_PRIV_BPF); break;
            case passes::Privilege::Unpriv: o.u32(PFK_PRIV_UNPRIV); break;
        }
        o.u32(p.len());
        o.u16(static_cast<uint16_t>(p.maps.size()));
        o.u16(static_cast<uint16_t>(p.kfuncs.size()));
        // A tracing program runs only when its target runs (BPF_PROG_TEST_RUN of a tracing program
        // calls bpf_fentry_test*, with their own arguments, not the case's): it is loaded and
        // its rewrite compared, never test-run.
        const std::optional<TracingTarget> target = tracing_target(p);
        o.u16(static_cast<uint16_t>(target ? 0 : c.inputs.size()));
        std::string name = c.name.substr(0, 200);
        o.u16(static_cast<uint16_t>(name.size()));
        o.bytes(name.data(), name.size());
        o.u32(target ? target->attach_type : 0u);
        o.u16(static_cast<uint16_t>(target ? target->func.size() : 0u));
        if (target) o.bytes(target->func.data(), target->func.size());
        for (size_t mi = 0; mi < p.maps.size(); mi++) {
            const MapDef& m = p.maps[mi];
            o.u32(m.type);
            o.u32(m.key_size);
            o.u32(m.value_size);
            o.u32(m.max_entries);
            o.u32(m.map_flags);
            if (m.type != PFK_MAP_TYPE_INSN_ARRAY) continue;
            // its entries' orig_off, in key order (the guest writes them before the load)
            const InsnArray* ia = nullptr;
            for (const auto& a : p.insn_arrays)
                if (a.map_index == static_cast<int32_t>(mi)) ia = &a;
            if (!ia || ia->entries.size() != m.max_entries || m.max_entries > PFK_MAX_INSN_ARRAY_ENTRIES)
                return make_error(c.name, "instruction array map " + std::to_string(mi) + " needs one entry per max_entries (at most " +
                                              std::to_string(PFK_MAX_INSN_ARRAY_ENTRIES) + ")");
            for (const auto& e : ia->entries) o.u32(e.orig_off);
        }
        for (const auto& k : p.kfuncs) {
            o.u32(static_cast<uint32_t>(k.btf_id));
            std::string kn = k.name.substr(0, 200);
            o.u16(static_cast<uint16_t>(kn.size()));
            o.bytes(kn.data(), kn.size());
        }
        o.bytes(p.insns.data(), p.insns.size() * sizeof(isa::Insn));
        for (const auto& in : c.inputs) {
            if (target) break;
            o.u32(static_cast<uint32_t>(in.packet.size()));
            o.bytes(in.packet.data(), in.packet.size());
            // The view's fields a test run takes from ctx_in (the others it computes itself).
            const std::vector<uint8_t> ctx_in = gen::test_run_ctx_in(p.prog_type, in.ctx);
            o.u32(static_cast<uint32_t>(ctx_in.size()));
            o.bytes(ctx_in.data(), ctx_in.size());
            uint32_t cnt = 0;
            for (const auto& m : in.maps) cnt += static_cast<uint32_t>(m.size());
            o.u32(cnt);
            for (size_t mi = 0; mi < in.maps.size(); mi++)
                for (const auto& e : in.maps[mi]) {
                    o.u16(static_cast<uint16_t>(mi));
                    o.u16(static_cast<uint16_t>(e.key.size()));
                    o.u32(static_cast<uint32_t>(e.value.size()));
                    o.bytes(e.key.data(), e.key.size());
                    o.bytes(e.value.data(), e.value.size());
                }
        }
        uint32_t size = static_cast<uint32_t>(o.b.size() - start);
        std::memcpy(o.b.data() + start, &size, 4);
    }
    return std::move(o.b);
}

}  // namespace patchfuzz::kernel
