// patchfuzz load X.bpf.o [--json] [--coverage]: open an object with the libbpf loader (in a child process) and
// summarise each program as the rewrite passes will see it.
#include <cstdio>
#include <map>
#include <string>

#include "bpf/util/json.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/loader/loader.hpp"
#include "bpf/loader/lookup_scan.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "harness/campaign/reloc_feedback.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"

namespace patchfuzz::cli {
namespace {

struct Summary {
    std::map<std::string, uint32_t> lookups;  // map type name -> lookups; "unknown" when untraced
    std::map<std::string, uint32_t> kfunc_calls;
};

Summary summarise(const Program& p) {
    Summary s;
    for (const auto& site : loader::find_map_lookups(p)) {
        const std::string t =
            site.map_index >= 0 ? loader::map_type_name(p.maps[static_cast<size_t>(site.map_index)].type) : std::string("unknown");
        ++s.lookups[t];
    }
    for (const auto& in : p.insns) {
        if (!isa::is_kfunc_call(in)) continue;
        std::string name = "btf_id " + std::to_string(in.imm);
        for (const auto& k : p.kfuncs)
            if (k.btf_id == in.imm) name = k.name;
        ++s.kfunc_calls[name];
    }
    return s;
}

// The rewrite's cells of a loaded program (facts inferred first, as `patchfuzz rewrite` does).
patch::CoverageSet coverage_of(const Program& loaded) {
    Program p = loaded;
    passes::infer_facts(p);
    return harness::rewrite_coverage(p, {"x86_64", "jit32"});
}

void print_coverage_text(const Program& p) {
    const patch::CoverageSet cov = coverage_of(p);
    const harness::RefDirections d = harness::ref_directions(p);
    size_t reachable = 0, hit = 0;
    const auto cells = patch::coverage_cells();
    for (size_t c = 0; c < cells.size(); ++c) {
        reachable += cells[c].reachable;
        hit += cov.has(c);
    }
    std::printf("  relocation cells of its rewrite (x86_64, jit32): %zu (of %zu reachable)\n   ", hit, reachable);
    for (size_t c = 0; c < cells.size(); ++c)
        if (cov.has(c)) std::printf(" %s", std::string(cells[c].id).c_str());
    std::printf("\n  references: %u calls (%u backward), %u callback loads (%u backward), %u jumps to insn 0, %u subprogs "
                "starting with a jump\n",
                d.calls, d.calls_backward, d.callbacks, d.callbacks_backward, d.jumps_to_insn0, d.subprogs_start_with_jump);
}

void print_text(const loader::LoadedObject& o, bool coverage) {
    std::printf("object %s: %zu program%s, opened in %.2f ms\n", o.path.c_str(), o.programs.size(),
                o.programs.size() == 1 ? "" : "s", o.open_ms);
    for (size_t i = 0; i < o.programs.size(); ++i) {
        const Program& p = o.programs[i];
        const auto& m = o.meta[i];
        const Summary s = summarise(p);
        std::printf("\nprogram %s\n", p.name.c_str());
        std::printf("  section %s, type %s (%u), %u insns (%u in the entry function), %u subprog%s\n", m.section.c_str(),
                    loader::prog_type_name(p.prog_type).c_str(), p.prog_type, p.len(), m.main_insns, p.subprog_cnt(),
                    p.subprog_cnt() == 1 ? "" : "s");
        for (size_t k = 0; k + 1 < p.subprogs.size(); ++k)
            std::printf("    subprog %zu at %u: %s%s\n", k, p.subprogs[k].start, k < m.subprog_names.size() ? m.subprog_names[k].c_str() : "?",
                        p.subprogs[k].is_cb ? " (callback)" : "");
        std::printf("  maps: %zu\n", p.maps.size());
        if (!p.maps.empty())
            std::printf("    %-4s %-20s %-16s %5s %6s %11s %s\n", "idx", "name", "type", "key", "value", "max_entries", "flags");
        for (size_t k = 0; k < p.maps.size(); ++k) {
            const auto& d = p.maps[k];
            std::printf("    %-4zu %-20s %-16s %5u %6u %11u 0x%x\n", k, d.name.c_str(), loader::map_type_name(d.type).c_str(), d.key_size,
                        d.value_size, d.max_entries, d.map_flags);
        }
        std::printf("  line info: %zu, func info: %zu\n", p.linfo.size(), p.finfo.size());
        std::printf("  kfunc calls:");
        if (s.kfunc_calls.empty()) std::printf(" none");
        for (const auto& [name, n] : s.kfunc_calls) {
            int32_t id = 0;
            for (const auto& k : p.kfuncs)
                if (k.name == name) id = k.btf_id;
            std::printf(" %s x%u (btf id %d)", name.c_str(), n, id);
        }
        std::printf("\n  lookups:");
        if (s.lookups.empty()) std::printf(" none");
        for (const auto& [t, n] : s.lookups) std::printf(" %s=%u", t.c_str(), n);
        std::printf("\n");
        if (coverage) print_coverage_text(p);
    }
}

void print_json(const loader::LoadedObject& o, bool coverage) {
    std::printf("{\"path\": %s, \"open_ms\": %.3f, \"programs\": [", json_str(o.path).c_str(), o.open_ms);
    for (size_t i = 0; i < o.programs.size(); ++i) {
        const Program& p = o.programs[i];
        const auto& m = o.meta[i];
        const Summary s = summarise(p);
        std::printf("%s\n  {\"name\": %s, \"section\": %s, \"prog_type\": %u, \"prog_type_name\": %s, \"insns\": %u, \"main_insns\": %u,",
                    i ? "," : "", json_str(p.name).c_str(), json_str(m.section).c_str(), p.prog_type,
                    json_str(loader::prog_type_name(p.prog_type)).c_str(), p.len(), m.main_insns);
        std::printf(" \"subprogs\": [");
        for (size_t k = 0; k + 1 < p.subprogs.size(); ++k)
            std::printf("%s{\"start\": %u, \"name\": %s, \"callback\": %s}", k ? ", " : "", p.subprogs[k].start,
                        json_str(k < m.subprog_names.size() ? m.subprog_names[k] : "").c_str(), p.subprogs[k].is_cb ? "true" : "false");
        std::printf("], \"maps\": [");
        for (size_t k = 0; k < p.maps.size(); ++k) {
            const auto& d = p.maps[k];
            std::printf("%s{\"name\": %s, \"type\": %s, \"key_size\": %u, \"value_size\": %u, \"max_entries\": %u, \"flags\": %u}",
                        k ? ", " : "", json_str(d.name).c_str(), json_str(loader::map_type_name(d.type)).c_str(), d.key_size, d.value_size,
                        d.max_entries, d.map_flags);
        }
        std::printf("], \"line_info\": %zu, \"func_info\": %zu, \"kfunc_calls\": {", p.linfo.size(), p.finfo.size());
        bool first = true;
        for (const auto& [name, n] : s.kfunc_calls) {
            std::printf("%s%s: %u", first ? "" : ", ", json_str(name).c_str(), n);
            first = false;
        }
        std::printf("}, \"lookups\": {");
        first = true;
        for (const auto& [t, n] : s.lookups) {
            std::printf("%s%s: %u", first ? "" : ", ", json_str(t).c_str(), n);
            first = false;
        }
        std::printf("}");
        if (coverage) std::printf(", \"reloc\": %s", harness::coverage_json(coverage_of(p), harness::ref_directions(p)).c_str());
        std::printf("}");
    }
    std::printf("\n]}\n");
}

}  // namespace

int cmd_load(Args args) {
    std::string path;
    bool json = false, coverage = false;
    const VerbFlags spec{
        .verb = "load",
        .usage = {"patchfuzz load X.bpf.o [--json] [--coverage]"},
        .about = "Opens a BPF ELF object with libbpf (no privileges, nothing loaded into the kernel; the open\n"
                 "runs in a child process so a malformed object cannot crash patchfuzz), appends the called\n"
                 ".text subprograms as libbpf does at load, and prints per program: section and type, insn\n"
                 "count, subprogs, maps (type, key/value size, max entries, flags), line-info and func-info\n"
                 "counts, kfunc calls, map lookups per map type, and the time the open took.",
        .flags = {switch_flag({"--json"}, "one JSON object on stdout instead of the text summary", json),
                  switch_flag({"--coverage"},
                              "also the relocation-coverage cells each program's rewrite hits (every pass, x86_64 and jit32, "
                              "verifier facts inferred as `patchfuzz rewrite` does) and where its calls, callbacks and jumps "
                              "point: the yardstick for the generator's mix (docs/relocation-coverage.md)",
                              coverage)},
        .positionals = Positionals{.name = "X.bpf.o", .noun = "input", .required = true, .take = [&](const std::string& a) { path = a; }},
        .exit = "exit: 0 ok, 2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    auto obj = loader::load_object(path);
    if (!obj) return spec.error(obj.error().to_string());
    if (json)
        print_json(*obj, coverage);
    else
        print_text(*obj, coverage);
    return 0;
}

}  // namespace patchfuzz::cli
