#pragma once
// The loader's privilege level (issue 22): what the verifier reads from the loader's capabilities,
// and so which rewrites a program gets.
//   root    CAP_SYS_ADMIN (all capabilities): bpf_capable() and bypass_spec_v1 (= perfmon_capable()).
//   bpf     CAP_BPF alone: bpf_capable() (dead-code removal, loops, subprograms, tail-call pokes) but
//           not bypass_spec_v1, so speculative paths are explored and pointer arithmetic is masked;
//           map creation at this level leaves an array map's bypass_spec_v1 false (index mask).
//   unpriv  uid 65534, no capabilities: neither; only socket filters, no calls to other bpf
//           functions, no back-edges, no pointer leaks; dead code is sanitized, not removed.
// The passes read only bpf_capable() (RewriteOptions::privileged); everything the speculative
// verifier decides reaches them as per-insn facts (alu_state/alu_limit, nospec, nospec_result,
// seen) and per-map ones (bypass_spec_v1), which whoever builds the program sets for its level.
#include <cstdint>
#include <optional>
#include <string_view>

namespace patchfuzz::passes {

enum class Privilege : uint8_t { Root, Bpf, Unpriv };

inline constexpr const char* kPrivilegeNames = "root, bpf or unpriv";

inline std::optional<Privilege> privilege_named(std::string_view name) {
    if (name == "root") return Privilege::Root;
    if (name == "bpf") return Privilege::Bpf;
    if (name == "unpriv") return Privilege::Unpriv;
    return std::nullopt;
}

inline const char* to_string(Privilege p) {
    switch (p) {
        case Privilege::Root: return "root";
        case Privilege::Bpf: return "bpf";
        case Privilege::Unpriv: return "unpriv";
    }
    return "?";
}

// bpf_capable(): CAP_BPF or CAP_SYS_ADMIN.
inline bool bpf_capable(Privilege p) { return p != Privilege::Unpriv; }
// env->bypass_spec_v1 (and allow_ptr_leaks, bypass_spec_v4): perfmon_capable().
inline bool bypass_spec_v1(Privilege p) { return p == Privilege::Root; }

}  // namespace patchfuzz::passes
