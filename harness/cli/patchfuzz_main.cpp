// patchfuzz: command-line entry point. Dispatches to one verb per file (commands.hpp).
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "harness/cli/commands.hpp"

namespace patchfuzz::cli {
namespace {

constexpr Command kCommands[] = {
    {"fuzz", cmd_fuzz, "run a differential fuzzing campaign (the main job)"},
    {"asm", cmd_asm, "assemble kernel-syntax BPF assembly into raw instructions"},
    {"disasm", cmd_disasm, "print a program (raw bytes, .s, .case, .bpf.o) in kernel syntax"},
    {"load", cmd_load, "open a .bpf.o with libbpf and summarise its programs"},
    {"rewrite", cmd_rewrite, "run the verifier's rewrite passes with a chosen patcher and arch"},
    {"bench", cmd_bench, "benchmark incremental vs batched patching"},
    {"gen", cmd_gen, "generate random valid programs (.case)"},
    {"check", cmd_check, "run the oracles on one case"},
    {"prove-contract", cmd_prove_contract, "prove the batched patching contract (bounded, Z3)"},
    {"prove-inline", cmd_prove_inline, "prove inline sequences equivalent to the calls they replace (Z3)"},
    {"conformance", cmd_conformance, "run the bpf_conformance .data suite on the interpreter"},
    {"costmodel", cmd_costmodel, "per-arch cycle model of the three loop shapes"},
    {"report", cmd_report, "turn a campaign's output into one HTML page"},
    {"triage", cmd_triage, "minimize, bucket and write reproducers for findings"},
    {"minimize", cmd_minimize, "shrink one failing case while its signature holds"},
    {"replay", cmd_replay, "replay .case files (the regression corpus) against their expected verdicts"},
    {"kernel", cmd_kernel, "real Linux verifiers under qemu as an oracle (fetch, check)"},
    {"version", cmd_version, "the version and git revision of this build (also --version)"},
};

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: patchfuzz <command> [options]   (patchfuzz <command> --help for each)\n\n"
                 "patchfuzz finds bugs in the BPF verifier's instruction rewriting by running an\n"
                 "incremental (kernel-faithful) and a batched patcher on the same programs and\n"
                 "comparing them with structural, SMT and execution oracles.\n\ncommands:\n");
    for (const auto& c : kCommands) std::fprintf(out, "  %-15s %s\n", std::string(c.name).c_str(), std::string(c.summary).c_str());
}

}  // namespace
}  // namespace patchfuzz::cli

int main(int argc, char** argv) {
    // A campaign allocates and frees program copies by the million: with glibc's defaults the heap
    // top is trimmed and regrown constantly (brk + page faults took ~40% of a structural+exec
    // campaign). Keep up to 512 MiB of freed heap and grow in 64 MiB steps instead.
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    using namespace patchfuzz::cli;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    std::string_view verb = argv[1];
    if (verb == "--help" || verb == "-h" || verb == "help") {
        usage(stdout);
        return 0;
    }
    if (verb == "--version") verb = "version";
    for (const auto& c : kCommands)
        if (c.name == verb) return c.run(Args(argv + 2, static_cast<size_t>(argc - 2)));
    std::fprintf(stderr, "patchfuzz: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
