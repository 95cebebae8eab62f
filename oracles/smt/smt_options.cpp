#include <z3.h>

#include <atomic>
#include <mutex>
#include <string>

#include "oracles/smt/solver_config.hpp"
#include "oracles/smt/smt_options.hpp"

namespace patchfuzz::oracles::smt {
namespace {
std::atomic<uint64_t> g_queries{0}, g_hits{0}, g_presolved{0}, g_unsat{0}, g_sat{0}, g_unknown{0};
std::mutex g_mem_mutex;
uint32_t g_mem_set = 0;
}  // namespace

SmtStats smt_stats() {
    return SmtStats{.queries = g_queries.load(), .cache_hits = g_hits.load(), .presolved = g_presolved.load(), .unsat = g_unsat.load(),
                    .sat = g_sat.load(), .unknown = g_unknown.load()};
}

void reset_smt_stats() {
    g_queries = 0;
    g_hits = 0;
    g_presolved = 0;
    g_unsat = 0;
    g_sat = 0;
    g_unknown = 0;
}

std::string to_string(const SmtStats& s) {
    const double rate = s.queries ? static_cast<double>(s.unknown) / static_cast<double>(s.queries) : 0.0;
    return "queries " + std::to_string(s.queries) + ", cache hits " + std::to_string(s.cache_hits) + ", presolved " + std::to_string(s.presolved) + ", unsat " +
           std::to_string(s.unsat) + ", sat " + std::to_string(s.sat) + ", unknown " + std::to_string(s.unknown) +
           " (unknown rate " + std::to_string(rate) + ")";
}

namespace detail {

namespace {
void configure(_Z3_context* ctx, _Z3_solver* solver, const SmtOptions& opts, bool by_rlimit) {
    {
        // memory_max_size is a process-wide Z3 parameter; raising it only ever widens the bound.
        std::lock_guard<std::mutex> lock(g_mem_mutex);
        if (opts.memory_mb != 0 && opts.memory_mb > g_mem_set) {
            Z3_global_param_set("memory_max_size", std::to_string(opts.memory_mb).c_str());
            g_mem_set = opts.memory_mb;
        }
    }
    Z3_params p = Z3_mk_params(ctx);
    Z3_params_inc_ref(ctx, p);
    if (by_rlimit)
        Z3_params_set_uint(ctx, p, Z3_mk_string_symbol(ctx, "rlimit"), static_cast<unsigned>(opts.small_query_rlimit));
    else
        Z3_params_set_uint(ctx, p, Z3_mk_string_symbol(ctx, "timeout"), opts.timeout_ms);
    Z3_params_set_uint(ctx, p, Z3_mk_string_symbol(ctx, "random_seed"), opts.seed);
    // Z3 installs its own SIGINT handler while it solves (ctrl_c=true), which swallows the Ctrl-C
    // that should end a campaign cleanly; our own timeout bounds every query instead.
    Z3_params_set_bool(ctx, p, Z3_mk_string_symbol(ctx, "ctrl_c"), false);
    Z3_solver_set_params(ctx, solver, p);
    Z3_params_dec_ref(ctx, p);
}
}  // namespace

void configure_solver(_Z3_context* ctx, _Z3_solver* solver, const SmtOptions& opts) { configure(ctx, solver, opts, false); }
void configure_small_solver(_Z3_context* ctx, _Z3_solver* solver, const SmtOptions& opts) {
    configure(ctx, solver, opts, opts.small_query_rlimit != 0);
}

void count_answer(Answer a) {
    ++g_queries;
    switch (a) {
        case Answer::Unsat: ++g_unsat; break;
        case Answer::Sat: ++g_sat; break;
        case Answer::Unknown: ++g_unknown; break;
    }
}

void count_cache_hit() { ++g_hits; }
void count_presolved() { ++g_presolved; }

}  // namespace detail
}  // namespace patchfuzz::oracles::smt
