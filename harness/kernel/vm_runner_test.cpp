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

}  // namespace
}  // namespace patchfuzz::kernel
