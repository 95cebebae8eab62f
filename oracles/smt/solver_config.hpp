#pragma once
// Internal to oracles/smt: one place that applies SmtOptions to a Z3 solver and counts answers.
// Only opaque forward declarations of the Z3 C handles appear here (z3.h declares them the same
// way), so no header of this folder depends on z3++.h.
#include "oracles/smt/smt_options.hpp"

struct _Z3_context;
struct _Z3_solver;

namespace patchfuzz::oracles::smt::detail {

// timeout, seed and memory limit on `solver` (the memory limit is Z3's global
// memory_max_size, set once per process to the largest value asked for).
void configure_solver(_Z3_context* ctx, _Z3_solver* solver, const SmtOptions& opts);
// The same, bounded by opts.small_query_rlimit instead of the timeout (for queries known small).
void configure_small_solver(_Z3_context* ctx, _Z3_solver* solver, const SmtOptions& opts);

enum class Answer : uint8_t { Unsat, Sat, Unknown };
void count_answer(Answer a);
void count_cache_hit();
void count_presolved();

}  // namespace patchfuzz::oracles::smt::detail
