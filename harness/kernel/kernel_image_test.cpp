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
