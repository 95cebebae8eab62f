// The bpf_conformance suite through the library entry (the CLI verb runs the same code; ctest also
// runs `patchfuzz conformance` on both directories, see tests/interp.cmake). Runs on arm64 too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bpf/interp/conformance_run.hpp"

namespace patchfuzz::interp {
namespace {

std::vector<std::string> data_files(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".data") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

const std::string kSuite = std::string(PATCHFUZZ_SHARED_DIR) + "/conformance/bpf_conformance";

TEST(Conformance, EveryPositiveTestPasses) {
    auto files = data_files(kSuite + "/tests");
    ASSERT_EQ(files.size(), 313u);
    size_t passed = 0;
    for (const auto& f : files) {
        ConformanceOutcome o = run_conformance_file(f);
        EXPECT_TRUE(o.passed) << o.detail;
        passed += o.passed;
    }
    EXPECT_EQ(passed, 313u);
}

TEST(Conformance, EveryNegativeTestFails) {
    auto files = data_files(kSuite + "/negative");
    ASSERT_EQ(files.size(), 60u);
    for (const auto& f : files) {
        ConformanceOutcome o = run_conformance_file(f);
        EXPECT_FALSE(o.passed) << f << " passed but is a negative test";
        EXPECT_FALSE(o.unreadable) << f;
        // Rejections carry a location (file:line or pc N); a wrong result names both values.
        EXPECT_FALSE(o.detail.empty()) << f;
    }
}

TEST(Conformance, UnreadableFileIsReported) {
    ConformanceOutcome o = run_conformance_file("/nonexistent/x.data");
    EXPECT_TRUE(o.unreadable);
    EXPECT_FALSE(o.passed);
}

}  // namespace
}  // namespace patchfuzz::interp
