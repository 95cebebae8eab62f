#pragma once
// The bucket a failure is filed under: its root cause, not its symptom. One bug is seen through
// many symptoms (an execution finding through r0, the stack, a map, the exit status; a structural
// one on every arch profile); a developer wants it once, with the symptoms listed inside.
//
//   exec        exec/<cause>: the pass (or the passes of an interaction, "bpf_loop+dead_code", or a
//               misc_fixups row) the exec oracle found the divergence to need ([cause: ...] in its
//               reason); not the divergence kind (r0, map, stack, status) nor the arch.
//   structural  structural/<pass>/<patch kind>/<what diverged>: the side table or field the
//               patchers disagree on, without the arch.
//   smt-*       the same shape: the oracle, the pass, the patch kind and the proof that failed.
#include <string>

#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

std::string root_cause_key(const OracleVerdict& v);

// The symptom a bucket lists: the full signature (oracle/pass/kind/divergence/arch).
inline std::string symptom_of(const OracleVerdict& v) { return signature_of(v); }

}  // namespace patchfuzz::harness
