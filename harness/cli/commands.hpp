#pragma once
// The verbs of the `patchfuzz` CLI. Each lives in its own cmd_<verb>.cpp and receives the
// arguments after the verb. Exit codes everywhere: 0 ok, 1 a check failed, 2 bad input or usage,
// 3 internal error / only unknown verdicts (prove-*).
#include <span>
#include <string_view>

namespace patchfuzz::cli {

using Args = std::span<char* const>;

int cmd_asm(Args args);
int cmd_disasm(Args args);
int cmd_load(Args args);
int cmd_rewrite(Args args);
int cmd_bench(Args args);
int cmd_gen(Args args);
int cmd_check(Args args);
int cmd_prove_contract(Args args);
int cmd_prove_inline(Args args);
int cmd_conformance(Args args);
int cmd_costmodel(Args args);
int cmd_fuzz(Args args);
int cmd_report(Args args);
int cmd_triage(Args args);
int cmd_minimize(Args args);
int cmd_replay(Args args);
int cmd_kernel(Args args);
int cmd_version(Args args);

struct Command {
    std::string_view name;
    int (*run)(Args);
    std::string_view summary;
};

}  // namespace patchfuzz::cli
