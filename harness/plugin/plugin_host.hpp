#pragma once
// PluginHost: runs an external patcher's `apply` in a persistent child process (the forkserver
// pattern), so a plugin that crashes, hangs or writes into memory it does not own becomes an
// outcome about that one call instead of a dead campaign, at the cost of one round trip per call
// rather than one fork.
//
// The host is a fork of the calling process (which has the plugin loaded already), started on the
// first call and again after every call that killed it. Input and output travel through one
// shared anonymous mapping made before the fork, so both sides see it at the same address and the
// pf_program structs in it hold plain pointers; two counters in it (futexes) carry "go" and "done",
// and the caller waits for "done" with a deadline (the watchdog): past it the host is killed. A host is
// private to the process that started it: a campaign worker forked later starts its own.
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "include/patchfuzz/patcher.h"

namespace patchfuzz::plugin {

struct PluginEntryPoints {
    int (*apply)(const pf_program*, const pf_patch*, uint32_t, pf_program*, pf_result*) = nullptr;
    void (*free_out)(pf_program*) = nullptr;
};

class PluginHost {
public:
    explicit PluginHost(PluginEntryPoints entry, double timeout_seconds) : entry_(entry), timeout_seconds_(timeout_seconds) {}
    ~PluginHost();
    PluginHost(const PluginHost&) = delete;
    PluginHost& operator=(const PluginHost&) = delete;

    // What became of one call.
    enum class Status { ran, apply_failed, crashed, hung, wrote_input, bad_output, host_failed };
    struct Call {
        Status status = Status::host_failed;
        int rc = 0;                // apply's return value (apply_failed)
        pf_result result{};        // ran
        const pf_program* out{};   // ran: the plugin's program, copied into the shared mapping
        std::string why;           // every other status: what happened, for the finding
    };
    // `in` and `patches` may point anywhere: they are copied into the shared mapping first.
    Call call(const pf_program& in, const pf_patch* patches, uint32_t nr_patches);

private:
    bool start(size_t bytes);
    void stop();                               // kills and reaps the host, if any
    void forget_inherited();                   // a fork of the owner: drop its host without touching it
    [[noreturn]] void serve();

    PluginEntryPoints entry_;
    double timeout_seconds_;
    pid_t owner_ = 0;     // the process that started the host
    pid_t pid_ = 0;       // the host, 0 when none runs
    unsigned char* shm_ = nullptr;
    size_t shm_bytes_ = 0;
};

const char* to_string(PluginHost::Status s);

}  // namespace patchfuzz::plugin
