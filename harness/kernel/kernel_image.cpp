#include "harness/kernel/kernel_image.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "harness/kernel/process.hpp"

namespace patchfuzz::kernel {
namespace fs = std::filesystem;
namespace {

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string manifest_value(const std::string& text, const std::string& key) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
    return "";
}

bool is_elf(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char m[4] = {};
    f.read(m, 4);
    return f.gcount() == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

}  // namespace

const std::vector<KernelSpec>& kernel_specs() {
    // The pins are the builds the profiles were measured against (harness/kernel/README.md).
    static const std::vector<KernelSpec> specs = {
        {"6.1", "", "linux-image-amd64", "6.1.0-57-amd64", "6.1.192-3", false},
        {"6.12", "", "linux-image-6.12-amd64", "6.12.118+deb12-amd64", "6.12.118-1~deb12u1", false},
        {"7.2", "sid", "linux-binary-7.2.13+deb14-amd64", "7.2.13+deb14-amd64", "7.2.13-1", true, "amd64", true},
        {"7.3", "trixie-backports", "linux-binary-7.3.4+deb13-amd64", "7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", true, "amd64", true},
        // arm64 (issue 23): the same two builds as amd64's 6.12 and 7.3. 6.12 is in the security
        // archive's bookworm-security (the meta package linux-image-6.12-arm64 is followed).
        {"6.12", "bookworm-security", "linux-image-6.12-arm64", "6.12.118+deb12-arm64", "6.12.118-1~deb12u1", false, "arm64"},
        {"7.3", "trixie-backports", "linux-binary-7.3.4+deb13-arm64", "7.3.4+deb13-arm64", "7.3.4-1~bpo13+1", true, "arm64", true},
        // armhf: the ARMv7 multiplatform build of 6.12 (its 32-bit JIT asks for zero-extension). The
        // 7.3 armmp packages are listed by trixie-backports' armhf index but the mirror answers
        // 404 for them (harness/kernel/README.md), so 7.3 has no armhf entry.
        {"6.12", "bookworm-security", "linux-image-6.12-armmp", "6.12.118+deb12-armmp", "6.12.118-1~deb12u1", false, "armhf"},
    };
    return specs;
}

std::optional<ArchBoot> arch_boot(std::string_view debian_arch) {
    static const ArchBoot boots[] = {
        {"amd64", "qemu-system-x86_64", "qemu-system-x86", "x86_64", ""},
        {"arm64", "qemu-system-aarch64", "qemu-system-arm", "arm64", "aarch64-linux-gnu-gcc"},
        {"armhf", "qemu-system-arm", "qemu-system-arm", "arm32", "arm-linux-gnueabihf-gcc"},
    };
    for (const auto& b : boots)
        if (b.debian_arch == debian_arch) return b;
    return std::nullopt;
}

std::string arch_boot_list() { return "amd64, arm64, armhf"; }

std::optional<KernelSpec> kernel_spec(std::string_view tag, std::string_view arch) {
    for (const auto& s : kernel_specs())
        if (s.tag == tag && s.arch == arch) return s;
    return std::nullopt;
}

std::string kernel_tag_list(std::string_view arch) {
    std::string out;
    for (const auto& s : kernel_specs())
        if (s.arch == arch) out += (out.empty() ? "" : ", ") + std::string(s.tag);
    return out;
}

std::string pin_warning(const KernelImage& img) {
    auto spec = kernel_spec(img.tag, img.arch);
    if (!spec) return "";
    const bool same_release = img.release == spec->pinned_release;
    const bool same_version = img.version.empty() || img.version == spec->pinned_version;
    if (same_release && same_version) return "";
    return "warning: kernel " + img.tag + " is " + img.release + (img.version.empty() ? "" : " (" + img.version + ")") +
           ", not the pinned " + std::string(spec->pinned_release) + " (" + std::string(spec->pinned_version) +
           ") the " + img.tag + " model profile was measured against: differences may be the build's, not the model's";
}

std::string default_cache_dir() {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/patchfuzz";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/patchfuzz";
    return "/tmp/patchfuzz-cache";
}

namespace {

// <cache>/kernels/<tag> for amd64 (as before issue 23), <tag>-<arch> for the others.
std::string kernel_dir(const std::string& cache_dir, std::string_view tag, std::string_view arch) {
    return cache_dir + "/kernels/" + std::string(tag) + (arch == "amd64" ? "" : "-" + std::string(arch));
}

std::string unknown_kernel(std::string_view tag, std::string_view arch) {
    return "unknown kernel '" + std::string(tag) + "' for " + std::string(arch) + " (known: " + kernel_tag_list(arch) + ")";
}

}  // namespace

Expected<KernelImage> find_cached_kernel(std::string_view tag, const std::string& cache_dir, std::string_view arch) {
    if (!kernel_spec(tag, arch)) return make_error("", unknown_kernel(tag, arch));
    std::string dir = kernel_dir(cache_dir, tag, arch);
    std::string manifest = dir + "/manifest";
    const std::string arch_opt = arch == "amd64" ? "" : " --arch " + std::string(arch);
    if (!fs::exists(manifest))
        return make_error(manifest, "no cached " + std::string(tag) + arch_opt + " kernel: run `patchfuzz kernel fetch --kernel " +
                                        std::string(tag) + arch_opt + " --cache " + cache_dir + "`");
    std::string text = read_text(manifest);
    KernelImage k{std::string(tag),
                  manifest_value(text, "package"),
                  manifest_value(text, "version"),
                  manifest_value(text, "release"),
                  manifest_value(text, "vmlinux"),
                  manifest_value(text, "vmlinuz"),
                  std::string(arch)};
    if (k.vmlinux.empty() || (arch == "amd64" ? !is_elf(k.vmlinux) : !fs::exists(k.vmlinux)))
        return make_error(manifest, "cached vmlinux missing or not ELF; fetch again");
    return k;
}

namespace {

// Debian release suites (the main archive); security suites live in another archive.
bool is_debian_release_suite(std::string_view suite) {
    for (std::string_view tail : {"-updates", "-backports", "-proposed-updates"})
        if (suite.size() > tail.size() && suite.substr(suite.size() - tail.size()) == tail) {
            suite.remove_suffix(tail.size());
            break;
        }
    for (std::string_view name : {"stable", "testing", "unstable", "oldstable", "sid", "experimental", "buster", "bullseye",
                                  "bookworm", "trixie", "forky", "duke"})
        if (suite == name) return true;
    return false;
}

std::vector<std::string> words_of(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string x; in >> x;) w.push_back(x);
    return w;
}

bool is_security_suite(std::string_view suite) {
    return suite.size() > 9 && suite.substr(suite.size() - 9) == "-security";
}

bool suite_wanted(std::string_view suite, bool security) {
    return security ? is_security_suite(suite) : is_debian_release_suite(suite);
}

// `deb [opt=v ...] URI suite comp...` -> URI when the suite is a Debian release suite (with
// `security`: a security suite).
std::optional<std::string> mirror_of_one_line(std::string line, bool security) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    // Options in brackets may contain spaces: cut them out first.
    if (auto open = line.find('['); open != std::string::npos) {
        auto close = line.find(']', open);
        if (close == std::string::npos) return std::nullopt;
        line.erase(open, close - open + 1);
    }
    auto w = words_of(line);
    if (w.size() < 3 || w[0] != "deb") return std::nullopt;
    if (!suite_wanted(w[2], security)) return std::nullopt;
    return w[1];
}

// deb822 stanzas (blank-line separated "Field: value" blocks; continuation lines start with space).
std::optional<std::string> mirror_of_deb822(const std::string& text, bool security) {
    std::istringstream in(text + "\n\n");
    std::string line, types, uris, suites, enabled = "yes", *last = nullptr;
    auto flush = [&]() -> std::optional<std::string> {
        std::optional<std::string> found;
        auto t = words_of(types), u = words_of(uris), su = words_of(suites);
        bool is_deb = std::find(t.begin(), t.end(), "deb") != t.end();
        bool release = std::any_of(su.begin(), su.end(), [security](const std::string& x) { return suite_wanted(x, security); });
        if (is_deb && release && !u.empty() && enabled != "no") found = u[0];
        types.clear(), uris.clear(), suites.clear(), enabled = "yes", last = nullptr;
        return found;
    };
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty() && line[0] == '#') continue;
        if (line.find_first_not_of(" \t") == std::string::npos) {
            if (auto m = flush()) return m;
            continue;
        }
        if ((line[0] == ' ' || line[0] == '\t') && last) {
            *last += " " + line;
            continue;
        }
        auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = line.substr(0, colon), value = line.substr(colon + 1);
        std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
        last = key == "types" ? &types : key == "uris" ? &uris : key == "suites" ? &suites : key == "enabled" ? &enabled : nullptr;
        if (last) *last = value;
        if (key == "enabled") enabled = words_of(value).empty() ? "yes" : words_of(value)[0];
    }
    return std::nullopt;
}

}  // namespace

Expected<std::string> debian_mirror_from_sources(const std::vector<std::pair<std::string, std::string>>& files,
                                                 bool security) {
    std::string searched;
    for (const auto& [path, text] : files) {
        searched += (searched.empty() ? "" : ", ") + path;
        const bool deb822 = path.size() > 8 && path.substr(path.size() - 8) == ".sources";
        if (deb822) {
            if (auto m = mirror_of_deb822(text, security)) return *m;
            continue;
        }
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);)
            if (auto m = mirror_of_one_line(line, security)) return *m;
    }
    if (security)
        return make_error(searched.empty() ? "/etc/apt" : searched,
                          "no `deb` source names a Debian security suite (bookworm-security, ...): cannot tell which "
                          "security archive to fetch the kernel from");
    return make_error(searched.empty() ? "/etc/apt" : searched,
                      "no `deb` source names a Debian release suite (bookworm, trixie, stable, ...): cannot tell which "
                      "Debian mirror to fetch the kernel from");
}

Expected<std::string> system_debian_mirror(bool security) {
    std::vector<std::pair<std::string, std::string>> files;
    if (fs::exists("/etc/apt/sources.list")) files.emplace_back("/etc/apt/sources.list", read_text("/etc/apt/sources.list"));
    std::vector<std::string> parts;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/etc/apt/sources.list.d", ec)) {
        const std::string n = e.path().string();
        // apt reads only these two suffixes; anything else (e.g. *.disabled) is not a source.
        if ((n.size() > 5 && n.substr(n.size() - 5) == ".list") || (n.size() > 8 && n.substr(n.size() - 8) == ".sources"))
            parts.push_back(n);
    }
    std::sort(parts.begin(), parts.end());
    for (const auto& p : parts) files.emplace_back(p, read_text(p));
    return debian_mirror_from_sources(files, security);
}

namespace {

// apt with a state folder of our own: `root` holds the sources file, the lists and the package
// cache; the machine's sources, lists and preferences are not read, its configuration not changed.
struct OwnApt {
    std::string root;
    std::string arch = "amd64";  // another one is set for this apt only, never with dpkg --add-architecture
    std::vector<std::string> opts() const {
        std::vector<std::string> v{"-o", "Dir::Etc::SourceList=" + root + "/sources.list", "-o", "Dir::Etc::SourceParts=/dev/null",
                                   "-o", "Dir::Etc::Preferences=/dev/null",              "-o", "Dir::Etc::PreferencesParts=/dev/null",
                                   "-o", "Dir::State::Lists=" + root + "/lists",         "-o", "Dir::Cache=" + root + "/cache",
                                   "-o", "Acquire::Languages=none"};
        if (arch != "amd64") v.insert(v.end(), {"-o", "APT::Architecture=" + arch, "-o", "APT::Architectures::=" + arch});
        return v;
    }
    std::vector<std::string> cmd(std::string tool, std::vector<std::string> args) const {
        std::vector<std::string> v{std::move(tool)};
        auto o = opts();
        v.insert(v.end(), o.begin(), o.end());
        v.insert(v.end(), args.begin(), args.end());
        return v;
    }
};

constexpr const char* kDebianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg";

Expected<OwnApt> own_apt_for(std::string_view suite, const std::string& cache_dir, std::ostream& log, std::string_view arch) {
    auto mirror = system_debian_mirror(is_security_suite(suite));
    if (!mirror) return mirror.error();
    if (!fs::exists(kDebianKeyring))
        return make_error(kDebianKeyring, "Debian's archive keyring is missing (package debian-archive-keyring): the "
                                          "suite's signature cannot be checked");
    OwnApt apt{cache_dir + "/apt/" + std::string(suite) + (arch == "amd64" ? "" : "-" + std::string(arch)), std::string(arch)};
    std::error_code ec;
    for (const char* d : {"/lists/partial", "/cache/archives/partial"}) fs::create_directories(apt.root + d, ec);
    if (ec) return make_error(apt.root, "cannot create the apt state folder: " + ec.message());
    {
        std::ofstream f(apt.root + "/sources.list.tmp", std::ios::trunc);
        f << "# written by patchfuzz kernel fetch: the mirror of this machine's own apt sources\n"
          << "deb [signed-by=" << kDebianKeyring << "] " << *mirror << " " << suite << " main\n";
        if (!f) return make_error(apt.root, "cannot write sources.list");
    }
    fs::rename(apt.root + "/sources.list.tmp", apt.root + "/sources.list", ec);
    log << "fetch: apt-get update of " << suite << " " << arch << " (" << *mirror << ") in " << apt.root << "\n";
    auto up = run_process(apt.cmd("apt-get", {"-q", "update"}), {.timeout_s = 600});
    if (!up || up->exit_code != 0)
        return make_error(apt.root + "/sources.list", "apt-get update failed: " + (up ? up->err + up->out : up.error().message));
    // apt-get update exits 0 on some fetch failures: an unsigned or unreachable index shows as W:/E:.
    if (up->err.find("E:") != std::string::npos || up->err.find("NO_PUBKEY") != std::string::npos ||
        up->err.find("not signed") != std::string::npos)
        return make_error(apt.root + "/sources.list", "apt-get update reported: " + up->err);
    return apt;
}

// The Depends: line of `pkg` that names a package starting with `prefix`.
Expected<std::string> depends_with_prefix(const std::vector<std::string>& apt_cache, const std::string& pkg,
                                          const std::string& prefix) {
    auto argv = apt_cache;
    argv.insert(argv.end(), {"depends", pkg});
    auto r = run_process(argv, {.timeout_s = 60});
    if (!r || r->exit_code != 0)
        return make_error(pkg, "apt-cache depends failed (run apt-get update?): " + (r ? r->err : r.error().message));
    std::istringstream in(r->out);
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        std::string a, b;
        ls >> a >> b;
        if (a == "Depends:" && b.rfind(prefix, 0) == 0) return b;
    }
    return std::string();
}

}  // namespace

Expected<KernelImage> fetch_kernel(std::string_view tag, const std::string& cache_dir, std::ostream& log, std::string_view arch) {
    auto spec = kernel_spec(tag, arch);
    if (!spec) return make_error("", unknown_kernel(tag, arch));
    for (const char* tool : {"apt-cache", "apt-get", "dpkg-deb", "tar"})
        if (!find_in_path(tool)) return make_error("", std::string("'") + tool + "' not found: fetching needs Debian's apt");
    std::vector<std::string> apt_cache{"apt-cache"}, apt_get{"apt-get"};
    if (!spec->suite.empty()) {
        auto apt = own_apt_for(spec->suite, cache_dir, log, arch);
        if (!apt) return apt.error();
        apt_cache = apt->cmd("apt-cache", {});
        apt_get = apt->cmd("apt-get", {});
    }
    std::string pkg(spec->package);
    if (spec->exact_pin) {
        auto argv = apt_cache;
        argv.insert(argv.end(), {"show", "--no-all-versions", pkg});
        auto r = run_process(argv, {.timeout_s = 60});
        if (!r || r->exit_code != 0 || r->out.find("Package: " + pkg) == std::string::npos) {
            // Say what the suite has instead, so the pin can be moved on purpose.
            const std::string meta = "linux-image-" + std::string(arch == "armhf" ? "armmp" : arch);
            auto now = depends_with_prefix(apt_cache, meta, "linux-image-");
            return make_error(pkg, "the pinned " + pkg + " is no longer in " + std::string(spec->suite) +
                                       (now && !now->empty() ? " (it now has " + *now + ")" : "") +
                                       "; the " + std::string(tag) +
                                       " model profile is pinned to that build (harness/kernel/kernel_image.cpp kernel_specs)");
        }
    } else {
        // Follow the meta-package's Depends down to the package that ships /boot/vmlinuz-*.
        for (int depth = 0; depth < 3; depth++) {
            auto dep = depends_with_prefix(apt_cache, pkg, "linux-image-");
            if (!dep) return dep.error();
            if (dep->empty()) break;
            pkg = *dep;
        }
    }
    std::string dir = kernel_dir(cache_dir, tag, arch);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(dir, "cannot create cache folder: " + ec.message());
    log << "fetch: apt-get download " << pkg << " into " << dir << "\n";
    auto dl_argv = apt_get;
    dl_argv.insert(dl_argv.end(), {"-q", "download", pkg});
    auto dl = run_process(dl_argv, {.timeout_s = 600, .cwd = dir});
    if (!dl || dl->exit_code != 0)
        return make_error(pkg, "apt-get download failed: " + (dl ? dl->err : dl.error().message));
    std::string deb;
    fs::file_time_type newest = fs::file_time_type::min();
    for (const auto& e : fs::directory_iterator(dir)) {
        std::string n = e.path().filename().string();
        if (n.rfind(pkg + "_", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".deb" && e.last_write_time() >= newest) {
            deb = e.path().string();
            newest = e.last_write_time();
        }
    }
    if (deb.empty()) return make_error(dir, "apt-get download left no " + pkg + "_*.deb");
    auto ver = run_process({"dpkg-deb", "--field", deb, "Version"}, {.timeout_s = 60});
    std::string version = ver && ver->exit_code == 0 ? words_of(ver->out).empty() ? "" : words_of(ver->out)[0] : "";
    // Only the image: 6.x ships it as ./boot/vmlinuz-<abi>, 7.x as ./usr/lib/modules/<abi>/vmlinuz.
    // No modules are needed (everything the guest uses is built in).
    fs::remove_all(dir + "/boot", ec);
    fs::remove_all(dir + "/usr", ec);
    const std::string pattern = spec->exact_pin ? "./usr/lib/modules/*/vmlinuz" : "./boot/*";
    auto x = run_process({"sh", "-c", "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards \"$3\"", "sh", deb, dir, pattern},
                         {.timeout_s = 300});
    if (!x || x->exit_code != 0) return make_error(deb, "could not extract " + pattern + ": " + (x ? x->err : x.error().message));
    std::string vmlinuz, release;
    if (spec->exact_pin) {
        fs::create_directories(dir + "/boot", ec);
        for (const auto& e : fs::directory_iterator(dir + "/usr/lib/modules", ec)) {
            release = e.path().filename().string();
            vmlinuz = dir + "/boot/vmlinuz-" + release;
            fs::rename(e.path() / "vmlinuz", vmlinuz, ec);
            if (ec) return make_error(e.path().string(), "cannot move the image: " + ec.message());
        }
        fs::remove_all(dir + "/usr", ec);
    } else {
        for (const auto& e : fs::directory_iterator(dir + "/boot")) {
            std::string n = e.path().filename().string();
            if (n.rfind("vmlinuz-", 0) == 0) {
                vmlinuz = e.path().string();
                release = n.substr(8);
            }
        }
    }
    if (vmlinuz.empty()) return make_error(deb, "the package has no kernel image (" + pattern + ")");
    std::string vmlinux = vmlinuz;
    if (arch == "amd64") {  // arm64's Image is not compressed; armhf's zImage decompresses itself
        vmlinux = dir + "/vmlinux-" + release;
        log << "fetch: unpacking " << vmlinuz << " -> " << vmlinux << "\n";
        if (auto s = unpack_vmlinux(vmlinuz, vmlinux); !s) return s.error();
    }
    {
        std::ofstream m(dir + "/manifest.tmp", std::ios::trunc);
        m << "package=" << pkg << "\nversion=" << version << "\nrelease=" << release << "\nvmlinux=" << vmlinux
          << "\nvmlinuz=" << vmlinuz << "\n";
    }
    fs::rename(dir + "/manifest.tmp", dir + "/manifest", ec);
    KernelImage img{std::string(tag), pkg, version, release, vmlinux, vmlinuz, std::string(arch)};
    if (auto w = pin_warning(img); !w.empty()) log << w << "\n";
    return img;
}

Status unpack_vmlinux(const std::string& bzimage, const std::string& out_path) {
    std::string img = read_text(bzimage);
    if (img.size() < 1024) return make_error(bzimage, "not a kernel image (too small)");
    struct Codec {
        std::string magic;
        std::vector<std::string> cmd;
    };
    const Codec codecs[] = {
        {std::string("\xfd" "7zXZ\x00", 6), {"xz", "-dc", "--single-stream"}},
        {std::string("\x28\xb5\x2f\xfd", 4), {"zstd", "-dcq"}},
        {std::string("\x1f\x8b\x08", 3), {"gzip", "-dc"}},
    };
    std::string tmp_in = out_path + ".stream", tmp_out = out_path + ".tmp";
    for (const auto& c : codecs) {
        if (!find_in_path(c.cmd[0])) continue;
        for (size_t pos = img.find(c.magic); pos != std::string::npos; pos = img.find(c.magic, pos + 1)) {
            {
                std::ofstream s(tmp_in, std::ios::binary | std::ios::trunc);
                s.write(img.data() + pos, static_cast<std::streamsize>(img.size() - pos));
            }
            // Trailing bytes after the stream make the tool complain; the payload is complete anyway.
            auto r = run_process(c.cmd, ProcessOptions{.stdin_file = tmp_in, .stdout_file = tmp_out, .timeout_s = 120});
            if (r && is_elf(tmp_out) && fs::file_size(tmp_out) > (1u << 20)) {
                fs::remove(tmp_in);
                fs::rename(tmp_out, out_path);
                return {};
            }
        }
    }
    std::error_code ec;
    fs::remove(tmp_in, ec);
    fs::remove(tmp_out, ec);
    return make_error(bzimage, "no xz/zstd/gzip stream decompresses to an ELF vmlinux (are xz-utils and zstd installed?)");
}

}  // namespace patchfuzz::kernel
