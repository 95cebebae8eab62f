// The kernel oracle's stream without a VM: a kernel that cannot boot is an error in the figures
// (shown in the summary), never a crash, a hang or a silent pass.
#include "harness/campaign/kernel_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

namespace patchfuzz::harness {
namespace {

TEST(KernelStream, AVmThatCannotStartIsAReportedErrorAndNoFinding) {
    const auto out = std::filesystem::temp_directory_path() / "pf_kernel_stream_test";
    std::filesystem::remove_all(out);
    KernelStreamConfig cfg;
    cfg.check.vm.qemu = "/nonexistent/qemu-system-x86_64";
    cfg.check.vm.kernel_image = "/nonexistent/vmlinux";
    cfg.check.vm.guest_loader = "/nonexistent/pfk-guest";
    cfg.batch = 3;
    cfg.out_dir = out.string();
    std::atomic<int> findings{0};
    KernelStream s(cfg, [&](bool, const std::string&, const std::string&, const std::string&) { ++findings; });
    s.start();
    const KernelStreamFigures f = s.finish();
    EXPECT_FALSE(f.error.empty());
    EXPECT_EQ(f.batches, 0u);
    EXPECT_EQ(f.cases, 0u);
    EXPECT_EQ(findings.load(), 0);
    EXPECT_FALSE(std::filesystem::exists(out / "findings"));
}

TEST(KernelStream, FinishWithoutStartReturnsEmptyFigures) {
    KernelStream s(KernelStreamConfig{}, [](bool, const std::string&, const std::string&, const std::string&) {});
    const KernelStreamFigures f = s.finish();
    EXPECT_EQ(f.batches, 0u);
    EXPECT_TRUE(f.error.empty());
}

}  // namespace
}  // namespace patchfuzz::harness
