#include "harness/plugin/fault_guard.hpp"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace patchfuzz::plugin {
namespace {

constexpr int kFaults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
constexpr int kWatchdogSignal = SIGUSR2;

struct sigaction g_old[65];
sigjmp_buf g_jump;
volatile sig_atomic_t g_active = 0;  // a guarded call runs (on the thread that armed it)

// The watchdog's view of the call in flight.
std::atomic<int64_t> g_deadline_ns{0};  // 0: no call in flight
std::atomic<pthread_t> g_caller{};
bool g_watchdog_runs = false;  // in this process (a fork has none until it asks: threads stay behind)

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
    if (g_active) {
        g_active = 0;
        siglongjmp(g_jump, sig);
    }
    if (sig == kWatchdogSignal) return;  // late: the call had already returned
    // A fault outside a guarded call is patchfuzz's own: the previous disposition handles it.
    const struct sigaction& old = g_old[sig];
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
        old.sa_sigaction(sig, info, uctx);
        return;
    }
    sigaction(sig, &old, nullptr);
    if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) old.sa_handler(sig);
    // SIG_DFL: returning re-executes the faulting instruction, which now takes the default action;
    // an abort() raises again by itself.
}

// Handlers run on a stack of their own, so a plugin that overflows its stack is caught too. One
// per thread, given back when the thread ends.
class AltStack {
public:
    AltStack() {
        stack_t ss{};
        ss.ss_size = size_t{1} << 16;
        ss.ss_sp = std::malloc(ss.ss_size);
        if (ss.ss_sp != nullptr && sigaltstack(&ss, nullptr) == 0) mem_ = ss.ss_sp;
        else std::free(ss.ss_sp);
    }
    ~AltStack() {
        if (mem_ == nullptr) return;
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
        std::free(mem_);
    }
    AltStack(const AltStack&) = delete;
    AltStack& operator=(const AltStack&) = delete;

private:
    void* mem_ = nullptr;
};

void ensure_alt_stack() { thread_local AltStack stack; }

void install_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa{};
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (int s : kFaults) sigaction(s, &sa, &g_old[s]);
        sigaction(kWatchdogSignal, &sa, &g_old[kWatchdogSignal]);
    });
}

void ensure_watchdog() {
    if (g_watchdog_runs) return;
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { g_watchdog_runs = false; }); });
    g_watchdog_runs = true;
    std::thread([] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            int64_t d = g_deadline_ns.load();
            if (d != 0 && now_ns() > d && g_deadline_ns.compare_exchange_strong(d, 0))
                pthread_kill(g_caller.load(), kWatchdogSignal);
        }
    }).detach();
}

}  // namespace

GuardOutcome run_guarded(void (*fn)(void*), void* arg, double timeout_seconds) {
    install_once();
    ensure_alt_stack();
    ensure_watchdog();
    GuardOutcome out;
    // The signal mask is not saved (no system call per call): the handlers run with SA_NODEFER,
    // so a jump out of one leaves nothing blocked.
    const int sig = sigsetjmp(g_jump, 0);
    if (sig == 0) {
        g_caller.store(pthread_self());
        g_deadline_ns.store(now_ns() + static_cast<int64_t>(timeout_seconds * 1e9));
        g_active = 1;
        fn(arg);
        g_active = 0;
        g_deadline_ns.store(0);
        return out;
    }
    g_deadline_ns.store(0);
    if (sig == kWatchdogSignal) {
        out.kind = GuardOutcome::Kind::hung;
    } else {
        out.kind = GuardOutcome::Kind::crashed;
        out.signal = sig;
    }
    return out;
}

}  // namespace patchfuzz::plugin
