#pragma once
// What a tracing program (BPF_PROG_TYPE_TRACING) attaches to when patchfuzz loads it into a real
// kernel or writes it as a selftest: the kernel's own test targets, bpf_fentry_test1..6
// (net/bpf/test_run.c), which take 1..6 arguments, so the one named by the case's attach_btf_vlen
// gives the rewrite the nr_args the model assumed; bpf_modify_return_test for fmod_ret; the
// bpf_test_finish tracepoint for tp_btf.
#include <cstdint>
#include <optional>
#include <string>

#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

struct TracingTarget {
    uint32_t attach_type = 0;  // enum bpf_attach_type: BPF_TRACE_FENTRY, _FEXIT, BPF_MODIFY_RETURN, BPF_TRACE_RAW_TP
    std::string func;          // BTF name: a FUNC, or for tp_btf the tracepoint (typedef btf_trace_<func>)
    std::string section;       // libbpf SEC() name, e.g. "fentry/bpf_fentry_test2"
};

// nullopt for programs that are not TRACING.
std::optional<TracingTarget> tracing_target(const Program& p);

}  // namespace patchfuzz::kernel
