// How qemu's accelerator is chosen without booting anything: an explicit choice stands, and
// $PATCHFUZZ_QEMU_ACCEL decides before any probe (a bad value is an error naming the variable).
#include "harness/kernel/vm_runner.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace patchfuzz::kernel {
namespace {

// Sets $PATCHFUZZ_QEMU_ACCEL for one test and restores it after.
class AccelEnv {
public:
    explicit AccelEnv(const char* value) {
        if (const char* old = std::getenv("PATCHFUZZ_QEMU_ACCEL")) {
            old_ = old;
            had_ = true;
        }
        setenv("PATCHFUZZ_QEMU_ACCEL", value, 1);
    }
    ~AccelEnv() {
        if (had_) setenv("PATCHFUZZ_QEMU_ACCEL", old_.c_str(), 1);
        else unsetenv("PATCHFUZZ_QEMU_ACCEL");
    }

private:
    std::string old_;
    bool had_ = false;
};

const std::vector<uint8_t> kNoLoader;  // never booted by these tests

TEST(ResolveAccel, ExplicitChoiceStands) {
    AccelEnv env("kvm");  // ignored: the options already decide
    VmOptions o;
    o.accel = Accel::Tcg;
    auto a = resolve_accel(o, kNoLoader);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, Accel::Tcg);
    o.accel = Accel::Kvm;
    a = resolve_accel(o, kNoLoader);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, Accel::Kvm);
}

TEST(ResolveAccel, EnvironmentDecidesAuto) {
    VmOptions o;  // Accel::Auto
    {
        AccelEnv env("tcg");
        auto a = resolve_accel(o, kNoLoader);
        ASSERT_TRUE(a.ok());
        EXPECT_EQ(*a, Accel::Tcg);
    }
    {
        AccelEnv env("kvm");
        auto a = resolve_accel(o, kNoLoader);
        ASSERT_TRUE(a.ok());
        EXPECT_EQ(*a, Accel::Kvm);
    }
}

TEST(ResolveAccel, BadEnvironmentValueIsAnError) {
    AccelEnv env("xen");
    auto a = resolve_accel(VmOptions{}, kNoLoader);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().to_string().find("PATCHFUZZ_QEMU_ACCEL"), std::string::npos) << a.error().to_string();
    EXPECT_NE(a.error().to_string().find("'xen'"), std::string::npos) << a.error().to_string();
}

// The command lines per architecture (issue 23): arm guests on qemu's virt machine under TCG with
// the PL011 console, the armhf JIT switched on from the command line; x86 as before.
bool has_pair(const std::vector<std::string>& v, const std::string& a, const std::string& b) {
    for (size_t i = 0; i + 1 < v.size(); i++)
        if (v[i] == a && v[i + 1] == b) return true;
    return false;
}

std::string append_of(const std::vector<std::string>& v) {
    for (size_t i = 0; i + 1 < v.size(); i++)
        if (v[i] == "-append") return v[i + 1];
    return "";
}

TEST(QemuCommand, Arm64IsVirtTcgWithPl011Console) {
    VmOptions o;
    o.qemu = "qemu-system-aarch64";
    o.arch = "arm64";
    o.kernel_image = "/k/Image";
    auto v = qemu_command(o, "/t/initrd", true);  // KVM asked for: an x86 host cannot give it
    EXPECT_EQ(v[0], "qemu-system-aarch64");
    EXPECT_TRUE(has_pair(v, "-M", "virt"));
    EXPECT_TRUE(has_pair(v, "-accel", "tcg"));
    EXPECT_TRUE(has_pair(v, "-cpu", "max,pauth-impdef=on"));
    EXPECT_TRUE(has_pair(v, "-kernel", "/k/Image"));
    EXPECT_TRUE(has_pair(v, "-initrd", "/t/initrd"));
    for (const auto& a : v) EXPECT_NE(a, "-enable-kvm");
    const std::string append = append_of(v);
    EXPECT_NE(append.find("console=ttyAMA0"), std::string::npos) << append;
    EXPECT_NE(append.find("pfk.guest=1"), std::string::npos) << append;
    EXPECT_EQ(append.find("ttyS0"), std::string::npos) << append;
    EXPECT_EQ(append.find("no_timer_check"), std::string::npos) << append;
}

TEST(QemuCommand, ArmhfTurnsTheJitOnAndX86IsUnchanged) {
    VmOptions o;
    o.qemu = "qemu-system-arm";
    o.arch = "armhf";
    auto v = qemu_command(o, "/t/i", false);
    EXPECT_TRUE(has_pair(v, "-M", "virt"));
    EXPECT_TRUE(has_pair(v, "-cpu", "max"));
    EXPECT_NE(append_of(v).find("sysctl.net.core.bpf_jit_enable=1"), std::string::npos) << append_of(v);
    VmOptions x;
    auto k = qemu_command(x, "/t/i", true);
    EXPECT_EQ(k[0], "qemu-system-x86_64");
    EXPECT_EQ(k[1], "-enable-kvm");
    for (const auto& a : k) EXPECT_NE(a, "virt");
    EXPECT_NE(append_of(k).find("console=ttyS0"), std::string::npos);
    auto t = qemu_command(x, "/t/i", false);
    EXPECT_TRUE(has_pair(t, "-accel", "tcg"));
}

TEST(ResolveAccel, ArmGuestsAreAlwaysTcg) {
    AccelEnv env("kvm");
    VmOptions o;
    o.arch = "arm64";
    auto a = resolve_accel(o, kNoLoader);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, Accel::Tcg);
}

TEST(GuestLoader, UnknownArchAndMissingSourceArePreciseErrors) {
    auto bad = locate_guest_loader("/nonexistent-src", "/nonexistent-cache", "mips");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().to_string().find("unknown architecture 'mips'"), std::string::npos) << bad.error().to_string();
}

}  // namespace
}  // namespace patchfuzz::kernel
