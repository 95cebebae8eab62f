#pragma once
// The jump oracle's solver layer, private to oracles/smt: whether some D of a batch's segment chain
// violates one of its obligations, answered from the answer cache or by Z3 (jump_solver.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "oracles/smt/jump_obligations.hpp"
#include "oracles/smt/smt_options.hpp"
#include "oracles/smt/solver_config.hpp"

namespace patchfuzz::oracles::smt::jump {

struct Solved {
    detail::Answer answer = detail::Answer::Unknown;
    std::vector<int64_t> d;  // model of D when Sat
    std::string why;         // Unknown: the solver's reason
};

// Some obligation can be violated iff one of them can: (exists D. chain and (v1 or v2 or ...)) is
// (exists D. chain and v1) or (exists D. chain and v2) or ..., and each of these needs only the
// links of the chain between the two segments its obligation names (the rest of the chain extends
// any solution). So each obligation is asked on its own, over its own slice of the chain (KLEE's
// constraint independence), and these small questions recur across programs far more than whole
// batches do, so nearly all are answered from the cache.
// `salt` keeps the oracle's whole questions (contract, -ERANGE explanation, intent) apart in the
// cache; a Sat answer's D is over the original segments.
Solved solve(const std::vector<int64_t>& steps, const std::vector<Ob>& obs, const SmtOptions& opts, uint64_t salt);

}  // namespace patchfuzz::oracles::smt::jump
