// patchfuzz check CASE: run the oracles on one case and print every verdict (with reasons and
// counterexamples).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "bpf/util/json.hpp"
#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/privilege.hpp"
#include "harness/cli/choices.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/input_format.hpp"
#include "harness/cli/kernel_oracle_options.hpp"
#include "harness/kernel/kernel_oracle.hpp"
#include "harness/runner/expectation.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::cli {

int cmd_check(Args args) {
    std::string path;
    harness::RunConfig cfg;
    bool json = false, all = false, arch_given = false, want_kernel = false;
    std::optional<passes::Privilege> privilege;
    Choices oracle_names = case_oracle_choices();
    oracle_names.names.emplace_back("smt");
    oracle_names.names.emplace_back("kernel");
    std::string kernel_tag = "6.12", kernel_arch = "amd64";
    const VerbFlags spec{
        .verb = "check",
        .usage = {"patchfuzz check INPUT [--oracle LIST] [--arch LIST] [--privilege root|bpf|unpriv] [--all]",
                  "               [--kernel K] [--kernel-arch A] [--json]"},
        .about = "INPUT is a .case, a BPF ELF object (every program in it), assembly or raw insn bytes,\n"
                 "told apart by content, not by name.\n"
                 "Run it through both patchers, the passes and the arch profiles, and print the oracles'\n"
                 "verdicts.",
        .flags = {list_flag({"--oracle", "--oracles"}, "LIST",
                            "comma list of structural, smt-jump, smt-inline, exec, or `smt` for both SMT oracles (default: all "
                            "four); and kernel: each program loaded into a real kernel under qemu, one VM boot per program "
                            "(`patchfuzz kernel check` batches many), its xlated program held to the model's rewrite and its "
                            "test runs to the interpreter; needs `patchfuzz kernel fetch --kernel K` first",
                            oracle_names,
                            [&](std::vector<std::string> v) {
                                cfg.oracles = {};
                                for (const auto& o : v) {
                                    if (o == "smt") {
                                        cfg.oracles.add(oracles::OracleId::SmtJump);
                                        cfg.oracles.add(oracles::OracleId::SmtInline);
                                    } else if (o == "kernel") {
                                        want_kernel = true;  // not the runner's own: an extra oracle below
                                    } else {
                                        cfg.oracles.add(*oracles::parse_oracle(o));  // a name the table checked
                                    }
                                }
                            }),
                  list_flag({"--arch"}, "LIST", "comma list of arch profiles (default: the case's own arch; x86_64 for the others)",
                            arch_choices(),
                            [&](std::vector<std::string> v) {
                                cfg.arches = profiles_named(v);
                                arch_given = true;
                            }),
                  choice_flag({"--privilege"}, "P",
                              "rewrite as that loader level would (dead-code sanitizing below bpf_capable) instead of the "
                              "case's privilege= (the case's verifier facts are kept)",
                              privilege_choices(), [&](const std::string& v) { privilege = passes::privilege_named(v).value(); }),
                  text_flag({"--kernel"}, "K", "the kernel oracle's Debian kernel: 6.1, 6.12, 7.2 or 7.3 (default 6.12)", kernel_tag),
                  text_flag({"--kernel-arch"}, "A", "the kernel oracle's architecture: amd64 (default), arm64 or armhf", kernel_arch),
                  switch_flag({"--all"}, "list passing verdicts too (by default they are only counted)", all),
                  switch_flag({"--json"}, "the verdicts as a JSON list on stdout", json)},
        .positionals = Positionals{.name = "INPUT", .noun = "case", .required = true, .take = [&](const std::string& a) { path = a; }},
        .exit = "exit: 0 no failure, 1 a failure, 2 bad input or usage, 3 no failure but unknown verdicts"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    // The kernel oracle needs a VM: the runner asks it as an extra oracle (RunConfig::extra_oracles).
    std::unique_ptr<oracles::Oracle> kernel_oracle;
    if (want_kernel) {
        auto co = kernel_oracle_options(kernel_tag, kernel_arch);
        if (!co) return spec.error(co.error().message);
        kernel_oracle = kernel::make_kernel_oracle(*co);
        cfg.extra_oracles.push_back(kernel_oracle.get());
    }
    // A .case, an ELF object (every program in it), assembly or raw bytes: by content.
    auto cases = read_input_cases(path);
    if (!cases) return spec.error(cases.error().to_string());
    unsigned pass = 0, fail = 0, unknown = 0, skip = 0;
    if (json) std::printf("[");
    bool first = true;
    unsigned batches = 0;
    for (harness::Case& one : *cases) {
        if (privilege) {  // the loader's level instead of the case's (the facts stay the case's)
            one.privilege = *privilege;
            one.options.privileged = passes::bpf_capable(*privilege);
        }
        const harness::Case* c = &one;
        harness::RunConfig ccfg = cfg;
        if (!arch_given) ccfg.arches = profiles_named({c->arch});
        if (!json && cases->size() > 1) std::printf("# %s\n", c->comments.empty() ? c->program.name.c_str() : c->comments.back().c_str());
        const auto report = harness::run_case(*c, ccfg);
        for (const auto& v : report.verdicts) {
            const auto o = v.verdict.outcome;
            pass += o == oracles::Outcome::Pass;
            fail += o == oracles::Outcome::Fail;
            unknown += o == oracles::Outcome::Unknown;
            skip += o == oracles::Outcome::Skip;
            if (json) {
                std::printf("%s\n  {\"oracle\": %s, \"arch\": %s, \"pass\": %s, \"patcher\": %s, \"verdict\": %s, "
                            "\"divergence\": %s, \"reason\": %s, \"counterexample\": %s, \"signature\": %s}",
                            first ? "" : ",", json_str(v.verdict.oracle).c_str(), json_str(v.arch).c_str(),
                            json_str(v.pass).c_str(), json_str(v.patcher).c_str(),
                            json_str(std::string(oracles::to_string(o))).c_str(), json_str(v.verdict.divergence).c_str(),
                            json_str(v.verdict.reason).c_str(), json_str(v.verdict.counterexample).c_str(),
                            json_str(o == oracles::Outcome::Fail ? harness::signature_of(v) : "").c_str());
                first = false;
            } else if (all || o != oracles::Outcome::Pass) {
                // An inline proof is about a sequence (the runner files every one under the
                // iterator pass): it is labelled by what it proves ("udiv64 r2, r3", "map_lookup/hash").
                const std::string label = v.verdict.oracle == "smt-inline" && !v.patcher.empty() ? v.patcher
                                          : v.pass.empty()                                     ? "-"
                                                                                               : v.pass;
                std::printf("%-7s %-10s %-7s %-12s %s%s%s\n", std::string(oracles::to_string(o)).c_str(),
                            v.verdict.oracle.c_str(), v.arch.c_str(), label.c_str(),
                            v.verdict.reason.c_str(), v.verdict.counterexample.empty() ? "" : "\n  ",
                            v.verdict.counterexample.c_str());
            }
        }
        batches += report.batches;
    }
    if (json)
        std::printf("\n]\n");
    else
        std::printf("%u verdicts: %u pass, %u fail, %u unknown, %u skip (%u batches)\n", pass + fail + unknown + skip,
                    pass, fail, unknown, skip, batches);
    if (fail) return 1;
    return unknown ? 3 : 0;
}

}  // namespace patchfuzz::cli
