// conformance_plugin_driver PLUGIN DIR [OPTION...]: drives a bpf_conformance plugin over a .data
// directory the way the suite's runner does (program bytes base16 on stdin; the memory base16 as
// the first argument only when the test has memory, then the OPTIONs; r0 read back in hex and
// compared in all 64 bits), so the plugin protocol is tested end to end without the suite's
// Boost-based runner. Prints `N passed, M failed`; exit 0 when all pass.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bpf/conformance/data_file.hpp"

namespace {
std::string base16(const std::vector<uint8_t>& b) {
    std::string s;
    char t[8];
    for (uint8_t x : b) {
        std::snprintf(t, sizeof t, "%02x  ", x);
        s += t;
    }
    return s;
}
}  // namespace

int main(int argc, char** argv) {
    using namespace patchfuzz;
    if (argc < 3) {
        std::fprintf(stderr, "usage: conformance_plugin_driver PLUGIN DIR [OPTION...]\n");
        return 2;
    }
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(argv[2]))
        if (e.path().extension() == ".data") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    char tmpl[] = "/tmp/pf-plugin-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        std::perror("mkstemp");
        return 2;
    }
    close(fd);
    size_t passed = 0, failed = 0;
    for (const auto& f : files) {
        auto df = conformance::read_data_file(f);
        if (!df.ok()) {
            std::printf("FAIL %s: %s\n", f.c_str(), df.error().to_string().c_str());
            ++failed;
            continue;
        }
        std::vector<uint8_t> bytes;
        for (const auto& i : df->insns) {
            bytes.push_back(i.code);
            bytes.push_back(static_cast<uint8_t>(i.dst_reg | i.src_reg << 4));
            bytes.push_back(static_cast<uint8_t>(i.off));
            bytes.push_back(static_cast<uint8_t>(static_cast<uint16_t>(i.off) >> 8));
            for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<uint8_t>(static_cast<uint32_t>(i.imm) >> (8 * k)));
        }
        if (FILE* t = std::fopen(tmpl, "w")) {
            std::fprintf(t, "%s\n", base16(bytes).c_str());
            std::fclose(t);
        }
        std::string cmd = std::string("'") + argv[1] + "'";
        if (!df->mem.empty()) cmd += " '" + base16(df->mem) + "'";
        for (int k = 3; k < argc; ++k) cmd += std::string(" '") + argv[k] + "'";
        cmd += std::string(" < ") + tmpl;
        FILE* p = popen(cmd.c_str(), "r");
        std::string out;
        char buf[256];
        while (p && std::fgets(buf, sizeof buf, p)) out += buf;
        int st = p ? pclose(p) : -1;
        bool ok = false;
        if (st == 0 && df->result) {
            char* end = nullptr;
            unsigned long long v = std::strtoull(out.c_str(), &end, 16);
            ok = end != out.c_str() && v == static_cast<unsigned long long>(*df->result);
        } else if (st != 0 && df->error) {
            ok = true;
        }
        if (ok) ++passed;
        else {
            ++failed;
            std::printf("FAIL %s: plugin status %d, output '%s'\n", f.c_str(), st, out.c_str());
        }
    }
    std::remove(tmpl);
    std::printf("%zu passed, %zu failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
