#pragma once
// What we know of the helpers' prototypes (struct bpf_func_proto's arg1_type..arg5_type in the
// kernel; the signatures are in the helper descriptions of include/uapi/linux/bpf.h): how many
// argument registers (R1..) a helper reads, and which of them it takes as plain scalars. One table,
// so that the analyses reading helper arguments (zext_dst marking, rejected_reads) agree.
//
// Only helpers listed here are known. What an unknown helper reads is each caller's policy, stated
// where it asks: the zext analysis assumes all five argument registers (a 64-bit read too many only
// adds a zero extension), rejected_reads checks none (a read too many would reject valid programs).
#include <cstdint>
#include <optional>

namespace patchfuzz::isa {

// Number of argument registers the helper's prototype declares; nullopt for a helper not modelled.
std::optional<int> helper_arg_count(int32_t helper_id);

// Bit r (1..5) set: the helper takes R<r> as a scalar (ARG_ANYTHING / ARG_CONST_*), so a pointer
// there is rejected ("R%d type=... expected=scalar"). 0 for unknown helpers and helpers without
// such arguments.
uint8_t helper_scalar_args(int32_t helper_id);

}  // namespace patchfuzz::isa
