#include "harness/campaign/html_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "harness/version/build_version.hpp"

namespace patchfuzz::harness {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '&': o += "&amp;"; break;
            case '"': o += "&quot;"; break;
            default: o += c;
        }
    }
    return o;
}

// A line chart of y over x as inline SVG.
std::string svg_chart(const std::string& title, const std::vector<double>& xs, const std::vector<double>& ys,
                      const std::string& ylabel) {
    const double w = 520, h = 200, l = 60, b = 30, t = 24, r = 12;
    double xmax = xs.empty() ? 1 : *std::max_element(xs.begin(), xs.end());
    double ymax = ys.empty() ? 1 : *std::max_element(ys.begin(), ys.end());
    if (xmax <= 0) xmax = 1;
    if (ymax <= 0) ymax = 1;
    std::ostringstream o;
    o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h << "' class='chart'>";
    o << "<text x='" << l << "' y='16' font-size='13' font-weight='bold'>" << esc(title) << "</text>";
    o << "<line x1='" << l << "' y1='" << h - b << "' x2='" << w - r << "' y2='" << h - b << "' stroke='#888'/>";
    o << "<line x1='" << l << "' y1='" << t << "' x2='" << l << "' y2='" << h - b << "' stroke='#888'/>";
    o << "<text x='4' y='" << t + 10 << "' font-size='11'>" << ymax << "</text>";
    o << "<text x='4' y='" << h - b << "' font-size='11'>0</text>";
    o << "<text x='" << w - r - 60 << "' y='" << h - 8 << "' font-size='11'>" << xmax << " s</text>";
    o << "<text x='4' y='" << h / 2 << "' font-size='11'>" << esc(ylabel) << "</text>";
    o << "<polyline fill='none' stroke='#2a6fdb' stroke-width='2' points='";
    for (size_t i = 0; i < xs.size() && i < ys.size(); ++i)
        o << l + (w - l - r) * xs[i] / xmax << "," << (h - b) - (h - b - t) * ys[i] / ymax << " ";
    o << "'/></svg>";
    return o.str();
}

}  // namespace

// The relocation-coverage grid from reloc_coverage.csv (harness/campaign/reloc_feedback.hpp):
// one row per reference and relation, one column per patch kind; then the patch classes and the
// boundary cells. Green: hit (with the number of cases), red: reachable but never hit, grey: not
// reachable (the table in bpf/patch/reloc_coverage.cpp says why).
Expected<std::string> reloc_grid(const fs::path& csv) {
    struct Cell {
        bool reachable = false;
        uint64_t hits = 0;
    };
    std::vector<std::string> rows;
    std::map<std::string, std::map<std::string, Cell>> grid;  // row -> patch kind -> cell
    std::vector<std::pair<std::string, Cell>> singles;
    std::istringstream in(slurp(csv));
    std::string line;
    size_t lineno = 0;
    while (std::getline(in, line)) {
        if (++lineno == 1) continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        std::string x;
        while (std::getline(ls, x, ',')) f.push_back(x);
        if (f.size() != 4 || (f[2] != "0" && f[2] != "1") || f[3].empty() ||
            f[3].find_first_not_of("0123456789") != std::string::npos)
            return Error{csv.string() + ":" + std::to_string(lineno), "expected id,family,reachable(0|1),hits"};
        const Cell c{f[2] == "1", std::stoull(f[3])};
        const size_t last = f[0].rfind('/');
        if (f[1] == "ref" || f[1] == "idx") {
            const std::string row = f[0].substr(0, last);
            if (!grid.count(row)) rows.push_back(row);
            grid[row][f[0].substr(last + 1)] = c;
        } else {
            singles.emplace_back(f[0], c);
        }
    }
    auto td = [](const Cell* c) {
        if (c == nullptr) return std::string("<td></td>");
        if (!c->reachable) return std::string("<td style='background:#ddd'>n/a</td>");
        if (c->hits == 0) return std::string("<td style='background:#f99'>0</td>");
        return "<td style='background:#9d9'>" + std::to_string(c->hits) + "</td>";
    };
    std::ostringstream o;
    o << "<h2>Relocation coverage</h2><p>Cases that hit each cell (green), reachable cells never hit (red), "
         "cells the modelled passes and batches cannot produce (grey).</p>"
         "<table style='border-collapse:collapse;font-size:12px' border=1><tr><th>reference / relation</th>"
         "<th>replace</th><th>insert</th><th>remove</th></tr>";
    for (const auto& r : rows) {
        o << "<tr><td>" << esc(r) << "</td>";
        for (const char* k : {"replace", "insert", "remove"}) {
            const auto& m = grid[r];
            const auto it = m.find(k);
            o << td(it == m.end() ? nullptr : &it->second);
        }
        o << "</tr>";
    }
    o << "</table><table style='border-collapse:collapse;font-size:12px;margin-top:8px' border=1>"
         "<tr><th>patch class / boundary</th><th>cases</th></tr>";
    for (const auto& [id, c] : singles) o << "<tr><td>" << esc(id) << "</td>" << td(&c) << "</tr>";
    o << "</table>";
    return o.str();
}

Expected<std::string> render_campaign_report(const std::string& dir, const std::string& bench_plot) {
    const fs::path d(dir);
    if (!fs::is_directory(d)) return Error{dir, "not a directory"};
    const fs::path tl = d / "timeline.csv";
    if (!fs::exists(tl)) return Error{dir, "no timeline.csv: not a `patchfuzz fuzz --out` directory"};
    std::vector<double> t, rate, covered, unknown, findings;
    {
        std::istringstream in(slurp(tl));
        std::string line;
        size_t lineno = 0;
        while (std::getline(in, line)) {
            ++lineno;
            if (lineno == 1) continue;
            std::vector<double> f;
            std::istringstream ls(line);
            std::string x;
            while (std::getline(ls, x, ',')) {
                try {
                    f.push_back(std::stod(x));
                } catch (...) {
                    return Error{tl.string() + ":" + std::to_string(lineno), "not a number: '" + x + "'"};
                }
            }
            if (f.size() != 7) return Error{tl.string() + ":" + std::to_string(lineno), "expected 7 columns"};
            t.push_back(f[0]);
            rate.push_back(f[2]);
            covered.push_back(f[3]);
            unknown.push_back(f[4]);
            findings.push_back(f[5]);
        }
    }
    std::ostringstream o;
    o << "<!doctype html><html><head><meta charset='utf-8'><title>patchfuzz campaign " << esc(dir)
      << "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
         "pre{background:#f4f4f4;padding:8px;overflow:auto;font-size:12px}.chart{margin:8px}"
         "h2{border-bottom:1px solid #ccc}</style></head><body>";
    o << "<h1>patchfuzz campaign: " << esc(dir) << "</h1>";
    // The campaign's own build is the "version" in its summary below; this is the report's.
    o << "<p>report written by " << esc(build::version_string()) << "</p>";
    if (fs::exists(d / "summary.json")) o << "<h2>Summary</h2><pre>" << esc(slurp(d / "summary.json")) << "</pre>";
    o << "<h2>Over time</h2>";
    o << svg_chart("cases per second", t, rate, "cases/s");
    o << svg_chart("passes that emitted patches (coverage)", t, covered, "passes");
    o << svg_chart("unknown verdicts (never counted as pass)", t, unknown, "unknown");
    o << svg_chart("findings", t, findings, "findings");
    if (fs::exists(d / "reloc_coverage.csv")) {
        auto grid = reloc_grid(d / "reloc_coverage.csv");
        if (!grid) return grid.error();
        o << *grid;
    }
    o << "<h2>Buckets</h2>";
    const fs::path fd = d / "findings";
    std::vector<fs::path> buckets;
    if (fs::is_directory(fd))
        for (const auto& e : fs::directory_iterator(fd))
            if (e.is_directory()) buckets.push_back(e.path());
    std::sort(buckets.begin(), buckets.end());
    if (buckets.empty()) o << "<p>No findings.</p>";
    for (const auto& b : buckets) {
        o << "<h3>" << esc(b.filename().string()) << "</h3>";
        if (fs::exists(b / "hits")) o << "<p>hits: " << esc(slurp(b / "hits")) << "</p>";
        for (const char* f : {"verdict.txt", "repro.case", "repro_selftest.c", "repro.data"})
            if (fs::exists(b / f))
                o << "<details" << (std::string(f) == "verdict.txt" ? " open" : "") << "><summary>" << f
                  << "</summary><pre>" << esc(slurp(b / f)) << "</pre></details>";
    }
    if (!bench_plot.empty()) {
        o << "<h2>Patcher scaling (patchfuzz bench)</h2>";
        if (!fs::exists(bench_plot)) return Error{bench_plot, "no such file"};
        const std::string content = slurp(bench_plot);
        if (content.find("<svg") == std::string::npos) return Error{bench_plot, "not an SVG plot (use --plot x.svg)"};
        o << content.substr(content.find("<svg"));
    }
    o << "</body></html>\n";
    return o.str();
}

}  // namespace patchfuzz::harness
