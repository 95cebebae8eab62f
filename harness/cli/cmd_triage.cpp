// PLACEHOLDER until its issue lands: replaced by the real verb. Says so and exits 2.
#include <cstdio>

#include "harness/cli/commands.hpp"

namespace patchfuzz::cli {
int cmd_triage(Args) {
    std::fprintf(stderr, "patchfuzz: 'triage' is not built yet\n");
    return 2;
}
}  // namespace patchfuzz::cli
