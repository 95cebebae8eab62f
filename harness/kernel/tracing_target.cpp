#include "harness/kernel/tracing_target.hpp"

#include <linux/bpf.h>

namespace patchfuzz::kernel {

std::optional<TracingTarget> tracing_target(const Program& p) {
    if (p.prog_type != BPF_PROG_TYPE_TRACING) return std::nullopt;
    const std::string fentry_test = "bpf_fentry_test" + std::to_string(p.attach_btf_vlen >= 1 && p.attach_btf_vlen <= 6 ? p.attach_btf_vlen : 1);
    switch (p.attach) {
        case TraceAttach::Fexit: return TracingTarget{BPF_TRACE_FEXIT, fentry_test, "fexit/" + fentry_test};
        case TraceAttach::ModifyReturn:
            return TracingTarget{BPF_MODIFY_RETURN, "bpf_modify_return_test", "fmod_ret/bpf_modify_return_test"};
        case TraceAttach::RawTp: return TracingTarget{BPF_TRACE_RAW_TP, "bpf_test_finish", "tp_btf/bpf_test_finish"};
        default: return TracingTarget{BPF_TRACE_FENTRY, fentry_test, "fentry/" + fentry_test};
    }
}

}  // namespace patchfuzz::kernel
