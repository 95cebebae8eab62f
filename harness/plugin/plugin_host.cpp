#include "harness/plugin/plugin_host.hpp"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace patchfuzz::plugin {
namespace {

// The start of the shared mapping: where the call's input lies and the answer the host leaves.
struct Channel {
    // The handshake: the caller bumps `go` for a call, the host sets `done` to it when answered.
    std::atomic<uint32_t> go{0}, done{0};
    size_t in_begin = 0, in_end = 0;  // offsets of everything the plugin may only read
    size_t out_begin = 0;             // offset from which the host copies the plugin's program
    const pf_program* in = nullptr;
    const pf_patch* patches = nullptr;
    uint32_t nr_patches = 0;
    // The answer.
    int32_t status = 0;  // PluginHost::Status
    int32_t rc = 0;
    size_t need_bytes = 0;  // the output did not fit: the mapping the host needs
    pf_result result{};
    pf_program out{};
};

constexpr size_t kAlign = 16;
constexpr size_t kMinMapping = size_t{64} << 20;  // untouched pages of a shared mapping cost nothing

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A bump allocator over a part of the mapping.
class Bump {
public:
    Bump(unsigned char* base, size_t off, size_t cap) : base_(base), off_(off), cap_(cap) {}
    template <class T>
    T* put(const T* src, size_t n) {
        if (n == 0) return nullptr;
        const size_t bytes = round_up(n * sizeof(T));
        if (off_ + bytes > cap_) {
            overflow_ += bytes;
            return nullptr;
        }
        T* dst = reinterpret_cast<T*>(base_ + off_);
        std::memcpy(static_cast<void*>(dst), src, n * sizeof(T));
        off_ += bytes;
        return dst;
    }
    [[nodiscard]] size_t offset() const { return off_; }
    [[nodiscard]] size_t overflow() const { return overflow_; }

private:
    unsigned char* base_;
    size_t off_, cap_;
    size_t overflow_ = 0;
};

size_t program_bytes(const pf_program& p) {
    return round_up(sizeof(pf_program)) + round_up(p.len * sizeof(bpf_insn)) + round_up(p.len * sizeof(pf_insn_aux)) +
           round_up(p.nr_subprogs * sizeof(pf_subprog)) + round_up(p.nr_linfo * sizeof(pf_line_info)) +
           round_up(p.nr_finfo * sizeof(pf_func_info)) + round_up(p.nr_insn_array_entries * sizeof(pf_insn_array_entry)) +
           round_up(p.nr_pokes * sizeof(pf_poke));
}

// Copies the arrays of `p` into `b`; the copy's pointers point into the mapping.
pf_program put_program(Bump& b, const pf_program& p) {
    pf_program q = p;
    q.insns = b.put(p.insns, p.len);
    q.aux = b.put(p.aux, p.len);
    q.subprogs = b.put(p.subprogs, p.nr_subprogs);
    q.linfo = b.put(p.linfo, p.nr_linfo);
    q.finfo = b.put(p.finfo, p.nr_finfo);
    q.insn_array_entries = b.put(p.insn_array_entries, p.nr_insn_array_entries);
    q.pokes = b.put(p.pokes, p.nr_pokes);
    return q;
}

// A plugin's answer must not claim arrays it did not return.
const char* missing_array(const pf_program& p) {
    if (p.len && (!p.insns || !p.aux)) return "a program with instructions but no insns or aux array";
    if (p.nr_subprogs && !p.subprogs) return "subprograms but no array";
    if (p.nr_linfo && !p.linfo) return "line info entries but no array";
    if (p.nr_finfo && !p.finfo) return "func info entries but no array";
    if (p.nr_insn_array_entries && !p.insn_array_entries) return "insn array entries but no array";
    if (p.nr_pokes && !p.pokes) return "poke descriptors but no array";
    return nullptr;
}

// Futexes on the shared mapping (MAP_SHARED: not the process-private variant).
void futex_wake(std::atomic<uint32_t>& word) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}
// Sleeps while `word` holds `seen`, at most `ns` (spurious wake-ups are the caller's to retry).
void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, long ns) {
    timespec ts{.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, ns > 0 ? &ts : nullptr, nullptr, 0);
}

// A call usually takes microseconds, and a case's calls come in bursts (one per pass and profile):
// a short spin before sleeping saves both sides most sleeps and wake-ups (measured: ~45 us a call
// with futexes alone, ~15 us with these spins, on a loaded 2-core machine).
constexpr int kHostSpins = 1000;    // the host, waiting for the next call
constexpr int kCallerSpins = 3000;  // the caller, waiting for the answer
bool spin_until_changed(const std::atomic<uint32_t>& word, uint32_t seen, int spins) {
    for (int i = 0; i < spins; ++i) {
        if (word.load(std::memory_order_acquire) != seen) return true;
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    return false;
}

}  // namespace

const char* to_string(PluginHost::Status s) {
    switch (s) {
        case PluginHost::Status::ran: return "ran";
        case PluginHost::Status::apply_failed: return "apply failed";
        case PluginHost::Status::crashed: return "crashed";
        case PluginHost::Status::hung: return "hung";
        case PluginHost::Status::wrote_input: return "wrote into its input";
        case PluginHost::Status::bad_output: return "returned a malformed program";
        case PluginHost::Status::host_failed: return "host failed";
    }
    return "?";
}

PluginHost::~PluginHost() {
    if (owner_ == getpid()) stop();
}

void PluginHost::forget_inherited() {
    // The parent's host stays the parent's: only this process's view of the mapping goes.
    if (shm_ != nullptr) munmap(shm_, shm_bytes_);
    shm_ = nullptr;
    shm_bytes_ = 0;
    pid_ = 0;
}

void PluginHost::stop() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        int st = 0;
        while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
    }
    forget_inherited();
}

bool PluginHost::start(size_t bytes) {
    stop();
    owner_ = getpid();
    shm_bytes_ = std::max(kMinMapping, bytes);
    void* m = mmap(nullptr, shm_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        shm_ = nullptr;
        shm_bytes_ = 0;
        return false;
    }
    shm_ = static_cast<unsigned char*>(m);
    new (shm_) Channel();
    const pid_t pid = fork();
    if (pid < 0) {
        forget_inherited();
        return false;
    }
    if (pid == 0) serve();
    pid_ = pid;
    return true;
}

// The host's loop: it answers each bump of `go`; it ends with its caller (PR_SET_PDEATHSIG) or
// when the caller kills it.
void PluginHost::serve() {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != owner_) _exit(0);
    // Ctrl-C reaches the whole process group: the caller decides when its host ends.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_DFL);
    auto& ch = *reinterpret_cast<Channel*>(shm_);
    std::vector<unsigned char> before;
    uint32_t served = 0;
    for (;;) {
        if (!spin_until_changed(ch.go, served, kHostSpins))
            while (ch.go.load(std::memory_order_acquire) == served) futex_wait(ch.go, served, 0);
        served = ch.go.load(std::memory_order_acquire);
        before.assign(shm_ + ch.in_begin, shm_ + ch.in_end);
        pf_program out{};
        out.struct_size = sizeof out;
        pf_result res{};
        res.struct_size = sizeof res;
        const int rc = entry_.apply(ch.in, ch.patches, ch.nr_patches, &out, &res);
        ch.rc = rc;
        ch.need_bytes = 0;
        if (std::memcmp(before.data(), shm_ + ch.in_begin, before.size()) != 0) {
            ch.status = static_cast<int32_t>(Status::wrote_input);
        } else if (rc != 0) {
            ch.status = static_cast<int32_t>(Status::apply_failed);
        } else if (missing_array(out) != nullptr) {
            ch.status = static_cast<int32_t>(Status::bad_output);
        } else {
            res.log[sizeof res.log - 1] = 0;
            ch.result = res;
            Bump b(shm_, ch.out_begin, shm_bytes_);
            ch.out = put_program(b, out);
            if (b.overflow() != 0) ch.need_bytes = b.offset() + b.overflow() + kAlign;
            ch.status = static_cast<int32_t>(Status::ran);
        }
        entry_.free_out(&out);
        ch.done.store(served, std::memory_order_release);
        futex_wake(ch.done);
    }
}

PluginHost::Call PluginHost::call(const pf_program& in, const pf_patch* patches, uint32_t nr_patches) {
    Call call;
    if (owner_ != getpid()) forget_inherited();
    size_t in_bytes = round_up(sizeof(Channel)) + program_bytes(in) + round_up(nr_patches * sizeof(pf_patch));
    for (uint32_t i = 0; i < nr_patches; ++i) in_bytes += round_up(patches[i].nr_insns * sizeof(bpf_insn));
    // Room for the output too: a rewrite rarely more than doubles a program.
    const size_t want = in_bytes * 4 + kAlign;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if ((pid_ == 0 || shm_bytes_ < want) && !start(std::max(want, shm_bytes_))) {
            call.why = std::string("could not start the plugin host: ") + std::strerror(errno);
            return call;
        }
        auto& ch = *reinterpret_cast<Channel*>(shm_);
        Bump b(shm_, round_up(sizeof(Channel)), shm_bytes_);
        ch.in_begin = b.offset();
        std::vector<pf_patch> local(patches, patches + nr_patches);
        for (auto& p : local) p.insns = b.put(p.insns, p.nr_insns);
        ch.patches = b.put(local.data(), local.size());
        ch.nr_patches = nr_patches;
        const pf_program staged = put_program(b, in);
        ch.in = b.put(&staged, 1);
        ch.in_end = b.offset();
        ch.out_begin = b.offset();
        ch.status = static_cast<int32_t>(Status::host_failed);
        const uint32_t ticket = ch.go.load(std::memory_order_relaxed) + 1;
        ch.go.store(ticket, std::memory_order_release);
        futex_wake(ch.go);
        // The watchdog: the answer must come within the deadline, and a host that died answers
        // never: between short sleeps the caller looks for both.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        if (!spin_until_changed(ch.done, ticket - 1, kCallerSpins)) {
            while (ch.done.load(std::memory_order_acquire) != ticket) {
                futex_wait(ch.done, ticket - 1, 20'000'000);
                if (ch.done.load(std::memory_order_acquire) == ticket) break;
                int st = 0;
                if (waitpid(pid_, &st, WNOHANG) == pid_) {
                    pid_ = 0;
                    stop();
                    call.status = Status::crashed;
                    call.why = WIFSIGNALED(st) ? "crashed (signal " + std::to_string(WTERMSIG(st)) + ", " +
                                                     strsignal(WTERMSIG(st)) + ")"
                                               : "exited with status " + std::to_string(WEXITSTATUS(st)) + " inside apply";
                    return call;
                }
                if (std::chrono::steady_clock::now() > deadline) {
                    stop();
                    call.status = Status::hung;
                    char secs[32];
                    std::snprintf(secs, sizeof secs, "%g", timeout_seconds_);
                    call.why = std::string("hung (no answer within ") + secs + " s; killed)";
                    return call;
                }
            }
        }
        call.status = static_cast<Status>(ch.status);
        call.rc = ch.rc;
        switch (call.status) {
            case Status::ran:
                if (ch.need_bytes != 0) {  // the output did not fit: a larger mapping, and the call again
                    start(ch.need_bytes * 2);
                    continue;
                }
                call.result = ch.result;
                call.out = &ch.out;
                return call;
            case Status::apply_failed: call.why = "apply returned " + std::to_string(ch.rc); return call;
            case Status::wrote_input:
                stop();  // what else it wrote is unknown: a fresh host for the next call
                call.why = "wrote into its input (the program and patches are read-only to apply)";
                return call;
            case Status::bad_output:
                stop();
                call.why = "returned a malformed program";
                return call;
            default: stop(); call.why = "the plugin host answered nonsense"; return call;
        }
    }
    call.status = Status::bad_output;
    call.why = "returned a program too large for the shared mapping";
    return call;
}

}  // namespace patchfuzz::plugin
