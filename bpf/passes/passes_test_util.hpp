#pragma once
// Helpers for the pass tests (header-only, test executables only).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bpf/passes/pass.hpp"
#include "bpf/passes/passes_test_patcher.hpp"

namespace patchfuzz::passes::testing {

inline std::string show(const isa::Insn& i) {
    char b[96];
    std::snprintf(b, sizeof b, "{code=0x%02x dst=%u src=%u off=%d imm=%d}", i.code, i.dst_reg, i.src_reg, i.off, i.imm);
    return b;
}

// Exact comparison with a readable diff of the first mismatch.
inline ::testing::AssertionResult same_insns(const std::vector<isa::Insn>& got, const std::vector<isa::Insn>& want) {
    const size_t n = std::max(got.size(), want.size());
    for (size_t i = 0; i < n; ++i) {
        if (i >= got.size() || i >= want.size() || !isa::same(got[i], want[i])) {
            std::string s = "first difference at insn " + std::to_string(i) + " (got " + std::to_string(got.size()) +
                            " insns, want " + std::to_string(want.size()) + ")\n  got:  " +
                            (i < got.size() ? show(got[i]) : "<none>") + "\n  want: " + (i < want.size() ? show(want[i]) : "<none>");
            return ::testing::AssertionFailure() << s;
        }
    }
    return ::testing::AssertionSuccess();
}

inline RewriteOptions opts_for(const ArchProfile& a, std::vector<std::string> only) {
    RewriteOptions o;
    o.arch = a;
    o.only = std::move(only);
    return o;
}

inline std::vector<uint32_t> starts(const Program& p) {
    std::vector<uint32_t> v;
    for (const auto& s : p.subprogs) v.push_back(s.start);
    return v;
}

// Forwards to a real patcher and records the batches it sees.
class Recorder final : public patch::Patcher {
public:
    explicit Recorder(std::unique_ptr<patch::Patcher> inner) : inner_(std::move(inner)) {}
    std::vector<patch::PatchBatch> batches;
    std::string_view name() const override { return inner_->name(); }
    PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        batches.push_back(batch);
        return inner_->apply(prog, batch);
    }

private:
    std::unique_ptr<patch::Patcher> inner_;
};

inline std::string first_difference(const Program& a, const Program& b) {
    if (a.insns.size() != b.insns.size()) return "insn count " + std::to_string(a.insns.size()) + " vs " + std::to_string(b.insns.size());
    for (size_t i = 0; i < a.insns.size(); ++i)
        if (!isa::same(a.insns[i], b.insns[i])) return "insn " + std::to_string(i) + ": " + show(a.insns[i]) + " vs " + show(b.insns[i]);
    for (size_t i = 0; i < a.aux.size() && i < b.aux.size(); ++i)
        if (!(a.aux[i] == b.aux[i])) return "aux " + std::to_string(i);
    if (a.subprogs != b.subprogs) return "subprogs";
    if (a.linfo != b.linfo) return "linfo";
    if (a.finfo != b.finfo) return "finfo";
    if (a.insn_arrays != b.insn_arrays) return "insn arrays";
    if (a.pokes != b.pokes) return "pokes";
    return "other fields";
}

// Runs the named passes on `p` with the real incremental patcher (the kernel model; its result is
// what the tests check by hand), and on copies with the real batched patcher and the local test
// double: all three must give the same outcome and, on success, identical Programs.
inline PipelineResult run(Program& p, const RewriteOptions& o, std::vector<patch::PatchBatch>* batches = nullptr) {
    Program pb = p, pd = p;
    Recorder inc(patch::make_patcher("incremental"));
    PipelineResult r = run_pipeline(p, inc, o);
    if (batches) *batches = inc.batches;
    auto bat = patch::make_patcher("batched");
    PipelineResult rb = run_pipeline(pb, *bat, o);
    TestDoublePatcher dbl;
    PipelineResult rd = run_pipeline(pd, dbl, o);
    EXPECT_EQ(r.outcome.err, rb.outcome.err) << "incremental vs batched outcome";
    EXPECT_EQ(r.outcome.log, rb.outcome.log);
    EXPECT_EQ(r.outcome.err, rd.outcome.err) << "incremental vs test double outcome";
    if (r.outcome.ok() && rb.outcome.ok()) {
        EXPECT_TRUE(p == pb) << "incremental vs batched: " << first_difference(p, pb);
    }
    if (r.outcome.ok() && rd.outcome.ok()) {
        EXPECT_TRUE(p == pd) << "incremental vs test double: " << first_difference(p, pd);
    }
    return r;
}

}  // namespace patchfuzz::passes::testing
