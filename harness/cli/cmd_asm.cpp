// patchfuzz asm IN.s -o OUT.bin: kernel-syntax assembly (bpf/asm/SYNTAX.md) to raw little-endian
// struct bpf_insn bytes. The result is validated (opcode table, targets, ldimm64 pairs, exit at
// the end; kernel-internal encodings allowed) so a file that assembles is also structurally sound.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "bpf/asm/assemble.hpp"
#include "bpf/isa/raw_codec.hpp"
#include "bpf/isa/validate.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {

int cmd_asm(Args args) {
    std::string in, out;
    bool validate = true, user = true;
    const VerbFlags spec{
        .verb = "asm",
        .usage = {"patchfuzz asm IN.s -o OUT.bin [--no-validate] [--user | --internal]"},
        .about = "Assemble kernel-syntax BPF assembly (as printed by the verifier log and\n"
                 "`bpftool prog dump xlated`, plus labels) into raw struct bpf_insn bytes.",
        .flags = {text_flag({"-o"}, "OUT.bin", "output file (8 bytes per insn, little-endian)", out).require(),
                  switch_flag({"--no-validate"}, "skip the structural validation of the result", validate, false),
                  switch_flag({"--user"}, "reject kernel-internal encodings and r11, as the verifier rejects them in an input "
                              "program (the default)", user, true),
                  switch_flag({"--internal"}, "accept kernel-internal encodings and r11 (BPF_REG_AX), which only rewritten code holds",
                              user, false)},
        .positionals = Positionals{.name = "IN.s", .noun = "input file", .required = true, .take = [&](const std::string& a) { in = a; }},
        .exit = "exit: 0 ok, 2 bad input or usage (errors are located file:line:col)"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    auto text = read_file(in);
    if (!text) return spec.error(text.error().to_string());
    auto insns = assembly::assemble(*text, in);
    if (!insns) return spec.error(insns.error().to_string());
    if (validate) {
        isa::ValidateOptions vo;
        vo.allow_internal = !user;
        if (auto s = isa::validate_insns(*insns, vo); !s) return spec.error(s.error().with_context(in).to_string());
    }
    std::ofstream o(out, std::ios::binary | std::ios::trunc);
    if (!o) return spec.error(out + ": cannot create: " + std::strerror(errno));
    const std::vector<uint8_t> bytes = isa::encode(*insns);
    o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!o) return spec.error(out + ": write failed");
    return 0;
}

}  // namespace patchfuzz::cli
