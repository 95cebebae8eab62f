// Example external patcher: patchfuzz's own batched patcher behind the C ABI of
// include/patchfuzz/patcher.h. Built as build/libpatchfuzz_example_patcher.so; a kernel developer
// copies this file and replaces the body of patchfuzz_patcher_apply() with a call into their code.
// Installed as a template (share/patchfuzz/examples/batched-plugin/, with a CMakeLists.txt) that
// builds outside our tree against an installed patchfuzz: find_package(patchfuzz) or pkg-config
// patchfuzz-reference-patcher (our patcher); a patcher of one's own needs only patchfuzz::plugin.
#include <unistd.h>

#include <cstring>
#include <memory>

#include <patchfuzz/patcher.h>

#include "bpf/patch/patch.hpp"
#include "harness/plugin/pf_convert.hpp"

extern "C" {

#ifndef PATCHFUZZ_EXAMPLE_ABI
#define PATCHFUZZ_EXAMPLE_ABI PATCHFUZZ_PATCHER_ABI_VERSION
#endif
uint32_t patchfuzz_patcher_abi_version(void) { return PATCHFUZZ_EXAMPLE_ABI; }

const char* patchfuzz_patcher_name(void) { return "example-batched"; }

#ifndef PATCHFUZZ_EXAMPLE_NO_VERSION  // test variant: a plugin from before the version query
// Optional: patchfuzz shows it with the name in --version, campaign summaries and verdicts.
const char* patchfuzz_patcher_version(void) { return "1.0.0"; }
#endif

int patchfuzz_patcher_apply(const pf_program* in, const pf_patch* patches, uint32_t nr_patches, pf_program* out,
                            pf_result* result) {
    using namespace patchfuzz;
#ifdef PATCHFUZZ_EXAMPLE_CRASH
    // Test variant: a plugin that dies must become a finding, not a dead campaign.
    if (nr_patches > 0) __builtin_trap();
#endif
#ifdef PATCHFUZZ_EXAMPLE_HANG
    // Test variant: a plugin that never returns must become a finding once the watchdog kills it.
    // (It waits forever rather than spinning, as a deadlocked patcher would.)
    if (nr_patches > 1)
        for (;;) pause();
#endif
#ifdef PATCHFUZZ_EXAMPLE_SCRIBBLE
    // Test variant: a plugin that writes into memory it was given read-only (the caller's program).
    if (nr_patches > 1) const_cast<bpf_insn*>(in->insns)[patches[0].pos].imm ^= 0x5a5a;
#endif
    // Fields the ABI does not carry (maps, kfuncs) are not needed by patching. The patcher and the
    // program's storage are kept from call to call (calls come one at a time per thread); the
    // patcher keeps only storage between batches, so each call still starts afresh.
    thread_local Program prog;
    thread_local const std::unique_ptr<patch::Patcher> patcher = patch::make_batched_patcher();
    plugin::from_pf_into(*in, prog);
    const patch::PatchBatch batch = plugin::from_pf(patches, nr_patches);
    const patch::PatchOutcome o = patcher->apply(prog, batch);
    result->err = o.err;
    result->raw_err = o.raw_err;
    std::strncpy(result->log, o.log.c_str(), sizeof result->log - 1);
    result->log[sizeof result->log - 1] = 0;
    plugin::to_pf_malloc(prog, *out);
    return 0;
}

void patchfuzz_patcher_free(pf_program* out) { patchfuzz::plugin::free_pf_malloc(*out); }

}  // extern "C"
