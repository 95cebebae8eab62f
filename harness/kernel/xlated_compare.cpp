#include "harness/kernel/xlated_compare.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <span>

#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/internal_calls.hpp"

namespace patchfuzz::kernel {
namespace {

int64_t fact(const std::map<std::string, int64_t>& f, const char* name) {
    auto it = f.find(name);
    return it == f.end() ? -1 : it->second;
}

// Subprogram index of the one starting at `target`, or -1.
int32_t subprog_index(const Program& p, int64_t target) {
    for (uint32_t i = 0; i < p.subprog_cnt(); i++)
        if (p.subprogs[i].start == target) return static_cast<int32_t>(i);
    return -1;
}

std::string line_of(std::span<const isa::Insn> insns, size_t pc) {
    if (pc >= insns.size()) return "";
    char raw[32];
    const auto& i = insns[pc];
    std::snprintf(raw, sizeof(raw), "%02x %x%x %04x %08x", i.code, i.src_reg, i.dst_reg, static_cast<uint16_t>(i.off),
                  static_cast<uint32_t>(i.imm));
    return std::string(raw) + "  " + assembly::disasm_insn(insns, pc);
}

}  // namespace

unsigned kernel_major_of(std::string_view release) {
    unsigned major = 0;
    for (size_t i = 0; i < release.size() && release[i] >= '0' && release[i] <= '9' && major < 1000; i++)
        major = major * 10 + static_cast<unsigned>(release[i] - '0');
    return major;
}

CtxLayout kernel_ctx_layout_of(std::string_view release) {
    const unsigned major = kernel_major_of(release);
    const size_t dot = release.find('.');
    const unsigned minor = dot == std::string_view::npos ? 0 : kernel_major_of(release.substr(dot + 1));
    // measured on x86-64 and arm64 (alike but for MIN_NAPI_ID, which the xlated code carries)
    if (release.find("amd64") == std::string_view::npos && release.find("arm64") == std::string_view::npos) return CtxLayout::Uapi;
    if (major == 6 && minor == 1) return CtxLayout::Linux6_1;
    if (major > 6 || (major == 6 && minor >= 12)) return CtxLayout::Linux6_12;
    return CtxLayout::Uapi;
}

uint8_t kernel_ax_reg_of(std::string_view release) { return kernel_major_of(release) >= 7 ? 12 : isa::kRegAx; }

void renumber_kernel_ax(std::vector<isa::Insn>& insns, uint8_t ax_reg) {
    if (ax_reg == isa::kRegAx) return;
    auto renumber = [ax_reg](uint8_t r) -> uint8_t { return r == ax_reg ? isa::kRegAx : r == isa::kRegAx ? 15 : r; };
    for (size_t i = 0; i < insns.size(); i++) {
        insns[i].dst_reg = renumber(insns[i].dst_reg) & 0xf;
        insns[i].src_reg = renumber(insns[i].src_reg) & 0xf;
        if (isa::is_ldimm64(insns[i])) i++;  // the second slot's fields are not registers
    }
}

MaskFacts mask_facts(const std::map<std::string, int64_t>& g, std::string_view release) {
    MaskFacts f;
    f.kernel_ax_reg = kernel_ax_reg_of(release);
    f.one_subprog_call_in_off = kernel_major_of(release) >= 7;
    f.kernel_ctx_layout = kernel_ctx_layout_of(release);
    f.kernel_array_value_off = fact(g, "array_value_off");
    f.kernel_htab_key_off = fact(g, "htab_elem_key_off");
    f.kernel_lru_ref_off = fact(g, "htab_lru_ref_off");
    f.model_array_value_off = isa::kArrayValueOffset;
    f.model_htab_key_off = isa::kHtabElemKeyOffset;
    f.model_lru_ref_off = isa::kHtabElemLruRefOffset;
    return f;
}

CompareResult compare_xlated(const std::vector<isa::Insn>& kernel, const Program& model,
                             const std::vector<uint32_t>& map_ids, const MaskFacts& facts) {
    CompareResult res;
    // N1: the model in jit_subprogs() encoding. jit_subprogs() returns early for a program with
    // one subprogram (e.g. after dead-code removal of a never-visited bpf_loop callback): its pseudo
    // calls and PSEUDO_FUNC loads then keep their raw relative form.
    std::vector<isa::Insn> m = model.insns;
    if (model.subprog_cnt() <= 1 && facts.one_subprog_call_in_off)
        for (auto& in : m)
            if (isa::is_pseudo_call(in)) {
                in.off = static_cast<int16_t>(in.imm);
                in.imm = 0;
            }
    for (size_t i = 0; model.subprog_cnt() > 1 && i < m.size(); i++) {
        if (isa::is_pseudo_call(m[i])) {
            int64_t target = static_cast<int64_t>(i) + m[i].imm + 1;
            int32_t idx = subprog_index(model, target);
            m[i].off = static_cast<int16_t>(m[i].imm);
            m[i].imm = idx;
        } else if (isa::is_pseudo_func(m[i]) && i + 1 < m.size()) {
            int64_t target = static_cast<int64_t>(i) + m[i].imm + 1;
            m[i + 1].imm = subprog_index(model, target);
        }
        if (isa::is_ldimm64(m[i])) i++;
    }
    // N3: the kernel's AX numbered as the model's.
    std::vector<isa::Insn> k = kernel;
    renumber_kernel_ax(k, facts.kernel_ax_reg);
    // N2: kernel map ids back to map indexes.
    for (size_t i = 0; i < k.size(); i++) {
        if (!isa::is_ldimm64(k[i])) continue;
        if (k[i].src_reg == BPF_PSEUDO_MAP_FD || k[i].src_reg == BPF_PSEUDO_MAP_VALUE) {
            auto it = std::find(map_ids.begin(), map_ids.end(), static_cast<uint32_t>(k[i].imm));
            if (it != map_ids.end()) k[i].imm = static_cast<int32_t>(it - map_ids.begin());
        }
        i++;
    }
    std::set<int64_t> htab_key_sizes;
    for (const auto& md : model.maps) htab_key_sizes.insert((md.key_size + 7) / 8 * 8);
    // How kernel insn i and model insn j compare: 0 different, 1 identical, 2 equal under a mask.
    // M4 (ld_imm64 of a kernel address) covers both slots; its second slot is judged at i + 1.
    auto cmp = [&](size_t i, size_t j) -> int {
        const isa::Insn& a = k[i];
        const isa::Insn& b = m[j];
        if (isa::same(a, b)) return 1;
        bool regs = a.code == b.code && a.dst_reg == b.dst_reg && a.src_reg == b.src_reg;
        if (regs && a.off == b.off) {  // only imm differs
            if (isa::is_call(a) && (a.src_reg == 0 || a.src_reg == BPF_PSEUDO_KFUNC_CALL)) return 2;  // M1/M2
            if (a.code == (BPF_ALU64 | BPF_ADD | BPF_K)) {  // M3
                if (facts.kernel_array_value_off >= 0 && a.imm == facts.kernel_array_value_off &&
                    b.imm == facts.model_array_value_off)
                    return 2;
                if (facts.kernel_htab_key_off >= 0 && facts.model_htab_key_off >= 0) {
                    int64_t ka = a.imm - facts.kernel_htab_key_off, mb = b.imm - facts.model_htab_key_off;
                    if (ka == mb && htab_key_sizes.count(ka)) return 2;
                }
            }
            if ((a.code == (BPF_ALU | BPF_MOV | BPF_K) || a.code == (BPF_ALU64 | BPF_MOV | BPF_K)) && i + 1 < k.size() &&
                j + 1 < m.size()) {  // M5
                const auto& na = k[i + 1];
                if (na.code == (BPF_ALU64 | BPF_MOV | BPF_X) && na.off == isa::kAddrPercpuOff && na.dst_reg == a.dst_reg &&
                    isa::same(na, m[j + 1]))
                    return 2;
            }
            if (a.code == (BPF_ALU64 | BPF_MOV | BPF_K) && a.dst_reg == isa::kRegAx && i + 1 < k.size() && j + 1 < m.size() &&
                k[i + 1].code == (BPF_ALU64 | BPF_LSH | BPF_K) && k[i + 1].dst_reg == isa::kRegAx && k[i + 1].imm == 32 &&
                isa::same(k[i + 1], m[j + 1]))  // M6
                return 2;
            if (isa::is_ldimm64(a) && a.src_reg == 0 && i + 1 < k.size()) {  // M4, first slot
                uint64_t kv = static_cast<uint32_t>(a.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(k[i + 1].imm)) << 32);
                if (kv >= 0xffff800000000000ULL) return 2;
            }
        }
        if (a.code == 0 && b.code == 0 && i > 0 && j > 0 && isa::is_ldimm64(k[i - 1]) && k[i - 1].src_reg == 0 &&
            isa::is_ldimm64(m[j - 1]) && m[j - 1].src_reg == 0 && a.dst_reg == b.dst_reg && a.src_reg == b.src_reg &&
            a.off == b.off) {  // M4, second slot
            uint64_t kv = static_cast<uint32_t>(k[i - 1].imm) | (static_cast<uint64_t>(static_cast<uint32_t>(a.imm)) << 32);
            if (kv >= 0xffff800000000000ULL) return 2;
        }
        // M7: an instruction array's table (the model's MAP_VALUE load of an insn_array map) is
        // dumped as the raw kernel address of its code-address array; both slots.
        auto table_load = [&](size_t at) {
            const isa::Insn& t = m[at];
            return isa::is_ldimm64(t) && t.src_reg == BPF_PSEUDO_MAP_VALUE && t.imm >= 0 &&
                   static_cast<size_t>(t.imm) < model.maps.size() && model.maps[static_cast<size_t>(t.imm)].type == isa::kMapTypeInsnArray;
        };
        auto kernel_address = [&](size_t at) {
            if (at + 1 >= k.size() || !isa::is_ldimm64(k[at]) || k[at].src_reg != 0) return false;
            // the kernel half of the address space: x86-64's 0xffff8..., arm64's 52-bit 0xfff0...
            return (static_cast<uint32_t>(k[at].imm) | (static_cast<uint64_t>(static_cast<uint32_t>(k[at + 1].imm)) << 32)) >=
                   0xfff0000000000000ULL;
        };
        if (table_load(j) && kernel_address(i) && a.dst_reg == b.dst_reg && a.off == b.off) return 2;
        if (a.code == 0 && b.code == 0 && i > 0 && j > 0 && table_load(j - 1) && kernel_address(i - 1)) return 2;
        if (regs && a.imm == b.imm && a.off != b.off && facts.kernel_lru_ref_off >= 0) {  // M3, LRU ref byte
            bool byte_mem = a.code == (BPF_LDX | BPF_MEM | BPF_B) || a.code == (BPF_ST | BPF_MEM | BPF_B);
            if (byte_mem && a.off == facts.kernel_lru_ref_off && b.off == facts.model_lru_ref_off) return 2;
        }
        return 0;
    };
    bool equal = k.size() == m.size();
    for (size_t i = 0; equal && i < k.size(); i++) {
        int c = cmp(i, i);
        if (c == 0) {
            equal = false;
            res.first_diff = static_cast<uint32_t>(i);
        }
        if (c == 2) res.masked++;
    }
    if (!equal && k.size() != m.size()) {
        res.first_diff = static_cast<uint32_t>(std::min(k.size(), m.size()));
        for (size_t i = 0; i < std::min(k.size(), m.size()); i++)
            if (cmp(i, i) == 0) {
                res.first_diff = static_cast<uint32_t>(i);
                break;
            }
    }
    res.equal = equal;
    res.model_normalised = m;
    res.kernel_normalised = k;
    if (equal) return res;
    // A readable diff: the two programs aligned by a longest common subsequence under the mask,
    // '-' kernel only, '+' model only, '!' a masked-different pair never appears (it aligns).
    size_t nk = std::min<size_t>(k.size(), 2000), nm = std::min<size_t>(m.size(), 2000);
    std::vector<std::vector<uint16_t>> L(nk + 1, std::vector<uint16_t>(nm + 1, 0));
    for (size_t i = nk; i-- > 0;)
        for (size_t j = nm; j-- > 0;)
            L[i][j] = cmp(i, j) ? static_cast<uint16_t>(L[i + 1][j + 1] + 1) : std::max(L[i + 1][j], L[i][j + 1]);
    std::string out = "        kernel (xlated, N2)                                   | model (incremental, N1)\n";
    auto row = [&](char tag, size_t ki, size_t mj) {
        std::string l = ki < nk ? line_of(k, ki) : "", r = mj < nm ? line_of(m, mj) : "";
        char head[24];
        if (ki < nk) std::snprintf(head, sizeof(head), "%c%4zu: ", tag, ki);
        else std::snprintf(head, sizeof(head), "%c      ", tag);
        if (l.size() < 52) l.resize(52, ' ');
        out += head + l + " | " + (mj < nm ? std::to_string(mj) + ": " : "") + r + "\n";
    };
    size_t i = 0, j = 0, lines = 0;
    while ((i < nk || j < nm) && lines < 600) {
        lines++;
        if (i < nk && j < nm && cmp(i, j)) row(' ', i++, j++);
        else if (j < nm && (i == nk || L[i][j + 1] >= L[i + 1][j])) row('+', nk, j++);
        else row('-', i++, nm);
    }
    res.diff = out;
    return res;
}

}  // namespace patchfuzz::kernel
