#pragma once
// ArchProfile: the JIT capability answers that change the verifier's rewrites
// (docs/patching.md §5.4) and how a JIT executes the result (docs/iterator-isa-arch.md §4).
// A plain value: passes and the interpreter ask it, never #ifdef.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace patchfuzz {

struct ArchProfile {
    std::string_view name;
    bool bits64 = true;                  // BITS_PER_LONG == 64
    bool jit_requested = true;
    bool needs_zext = false;             // bpf_jit_needs_zext()
    bool supports_percpu_insn = true;    // bpf_jit_supports_percpu_insn()
    bool timed_may_goto = true;          // bpf_jit_supports_timed_may_goto()
    bool supports_ptr_xchg = true;       // bpf_jit_supports_ptr_xchg()
    uint64_t uaddress_limit = 0;         // bpf_arch_uaddress_limit(); 0 = no PROBE_MEM guard
    bool far_kfunc_call = false;         // bpf_jit_supports_far_kfunc_call()
    bool verifier_inlines_helpers = false;  // CONFIG_X86_64: rows r/s of do_misc_fixups
    // bpf_jit_inlines_helper_call(): helper ids, in a static list (profiles are copied freely:
    // into every rewrite's options and the execution oracle's set-ups).
    std::span<const int32_t> jit_inlined_helpers;
    // Execution semantics of the JIT (interpreter profile):
    bool movsx_as_mov = false;           // 32-bit JITs that ignore `off` on MOV (bug class B3)
    bool alu32_no_implicit_zext = false; // 32-bit ALU leaves upper half unless a zext is present
    // A shift by a register amount of at least the operand width (64 or 32) is the JIT's own: the
    // verifier calls it undefined (it makes the result unknown), and the 32-bit ARM JIT does not
    // mask the amount as the ISA, x86-64 and arm64 do. The kernel oracle does not compare a run
    // that executes one (harness/kernel/undefined_shift.hpp).
    bool wide_shift_undefined = false;

    [[nodiscard]] bool jit_inlines_helper(int32_t id) const {
        for (auto h : jit_inlined_helpers)
            if (h == id) return true;
        return false;
    }
};

const ArchProfile& arch_x86_64();
const ArchProfile& arch_arm64();
const ArchProfile& arch_jit32();
// The 32-bit ARM JIT as a real armhf kernel shows it: jit32's zext needs, MOVSX done right.
const ArchProfile& arch_arm32();
// "x86_64" | "arm64" | "jit32" | "arm32"
std::optional<ArchProfile> arch_by_name(std::string_view name);
std::vector<std::string_view> arch_names();
// "x86_64, arm64, jit32, arm32": the list error messages name
std::string arch_name_list();

}  // namespace patchfuzz
