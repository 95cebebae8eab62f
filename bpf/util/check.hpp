#pragma once
// PATCHFUZZ_CHECK: internal invariants only. A broken invariant is our bug, never the user's input:
// print where and why, then abort() so sanitizers and libFuzzer keep the stack.
#include <cstdio>
#include <cstdlib>

#define PATCHFUZZ_CHECK(cond, msg)                                                                  \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            std::fprintf(stderr, "patchfuzz: internal invariant failed at %s:%d: %s (%s)\n", __FILE__, \
                         __LINE__, #cond, msg);                                                     \
            std::abort();                                                                           \
        }                                                                                           \
    } while (0)
