// patchfuzz disasm IN [--numbered] [--opcodes]: print a program in kernel syntax. IN is raw
// struct bpf_insn bytes (.bin or any other name), kernel-syntax assembly (.s / .asm), a .case
// file, or a BPF ELF object (.o: every program, each under a header naming it).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bpf/asm/assemble.hpp"
#include "bpf/asm/disassemble.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/loader/loader.hpp"
#include "harness/case/case_file.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {

int cmd_disasm(Args args) {
    std::string path;
    assembly::DisasmOptions opts;
    bool validate = true;
    const VerbFlags spec{
        .verb = "disasm",
        .usage = {"patchfuzz disasm IN [--numbered] [--opcodes] [--no-validate]"},
        .about = "Print a program in the kernel's syntax (verifier log / bpftool prog dump xlated).\n"
                 "IN is chosen by its name:\n"
                 "  *.s, *.asm   kernel-syntax assembly (labels allowed): printed back normalised\n"
                 "  *.case       a patchfuzz test case: its program\n"
                 "  *.o          a BPF ELF object, opened with libbpf in a child process: every program,\n"
                 "               each headed by its name, with the called .text subprograms appended\n"
                 "  anything else: raw little-endian struct bpf_insn bytes (length a multiple of 8),\n"
                 "               validated first (opcodes, registers, ldimm64 pairs, jump targets, exit at\n"
                 "               the end): an error names the insn (\"pc 3: unknown opcode 0x8e\")",
        .flags = {switch_flag({"--numbered"}, "prefix each line with its insn index (\"   4: \")", opts.numbered),
                  switch_flag({"--opcodes"}, "prefix each line with its opcode byte (\"(b7) \")", opts.opcodes),
                  switch_flag({"--no-validate"}, "print raw bytes as they are (illegal encodings as `.insn ...`)", validate, false)},
        .positionals = Positionals{.name = "IN", .noun = "input", .required = true, .take = [&](const std::string& a) { path = a; }},
        .exit = "exit: 0 ok, 2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (ends_with(path, ".o")) {
        auto obj = loader::load_object(path);
        if (!obj) return spec.error(obj.error().to_string());
        for (size_t i = 0; i < obj->programs.size(); ++i) {
            const Program& p = obj->programs[i];
            std::printf("%s; program %s (section %s, type %s, %u insns, %u subprog%s)\n", i ? "\n" : "", p.name.c_str(),
                        obj->meta[i].section.c_str(), loader::prog_type_name(p.prog_type).c_str(), p.len(), p.subprog_cnt(),
                        p.subprog_cnt() == 1 ? "" : "s");
            std::fputs(assembly::disassemble(p.insns, opts).c_str(), stdout);
        }
        return 0;
    }
    std::vector<isa::Insn> insns;
    if (ends_with(path, ".s") || ends_with(path, ".asm")) {
        auto text = read_file(path);
        if (!text) return spec.error(text.error().to_string());
        auto r = assembly::assemble(*text, path);
        if (!r) return spec.error(r.error().to_string());
        insns = std::move(*r);
    } else if (ends_with(path, ".case")) {
        auto c = harness::read_case(path);
        if (!c) return spec.error(c.error().to_string());
        insns = std::move(c->program.insns);
    } else {
        auto r = read_raw_insns(path);
        if (!r) return spec.error(r.error().to_string());
        // Raw bytes carry no structure of their own: check it (models the kernel's pre-verifier
        // checks, bpf/isa/validate.hpp) so garbage is named, not printed as a program.
        if (validate) {
            if (r->empty()) return spec.error(path + ": empty program (0 bytes)");
            if (auto v = isa::validate_insns(*r); !v) return spec.error(v.error().with_context(path).to_string());
        }
        insns = std::move(*r);
    }
    std::fputs(assembly::disassemble(insns, opts).c_str(), stdout);
    return 0;
}

}  // namespace patchfuzz::cli
