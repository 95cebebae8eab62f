#include "oracles/smt/expr.hpp"

#include <z3++.h>

#include <chrono>

#include "oracles/smt/solver_config.hpp"

namespace patchfuzz::oracles::smt {

struct Term::Impl {
    z3::expr e;
};

struct TermContext::Impl {
    z3::context ctx;
    uint64_t fresh_counter = 0;
};

namespace {
Term wrap(const z3::expr& e) { return Term(std::make_shared<const Term::Impl>(Term::Impl{e})); }
const z3::expr& ex(const Term& t) { return t.impl().e; }
}  // namespace

Term::Term() = default;
Term::Term(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

unsigned Term::width() const { return impl_->e.is_bv() ? impl_->e.get_sort().bv_size() : 0; }
bool Term::is_bool() const { return impl_->e.is_bool(); }
std::string Term::to_string() const { return impl_->e.to_string(); }

Term operator+(const Term& a, const Term& b) { return wrap(ex(a) + ex(b)); }
Term operator-(const Term& a, const Term& b) { return wrap(ex(a) - ex(b)); }
Term operator*(const Term& a, const Term& b) { return wrap(ex(a) * ex(b)); }
Term operator&(const Term& a, const Term& b) { return wrap(ex(a) & ex(b)); }
Term operator|(const Term& a, const Term& b) { return wrap(ex(a) | ex(b)); }
Term operator^(const Term& a, const Term& b) { return wrap(ex(a) ^ ex(b)); }
Term operator-(const Term& a) { return wrap(-ex(a)); }
Term operator&&(const Term& a, const Term& b) { return wrap(ex(a) && ex(b)); }
Term operator||(const Term& a, const Term& b) { return wrap(ex(a) || ex(b)); }
Term operator!(const Term& a) { return wrap(!ex(a)); }
Term operator==(const Term& a, const Term& b) { return wrap(ex(a) == ex(b)); }
Term operator!=(const Term& a, const Term& b) { return wrap(ex(a) != ex(b)); }

Term shl(const Term& a, const Term& b) { return wrap(z3::shl(ex(a), ex(b))); }
Term lshr(const Term& a, const Term& b) { return wrap(z3::lshr(ex(a), ex(b))); }
Term ashr(const Term& a, const Term& b) { return wrap(z3::ashr(ex(a), ex(b))); }
Term ult(const Term& a, const Term& b) { return wrap(z3::ult(ex(a), ex(b))); }
Term ule(const Term& a, const Term& b) { return wrap(z3::ule(ex(a), ex(b))); }
Term ugt(const Term& a, const Term& b) { return wrap(z3::ugt(ex(a), ex(b))); }
Term uge(const Term& a, const Term& b) { return wrap(z3::uge(ex(a), ex(b))); }
Term slt(const Term& a, const Term& b) { return wrap(z3::slt(ex(a), ex(b))); }
Term sle(const Term& a, const Term& b) { return wrap(z3::sle(ex(a), ex(b))); }
Term sgt(const Term& a, const Term& b) { return wrap(z3::sgt(ex(a), ex(b))); }
Term sge(const Term& a, const Term& b) { return wrap(z3::sge(ex(a), ex(b))); }
Term extract(const Term& a, unsigned hi, unsigned lo) { return wrap(ex(a).extract(hi, lo)); }
Term zext(const Term& a, unsigned extra) { return extra == 0 ? a : wrap(z3::zext(ex(a), extra)); }
Term sext(const Term& a, unsigned extra) { return extra == 0 ? a : wrap(z3::sext(ex(a), extra)); }
Term concat(const Term& hi, const Term& lo) { return wrap(z3::concat(ex(hi), ex(lo))); }
Term ite(const Term& c, const Term& t, const Term& e) { return wrap(z3::ite(ex(c), ex(t), ex(e))); }
Term implies(const Term& a, const Term& b) { return wrap(z3::implies(ex(a), ex(b))); }
Term select(const Term& mem, const Term& addr) { return wrap(z3::select(ex(mem), ex(addr))); }
Term store(const Term& mem, const Term& addr, const Term& byte) { return wrap(z3::store(ex(mem), ex(addr), ex(byte))); }

TermContext::TermContext() : impl_(std::make_unique<Impl>()) {}
TermContext::~TermContext() = default;

Term TermContext::bv(uint64_t value, unsigned width) { return wrap(impl_->ctx.bv_val(value, width)); }
Term TermContext::var(const std::string& name, unsigned width) { return wrap(impl_->ctx.bv_const(name.c_str(), width)); }
Term TermContext::fresh(const std::string& prefix, unsigned width) {
    return var(prefix + "!" + std::to_string(impl_->fresh_counter++), width);
}
Term TermContext::boolean(bool b) { return wrap(impl_->ctx.bool_val(b)); }
Term TermContext::mem_var(const std::string& name) {
    z3::sort s = impl_->ctx.array_sort(impl_->ctx.bv_sort(64), impl_->ctx.bv_sort(8));
    return wrap(impl_->ctx.constant(name.c_str(), s));
}
Term TermContext::apply(const std::string& name, const std::vector<Term>& args, unsigned result_width) {
    z3::sort_vector dom(impl_->ctx);
    z3::expr_vector av(impl_->ctx);
    for (const auto& a : args) {
        dom.push_back(ex(a).get_sort());
        av.push_back(ex(a));
    }
    z3::func_decl f = impl_->ctx.function(name.c_str(), dom, impl_->ctx.bv_sort(result_width));
    return wrap(f(av));
}

ProofResult prove(TermContext& tc, const Term& assumptions, const Term& claim,
                  const std::vector<std::pair<std::string, Term>>& watch, const SmtOptions& opts) {
    ProofResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        z3::context& ctx = tc.impl().ctx;
        z3::solver s(ctx);
        detail::configure_solver(ctx, s, opts);
        s.add(ex(assumptions));
        s.add(!ex(claim));
        switch (s.check()) {
            case z3::unsat:
                r.status = ProofResult::Status::Proved;
                detail::count_answer(detail::Answer::Unsat);
                break;
            case z3::sat: {
                r.status = ProofResult::Status::Refuted;
                detail::count_answer(detail::Answer::Sat);
                z3::model m = s.get_model();
                for (const auto& [name, t] : watch) {
                    z3::expr v = m.eval(ex(t), true);
                    uint64_t val = 0;
                    if (v.is_bool()) val = v.is_true() ? 1 : 0;
                    else if (v.is_numeral()) val = v.get_numeral_uint64();
                    r.values.emplace_back(name, val);
                }
                break;
            }
            case z3::unknown:
                r.status = ProofResult::Status::Unknown;
                r.why = s.reason_unknown();
                detail::count_answer(detail::Answer::Unknown);
                break;
        }
    } catch (const z3::exception& e) {
        r.status = ProofResult::Status::Unknown;
        r.why = std::string("z3: ") + e.msg();
        detail::count_answer(detail::Answer::Unknown);
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace patchfuzz::oracles::smt
