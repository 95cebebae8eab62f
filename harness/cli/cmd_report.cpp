// patchfuzz report DIR: one self-contained HTML page for a campaign's output.
#include <cstdio>
#include <string>

#include "bpf/util/atomic_file.hpp"
#include "harness/campaign/html_report.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/flags.hpp"

namespace patchfuzz::cli {

int cmd_report(Args args) {
    std::string dir, out, bench;
    const VerbFlags spec{
        .verb = "report",
        .usage = {"patchfuzz report DIR [-o OUT.html] [--bench PLOT.svg]"},
        .about = "Turn a campaign's output (patchfuzz fuzz --out DIR) into one self-contained HTML page:\n"
                 "figures over time, the summary, every bucket with its reproducers, and the patcher scaling\n"
                 "plot of `patchfuzz bench --plot PLOT.svg`.",
        .flags = {text_flag({"-o"}, "OUT.html", "the page to write (default DIR/report.html)", out),
                  text_flag({"--bench"}, "PLOT.svg", "the scaling plot of `patchfuzz bench --plot` to include", bench)},
        .positionals = Positionals{.name = "DIR", .noun = "directory", .required = true, .take = [&](const std::string& a) { dir = a; }},
        .exit = "exit: 0 written, 2 bad input or usage"};
    if (auto rc = parse_or_exit(spec, args)) return *rc;
    if (out.empty()) out = dir + "/report.html";
    auto html = harness::render_campaign_report(dir, bench);
    if (!html) return spec.error(html.error().to_string());
    if (auto s = write_file_atomic(out, *html); !s) return spec.error(s.error().to_string());
    std::printf("%s\n", out.c_str());
    return 0;
}

}  // namespace patchfuzz::cli
