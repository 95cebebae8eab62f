#pragma once
// run_guarded: calls a plugin function on this thread and turns a fault in it (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS) or a call that outlives its deadline into an outcome
// instead of a dead process.
//
// This is the fast path of PluginPatcher: no process switch per call. Leaving a faulting or hung
// call by siglongjmp abandons whatever it was doing (a lock it held, memory it half wrote), so the
// caller must not trust the plugin in this process afterwards: PluginPatcher sends every later
// call to an isolated host process (plugin_host.hpp).
//
// A watchdog thread (one per process, started on first use) sends the calling thread SIGUSR2 when
// a call passes its deadline; one guarded call at a time per process.
namespace patchfuzz::plugin {

struct GuardOutcome {
    enum class Kind { returned, crashed, hung } kind = Kind::returned;
    int signal = 0;  // crashed: the signal
};

GuardOutcome run_guarded(void (*fn)(void*), void* arg, double timeout_seconds);

template <class F>
GuardOutcome run_guarded(F& fn, double timeout_seconds) {
    return run_guarded([](void* p) { (*static_cast<F*>(p))(); }, &fn, timeout_seconds);
}

}  // namespace patchfuzz::plugin
