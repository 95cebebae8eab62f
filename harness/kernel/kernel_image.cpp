#include "harness/kernel/kernel_image.hpp"

#include <sys/stat.h>
#include <unistd.h>

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

std::vector<std::string_view> kernel_tags() { return {"6.1", "6.12"}; }

Expected<std::string> meta_package_for(std::string_view tag) {
    if (tag == "6.1") return std::string("linux-image-amd64");
    if (tag == "6.12") return std::string("linux-image-6.12-amd64");
    return make_error("", "unknown kernel '" + std::string(tag) + "' (known: 6.1, 6.12)");
}

std::string default_cache_dir() {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/patchfuzz";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/patchfuzz";
    return "/tmp/patchfuzz-cache";
}

Expected<KernelImage> find_cached_kernel(std::string_view tag, const std::string& cache_dir) {
    auto meta = meta_package_for(tag);
    if (!meta) return meta.error();
    std::string dir = cache_dir + "/kernels/" + std::string(tag);
    std::string manifest = dir + "/manifest";
    if (!fs::exists(manifest))
        return make_error(manifest, "no cached " + std::string(tag) + " kernel: run `patchfuzz kernel fetch --kernel " +
                                        std::string(tag) + " --cache " + cache_dir + "`");
    std::string text = read_text(manifest);
    KernelImage k{std::string(tag), manifest_value(text, "package"), manifest_value(text, "release"),
                  manifest_value(text, "vmlinux"), manifest_value(text, "vmlinuz")};
    if (k.vmlinux.empty() || !is_elf(k.vmlinux)) return make_error(manifest, "cached vmlinux missing or not ELF; fetch again");
    return k;
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

Expected<KernelImage> fetch_kernel(std::string_view tag, const std::string& cache_dir, std::ostream& log) {
    auto meta = meta_package_for(tag);
    if (!meta) return meta.error();
    for (const char* tool : {"apt-cache", "apt-get", "dpkg-deb"})
        if (!find_in_path(tool)) return make_error("", std::string("'") + tool + "' not found: fetching needs Debian's apt");
    // Follow the meta-package's Depends down to the package that ships /boot/vmlinuz-*.
    std::string pkg = *meta;
    for (int depth = 0; depth < 3; depth++) {
        auto r = run_process({"apt-cache", "depends", pkg}, {.timeout_s = 60});
        if (!r || r->exit_code != 0)
            return make_error(pkg, "apt-cache depends failed (run apt-get update?): " + (r ? r->err : r.error().message));
        std::istringstream in(r->out);
        std::string line, dep;
        while (std::getline(in, line)) {
            std::istringstream ls(line);
            std::string a, b;
            ls >> a >> b;
            if (a == "Depends:" && b.rfind("linux-image-", 0) == 0) {
                dep = b;
                break;
            }
        }
        if (dep.empty()) break;
        pkg = dep;
    }
    std::string dir = cache_dir + "/kernels/" + std::string(tag);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(dir, "cannot create cache folder: " + ec.message());
    log << "fetch: apt-get download " << pkg << " into " << dir << "\n";
    auto dl = run_process({"apt-get", "download", pkg}, {.timeout_s = 600, .cwd = dir});
    if (!dl || dl->exit_code != 0)
        return make_error(pkg, "apt-get download failed: " + (dl ? dl->err : dl.error().message));
    std::string deb;
    for (const auto& e : fs::directory_iterator(dir)) {
        std::string n = e.path().filename().string();
        if (n.rfind(pkg + "_", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".deb") deb = e.path().string();
    }
    if (deb.empty()) return make_error(dir, "apt-get download left no " + pkg + "_*.deb");
    // Only ./boot: the image and its config. No modules are needed (everything is built in).
    fs::remove_all(dir + "/boot", ec);
    auto tar = run_process({"dpkg-deb", "--fsys-tarfile", deb}, {.stdout_file = dir + "/fsys.tar", .timeout_s = 300});
    if (!tar || tar->exit_code != 0) return make_error(deb, "dpkg-deb --fsys-tarfile failed");
    auto x = run_process({"tar", "-x", "-f", dir + "/fsys.tar", "-C", dir, "--wildcards", "./boot/*"}, {.timeout_s = 300});
    fs::remove(dir + "/fsys.tar", ec);
    if (!x || x->exit_code != 0) return make_error(deb, "tar could not extract ./boot: " + (x ? x->err : x.error().message));
    std::string vmlinuz, release;
    for (const auto& e : fs::directory_iterator(dir + "/boot")) {
        std::string n = e.path().filename().string();
        if (n.rfind("vmlinuz-", 0) == 0) {
            vmlinuz = e.path().string();
            release = n.substr(8);
        }
    }
    if (vmlinuz.empty()) return make_error(deb, "the package has no ./boot/vmlinuz-*");
    std::string vmlinux = dir + "/vmlinux-" + release;
    log << "fetch: unpacking " << vmlinuz << " -> " << vmlinux << "\n";
    if (auto s = unpack_vmlinux(vmlinuz, vmlinux); !s) return s.error();
    {
        std::ofstream m(dir + "/manifest", std::ios::trunc);
        m << "package=" << pkg << "\nrelease=" << release << "\nvmlinux=" << vmlinux << "\nvmlinuz=" << vmlinuz << "\n";
    }
    return KernelImage{std::string(tag), pkg, release, vmlinux, vmlinuz};
}

}  // namespace patchfuzz::kernel
