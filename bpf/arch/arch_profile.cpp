#include "bpf/arch/arch_profile.hpp"

#include <linux/bpf.h>

namespace patchfuzz {

// x86-64: arch/x86/net/bpf_jit_comp.c — no zext, percpu insn, timed may_goto, no uaddress guard
// (the JIT range-checks PROBE_MEM itself), the verifier inlines get_smp_processor_id and
// get_current_task(_btf) (bpf_verifier_inlines_helper_call).
const ArchProfile& arch_x86_64() {
    static const ArchProfile p{.name = "x86_64",
                               .uaddress_limit = 0,
                               .verifier_inlines_helpers = true};
    return p;
}

// arm64: arch/arm64/net/bpf_jit_comp.c — the JIT inlines the three helpers itself, and the weak
// bpf_arch_uaddress_limit() returns TASK_SIZE (48-bit VA: 1 << 48), so PROBE_MEM loads are guarded.
const ArchProfile& arch_arm64() {
    static constexpr int32_t kInlined[] = {BPF_FUNC_get_smp_processor_id, BPF_FUNC_get_current_task,
                                           BPF_FUNC_get_current_task_btf};
    static const ArchProfile p{.name = "arm64",
                               .uaddress_limit = 1ULL << 48,
                               .verifier_inlines_helpers = false,
                               .jit_inlined_helpers = kInlined};
    return p;
}

// jit32: a 32-bit JIT in the style of x86-32 (arch/x86/net/bpf_jit_comp32.c): needs zext, decodes
// MOVSX as a plain move, 32-bit ALU does not clear the upper half by itself.
const ArchProfile& arch_jit32() {
    static const ArchProfile p{.name = "jit32",
                               .bits64 = false,
                               .needs_zext = true,
                               .supports_percpu_insn = false,
                               .timed_may_goto = false,
                               .supports_ptr_xchg = false,
                               .movsx_as_mov = true,
                               .alu32_no_implicit_zext = true};
    return p;
}

std::optional<ArchProfile> arch_by_name(std::string_view name) {
    for (const ArchProfile* p : {&arch_x86_64(), &arch_arm64(), &arch_jit32()})
        if (p->name == name) return *p;
    return std::nullopt;
}

std::vector<std::string_view> arch_names() { return {"x86_64", "arm64", "jit32"}; }

}  // namespace patchfuzz
