// The in-process newc writer, checked by an independent reader: GNU cpio (when installed) must
// list and extract exactly what we wrote.
#include "harness/kernel/initramfs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/kernel/process.hpp"

namespace patchfuzz::kernel {
namespace {

TEST(Initramfs, HeaderFieldsAndAlignment) {
    auto a = make_cpio_newc({{"ab", 0100644, {1, 2, 3}}});
    // 110-byte header, name "ab\0" padded to 4 (110 + 3 = 113 -> 116), 3 data bytes padded to 4.
    ASSERT_GE(a.size(), 124u);
    EXPECT_EQ(std::string(a.begin(), a.begin() + 6), "070701");
    EXPECT_EQ(std::string(a.begin() + 14, a.begin() + 22), "000081A4");  // mode
    EXPECT_EQ(std::string(a.begin() + 54, a.begin() + 62), "00000003");  // filesize
    EXPECT_EQ(std::string(a.begin() + 94, a.begin() + 102), "00000003"); // namesize incl. NUL
    EXPECT_EQ(a[116], 1);
    EXPECT_EQ(std::string(a.begin() + 120, a.begin() + 126), "070701");  // next record aligned
    EXPECT_EQ(a.size() % 4, 0u);
}

TEST(Initramfs, GnuCpioReadsItBack) {
    if (!find_in_path("cpio")) GTEST_SKIP() << "cpio not installed";
    std::vector<uint8_t> loader = {0x7f, 'E', 'L', 'F', 9, 9, 9};
    std::vector<uint8_t> batch(1001, 0x5a);
    auto a = make_guest_initramfs(loader, batch);
    auto dir = std::filesystem::temp_directory_path() / ("pfk-cpio-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::string file = (dir / "a.cpio").string();
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(a.data()), static_cast<std::streamsize>(a.size()));
    auto list = run_process({"cpio", "-it", "--quiet"}, {.stdin_file = file, .timeout_s = 30});
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->exit_code, 0) << list->err;
    EXPECT_EQ(list->out, "proc\nsys\ninit\nbatch.bin\n");
    auto x = run_process({"cpio", "-id", "--quiet", "--no-absolute-filenames"}, {.stdin_file = file, .timeout_s = 30, .cwd = dir.string()});
    ASSERT_TRUE(x.ok());
    EXPECT_EQ(x->exit_code, 0) << x->err;
    EXPECT_EQ(std::filesystem::file_size(dir / "batch.bin"), 1001u);
    EXPECT_EQ(std::filesystem::file_size(dir / "init"), loader.size());
    EXPECT_TRUE((std::filesystem::status(dir / "init").permissions() & std::filesystem::perms::owner_exec) != std::filesystem::perms::none);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace patchfuzz::kernel
