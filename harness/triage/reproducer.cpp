#include "harness/triage/reproducer.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "bpf/asm/disassemble.hpp"
#include "harness/kernel/tracing_target.hpp"

namespace patchfuzz::harness {
namespace {

std::string hex8(const isa::Insn& i) {
    uint8_t b[8];
    static_assert(sizeof(isa::Insn) == 8);
    std::memcpy(b, &i, 8);
    std::string s;
    char t[4];
    for (int k = 0; k < 8; ++k) {
        std::snprintf(t, sizeof t, "%s%02x", k ? " " : "", b[k]);
        s += t;
    }
    return s;
}

std::string prog_section(const Program& p) {
    switch (p.prog_type) {
        case BPF_PROG_TYPE_XDP: return "xdp";
        case BPF_PROG_TYPE_SCHED_CLS: return "tc";
        case BPF_PROG_TYPE_KPROBE: return "kprobe";
        case BPF_PROG_TYPE_TRACEPOINT: return "tracepoint";
        case BPF_PROG_TYPE_RAW_TRACEPOINT: return "raw_tp";
        case BPF_PROG_TYPE_TRACING: return kernel::tracing_target(p)->section;
        default: return "socket";
    }
}

// Kernel text -> LLVM inline-asm text as the selftests write it: pc-relative targets as +N,
// helpers/kfuncs/maps as %[name] operands collected in `imms`.
std::string to_inline_asm(std::string line, std::set<std::string>& imms, std::set<std::string>& maps) {
    static const std::regex pcrel(R"(pc([+-]\d+))");
    static const std::regex helper(R"(call ([A-Za-z_][A-Za-z0-9_]*)#\d+)");
    // map[id:N] / map[id:N][0]+OFF (MAP_FD / MAP_VALUE) and map[idx:N] / map[idx:N]+OFF (the _IDX forms).
    static const std::regex map(R"(map\[(?:id|idx):(\d+)\](?:\[0\])?(\+(\d+))?)");
    std::smatch m;
    if (std::regex_search(line, m, helper) && m[1] != "kernel") {
        imms.insert("__imm(" + m[1].str() + ")");
        line = std::regex_replace(line, helper, "call %[$1]");
    }
    if (std::regex_search(line, m, map)) {
        const std::string name = "map_" + m[1].str();
        maps.insert(name);
        imms.insert("__imm_addr(" + name + ")");
        line = std::regex_replace(line, map, m[2].matched ? "%[" + name + "] + $3" : "%[" + name + "]") + " ll";
    }
    return std::regex_replace(line, pcrel, "$1");
}

}  // namespace

std::string to_conformance_data(const Case& c, uint64_t expected_r0, const std::string& signature) {
    std::ostringstream o;
    o << "# patchfuzz reproducer (execution finding): " << signature << "\n";
    o << "# the original program; run it and its rewrite on the memory below. Replay: patchfuzz replay <its .case>\n";
    o << "-- raw\n";
    for (const auto& i : c.program.insns) o << hex8(i) << "\n";
    if (!c.inputs.empty() && !c.inputs[0].ctx.empty()) {
        o << "-- mem\n";
        const auto& m = c.inputs[0].ctx;
        for (size_t k = 0; k < m.size(); ++k) {
            char t[4];
            std::snprintf(t, sizeof t, "%02x", m[k]);
            o << t << ((k + 1) % 16 == 0 || k + 1 == m.size() ? "\n" : " ");
        }
    }
    char r[32];
    std::snprintf(r, sizeof r, "0x%llx", static_cast<unsigned long long>(expected_r0));
    o << "-- result\n" << r << "\n";
    return o.str();
}

std::string to_selftest_snippet(const Case& c, const Program& rewritten, const std::string& signature,
                                const std::string& func_name) {
    std::set<std::string> imms, maps;
    const Program& prog = c.program;
    // Every subprog is a function of its own, as the selftests write bpf-to-bpf code: the main
    // program under SEC(), the others `static __used __naked __noinline`, reached by
    // `call NAME` and, as callbacks, by `rX = %[NAME] ll`. In LLVM's asm `call +N` would be a
    // helper call, so pc-relative calls cannot stay as they are printed.
    std::vector<uint32_t> starts{0};
    for (size_t k = 1; k + 1 < prog.subprogs.size(); ++k) starts.push_back(prog.subprogs[k].start);
    const uint32_t n = prog.len();
    auto sub_name = [&](size_t k) { return k == 0 ? func_name : func_name + "_sub" + std::to_string(k); };
    auto sub_at = [&](int64_t target) -> std::optional<size_t> {
        for (size_t k = 0; k < starts.size(); ++k)
            if (starts[k] == target) return k;
        return std::nullopt;
    };
    auto body_of = [&](size_t k) {
        std::ostringstream body;
        const uint32_t end = k + 1 < starts.size() ? starts[k + 1] : n;
        for (uint32_t pc = starts[k]; pc < end; ++pc) {
            const isa::Insn& i = prog.insns[pc];
            const int64_t target = static_cast<int64_t>(pc) + 1 + i.imm;
            std::string line;
            if (isa::is_pseudo_call(i) && sub_at(target)) {
                line = "call " + sub_name(*sub_at(target));
            } else if (isa::is_ldimm64(i) && i.src_reg == BPF_PSEUDO_FUNC && sub_at(target)) {
                const std::string cb = sub_name(*sub_at(target));
                imms.insert("__imm_addr(" + cb + ")");
                line = "r" + std::to_string(i.dst_reg) + " = %[" + cb + "] ll";
            } else {
                line = to_inline_asm(assembly::disasm_insn(prog.insns, pc), imms, maps);
                // A 64-bit immediate is `rN = 0x... ll` in the selftests' asm; without `ll` the
                // assembler reads a 32-bit move.
                if (isa::is_ldimm64(i) && i.src_reg == 0) line += " ll";
            }
            body << "\t\"" << line << ";\"\n";
            if (isa::is_ldimm64(i)) ++pc;
        }
        return body.str();
    };
    auto operands = [&](const std::set<std::string>& ops) {
        std::string o;
        for (const auto& i : ops) o += (o.empty() ? "" : ",\n\t  ") + i;
        return o;
    };

    std::ostringstream o;
    o << "/* patchfuzz reproducer: " << signature << "\n"
      << " * Paste into tools/testing/selftests/bpf/progs/verifier_*.c. The __xlated lines are the\n"
      << " * rewrite the kernel model (incremental patcher, arch " << c.arch << ") produces.\n";
    std::ostringstream subs;
    for (size_t k = starts.size() - 1; k >= 1; --k) {  // callees first: __imm_addr needs them declared
        imms.clear();
        const std::string body = body_of(k);
        subs << "static __used __naked __noinline void " << sub_name(k) << "(void)\n{\n\tasm volatile (\n" << body << "\t:\n\t: "
             << operands(imms) << "\n\t: __clobber_all);\n}\n\n";
    }
    imms.clear();
    const std::string main_body = body_of(0);
    o << " */\n";
    for (const auto& m : maps) {  // of every function, defined as the selftests define maps
        const size_t idx = std::stoul(m.substr(4));
        if (idx < prog.maps.size()) {
            const auto& d = prog.maps[idx];
            o << "struct {\n\t__uint(type, " << d.type << ");\n\t__uint(max_entries, " << d.max_entries << ");\n\t__uint(key_size, "
              << d.key_size << ");\n\t__uint(value_size, " << d.value_size << ");\n";
            if (d.map_flags) o << "\t__uint(map_flags, " << d.map_flags << ");\n";
            o << "} " << m << " SEC(\".maps\");\n\n";
        }
    }
    o << subs.str();
    o << "SEC(\"" << prog_section(prog) << "\")\n";
    o << "__description(\"patchfuzz: " << signature << "\")\n";
    o << "__success\n";
    for (size_t pc = 0; pc < rewritten.insns.size(); ++pc) {
        o << "__xlated(\"" << pc << ": " << assembly::disasm_insn(rewritten.insns, pc) << "\")\n";
        if (isa::is_ldimm64(rewritten.insns[pc])) ++pc;
    }
    o << "__naked void " << func_name << "(void)\n{\n\tasm volatile (\n" << main_body << "\t:\n\t: " << operands(imms)
      << "\n\t: __clobber_all);\n}\n";
    return o.str();
}

}  // namespace patchfuzz::harness
