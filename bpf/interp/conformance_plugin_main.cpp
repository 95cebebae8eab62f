// patchfuzz-conformance-plugin: the interpreter behind the bpf_conformance suite's own runner.
// Protocol (bpf_conformance's runner): the program's bytes in base16 on stdin (whitespace between
// bytes allowed); the arguments are the input memory in base16, present only when the test has
// memory, followed by the runner's --plugin_options, so an option may come first. Options:
// `--arch x86_64|arm64|jit32` (or --arch=A; default x86_64) picks the semantics; unknown options
// are ignored, as a plugin shared between runtimes must. On success r0 (all 64 bits) is printed in
// hex on stdout and the exit code is 0; a program the validator rejects or that faults prints the
// reason on stderr and exits 1 (the runner compares that text with the test's `-- error`).
#include <cctype>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/interp/conformance_run.hpp"

namespace {

bool base16_decode(const std::string& s, std::vector<uint8_t>& out, std::string& err) {
    int hi = -1;
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (std::isspace(c)) {
            if (hi >= 0) {
                err = "odd number of hex digits before offset " + std::to_string(i);
                return false;
            }
            continue;
        }
        if (!std::isxdigit(c)) {
            err = "invalid hex digit '" + std::string(1, static_cast<char>(c)) + "' at offset " + std::to_string(i);
            return false;
        }
        int v = std::isdigit(c) ? c - '0' : std::tolower(c) - 'a' + 10;
        if (hi < 0) hi = v;
        else {
            out.push_back(static_cast<uint8_t>(hi << 4 | v));
            hi = -1;
        }
    }
    if (hi >= 0) {
        err = "odd number of hex digits";
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace patchfuzz;
    if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
        std::printf("usage: patchfuzz-conformance-plugin [MEMORY_BASE16] [--arch x86_64|arm64|jit32] < PROGRAM_BASE16\n"
                    "bpf_conformance plugin: runs the program on the patchfuzz interpreter under the arch's\n"
                    "semantics (default x86_64) and prints r0 in hex; exit 1 with a message on stderr when\n"
                    "the program is rejected or faults. Unknown options are ignored.\n");
        return 0;
    }
    std::string err;
    std::vector<uint8_t> mem;
    std::string arch_name = "x86_64";
    bool have_memory = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--arch" || a.rfind("--arch=", 0) == 0) {
            if (a == "--arch" && i + 1 >= argc) {
                std::fprintf(stderr, "--arch needs one of %s\n", arch_name_list().c_str());
                return 2;
            }
            arch_name = a == "--arch" ? argv[++i] : a.substr(7);
        } else if (a == "--elf") {
            std::fprintf(stderr, "--elf: this plugin takes raw instructions, not an ELF file\n");
            return 1;
        } else if (a.rfind("--", 0) == 0) {
            continue;  // another runtime's option
        } else if (!have_memory) {
            if (!base16_decode(a, mem, err)) {
                std::fprintf(stderr, "memory argument: %s\n", err.c_str());
                return 2;
            }
            have_memory = true;
        }
    }
    const auto arch = arch_by_name(arch_name);
    if (!arch) {
        std::fprintf(stderr, "--arch: unknown arch '%s' (%s)\n", arch_name.c_str(), arch_name_list().c_str());
        return 2;
    }
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    std::vector<uint8_t> bytes;
    if (!base16_decode(text, bytes, err)) {
        std::fprintf(stderr, "program on stdin: %s\n", err.c_str());
        return 2;
    }
    if (bytes.empty() || bytes.size() % 8 != 0) {
        std::fprintf(stderr, "program on stdin: %zu bytes, not a non-empty multiple of 8\n", bytes.size());
        return 2;
    }
    std::vector<isa::Insn> insns(bytes.size() / 8);
    for (size_t i = 0; i < insns.size(); ++i) {
        const uint8_t* b = &bytes[8 * i];
        isa::Insn& in = insns[i];
        in.code = b[0];
        in.dst_reg = b[1] & 0xf;  // little-endian layout of struct bpf_insn
        in.src_reg = b[1] >> 4;
        in.off = static_cast<int16_t>(b[2] | b[3] << 8);
        in.imm = static_cast<int32_t>(static_cast<uint32_t>(b[4]) | static_cast<uint32_t>(b[5]) << 8 |
                                      static_cast<uint32_t>(b[6]) << 16 | static_cast<uint32_t>(b[7]) << 24);
    }
    Status v = interp::validate_for_conformance(insns);
    if (!v.ok()) {
        std::fprintf(stderr, "%s\n", v.error().to_string().c_str());
        return 1;
    }
    interp::ExecInput in;
    in.ctx = mem;
    in.regs[2] = mem.size();
    interp::ExecOptions opts;
    opts.conformance_helpers = true;
    opts.collect_maps = false;
    interp::ExecResult r = interp::execute(make_program(insns), in, *arch, opts);
    if (r.status != interp::ExecResult::Status::Ok) {
        std::fprintf(stderr, "pc %u: %s\n", r.fault_pc, r.reason.c_str());
        return 1;
    }
    std::printf("%llx\n", static_cast<unsigned long long>(r.r0));
    return 0;
}
