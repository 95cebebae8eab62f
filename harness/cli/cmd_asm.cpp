// patchfuzz asm IN.s -o OUT.bin: kernel-syntax assembly (bpf/asm/SYNTAX.md) to raw little-endian
// struct bpf_insn bytes. The result is validated (opcode table, targets, ldimm64 pairs, exit at
// the end; kernel-internal encodings allowed) so a file that assembles is also structurally sound.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "bpf/asm/assemble.hpp"
#include "bpf/isa/raw_codec.hpp"
#include "bpf/isa/validate.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {
namespace {

void asm_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz asm IN.s -o OUT.bin [--no-validate] [--internal]\n\n"
                 "Assemble kernel-syntax BPF assembly (as printed by the verifier log and\n"
                 "`bpftool prog dump xlated`, plus labels) into raw struct bpf_insn bytes.\n\n"
                 "  -o OUT.bin      output file (8 bytes per insn, little-endian)\n"
                 "  --no-validate   skip the structural validation of the result\n"
                 "  --internal      accept kernel-internal encodings and r11 (BPF_REG_AX), which only\n"
                 "                  rewritten code holds; an input program with them is rejected, as\n"
                 "                  the verifier rejects it (--user, the default, says so explicitly)\n"
                 "  --help          this text\n\n"
                 "exit: 0 ok, 2 bad input or usage (errors are located file:line:col)\n");
}

int fail(const std::string& msg) {
    std::fprintf(stderr, "patchfuzz asm: %s\n", msg.c_str());
    return 2;
}

}  // namespace

int cmd_asm(Args args) {
    std::string in, out;
    bool validate = true, user = true;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        if (a == "--help" || a == "-h") {
            asm_usage(stdout);
            return 0;
        }
        if (a == "-o") {
            if (i + 1 >= args.size()) return fail("-o needs a file name");
            out = args[++i];
        } else if (a == "--no-validate") {
            validate = false;
        } else if (a == "--user") {
            user = true;
        } else if (a == "--internal") {
            user = false;
        } else if (!a.empty() && a[0] == '-' && a != "-") {
            return fail("unknown option '" + a + "' (see --help)");
        } else if (in.empty()) {
            in = a;
        } else {
            return fail("more than one input file ('" + in + "' and '" + a + "')");
        }
    }
    if (in.empty()) {
        asm_usage(stderr);
        return 2;
    }
    if (out.empty()) return fail("missing -o OUT.bin");
    auto text = read_file(in);
    if (!text) return fail(text.error().to_string());
    auto insns = assembly::assemble(*text, in);
    if (!insns) return fail(insns.error().to_string());
    if (validate) {
        isa::ValidateOptions vo;
        vo.allow_internal = !user;
        if (auto s = isa::validate_insns(*insns, vo); !s) return fail(s.error().with_context(in).to_string());
    }
    std::ofstream o(out, std::ios::binary | std::ios::trunc);
    if (!o) return fail(out + ": cannot create: " + std::strerror(errno));
    const std::vector<uint8_t> bytes = isa::encode(*insns);
    o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!o) return fail(out + ": write failed");
    return 0;
}

}  // namespace patchfuzz::cli
