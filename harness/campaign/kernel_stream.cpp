#include "harness/campaign/kernel_stream.hpp"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "bpf/util/atomic_file.hpp"
#include "bpf/util/rng.hpp"
#include "gen/acceptable_gen.hpp"
#include "harness/campaign/campaign.hpp"
#include "harness/case/case_file.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/triage/triage.hpp"
#include "harness/version/build_version.hpp"

namespace patchfuzz::harness {
namespace fs = std::filesystem;

namespace {

// Kernel batches draw from their own seed stream so adding the oracle does not change which
// programs the in-process oracles see.
constexpr uint64_t kKernelSeedSalt = 0x6b65726e656c3132ULL;  // "kernel12"

std::string verdict_text(const kernel::CaseOutcome& o, const std::string& tag, const std::string& release) {
    std::ostringstream v;
    v << "kernel " << tag << " (" << release << "): " << kernel::to_string(o.agreement) << "\n";
    if (o.agreement == kernel::Agreement::Differ || o.agreement == kernel::Agreement::ModelFailed)
        v << "kernel xlated " << o.kernel_len << " insns, model " << o.model_len << " insns (" << o.masked
          << " masked)\n"
          << o.diff << "\n";
    for (const auto& r : o.runs)
        if (!r.agree) v << "test run input " << r.input << ": " << r.detail << "\n";
    if (!o.log.empty()) {
        v << "verifier log tail:\n";
        for (const auto& l : o.log) v << "  " << l << "\n";
    }
    return v.str();
}

}  // namespace

struct KernelStream::State {
    KernelStreamConfig cfg;
    KernelFindingSink sink;
    mutable std::mutex mu;
    KernelStreamFigures fig;
    bool stop = false;
    std::thread thread;

    void file_finding(const kernel::KernelCase& kc, const kernel::CaseOutcome& o, const char* divergence,
                      uint64_t batch_seed, size_t index) {
        const std::string signature = "kernel-" + cfg.tag + "/-/-/" + divergence + "/" + std::string(cfg.check.arch.name);
        const std::string arch_opt = cfg.check.vm.arch == "amd64" ? "" : " --arch " + cfg.check.vm.arch;
        const BucketClaim claim = claim_bucket(cfg.out_dir, signature);
        const fs::path bucket = claim.dir;
        const fs::path case_path = bucket / "repro.case";
        const bool new_bucket = claim.new_bucket;
        const std::string replay = "patchfuzz kernel check " + case_path.string() + " --kernel " + cfg.tag + arch_opt + " --run";
        if (new_bucket) {
            const std::string found_by = "found-by: patchfuzz fuzz --oracles kernel --kernel " + cfg.tag +
                                         (arch_opt.empty() ? "" : " --kernel-arch " + cfg.check.vm.arch) + " --seed " +
                                         std::to_string(cfg.seed) + " (kernel batch seed " + std::to_string(batch_seed) +
                                         ", program " + std::to_string(index) + ")";
            kernel::KernelMinimizeOptions mo = cfg.minimize;
            // A campaign that ends normally waits for it (a finding is worth its budget); one that
            // is interrupted does not.
            mo.stop = [] { return g_stop_campaign.load(); };
            kernel::KernelMinimizeResult m{kc, o, 0, 0, 0, "not minimized"};
            if (mo.max_rounds > 0)
                m = kernel::minimize_kernel_finding(kc, o, [this](const std::vector<kernel::KernelCase>& cases) {
                    return kernel::check_cases(cases, cfg.check);
                }, mo);
            const std::string how = "minimized " + std::to_string(kc.program.len()) + " -> " + std::to_string(m.minimized.program.len()) +
                                    " insns in " + std::to_string(m.rounds) + " VM boots (" + std::to_string(m.tried) +
                                    " candidates; ended: " + m.ended + ")";
            // The verdict and the original first: repro.case's presence marks a complete bucket.
            (void)write_file_atomic((bucket / "verdict.txt").string(), verdict_text(m.outcome, cfg.tag, fig.release) + how +
                                                                          "\nversion: " + build::version_string() + "\n");
            (void)write_case_file_atomic(kernel::as_case(kc, batch_seed, {found_by, "signature: " + signature}),
                                         (bucket / "original.case").string());
            (void)write_case_file_atomic(
                kernel::as_case(m.minimized, batch_seed, {found_by, how, "signature: " + signature, "replay: " + replay}),
                case_path.string());
        }
        sink(new_bucket, signature, bucket.string(), replay);
    }

    void run_batch(uint64_t b) {
        const uint64_t batch_seed = case_seed(cfg.seed ^ kKernelSeedSalt, b);
        Rng rng(batch_seed);
        gen::AcceptableOptions go;
        go.v612 = cfg.tag != "6.1";
        go.calls = cfg.check.vm.arch != "armhf";  // no bpf-to-bpf calls in the 32-bit ARM JIT
        go.ctx = cfg.check.vm.arch != "armhf";    // the ctx_access tables are the 64-bit builds'
        const auto spec = kernel::kernel_spec(cfg.tag, cfg.check.vm.arch);
        go.gotox = spec && spec->gotox;
        std::vector<kernel::KernelCase> cases;
        cases.reserve(cfg.batch);
        for (uint32_t i = 0; i < cfg.batch; ++i) {
            go.privilege = cfg.privileges.empty() ? passes::Privilege::Root : cfg.privileges[i % cfg.privileges.size()];
            auto g = gen::generate_acceptable(rng, go);
            cases.push_back({"kbatch-" + std::to_string(batch_seed) + "-" + std::to_string(i), std::move(g.program),
                             std::move(g.inputs)});
            cases.back().privilege = go.privilege;
            // Every other program is loaded with BPF_F_TEST_RND_HI32, which also holds the
            // model's zext_dst marks to the verifier's (kernel::with_rnd_hi32). Root loads only:
            // below bypass_spec_v1 the verifier also marks the defs its speculative walks read,
            // which passes::add_zext_marks does not model (a 6.12 campaign, unprivileged: the
            // kernel marked two defs of r6/r7 the model poisoned).
            if (i % 2 == 1 && go.privilege == passes::Privilege::Root) kernel::with_rnd_hi32(cases.back());
        }
        auto rep = kernel::check_cases(cases, cfg.check);
        if (!rep) {
            std::lock_guard lk(mu);
            fig.error = rep.error().to_string();
            return;
        }
        {
            std::lock_guard lk(mu);
            fig.batches++;
            fig.cases += cases.size();
            fig.accepted += rep->accepted;
            fig.agree += rep->agree;
            fig.differ += rep->differ;
            fig.model_failed += rep->model_failed;
            fig.crashed += rep->crashed;
            fig.run_disagree += rep->run_disagree;
            fig.xlated_executed += rep->xlated_executed;
            fig.xlated_differ += rep->xlated_differ;
            fig.xlated_conversion_failed += rep->xlated_conversion_failed;
            fig.vm_wall_s += rep->wall_s;
            if (fig.boot_s < 0) fig.boot_s = rep->boot_s;
            fig.release = rep->release;
            for (size_t i = 0; i < rep->cases.size() && i < cases.size(); ++i) {
                const kernel::CaseOutcome& o = rep->cases[i];
                KernelLevelFigures& l = fig.by_level[static_cast<size_t>(cases[i].privilege)];
                l.cases++;
                l.accepted += o.agreement != kernel::Agreement::Rejected && o.agreement != kernel::Agreement::Crashed;
                l.agree += o.agreement == kernel::Agreement::Agree;
                l.differ += o.agreement == kernel::Agreement::Differ;
                l.crashed += o.agreement == kernel::Agreement::Crashed;
                l.run_disagree += !o.runs_agree();
                l.xlated_differ += o.xlated_exec == "differ";
            }
        }
        for (size_t i = 0; i < rep->cases.size(); ++i)
            if (const char* d = kernel::divergence_of(rep->cases[i])) file_finding(cases[i], rep->cases[i], d, batch_seed, i);
    }

    void loop() {
        for (uint64_t b = 0;; ++b) {
            run_batch(b);
            std::lock_guard lk(mu);
            // A VM that cannot run now will not run on the next batch either.
            if (stop || !fig.error.empty()) return;
        }
    }
};

KernelStream::KernelStream(KernelStreamConfig cfg, KernelFindingSink sink) : st_(std::make_unique<State>()) {
    st_->cfg = std::move(cfg);
    st_->sink = std::move(sink);
}

KernelStream::~KernelStream() {
    if (st_->thread.joinable()) (void)finish();
}

void KernelStream::start() {
    st_->thread = std::thread([s = st_.get()] { s->loop(); });
}

KernelStreamFigures KernelStream::finish() {
    {
        std::lock_guard lk(st_->mu);
        st_->stop = true;
    }
    if (st_->thread.joinable()) st_->thread.join();
    return figures();
}

KernelStreamFigures KernelStream::figures() const {
    std::lock_guard lk(st_->mu);
    return st_->fig;
}

}  // namespace patchfuzz::harness
