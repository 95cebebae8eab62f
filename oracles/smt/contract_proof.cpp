#include "oracles/smt/contract_proof.hpp"

#include <z3++.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "oracles/smt/solver_config.hpp"

namespace patchfuzz::oracles::smt {
namespace {

constexpr int64_t kS16Max = 32767;

// The kernel computes targets and displacements in 64-bit signed arithmetic with values far from
// the 64-bit limits (program lengths < 2^20), so mathematical integers are exact here and let Z3's
// linear-arithmetic core do the case splits (bit-blasting the same formulas is orders slower).
z3::expr lt(const z3::expr& a, const z3::expr& b) { return a < b; }
z3::expr le(const z3::expr& a, const z3::expr& b) { return a <= b; }
z3::expr gt(const z3::expr& a, const z3::expr& b) { return a > b; }
z3::expr ge(const z3::expr& a, const z3::expr& b) { return a >= b; }

struct Sym {
    z3::context& ctx;
    z3::expr N;
    std::vector<z3::expr> p, n;  // positions and lengths, K of each

    z3::expr bv(int64_t v) const { return ctx.int_val(v); }

    // S_m(x): the closed-form map with only the first m patches applied.
    z3::expr S(const z3::expr& x, size_t m) const {
        z3::expr r = x;
        for (size_t i = 0; i < m; ++i) r = r + z3::ite(lt(p[i], x), n[i] - bv(1), bv(0));
        return r;
    }
    // position of original p_i just before patch i is applied (everything before it is final)
    z3::expr q(size_t i) const {
        z3::expr r = p[i];
        for (size_t j = 0; j < i; ++j) r = r + (n[j] - bv(1));
        return r;
    }
    z3::expr len_after(size_t i) const {  // program length after patches 0..i
        z3::expr r = N;
        for (size_t j = 0; j <= i; ++j) r = r + (n[j] - bv(1));
        return r;
    }
    z3::expr fits(const z3::expr& v, bool off16) const {
        const int64_t lo = off16 ? INT16_MIN : INT32_MIN, hi = off16 ? INT16_MAX : INT32_MAX;
        return le(bv(lo), v) && le(v, bv(hi));
    }
};

// One transfer walked through the kernel's single-patch rules from step `first_step` on.
struct KernelWalk {
    z3::expr pos, disp;      // final values
    z3::expr err;            // some probe failed (-ERANGE)
    z3::expr first_fail;     // index of the first failing step (K when none)
    z3::expr bug;            // a step without probe produced an out-of-range value (BUG_ON)
};

// bpf_patch_insn_single() + bpf_adj_branches() for one insn at current index `pos` with `disp`.
KernelWalk walk(const Sym& s, z3::expr pos, z3::expr disp, size_t first_step, bool off16, bool bug_rule) {
    const size_t K = s.p.size();
    z3::expr err = s.ctx.bool_val(false), bug = s.ctx.bool_val(false);
    z3::expr first = s.bv(static_cast<int64_t>(K));
    std::vector<z3::expr> fail_at;
    for (size_t i = first_step; i < K; ++i) {
        const z3::expr q = s.q(i), delta = s.n[i] - s.bv(1);
        const z3::expr end_old = q + s.bv(1), end_new = q + s.n[i];
        const z3::expr fast = s.n[i] == s.bv(1);  // len 1: no branch walk at all
        // bpf_adj_branches on the new index space: the insn's new index, t from the unadjusted disp
        const z3::expr curr = z3::ite(lt(pos, q), pos, pos + delta);
        const z3::expr t = curr + disp + s.bv(1);
        const z3::expr moved_fwd = bug_rule ? gt(t, end_old) : ge(t, end_old);
        const z3::expr adj = z3::ite(lt(curr, q) && moved_fwd, disp + delta,
                                     z3::ite(ge(curr, end_new) && lt(t, end_new), disp - delta, disp));
        const z3::expr oor = !s.fits(adj, off16);
        const z3::expr probe = gt(s.len_after(i), s.bv(kS16Max));
        const z3::expr fail = !fast && probe && oor;
        bug = bug || (!fast && !probe && oor);
        fail_at.push_back(fail && !err);
        err = err || fail;
        pos = z3::ite(fast, pos, curr);
        disp = z3::ite(fast, disp, adj);
    }
    for (size_t k = fail_at.size(); k-- > 0;) first = z3::ite(fail_at[k], s.bv(static_cast<int64_t>(first_step + k)), first);
    return KernelWalk{pos, disp, err, first, bug};
}

// Closed form: first patch (ascending) after which S_m(T) - S_m(c) - 1 is out of range.
z3::expr closed_first_fail(const Sym& s, const z3::expr& c_of_m_fn_dummy, const std::vector<z3::expr>& disp_after,
                           bool off16) {
    (void)c_of_m_fn_dummy;
    const size_t K = s.p.size();
    z3::expr first = s.bv(static_cast<int64_t>(K));
    for (size_t m = disp_after.size(); m-- > 0;) first = z3::ite(!s.fits(disp_after[m], off16), s.bv(static_cast<int64_t>(K - disp_after.size() + m)), first);
    return first;
}

struct Query {
    std::string name;
    z3::expr pre, goal;
    std::vector<std::pair<std::string, z3::expr>> watch;
    bool expect_sat = false;  // sanity query: pre && goal must be satisfiable
};

}  // namespace

Verdict prove_contract(const ContractProofOptions& opts, std::vector<ContractObligation>* details) {
    if (opts.max_patches < 1 || opts.max_patches > 6)
        return Verdict::skip(kContractOracleName, "max_patches must be in 1..6 (got " + std::to_string(opts.max_patches) + ")");
    std::vector<ContractObligation> results;
    Verdict first_bad;
    bool any_fail = false, any_unknown = false;
    for (uint32_t K = 1; K <= opts.max_patches; ++K) {
        z3::context ctx;
        Sym s{ctx, ctx.int_const("N"), {}, {}};
        z3::expr pre = le(s.bv(1), s.N) && le(s.N, s.bv(opts.max_len));
        for (uint32_t i = 0; i < K; ++i) {
            s.p.push_back(ctx.int_const(("p" + std::to_string(i)).c_str()));
            s.n.push_back(ctx.int_const(("n" + std::to_string(i)).c_str()));
            pre = pre && le(s.bv(0), s.p[i]) && lt(s.p[i], s.N) && le(s.bv(1), s.n[i]) &&
                  le(s.n[i], s.bv(opts.max_patch_len));
            if (i > 0) pre = pre && lt(s.p[i - 1], s.p[i]);
        }
        std::vector<Query> queries;
        for (bool off16 : {true, false}) {
            const std::string fld = off16 ? "off16" : "imm32";
            // ---- unpatched transfer at c with displacement d ----
            {
                const z3::expr c = ctx.int_const("c"), d = ctx.int_const("d");
                const z3::expr T = c + d + s.bv(1);
                z3::expr jp = pre && le(s.bv(0), c) && lt(c, s.N) && le(s.bv(0), T) && lt(T, s.N) && s.fits(d, off16);
                for (uint32_t i = 0; i < K; ++i) jp = jp && c != s.p[i];
                const KernelWalk w = walk(s, c, d, 0, off16, opts.inject_off_by_one);
                const z3::expr new_d = s.S(T, K) - s.S(c, K) - s.bv(1);
                std::vector<z3::expr> after;
                for (uint32_t m = 1; m <= K; ++m) after.push_back(s.S(T, m) - s.S(c, m) - s.bv(1));
                const z3::expr cf = closed_first_fail(s, c, after, off16);
                std::vector<std::pair<std::string, z3::expr>> watch = {{"N", s.N}, {"c", c}, {"d", d}, {"T", T},
                                                                       {"kernel_disp", w.disp}, {"closed_disp", new_d},
                                                                       {"kernel_err", z3::ite(w.err, s.bv(1), s.bv(0))}};
                for (uint32_t i = 0; i < K; ++i) {
                    watch.emplace_back("p" + std::to_string(i), s.p[i]);
                    watch.emplace_back("n" + std::to_string(i), s.n[i]);
                }
                const std::string base = "K=" + std::to_string(K) + " unpatched " + fld;
                queries.push_back({base + ": -ERANGE <=> closed form out of range", jp, w.err == !s.fits(new_d, off16), watch});
                queries.push_back({base + ": displacement and position = S", jp,
                                   z3::implies(!w.err, w.disp == new_d && w.pos == s.S(c, K)), watch});
                queries.push_back({base + ": first failing patch", jp, z3::implies(w.err, w.first_fail == cf), watch});
                queries.push_back({base + ": no BUG_ON (no unprobed overflow)", jp, !w.bug, watch});
                // imm32 cannot overflow below 2^20 insns: there the sanity witness is a moved displacement
                if (off16) queries.push_back({base + ": sanity: preconditions admit a kernel -ERANGE", jp, w.err, {}, true});
                else queries.push_back({base + ": sanity: preconditions admit a moved displacement", jp, w.disp != d, {}, true});
            }
            // ---- outgoing jump in slot j of patch m, emitted as the generator contract says ----
            for (uint32_t m = 0; m < K; ++m) {
                const z3::expr j = ctx.int_const("j"), T = ctx.int_const("T");
                z3::expr jp = pre && le(s.bv(0), j) && lt(j, s.n[m]) && le(s.bv(0), T) && lt(T, s.N) && T != s.p[m];
                // after patch m is applied: jumper at q_m + j, target at S_{m+1}(T); the generator's value
                const z3::expr pos0 = s.q(m) + j;
                const z3::expr gen = s.S(T, m + 1) - pos0 - s.bv(1);
                jp = jp && s.fits(gen, off16);  // C assignment would truncate otherwise (unchecked, docs/patching.md §7.3)
                const KernelWalk w = walk(s, pos0, gen, m + 1, off16, opts.inject_off_by_one);
                const z3::expr new_d = s.S(T, K) - (s.S(s.p[m], K) + j) - s.bv(1);
                std::vector<std::pair<std::string, z3::expr>> watch = {{"N", s.N}, {"j", j}, {"T", T}, {"kernel_disp", w.disp},
                                                                       {"closed_disp", new_d}};
                const std::string base = "K=" + std::to_string(K) + " in-patch(" + std::to_string(m + 1) + ") " + fld;
                queries.push_back({base + ": -ERANGE <=> out of range; displacement = S", jp,
                                   w.err == !s.fits(new_d, off16) && z3::implies(!w.err, w.disp == new_d && w.pos == s.S(s.p[m], K) + j),
                                   watch});
            }
        }
        // ---- side tables: subprog starts (incl. fake exit N), linfo, insn arrays, pokes ----
        {
            const z3::expr v0 = ctx.int_const("v");
            z3::expr v = v0;
            for (uint32_t i = 0; i < K; ++i) v = z3::ite(gt(v, s.q(i)), v + (s.n[i] - s.bv(1)), v);
            queries.push_back({"K=" + std::to_string(K) + " tables: '<= off stays' per patch = S(v)",
                               pre && le(s.bv(0), v0) && le(v0, s.N), v == s.S(v0, K), {{"v", v0}, {"kernel", v}, {"closed", s.S(v0, K)}}});
        }
        for (auto& q : queries) {
            const auto t0 = std::chrono::steady_clock::now();
            ContractObligation ob{.name = q.name};
            try {
                z3::solver sol(ctx, "QF_LIA");
                detail::configure_solver(ctx, sol, opts.smt);
                sol.add(q.pre);
                sol.add(q.expect_sat ? q.goal : !q.goal);
                z3::check_result cr = sol.check();
                if (q.expect_sat && cr != z3::unknown) cr = cr == z3::sat ? z3::unsat : z3::sat;  // sat = sane
                switch (cr) {
                    case z3::unsat:
                        ob.outcome = Outcome::Pass;
                        detail::count_answer(detail::Answer::Unsat);
                        break;
                    case z3::sat: {
                        ob.outcome = Outcome::Fail;
                        detail::count_answer(detail::Answer::Sat);
                        if (q.expect_sat) {
                            ob.counterexample = "preconditions unsatisfiable: the theorems would be vacuous";
                            break;
                        }
                        z3::model mdl = sol.get_model();
                        for (auto& [nm, e] : q.watch)
                            ob.counterexample += (ob.counterexample.empty() ? "" : ", ") + nm + " = " +
                                                 mdl.eval(e, true).to_string();
                        break;
                    }
                    case z3::unknown:
                        ob.outcome = Outcome::Unknown;
                        ob.counterexample = sol.reason_unknown();
                        detail::count_answer(detail::Answer::Unknown);
                        break;
                }
            } catch (const z3::exception& e) {
                ob.outcome = Outcome::Unknown;
                ob.counterexample = std::string("z3: ") + e.msg();
                detail::count_answer(detail::Answer::Unknown);
            }
            ob.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (ob.outcome == Outcome::Fail && !any_fail) {
                any_fail = true;
                first_bad = Verdict::fail(kContractOracleName, "contract", "refuted: " + ob.name, ob.counterexample);
            }
            if (ob.outcome == Outcome::Unknown) any_unknown = true;
            if (std::getenv("PATCHFUZZ_SMT_TRACE"))
                std::fprintf(stderr, "%s: %s %.1f ms\n", ob.name.c_str(), std::string(to_string(ob.outcome)).c_str(), ob.ms);
            results.push_back(ob);
        }
    }
    if (details) *details = results;
    if (any_fail) return first_bad;
    if (any_unknown) return Verdict::unknown(kContractOracleName, "some obligations timed out (see details)");
    return Verdict::pass_(kContractOracleName, std::to_string(results.size()) + " obligations proved for up to " +
                                                   std::to_string(opts.max_patches) + " patches, N <= " +
                                                   std::to_string(opts.max_len) + ", n_i <= " + std::to_string(opts.max_patch_len));
}

}  // namespace patchfuzz::oracles::smt
