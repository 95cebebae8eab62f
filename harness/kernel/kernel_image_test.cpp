// The kernel table and the mirror reading of the 7.x fetch (no network: the apt sources are given
// as text; the host names are reserved .invalid names).
#include "harness/kernel/kernel_image.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::kernel {
namespace {

TEST(KernelSpecs, EveryTagIsPinnedAndSevenXComesFromItsSuite) {
    auto k73 = kernel_spec("7.3");
    ASSERT_TRUE(k73);
    EXPECT_EQ(k73->suite, "trixie-backports");
    EXPECT_EQ(k73->package, "linux-binary-7.3.4+deb13-amd64");
    EXPECT_EQ(k73->pinned_release, "7.3.4+deb13-amd64");
    EXPECT_EQ(k73->pinned_version, "7.3.4-1~bpo13+1");
    EXPECT_TRUE(k73->exact_pin);
    auto k72 = kernel_spec("7.2");
    ASSERT_TRUE(k72);
    EXPECT_EQ(k72->suite, "sid");
    EXPECT_EQ(k72->pinned_release, "7.2.13+deb14-amd64");
    auto k612 = kernel_spec("6.12");
    ASSERT_TRUE(k612);
    EXPECT_TRUE(k612->suite.empty());  // the machine's own lists
    EXPECT_FALSE(k612->exact_pin);
    EXPECT_FALSE(kernel_spec("7.4"));
    EXPECT_EQ(kernel_tag_list(), "6.1, 6.12, 7.2, 7.3");
}

TEST(KernelSpecs, ArmBuildsHaveTheirOwnTagsSuitesAndBoots) {
    auto a73 = kernel_spec("7.3", "arm64");
    ASSERT_TRUE(a73);
    EXPECT_EQ(a73->package, "linux-binary-7.3.4+deb13-arm64");
    EXPECT_EQ(a73->suite, "trixie-backports");
    EXPECT_TRUE(a73->exact_pin);
    auto a612 = kernel_spec("6.12", "arm64");
    ASSERT_TRUE(a612);
    EXPECT_EQ(a612->suite, "bookworm-security");  // never the machine's own (amd64-only) lists
    EXPECT_EQ(a612->pinned_release, "6.12.118+deb12-arm64");
    auto h612 = kernel_spec("6.12", "armhf");
    ASSERT_TRUE(h612);
    EXPECT_EQ(h612->package, "linux-image-6.12-armmp");
    EXPECT_FALSE(kernel_spec("7.3", "armhf"));  // listed by the index, not served by the mirror
    EXPECT_FALSE(kernel_spec("6.1", "arm64"));
    EXPECT_FALSE(kernel_spec("6.12", "riscv64"));
    EXPECT_EQ(kernel_tag_list("arm64"), "6.12, 7.3");
    EXPECT_EQ(kernel_tag_list("armhf"), "6.12");
    // The amd64 entries are what they were: the default architecture.
    EXPECT_EQ(kernel_spec("6.12")->arch, "amd64");

    auto arm64 = arch_boot("arm64");
    ASSERT_TRUE(arm64);
    EXPECT_EQ(arm64->qemu, "qemu-system-aarch64");
    EXPECT_EQ(arm64->model_arch, "arm64");
    auto armhf = arch_boot("armhf");
    ASSERT_TRUE(armhf);
    EXPECT_EQ(armhf->qemu, "qemu-system-arm");
    EXPECT_EQ(armhf->model_arch, "arm32");  // jit32 is x86-32's MOVSX-as-MOV JIT
    EXPECT_EQ(armhf->cross_cc, "arm-linux-gnueabihf-gcc");
    EXPECT_EQ(arch_boot("amd64")->model_arch, "x86_64");
    EXPECT_FALSE(arch_boot("x86_64"));  // Debian's names, not the model's
}

TEST(KernelSpecs, ArmCacheMissSaysHowToFetchWithTheArch) {
    auto k = find_cached_kernel("7.3", "/nonexistent-cache", "arm64");
    ASSERT_FALSE(k);
    EXPECT_NE(k.error().to_string().find("/nonexistent-cache/kernels/7.3-arm64/manifest"), std::string::npos)
        << k.error().to_string();
    EXPECT_NE(k.error().to_string().find("fetch --kernel 7.3 --arch arm64"), std::string::npos) << k.error().to_string();
    auto bad = find_cached_kernel("7.3", "/nonexistent-cache", "armhf");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().to_string().find("unknown kernel '7.3' for armhf (known: 6.12)"), std::string::npos)
        << bad.error().to_string();
}

TEST(KernelSpecs, PinWarningNamesBothBuilds) {
    KernelImage same{"7.3", "linux-binary-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "7.3.4+deb13-amd64", "", ""};
    EXPECT_EQ(pin_warning(same), "");
    KernelImage other = same;
    other.release = "7.3.5+deb13-amd64";
    other.version = "7.3.5-1~bpo13+1";
    const std::string w = pin_warning(other);
    EXPECT_NE(w.find("7.3.5+deb13-amd64"), std::string::npos) << w;
    EXPECT_NE(w.find("pinned 7.3.4+deb13-amd64"), std::string::npos) << w;
    KernelImage rebuilt = same;
    rebuilt.version = "7.3.4-2~bpo13+1";  // same ABI, another upload
    EXPECT_NE(pin_warning(rebuilt), "");
}

TEST(DebianMirror, Deb822StanzaWithAReleaseSuite) {
    const std::string text =
        "Types: deb\n"
        "URIs: http://mirror-a.invalid/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        "\n"
        "Types: deb\n"
        "URIs: http://mirror-a.invalid/debian-security\n"
        "Suites: bookworm-security\n"
        "Components: main\n";
    auto m = debian_mirror_from_sources({{"/etc/apt/sources.list.d/debian.sources", text}});
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_EQ(*m, "http://mirror-a.invalid/debian");
}

TEST(DebianMirror, Deb822SkipsSecuritySourceAndDisabledStanzas) {
    const std::string text =
        "Types: deb\n"
        "URIs: http://sec.invalid/debian-security\n"
        "Suites: trixie-security\n"
        "\n"
        "Types: deb\n"
        "URIs: http://off.invalid/debian\n"
        "Suites: trixie\n"
        "Enabled: no\n"
        "\n"
        "# a comment\n"
        "Types: deb-src deb\n"
        "URIs: http://on.invalid/debian\n"
        "Suites:\n"
        " trixie\n";
    auto m = debian_mirror_from_sources({{"x.sources", text}});
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_EQ(*m, "http://on.invalid/debian");
}

TEST(DebianMirror, OneLineFormatWithOptionsAndComments) {
    const std::string text =
        "# deb http://commented.invalid/debian bookworm main\n"
        "deb-src http://src.invalid/debian bookworm main\n"
        "deb https://third-party.invalid/apt cloud-sdk-bookworm main\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://one.invalid/debian bookworm main\n";
    auto m = debian_mirror_from_sources({{"/etc/apt/sources.list", text}});
    ASSERT_TRUE(m) << m.error().to_string();
    EXPECT_EQ(*m, "http://one.invalid/debian");
}

TEST(DebianMirror, FilesAreSearchedInOrder) {
    auto m = debian_mirror_from_sources({{"a.list", "deb http://first.invalid/debian stable main\n"},
                                         {"b.sources", "Types: deb\nURIs: http://second.invalid/debian\nSuites: bookworm\n"}});
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, "http://first.invalid/debian");
}

TEST(DebianMirror, SecurityArchiveIsFoundSeparately) {
    const std::string text =
        "Types: deb\n"
        "URIs: http://main.invalid/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "\n"
        "Types: deb\n"
        "URIs: http://sec.invalid/debian-security\n"
        "Suites: bookworm-security\n";
    auto sec = debian_mirror_from_sources({{"debian.sources", text}}, true);
    ASSERT_TRUE(sec) << sec.error().to_string();
    EXPECT_EQ(*sec, "http://sec.invalid/debian-security");
    auto one = debian_mirror_from_sources(
        {{"a.list", "deb http://main.invalid/debian bookworm main\ndeb [signed-by=/k.gpg] http://s.invalid/ds bookworm-security main\n"}},
        true);
    ASSERT_TRUE(one);
    EXPECT_EQ(*one, "http://s.invalid/ds");
    auto none = debian_mirror_from_sources({{"a.list", "deb http://main.invalid/debian bookworm main\n"}}, true);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().to_string().find("security suite"), std::string::npos) << none.error().to_string();
}

TEST(DebianMirror, NoDebianSourceIsAPreciseError) {
    auto m = debian_mirror_from_sources({{"/etc/apt/sources.list.d/node.sources",
                                          "Types: deb\nURIs: https://node.invalid/node_20.x\nSuites: nodistro\n"}});
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().to_string().find("node.sources"), std::string::npos);
    EXPECT_NE(m.error().to_string().find("Debian release suite"), std::string::npos);
    EXPECT_FALSE(debian_mirror_from_sources({}));
}

}  // namespace
}  // namespace patchfuzz::kernel
