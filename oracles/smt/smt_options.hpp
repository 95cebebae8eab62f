#pragma once
// SmtOptions: the resource bounds every Z3 query in oracles/smt runs under, and the counters that
// let a campaign report its unknown rate. No Z3 types here: z3++.h stays inside .cpp files.
#include <cstdint>
#include <string>

namespace patchfuzz::oracles::smt {

struct SmtOptions {
    uint32_t timeout_ms = 10000;  // per solver call (Z3 "timeout"); expiry maps to Verdict::Unknown
    uint32_t seed = 0;            // Z3 "random_seed": every query is reproducible
    uint32_t memory_mb = 2048;    // Z3 global "memory_max_size"; exhaustion maps to Unknown
    bool use_cache = true;        // jump oracle: reuse answers for identical encodings
    // Small queries are bounded by Z3's deterministic resource counter ("rlimit") instead of the
    // wall-clock timeout: a timeout costs a timer thread per check(), more than such a query
    // takes. Exhaustion is Unknown all the same. 0 = always use the timeout.
    uint64_t small_query_rlimit = 5000000;
};

// Process-wide counters (all oracles in this folder add to them).
struct SmtStats {
    uint64_t queries = 0;     // solver calls actually made
    uint64_t cache_hits = 0;  // answers taken from the encoding cache
    uint64_t presolved = 0;   // questions whose every obligation the encoding already discharged
    uint64_t unsat = 0;       // proved (obligations hold)
    uint64_t sat = 0;         // refuted (counterexample found)
    uint64_t unknown = 0;     // timeout / resource limit / solver error
};
SmtStats smt_stats();
void reset_smt_stats();
std::string to_string(const SmtStats& s);

}  // namespace patchfuzz::oracles::smt
