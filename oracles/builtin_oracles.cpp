#include "oracles/builtin_oracles.hpp"

#include "bpf/util/check.hpp"
#include "oracles/smt/inline_equiv.hpp"
#include "oracles/smt/jump_oracle.hpp"
#include "oracles/structural.hpp"

namespace patchfuzz::oracles {
namespace {

void check_batch_evidence(const Evidence& e) {
    PATCHFUZZ_CHECK(e.before != nullptr && e.batch != nullptr && e.reference.program != nullptr && e.candidate.program != nullptr,
                    "a batch oracle is given a batch's evidence");
}

class StructuralOracle final : public Oracle {
public:
    OracleId id() const override { return OracleId::Structural; }
    Scope scope() const override { return Scope::Batch; }
    bool applies_to(const Evidence& e) const override { return e.candidate.patcher != e.reference.patcher; }
    std::vector<Verdict> judge(const Evidence& e) override {
        check_batch_evidence(e);
        if (e.same_as_reference) return {identical_outputs_verdict(e.reference.outcome, e.reference.program->insns.size())};
        return {compare_patcher_outputs({std::string(e.reference.patcher), e.reference.program, e.reference.outcome},
                                        {std::string(e.candidate.patcher), e.candidate.program, e.candidate.outcome})};
    }
};

class SmtJumpOracle final : public Oracle {
public:
    explicit SmtJumpOracle(const smt::SmtOptions& so) : so_(so) {}
    OracleId id() const override { return OracleId::SmtJump; }
    Scope scope() const override { return Scope::Batch; }
    bool applies_to(const Evidence&) const override { return true; }
    std::vector<Verdict> judge(const Evidence& e) override {
        check_batch_evidence(e);
        return {smt::check_jump_targets(*e.before, *e.batch, e.candidate.outcome, *e.candidate.program, so_)};
    }

private:
    smt::SmtOptions so_;
};

class SmtInlineOracle final : public Oracle {
public:
    explicit SmtInlineOracle(const smt::SmtOptions& so) : so_(so) {}
    OracleId id() const override { return OracleId::SmtInline; }
    Scope scope() const override { return Scope::Arch; }
    bool applies_to(const Evidence& e) const override {
        return e.arch != nullptr && e.options != nullptr && e.options->iter_inline != passes::IterInline::Off;
    }
    std::vector<Verdict> judge(const Evidence& e) override {
        PATCHFUZZ_CHECK(applies_to(e), "smt-inline is given a profile and options that inline");
        smt::InlineProofOptions o;
        o.arches = {*e.arch};
        o.iter = e.options->iter_inline;
        o.smt = so_;
        std::vector<Verdict> out;
        for (auto& proof : smt::prove_inlines(o)) {
            proof.verdict.patch_kind = proof.sequence;
            out.push_back(std::move(proof.verdict));
        }
        return out;
    }

private:
    smt::SmtOptions so_;
};

class ExecOracle final : public Oracle {
public:
    explicit ExecOracle(exec::ExecDiffOptions options) : options_(std::move(options)) {}
    OracleId id() const override { return OracleId::Exec; }
    Scope scope() const override { return Scope::Case; }
    bool applies_to(const Evidence& e) const override { return e.program != nullptr; }
    std::vector<Verdict> judge(const Evidence& e) override {
        PATCHFUZZ_CHECK(applies_to(e), "exec is given the case's program");
        exec::ExecDiffOptions o = options_;
        if (e.options != nullptr) o.rewrite = *e.options;
        if (!e.inputs.empty()) o.given = e.inputs;
        if (!e.arches.empty())
            o.archs.assign(e.arches.begin(), e.arches.end());
        else if (e.arch != nullptr)
            o.archs = {*e.arch};
        return {exec::exec_diff(*e.program, o)};
    }

private:
    exec::ExecDiffOptions options_;
};

}  // namespace

std::unique_ptr<Oracle> make_structural_oracle() { return std::make_unique<StructuralOracle>(); }
std::unique_ptr<Oracle> make_smt_jump_oracle(const smt::SmtOptions& so) { return std::make_unique<SmtJumpOracle>(so); }
std::unique_ptr<Oracle> make_smt_inline_oracle(const smt::SmtOptions& so) { return std::make_unique<SmtInlineOracle>(so); }
std::unique_ptr<Oracle> make_exec_oracle(exec::ExecDiffOptions options) { return std::make_unique<ExecOracle>(std::move(options)); }

}  // namespace patchfuzz::oracles
