#pragma once
// The libbpf loader: opens a BPF ELF object with libbpf 1.1 (bpf_object__open_file: no
// privileges, no bpf() syscall, nothing loaded into any kernel) and turns each program into a
// Program as libbpf would hand it to BPF_PROG_LOAD: the called .text subprograms appended
// (bpf_object__relocate / bpf_object__reloc_code order), map references resolved from the ELF
// relocations, kfunc calls named by our kfunc table, line and func info from .BTF.ext rebased.
//
// libbpf 1.1.2 can crash on malformed ELF, so by default the open runs in a forked child that
// sends the result back through a pipe (program_wire.hpp); a child that dies becomes an Error.
#include <string>
#include <vector>

#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::loader {

struct LoadOptions {
    bool isolate = true;  // open in a child process (always, for untrusted or mutated objects)
    int test_raise_signal = 0;  // tests only: the child raises this signal before opening
    // A privileged load (CAP_BPF + CAP_PERFMON, the default): maps get bypass_spec_v1, so array
    // lookups carry no Spectre index mask. false: an unprivileged load keeps the mask.
    bool privileged = true;
};

// What the loader knows about a program beyond the Program itself (for `patchfuzz load`).
struct ProgramMeta {
    std::string section;                    // ELF section, e.g. "xdp", "tc"
    uint32_t main_insns = 0;                // insns of the entry function before appending
    std::vector<std::string> subprog_names; // per Program::subprogs entry except the fake exit
};

struct LoadedObject {
    std::string path;
    std::vector<Program> programs;
    std::vector<ProgramMeta> meta;  // parallel to programs
    double open_ms = 0;             // wall time of the whole open (fork, libbpf, conversion)
};

Expected<LoadedObject> load_object(const std::string& path, const LoadOptions& = {});

// The conversion itself, in the calling process (what the child runs). Exposed for tests.
Expected<LoadedObject> load_object_in_process(const std::string& path, const LoadOptions& = {});

}  // namespace patchfuzz::loader
