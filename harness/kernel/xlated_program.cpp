#include "harness/kernel/xlated_program.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "bpf/asm/disassemble.hpp"
#include "bpf/asm/syntax.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::kernel {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

XlatedProgram failed(std::string failure, std::string detail) {
    XlatedProgram x;
    x.failure = std::move(failure);
    x.detail = std::move(detail);
    return x;
}

std::string at(const std::vector<isa::Insn>& insns, size_t pc) {
    return "pc " + std::to_string(pc) + " (" + assembly::disasm_insn(insns, pc) + ")";
}

bool is_array_family(uint32_t map_type) {
    return map_type == BPF_MAP_TYPE_ARRAY || map_type == BPF_MAP_TYPE_PERCPU_ARRAY ||
           map_type == BPF_MAP_TYPE_ARRAY_OF_MAPS;
}

}  // namespace

std::optional<int32_t> helper_of_kernel_symbol(std::string_view s) {
    // Internal functions the verifier's rewrite calls (bpf/isa/internal_calls.hpp).
    static constexpr std::array<std::pair<std::string_view, int32_t>, 6> internal{{
        {"__htab_map_lookup_elem", isa::kInternalHtabLookup},
        {"arch_bpf_timed_may_goto", isa::kInternalTimedMayGoto},
        {"bpf_skb_load_helper_8_no_cache", isa::kInternalSkbLoad8},
        {"bpf_skb_load_helper_16_no_cache", isa::kInternalSkbLoad16},
        {"bpf_skb_load_helper_32_no_cache", isa::kInternalSkbLoad32},
        {"perf_snapshot_branch_stack", isa::kInternalPerfSnapshotBranchStack},
    }};
    for (const auto& [name, id] : internal)
        if (s == name) return id;
    // Helpers whose function is not named after the uapi helper (BPF_CALL_x(name) in the kernel).
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> renamed{{
        {"bpf_user_rnd_u32", "bpf_get_prandom_u32"},
        {"bpf_get_raw_cpu_id", "bpf_get_smp_processor_id"},
        {"bpf_skb_event_output", "bpf_perf_event_output"},
    }};
    for (const auto& [name, helper] : renamed)
        if (s == name) return assembly::helper_id(helper);
    if (auto id = assembly::helper_id(s)) return id;
    // A map op do_misc_fixups calls directly (map->ops->map_lookup_elem, ...): array_map_*,
    // htab_lru_map_*, queue_stack_map_*, ... Their prefix names the map type, which R1 carries.
    for (std::string_view op : {"lookup_elem", "update_elem", "delete_elem", "push_elem", "pop_elem", "peek_elem",
                                "lookup_percpu_elem"})
        if (ends_with(s, "_map_" + std::string(op))) return assembly::helper_id("bpf_map_" + std::string(op));
    if (ends_with(s, "_map_for_each_callback")) return assembly::helper_id("bpf_for_each_map_elem");
    return std::nullopt;
}

namespace {

// Program types whose ctx loads and stores convert_ctx_accesses rewrites to the kernel's own
// structs (struct sk_buff for __sk_buff, ...); the ctx of the others is read as it is.
bool ctx_is_converted(uint32_t prog_type) {
    switch (prog_type) {
        case BPF_PROG_TYPE_TRACING:
        case BPF_PROG_TYPE_KPROBE:
        case BPF_PROG_TYPE_TRACEPOINT:
        case BPF_PROG_TYPE_RAW_TRACEPOINT:
        case BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE: return false;
        default: return true;
    }
}

}  // namespace

XlatedProgram program_of_xlated(const GuestCaseResult& g, const Program& original, const MaskFacts& facts) {
    if (g.xlated.empty()) return failed("no-xlated", "the kernel returned no xlated insns");
    // A converted ctx access reads the kernel's own structs: the interpreter builds them at the
    // booted build's offsets (Program::ctx_layout, bpf/passes/ctx_fields.hpp) for the program types
    // and builds it models; any other such program is not executed rather than read at the wrong bytes.
    CtxLayout ctx_layout = CtxLayout::Uapi;
    if (ctx_is_converted(original.prog_type))
        for (size_t i = 0; i < original.aux.size() && i < original.insns.size(); i++)
            if (original.aux[i].ptr_type == PtrType::Ctx && isa::cls(original.insns[i]) != BPF_JMP) {
                if (ctx_fields::ctx_kind(original.prog_type) == ctx_fields::CtxKind::None ||
                    facts.kernel_ctx_layout == CtxLayout::Uapi)
                    return failed("ctx-access", "the original accesses the ctx at " + at(original.insns, i) +
                                                    ": the kernel's struct layout for this program type or build is not modelled");
                ctx_layout = facts.kernel_ctx_layout;
                break;
            }
    std::vector<isa::Insn> k = g.xlated;
    if (facts.kernel_ax_reg != isa::kRegAx)
        for (size_t i = 0; i < k.size(); i++) {
            if (k[i].dst_reg == isa::kRegAx || k[i].src_reg == isa::kRegAx)
                return failed("kernel-r11", "r11 below the kernel's AX (r" + std::to_string(facts.kernel_ax_reg) + ") at " + at(k, i));
            if (isa::is_ldimm64(k[i])) i++;
        }
    renumber_kernel_ax(k, facts.kernel_ax_reg);
    auto symbols_at = [&](size_t pc) -> const std::vector<std::string>* {
        auto it = g.symbols.find(static_cast<uint32_t>(pc));
        return it == g.symbols.end() ? nullptr : &it->second;
    };
    auto joined = [](const std::vector<std::string>& names) {
        std::string s;
        for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
        return s;
    };
    // An instruction array's map value (what a gotox table load reads) is dumped as the raw address
    // of the map's code-address array: the map type has no map_direct_value_meta, so
    // bpf_insn_prepare_dump cannot name it. The original's such loads, in program order, name the
    // unnamed kernel addresses in the same order (patching never reorders them); one address is
    // always one map.
    std::vector<std::pair<int32_t, int32_t>> table_loads;  // (map index, value offset)
    for (size_t j = 0; j + 1 < original.insns.size(); j++)
        if (isa::is_ldimm64(original.insns[j])) {
            const isa::Insn& o = original.insns[j];
            if (o.src_reg == BPF_PSEUDO_MAP_VALUE && o.imm >= 0 && static_cast<size_t>(o.imm) < original.maps.size() &&
                original.maps[static_cast<size_t>(o.imm)].type == isa::kMapTypeInsnArray)
                table_loads.emplace_back(o.imm, original.insns[j + 1].imm);
            j++;
        }
    size_t next_table_load = 0;
    std::map<uint64_t, int32_t> table_of_address;
    for (size_t i = 0; i < k.size(); i++) {
        isa::Insn& in = k[i];
        if (isa::is_ldimm64(in)) {
            if (i + 1 >= k.size()) return failed("truncated", "ld_imm64 without its second slot at pc " + std::to_string(i));
            if (in.src_reg == 0 && next_table_load < table_loads.size()) {
                const uint64_t v = static_cast<uint32_t>(in.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(k[i + 1].imm)) << 32);
                const auto* names = symbols_at(i);
                // the kernel half of the address space: x86-64's 0xffff8..., arm64's 52-bit 0xfff0...
                if (v >= 0xfff0000000000000ULL && (!names || names->empty())) {
                    const auto [map, off] = table_loads[next_table_load++];
                    auto [it, fresh] = table_of_address.emplace(v - static_cast<uint32_t>(off), map);
                    if (!fresh && it->second != map)
                        return failed("unknown-address", "instruction array address " + hex(v) + " names two maps, at " + at(k, i));
                    in.src_reg = BPF_PSEUDO_MAP_VALUE;
                    in.imm = map;
                    k[i + 1].imm = off;
                    i++;
                    continue;
                }
            }
            if (in.src_reg == BPF_PSEUDO_MAP_FD || in.src_reg == BPF_PSEUDO_MAP_VALUE) {
                auto it = std::find(g.map_ids.begin(), g.map_ids.end(), static_cast<uint32_t>(in.imm));
                if (it == g.map_ids.end()) return failed("unknown-map-id", "map id " + std::to_string(in.imm) + " at " + at(k, i));
                in.imm = static_cast<int32_t>(it - g.map_ids.begin());
            } else if (in.src_reg == BPF_PSEUDO_FUNC) {
                k[i + 1].imm = 0;  // jit_subprogs' subprogram index
            } else if (in.src_reg == 0) {
                const uint64_t v = static_cast<uint32_t>(in.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(k[i + 1].imm)) << 32);
                auto in_original = [&] {  // the program's own constant, not a kernel object
                    const auto& o = original.insns;
                    for (size_t j = 0; j + 1 < o.size(); j++)
                        if (isa::is_ldimm64(o[j]) && o[j].src_reg == 0 && o[j].imm == in.imm && o[j + 1].imm == k[i + 1].imm) return true;
                    return false;
                };
                if (const auto* names = symbols_at(i); names && names->empty() && in_original()) {
                    // a constant that merely looks like a kernel address
                } else if (names) {
                    bool jiffies = std::any_of(names->begin(), names->end(),
                                               [](const std::string& n) { return n == "jiffies" || n == "jiffies_64"; });
                    if (!jiffies)
                        return failed("unknown-address", hex(v) + " = " + (names->empty() ? "no symbol" : joined(*names)) + " at " + at(k, i));
                    in.imm = static_cast<int32_t>(static_cast<uint32_t>(isa::kJiffiesAddr));
                    k[i + 1].imm = static_cast<int32_t>(static_cast<uint32_t>(isa::kJiffiesAddr >> 32));
                } else if (v >= 0xffff800000000000ULL && !in_original()) {
                    return failed("no-symbols", "kernel address " + hex(v) + " the guest did not name, at " + at(k, i));
                }
            }
            i++;
            continue;
        }
        if (isa::is_pseudo_call(in)) {
            if (in.off != 0) {  // jit_subprogs' encoding (a call never targets the next insn)
                in.imm = in.off;
                in.off = 0;
            }
            continue;
        }
        if (!isa::is_helper_call(in) && !isa::is_kfunc_call(in)) continue;
        const auto* names = symbols_at(i);
        if (!names) return failed("no-symbols", "the guest named no symbol for " + at(k, i));
        if (names->empty()) {
            // Still a helper id: the dump's tail call (`call 12`), or a helper the JIT inlines
            // itself (bpf_jit_inlines_helper_call: arm64's bpf_get_smp_processor_id), whose imm
            // the verifier leaves alone.
            if (isa::is_helper_call(in) && in.imm >= 0 && in.imm < 0x10000 && assembly::helper_name(in.imm) != "unknown")
                continue;
            return failed("call-not-a-symbol", "__bpf_call_base + " + std::to_string(in.imm) + " starts no symbol, at " + at(k, i));
        }
        if (isa::is_kfunc_call(in)) {
            const KfuncDesc* kf = nullptr;
            for (const auto& d : original.kfuncs)
                for (const auto& n : *names)
                    if (d.name == n) kf = &d;
            if (!kf) return failed("unknown-kfunc", joined(*names) + " is no kfunc of the program, at " + at(k, i));
            in.imm = kf->btf_id;
            in.off = kf->offset;
            continue;
        }
        std::optional<int32_t> id;
        for (const auto& n : *names)
            if (!id) id = helper_of_kernel_symbol(n);
        if (!id) return failed("unknown-symbol", "call " + joined(*names) + " names no helper of ours, at " + at(k, i));
        in.imm = *id;
        if (*id != isa::kInternalHtabLookup) continue;
        // htab_map_gen_lookup's tail: `if r0 == 0 goto; [LRU: r1 = *(u8 *)(r0 + ref); if r1 != 0
        // goto; *(u8 *)(r0 + ref) = 1;] r0 += key_off + round_up(key_size, 8)`.
        bool value_off_seen = false;
        for (size_t j = i + 1; j < k.size() && j <= i + 6 && !value_off_seen; j++) {
            isa::Insn& t = k[j];
            const bool ref_byte = (t.code == (BPF_LDX | BPF_MEM | BPF_B) && t.src_reg == BPF_REG_0) ||
                                  (t.code == (BPF_ST | BPF_MEM | BPF_B) && t.dst_reg == BPF_REG_0);
            if (ref_byte && facts.kernel_lru_ref_off >= 0 && t.off == facts.kernel_lru_ref_off)
                t.off = static_cast<int16_t>(facts.model_lru_ref_off);
            if (t.code == (BPF_ALU64 | BPF_ADD | BPF_K) && t.dst_reg == BPF_REG_0) {
                if (facts.kernel_htab_key_off < 0)
                    return failed("unknown-layout", "offsetof(struct htab_elem, key) unknown (no BTF fact), at " + at(k, j));
                t.imm = static_cast<int32_t>(t.imm - facts.kernel_htab_key_off + facts.model_htab_key_off);
                value_off_seen = true;
            }
        }
        if (!value_off_seen) return failed("unknown-layout", "no `r0 += value offset` after " + at(k, i));
    }
    // Layouts and per-CPU offsets at the shapes of the inlines that carry them.
    for (size_t i = 0; i + 1 < k.size(); i++) {
        isa::Insn& in = k[i];
        const isa::Insn& next = k[i + 1];
        if (in.code == (BPF_ALU64 | BPF_ADD | BPF_K) && in.dst_reg == BPF_REG_1 &&
            next.code == (BPF_LDX | BPF_MEM | BPF_W) && next.dst_reg == BPF_REG_0 && next.src_reg == BPF_REG_2 && next.off == 0 &&
            std::any_of(original.maps.begin(), original.maps.end(), [](const MapDef& m) { return is_array_family(m.type); })) {
            if (facts.kernel_array_value_off < 0)
                return failed("unknown-layout", "offsetof(struct bpf_array, value) unknown (no BTF fact), at " + at(k, i));
            if (in.imm == facts.kernel_array_value_off) in.imm = static_cast<int32_t>(facts.model_array_value_off);
        }
        const bool mov_k = in.code == (BPF_ALU | BPF_MOV | BPF_K) || in.code == (BPF_ALU64 | BPF_MOV | BPF_K);
        if (mov_k && next.code == (BPF_ALU64 | BPF_MOV | BPF_X) && next.off == isa::kAddrPercpuOff &&
            next.dst_reg == in.dst_reg && next.src_reg == in.dst_reg) {
            const isa::Insn* load = i + 2 < k.size() ? &k[i + 2] : nullptr;
            const bool deref = load && isa::cls(*load) == BPF_LDX && load->src_reg == in.dst_reg && load->off == 0;
            if (deref && load->code == (BPF_LDX | BPF_MEM | BPF_W)) in.imm = isa::kPcpuCpuNumber;
            else if (deref && load->code == (BPF_LDX | BPF_MEM | BPF_DW)) in.imm = isa::kPcpuCurrentTask;
            else return failed("unknown-percpu-offset", "per-CPU offset " + hex(static_cast<uint32_t>(in.imm)) + " at " + at(k, i));
        }
        if (isa::is_ldimm64(in)) i++;
    }
    XlatedProgram x;
    x.ok = true;
    Program p = make_program(std::move(k));
    p.name = original.name;
    p.prog_type = original.prog_type;
    p.attach = original.attach;
    p.attach_btf_vlen = original.attach_btf_vlen;
    p.ctx_layout = ctx_layout;
    p.kfuncs = original.kfuncs;
    p.maps = original.maps;
    // A gotox jumps through its instruction array: the entries as the kernel left them (read back
    // from the map after the load), not as our model would have moved them.
    for (const InsnArray& ia : original.insn_arrays) {
        auto it = g.insn_arrays.find(static_cast<uint32_t>(ia.map_index));
        if (it == g.insn_arrays.end() || it->second.size() != ia.entries.size())
            return failed("no-insn-array", "the guest did not report instruction array map " + std::to_string(ia.map_index) + " in full");
        InsnArray kernel_ia{.map_index = ia.map_index, .entries = {}};
        for (size_t e = 0; e < ia.entries.size(); e++)
            kernel_ia.entries.push_back(InsnArrayEntry{.orig_off = ia.entries[e].orig_off, .xlated_off = it->second[e]});
        p.insn_arrays.push_back(std::move(kernel_ia));
    }
    x.program = std::move(p);
    return x;
}

}  // namespace patchfuzz::kernel
