#include "bpf/util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace patchfuzz {

Status write_file_atomic(const std::string& path, std::string_view content) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    // The temporary sits next to the target (rename is atomic only within one file system), hidden
    // and named after it: "<dir>/.<name>.tmp.XXXXXX", the X's filled in by mkstemp. Appended piece
    // by piece: g++-12 at -O3 raises a false -Wrestrict inside libstdc++ for `"." + name + ...`.
    std::string tmp_name;
    tmp_name.append(".").append(target.filename().string()).append(".tmp.XXXXXX");
    std::string tmp = (dir / tmp_name).string();
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) return Error{path, std::string("cannot create a temporary file: ") + std::strerror(errno)};
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return Error{path, std::string("write failed: ") + std::strerror(e)};
        }
        done += static_cast<size_t>(n);
    }
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return Error{path, std::string("fsync failed: ") + std::strerror(e)};
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        return Error{path, std::string("rename failed: ") + std::strerror(e)};
    }
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

}  // namespace patchfuzz
