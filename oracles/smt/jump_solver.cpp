// The jump oracle's solver layer (jump_solver.hpp): the obligations are reduced to an encoding
// (Encoding), each asked on its own slice of the segment chain, and answered from the answer cache
// or by one Z3 query (ask_z3()). The only part of the jump oracle that talks to Z3.
#include "oracles/smt/jump_solver.hpp"

#include <z3++.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oracles/smt/answer_cache.hpp"
#include "oracles/smt/solver_config.hpp"

namespace patchfuzz::oracles::smt::jump {
namespace {

// What goes to the solver. Z3 costs a few microseconds per term it is given, so the obligations
// are first reduced, each step exact or sound:
//   * duplicates merged (many obligations are the same relation between the same two segments);
//   * D[a] - D[a] == 0 dropped (true whatever D is);
//   * a range obligation dropped when it holds for every D whose steps are at most the batch's
//     total growth in size: |D[b] - D[a]| <= sum |n_i - 1| (an interval bound, independent of the
//     order of the patches);
//   * the D chain cut down to the segments some obligation names (plus D[0] = 0): D of an unnamed
//     segment is existentially quantified away by summing its step into the next named one.
// The reduced encoding is renumbered from 0, so batches of different programs that pose the same
// question share one cache entry.
struct Encoding {
    std::vector<uint32_t> named;  // original segment of each encoded D (sorted; named[0] = 0)
    std::vector<int64_t> steps;   // D'[j + 1] = D'[j] + steps[j]
    std::vector<ObKey> keys;      // over encoded segments
};

Encoding encode(const std::vector<int64_t>& steps, const std::vector<Ob>& obs) {
    int64_t growth = 0;
    for (int64_t x : steps) growth += x < 0 ? -x : x;
    auto always_fits = [&](const Ob& o) {
        const int64_t lo = o.kind == ObKind::Fits16 ? INT16_MIN : INT32_MIN;
        const int64_t hi = o.kind == ObKind::Fits16 ? INT16_MAX : INT32_MAX;
        return o.k - growth >= lo && o.k + growth <= hi;
    };
    Encoding e;
    std::vector<ObKey> kept;
    kept.reserve(obs.size());
    for (const auto& o : obs)
        if (!(o.kind == ObKind::Eq ? (o.a == o.b && o.k == 0) : always_fits(o))) kept.push_back(ObKey{o.kind, o.a, o.b, o.k});
    // Sorted (the canonical order: the same question asked in another order is one cache entry)
    // and without duplicates.
    std::sort(kept.begin(), kept.end(), [](const ObKey& x, const ObKey& y) {
        return std::tie(x.kind, x.a, x.b, x.k) < std::tie(y.kind, y.a, y.b, y.k);
    });
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    e.named.reserve(2 * kept.size() + 1);
    e.named.push_back(0);
    for (const ObKey& k : kept) {
        e.named.push_back(k.a);
        e.named.push_back(k.b);
    }
    std::sort(e.named.begin(), e.named.end());
    e.named.erase(std::unique(e.named.begin(), e.named.end()), e.named.end());
    for (size_t j = 1; j < e.named.size(); ++j) {
        int64_t sum = 0;
        for (uint32_t x = e.named[j - 1]; x < e.named[j]; ++x) sum += steps[x];
        e.steps.push_back(sum);
    }
    auto renumber = [&](uint32_t seg) {
        return static_cast<uint32_t>(std::lower_bound(e.named.begin(), e.named.end(), seg) - e.named.begin());
    };
    // Renumbering keeps the order (it is monotonic).
    for (ObKey k : kept) {
        k.a = renumber(k.a);
        k.b = renumber(k.b);
        e.keys.push_back(k);
    }
    return e;
}

// D over all original segments from a model of the encoded ones: each unnamed segment follows its
// chain from the last named segment before it.
std::vector<int64_t> expand_model(const Encoding& e, const std::vector<int64_t>& encoded, const std::vector<int64_t>& steps) {
    std::vector<int64_t> d(steps.size() + 1, 0);
    size_t j = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        while (j + 1 < e.named.size() && e.named[j + 1] <= i) ++j;
        d[i] = e.named[j] == i ? encoded[j] : d[i - 1] + steps[i - 1];
    }
    return d;
}


uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

// Obligations + segments up to which a query counts as small (SmtOptions::small_query_rlimit).
constexpr size_t kSmallQuery = 512;

// Asks Z3 whether some obligation of `e` can be violated (the negation of their conjunction is
// asserted): unsat = all hold.
Solved ask_z3(const Encoding& e, const SmtOptions& opts) {
    Solved out;
    try {
        thread_local z3::context ctx;
        // One solver per thread, configured once per option set, each query in its own push/pop
        // scope: creating and configuring a solver per query cost more than solving it. The
        // plain SMT core (solver::simple) is what a push/pop query reaches anyway; asking for it
        // directly skips the per-check dispatch of the logic-specific combined solver (about 35
        // microseconds a query). Small queries (the usual ~100-insn case) run under the resource
        // limit, large ones (real programs with hundreds of patches) under the wall-clock timeout.
        struct Slot {
            std::optional<z3::solver> solver;
            std::tuple<uint32_t, uint32_t, uint64_t> configured{UINT32_MAX, UINT32_MAX, 0};
        };
        thread_local Slot small_slot, large_slot;
        const bool small = e.keys.size() + e.steps.size() <= kSmallQuery;
        Slot& slot = small ? small_slot : large_slot;
        const std::tuple<uint32_t, uint32_t, uint64_t> want{opts.timeout_ms, opts.seed, opts.small_query_rlimit};
        if (!slot.solver || slot.configured != want) {
            slot.solver.emplace(ctx, z3::solver::simple());
            if (small) detail::configure_small_solver(ctx, *slot.solver, opts);
            else detail::configure_solver(ctx, *slot.solver, opts);
            slot.configured = want;
        }
        z3::solver& s = *slot.solver;
        struct Scope {
            z3::solver& s;
            explicit Scope(z3::solver& x) : s(x) { s.push(); }
            ~Scope() { s.pop(); }
        } scope(s);
        z3::expr_vector dv(ctx);
        for (size_t i = 0; i <= e.steps.size(); ++i) dv.push_back(ctx.bv_const(("D" + std::to_string(i)).c_str(), 64));
        s.add(dv[0] == ctx.bv_val(static_cast<int64_t>(0), 64));
        for (size_t i = 0; i < e.steps.size(); ++i)
            s.add(dv[static_cast<int>(i + 1)] == dv[static_cast<int>(i)] + ctx.bv_val(e.steps[i], 64));
        z3::expr_vector bad(ctx);
        const auto lo16 = ctx.bv_val(static_cast<int64_t>(INT16_MIN), 64), hi16 = ctx.bv_val(static_cast<int64_t>(INT16_MAX), 64);
        const auto lo32 = ctx.bv_val(static_cast<int64_t>(INT32_MIN), 64), hi32 = ctx.bv_val(static_cast<int64_t>(INT32_MAX), 64);
        for (const auto& k : e.keys) {
            const z3::expr da = dv[static_cast<int>(k.a)], db = dv[static_cast<int>(k.b)];
            switch (k.kind) {
                case ObKind::Eq: bad.push_back(da - db != ctx.bv_val(k.k, 64)); break;
                case ObKind::Fits16: {
                    z3::expr v = db - da + ctx.bv_val(k.k, 64);
                    bad.push_back(!(z3::sle(lo16, v) && z3::sle(v, hi16)));
                    break;
                }
                case ObKind::Fits32: {
                    z3::expr v = db - da + ctx.bv_val(k.k, 64);
                    bad.push_back(!(z3::sle(lo32, v) && z3::sle(v, hi32)));
                    break;
                }
            }
        }
        s.add(bad.empty() ? ctx.bool_val(false) : z3::mk_or(bad));
        switch (s.check()) {
            case z3::unsat: out.answer = detail::Answer::Unsat; break;
            case z3::sat: {
                out.answer = detail::Answer::Sat;
                z3::model m = s.get_model();
                out.d.resize(e.steps.size() + 1);
                for (size_t i = 0; i <= e.steps.size(); ++i) {
                    z3::expr v = m.eval(dv[static_cast<int>(i)], true);
                    out.d[i] = static_cast<int64_t>(v.get_numeral_uint64());
                }
                break;
            }
            case z3::unknown:
                out.answer = detail::Answer::Unknown;
                out.why = s.reason_unknown();
                break;
        }
    } catch (const z3::exception& ex) {
        out.answer = detail::Answer::Unknown;
        out.why = std::string("z3: ") + ex.msg();
    }
    return out;
}

uint64_t hash_of(const Encoding& e, uint64_t salt) {
    uint64_t h = mix(0x5eed, salt);
    h = mix(h, e.steps.size());
    for (int64_t x : e.steps) h = mix(h, static_cast<uint64_t>(x));
    for (const auto& k : e.keys) h = mix(mix(mix(mix(h, static_cast<uint64_t>(k.kind)), k.a), k.b), static_cast<uint64_t>(k.k));
    return h;
}

// A question to the solver as the cache keeps it (the encoded chain and obligations, and which of
// the oracle's questions it is), and a view of one being asked, to look it up without a copy.
struct Question {
    uint64_t salt = 0;
    Encoding e;
};
struct QuestionView {
    uint64_t salt;
    const Encoding& e;
};
bool same_encoding(const Encoding& x, const Encoding& y) { return x.steps == y.steps && x.keys == y.keys; }
struct QuestionHash {
    using is_transparent = void;
    size_t operator()(const Question& q) const { return hash_of(q.e, q.salt); }
    size_t operator()(const QuestionView& q) const { return hash_of(q.e, q.salt); }
};
struct QuestionEq {
    using is_transparent = void;
    bool operator()(const Question& x, const Question& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
    bool operator()(const Question& x, const QuestionView& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
    bool operator()(const QuestionView& x, const Question& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
};
// Encoded answers (Solved::d over encoded segments), by the whole question.
AnswerCache<Question, Solved, QuestionHash, QuestionEq> g_answers(1 << 14);

// The cached answer to `e`, or Z3's.
Solved solve_encoded(const Encoding& e, const SmtOptions& opts, uint64_t salt) {
    if (opts.use_cache) {
        if (std::optional<Solved> known = g_answers.find(QuestionView{salt, e})) {
            detail::count_cache_hit();
            return std::move(*known);
        }
    }
    Solved out = ask_z3(e, opts);
    detail::count_answer(out.answer);
    // The named segments only map the model back; the question is the steps and obligations.
    if (opts.use_cache && out.answer != detail::Answer::Unknown) g_answers.put(Question{salt, Encoding{{}, e.steps, e.keys}}, out);
    return out;
}

}  // namespace

Solved solve(const std::vector<int64_t>& steps, const std::vector<Ob>& obs, const SmtOptions& opts, uint64_t salt) {
    const Encoding e = encode(steps, obs);
    if (e.keys.empty()) {
        // Every obligation was discharged while encoding: nothing is left that could be violated.
        detail::count_presolved();
        return Solved{.answer = detail::Answer::Unsat};
    }
    constexpr uint64_t kOneObligation = 0x0b11;
    for (const ObKey& k : e.keys) {
        const uint32_t lo = std::min(k.a, k.b), hi = std::max(k.a, k.b);
        // Its slice of the chain, with the segments between lo and hi (which it does not name)
        // summed away as encode() does: one link, or none when both sides are one segment.
        thread_local Encoding one;  // reused: its vectors keep their storage
        one.steps.clear();
        one.keys.clear();
        if (hi > lo) one.steps.push_back(std::accumulate(e.steps.begin() + lo, e.steps.begin() + hi, int64_t{0}));
        one.keys.push_back(ObKey{k.kind, k.a == lo ? 0u : 1u, k.b == lo ? 0u : 1u, k.k});
        const Solved s = solve_encoded(one, opts, kOneObligation);
        if (s.answer == detail::Answer::Unsat) continue;
        if (s.answer == detail::Answer::Unknown) return s;
        // Violated: the report needs D over every segment, so the whole question is asked.
        Solved whole = solve_encoded(e, opts, salt);
        if (whole.answer == detail::Answer::Sat) whole.d = expand_model(e, whole.d, steps);
        return whole;
    }
    return Solved{.answer = detail::Answer::Unsat};
}

}  // namespace patchfuzz::oracles::smt::jump
