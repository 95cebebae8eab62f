#pragma once
// Term / TermContext: our value wrapper over Z3 bit-vector, boolean and byte-array expressions, so
// that headers of this folder never include z3++.h (the Z3 objects live behind a pimpl in
// expr.cpp). Used by the instruction semantics (bv_semantics.hpp) and the inline-equivalence
// proofs (inline_equiv.hpp). Widths are in bits; memory is an array from 64-bit addresses to bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "oracles/smt/smt_options.hpp"

namespace patchfuzz::oracles::smt {

class TermContext;

class Term {
public:
    struct Impl;
    Term();
    explicit Term(std::shared_ptr<const Impl> impl);

    [[nodiscard]] unsigned width() const;  // 0 for booleans and arrays
    [[nodiscard]] bool is_bool() const;
    [[nodiscard]] const Impl& impl() const { return *impl_; }
    [[nodiscard]] std::string to_string() const;

    // bit-vector arithmetic (wrap-around), both operands of equal width
    friend Term operator+(const Term& a, const Term& b);
    friend Term operator-(const Term& a, const Term& b);
    friend Term operator*(const Term& a, const Term& b);
    friend Term operator&(const Term& a, const Term& b);
    friend Term operator|(const Term& a, const Term& b);
    friend Term operator^(const Term& a, const Term& b);
    friend Term operator-(const Term& a);
    // booleans
    friend Term operator&&(const Term& a, const Term& b);
    friend Term operator||(const Term& a, const Term& b);
    friend Term operator!(const Term& a);
    friend Term operator==(const Term& a, const Term& b);  // any sort
    friend Term operator!=(const Term& a, const Term& b);

private:
    std::shared_ptr<const Impl> impl_;
};

Term shl(const Term& a, const Term& b);
Term lshr(const Term& a, const Term& b);
Term ashr(const Term& a, const Term& b);
Term ult(const Term& a, const Term& b);
Term ule(const Term& a, const Term& b);
Term ugt(const Term& a, const Term& b);
Term uge(const Term& a, const Term& b);
Term slt(const Term& a, const Term& b);
Term sle(const Term& a, const Term& b);
Term sgt(const Term& a, const Term& b);
Term sge(const Term& a, const Term& b);
Term extract(const Term& a, unsigned hi, unsigned lo);
Term zext(const Term& a, unsigned extra_bits);
Term sext(const Term& a, unsigned extra_bits);
Term concat(const Term& hi, const Term& lo);
Term ite(const Term& c, const Term& t, const Term& e);
Term implies(const Term& a, const Term& b);
Term select(const Term& mem, const Term& addr);                     // byte
Term store(const Term& mem, const Term& addr, const Term& byte);

class TermContext {
public:
    TermContext();
    ~TermContext();
    TermContext(const TermContext&) = delete;
    TermContext& operator=(const TermContext&) = delete;

    Term bv(uint64_t value, unsigned width);
    Term var(const std::string& name, unsigned width);  // free bit-vector constant
    Term fresh(const std::string& prefix, unsigned width);  // a new unconstrained one each call
    Term boolean(bool b);
    Term mem_var(const std::string& name);               // free byte array (64-bit addresses)
    // Uninterpreted function `name` : (args widths) -> result_width, applied to args.
    Term apply(const std::string& name, const std::vector<Term>& args, unsigned result_width);

    struct Impl;
    Impl& impl() { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

// prove(claim): Proved when !claim is unsat; Refuted with the values of `watch` in the
// counterexample; Unknown on timeout / resource limit (reason in `why`).
struct ProofResult {
    enum class Status : uint8_t { Proved, Refuted, Unknown } status = Status::Unknown;
    std::string why;
    std::vector<std::pair<std::string, uint64_t>> values;  // watch name -> value (Refuted only)
    double ms = 0;
};
ProofResult prove(TermContext& ctx, const Term& assumptions, const Term& claim,
                  const std::vector<std::pair<std::string, Term>>& watch, const SmtOptions& opts);

}  // namespace patchfuzz::oracles::smt
