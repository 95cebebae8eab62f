#pragma once
// The `kernel` oracle of a campaign (`patchfuzz fuzz --oracles ...,kernel --kernel 6.12`): while
// the in-process oracles run on generated cases, a background thread feeds batches of
// verifier-acceptable programs (gen/acceptable_gen.hpp) through a real kernel under qemu
// (harness/kernel/kernel_check.hpp: accepted?, real xlated vs our incremental model, and the
// real BPF_PROG_TEST_RUN vs our interpreter); every other program is loaded with
// BPF_F_TEST_RND_HI32, so that the model's zext_dst marks are held to the verifier's too. The VM is a separate process, so the thread mostly
// waits and the campaign's own throughput barely changes.
//
// Every disagreement is a finding: bucketed by a signature
// "kernel-<tag>/-/-/<xlated-differ|model-failed|vm-crashed|run-mismatch>/x86_64", written
// atomically to OUT/findings/<slug>/ as repro.case (the finding minimized), original.case (the
// generated program and its inputs), verdict.txt (the minimized case's diff and log tail, and how
// it was minimized) and hits. A new bucket's finding is minimized in rounds of VM boots
// (harness/kernel/kernel_minimize.hpp) within a budget (a campaign that ends waits for it; an
// interrupted one does not); the replay line re-checks the minimized case in the VM.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bpf/passes/privilege.hpp"
#include "harness/kernel/kernel_check.hpp"
#include "harness/kernel/kernel_minimize.hpp"

namespace patchfuzz::harness {

struct KernelStreamConfig {
    std::string tag = "6.12";          // which Debian kernel ("6.1" | "6.12")
    kernel::CheckOptions check;        // VM image, guest loader, profile, run
    uint32_t batch = 200;              // programs per VM boot
    uint64_t seed = 1;                 // batch b generates from case_seed(seed ^ salt, b)
    // The loader levels the programs take in turn (program i: privileges[i % size]); all three by
    // default (bpf/passes/privilege.hpp).
    std::vector<passes::Privilege> privileges{passes::Privilege::Root, passes::Privilege::Bpf, passes::Privilege::Unpriv};
    std::string out_dir;
    // Budget of each new bucket's minimization (its `stop` is the campaign's interruption);
    // max_rounds 0: none.
    kernel::KernelMinimizeOptions minimize{.max_rounds = 12, .per_round = 512, .max_seconds = 120, .stop = {}};
};

// What the programs of one loader level did (a campaign mixes the levels).
struct KernelLevelFigures {
    uint64_t cases = 0, accepted = 0, agree = 0, differ = 0, crashed = 0, run_disagree = 0, xlated_differ = 0;
};

struct KernelStreamFigures {
    uint64_t batches = 0, cases = 0, accepted = 0, agree = 0, differ = 0, model_failed = 0, crashed = 0,
             run_disagree = 0;
    // The kernel's xlated programs run in the interpreter (kernel_check.hpp CaseOutcome::xlated_exec):
    // executed, differing from the original (kernel findings), conversions that failed.
    uint64_t xlated_executed = 0, xlated_differ = 0, xlated_conversion_failed = 0;
    // The same per loader level, indexed by passes::Privilege (root, bpf, unpriv).
    std::array<KernelLevelFigures, 3> by_level{};
    double boot_s = -1;                // guest clock at loader start, first boot
    double vm_wall_s = 0;              // all boots together
    std::string release;
    std::string error;                 // a batch that could not run (VM missing, timeout): reported, not fatal
};

// Reports findings as they are filed: (new bucket?, signature, bucket dir, replay command).
using KernelFindingSink = std::function<void(bool, const std::string&, const std::string&, const std::string&)>;

class KernelStream {
public:
    KernelStream(KernelStreamConfig cfg, KernelFindingSink sink);
    ~KernelStream();
    KernelStream(const KernelStream&) = delete;
    KernelStream& operator=(const KernelStream&) = delete;

    // Starts the background thread: batch after batch until finish() is called.
    void start();
    // No new batch starts after this; returns when the batch in flight is checked and filed (at
    // least one batch runs, so a short campaign still consults the kernel).
    KernelStreamFigures finish();
    // A snapshot for the live status line.
    KernelStreamFigures figures() const;

private:
    struct State;
    std::unique_ptr<State> st_;
};

}  // namespace patchfuzz::harness
