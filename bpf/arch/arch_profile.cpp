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

// arm32: the 32-bit ARM JIT (arch/arm/net/bpf_jit_32.c) as Debian's armhf 6.12 build shows it
// under `patchfuzz kernel --arch armhf` (issue 23). Like jit32 it asks for zero-extension
// (bpf_jit_needs_zext) and leaves the upper half of a 32-bit ALU result alone, has no per-CPU
// insn, timed may_goto or ptr_xchg support, and the weak bpf_arch_uaddress_limit() is 0 on a
// 32-bit kernel. Unlike jit32 it decodes MOVSX as the sign-extending move it is: with jit32's
// movsx_as_mov a `r2 = (s8)r1` of 0x1ff80 left 0x1ff80 where the real JIT gives -128.
// Neither JIT does bpf-to-bpf calls here: the verifier falls back to the interpreter for a
// program with subprograms and then refuses callbacks, so the kernel oracle's armhf batches have
// none (gen/acceptable_gen.hpp `calls`).
//
// What is undefined on this JIT and so never compared by the kernel oracle: a shift by a register
// amount of at least the width (the verifier's adjust_scalar_min_max_vals() treats it as
// undefined; the real JIT gave 0 for `w6 <<= w4` with w4 = 33 and for a 64-bit `<<=` by 65, where
// the ISA masks the amount to 1 and gives 2): runs that execute one are reported as not compared
// (wide_shift_undefined). The upper half of a 32-bit def the verifier did not mark zext_dst
// cannot be observed (nothing reads it as 64 bits; the oracle compares r0's low 32 bits and map
// contents). The upper half of a kfunc's 32-bit return is not reached: the armhf build has no
// kernel BTF, so kfunc calls do not load.
const ArchProfile& arch_arm32() {
    static const ArchProfile p{.name = "arm32",
                               .bits64 = false,
                               .needs_zext = true,
                               .supports_percpu_insn = false,
                               .timed_may_goto = false,
                               .supports_ptr_xchg = false,
                               .movsx_as_mov = false,
                               .alu32_no_implicit_zext = true,
                               .wide_shift_undefined = true};
    return p;
}

std::optional<ArchProfile> arch_by_name(std::string_view name) {
    for (const ArchProfile* p : {&arch_x86_64(), &arch_arm64(), &arch_jit32(), &arch_arm32()})
        if (p->name == name) return *p;
    return std::nullopt;
}

std::vector<std::string_view> arch_names() { return {"x86_64", "arm64", "jit32", "arm32"}; }

std::string arch_name_list() {
    std::string s;
    for (std::string_view n : arch_names()) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
}

}  // namespace patchfuzz
