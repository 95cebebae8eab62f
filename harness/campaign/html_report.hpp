#pragma once
// One self-contained HTML page for a campaign's output directory: figures over time (from
// timeline.csv), the summary, every bucket with its reproducers, and optionally the patcher
// scaling plot from `patchfuzz bench --plot`. No external assets, no JavaScript.
#include <string>

#include "bpf/util/error.hpp"

namespace patchfuzz::harness {

Expected<std::string> render_campaign_report(const std::string& campaign_dir, const std::string& bench_plot);

}  // namespace patchfuzz::harness
