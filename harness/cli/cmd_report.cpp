// patchfuzz report DIR: one self-contained HTML page for a campaign's output.
#include <cstdio>
#include <string>

#include "bpf/util/atomic_file.hpp"
#include "harness/campaign/html_report.hpp"
#include "harness/cli/commands.hpp"

namespace patchfuzz::cli {

int cmd_report(Args args) {
    std::string dir, out, bench;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string a = args[i];
        if (a == "--help" || a == "-h") {
            std::printf(
                "usage: patchfuzz report DIR [-o OUT.html] [--bench PLOT.svg]\n\n"
                "Turn a campaign's output (patchfuzz fuzz --out DIR) into one self-contained HTML page:\n"
                "figures over time, the summary, every bucket with its reproducers, and the patcher scaling\n"
                "plot of `patchfuzz bench --plot PLOT.svg`. Default OUT: DIR/report.html.\n\n"
                "exit: 0 written, 2 bad input or usage\n");
            return 0;
        } else if (a == "-o" || a == "--bench") {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "patchfuzz report: %s needs a file\n", a.c_str());
                return 2;
            }
            (a == "-o" ? out : bench) = args[++i];
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "patchfuzz report: unknown option '%s' (see --help)\n", a.c_str());
            return 2;
        } else if (dir.empty()) {
            dir = a;
        } else {
            std::fprintf(stderr, "patchfuzz report: more than one directory given\n");
            return 2;
        }
    }
    if (dir.empty()) {
        std::fprintf(stderr, "usage: patchfuzz report DIR [-o OUT.html] [--bench PLOT.svg]\n");
        return 2;
    }
    if (out.empty()) out = dir + "/report.html";
    auto html = harness::render_campaign_report(dir, bench);
    if (!html) {
        std::fprintf(stderr, "patchfuzz report: %s\n", html.error().to_string().c_str());
        return 2;
    }
    if (auto s = write_file_atomic(out, *html); !s) {
        std::fprintf(stderr, "patchfuzz report: %s\n", s.error().to_string().c_str());
        return 2;
    }
    std::printf("%s\n", out.c_str());
    return 0;
}

}  // namespace patchfuzz::cli
