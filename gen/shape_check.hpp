#pragma once
// check_shape: what every program the generator, mutator or shrinker hands out must satisfy:
// isa::validate_program (user encodings only) plus the cross references the validator does not
// look at (map indices, kfunc descriptors, func info per subprog, linfo_idx, aux facts on the
// right kind of insn).
#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::gen {

Status check_shape(const Program& prog);

}  // namespace patchfuzz::gen
