#pragma once
// Verifier-acceptable generation (issue 9): programs the real Linux verifier (6.1 / 6.12, root,
// JIT on) accepts, shaped after BVF's "structured and sanitized programs": every register is
// written before it is read, stack slots are stored before they are loaded, every map value
// pointer is NULL-checked before use, all control flow is forward except bounded loops (counter
// loops, bpf_loop with a static callback, may_goto on 6.12), the program type is a socket filter,
// XDP or tc classifier. Each program exercises the rewrite rows both kernels implement: hash / LRU
// hash / array map-lookup inlines, div/mod guards, bpf_loop inlining, dead-code and nop removal,
// convert_ctx_accesses (main starts with ctx reads, a bounds-checked packet load through
// data/data_end and ctx stores, while r1 is still the ctx: gen/ctx_reads.hpp); with `v612`,
// may_goto, sdiv/smod, sign-extending ctx reads and the x86-64 helper inlines (bpf_jiffies64,
// bpf_get_smp_processor_id); with `gotox` (7.x, x86-64, root), gotox through jump tables. Each input's ctx is what BPF_PROG_TEST_RUN shows the program for its
// packet (gen/test_run_ctx.hpp).
//
// The aux facts the passes read are filled in as the verifier would: `seen` is false exactly on
// the dead blocks we plant (conditions test freshly loaded, unknown map values, so the verifier
// explores both sides of every other branch), map_index on lookup calls, the bpf_loop inline
// state on bpf_loop calls. Results never depend on nondeterministic helpers (their values are
// discarded), so the kernel's BPF_PROG_TEST_RUN and the interpreter must agree.
#include <cstdint>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/passes/privilege.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::gen {

struct AcceptableOptions {
    bool v612 = true;         // use 6.12-only features (cpu v4 sdiv/smod, may_goto, helper inlines)
    uint32_t blocks_min = 3;  // top-level blocks in main
    uint32_t blocks_max = 10;
    uint32_t inputs = 2;      // test-run inputs per program
    // bpf_loop callbacks and bpf-to-bpf calls. Off for a JIT without bpf-to-bpf calls (armhf's 32-bit
    // ARM JIT: the verifier then runs the program in the interpreter, and refuses callbacks with
    // "callbacks are not allowed in non-JITed programs"); counted loops take their place.
    bool calls = true;
    // The level the program is loaded at (bpf/passes/privilege.hpp). Below root: socket filters
    // only (XDP and tc need CAP_NET_ADMIN, tracing CAP_PERFMON), array maps of a power-of-two size (the
    // kernel rounds an array up to one when its creator lacks bypass_spec_v1) whose lookups keep
    // the index mask. Unprivileged: no bpf-to-bpf calls or callbacks, no back-edges (loops,
    // may_goto), no helper that needs bpf_capable() (bpf_jiffies64).
    passes::Privilege privilege = passes::Privilege::Root;
    // ctx accesses and tc programs. Off for 32-bit guests: the ctx_access tables are the 64-bit
    // builds' (x86-64 and arm64; armhf's structs are 32-bit).
    bool ctx = true;
    // gotox through jump tables (BPF_MAP_TYPE_INSN_ARRAY maps), at root only: 7.x kernels on
    // x86-64 (the JITs with indirect jumps).
    bool gotox = false;
};

struct AcceptableCase {
    Program program;
    std::vector<interp::ExecInput> inputs;
};

AcceptableCase generate_acceptable(Rng& rng, const AcceptableOptions& opts);

}  // namespace patchfuzz::gen
