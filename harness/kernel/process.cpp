#include "harness/kernel/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace patchfuzz::kernel {
namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

std::optional<std::string> find_in_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? std::optional(name) : std::nullopt;
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    size_t start = 0;
    while (start <= p.size()) {
        size_t end = p.find(':', start);
        if (end == std::string::npos) end = p.size();
        std::string dir = p.substr(start, end - start);
        if (!dir.empty()) {
            std::string cand = dir + "/" + name;
            struct stat st{};
            if (stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(cand.c_str(), X_OK) == 0) return cand;
        }
        start = end + 1;
    }
    return std::nullopt;
}

Expected<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    if (argv.empty()) return make_error("", "empty command");
    auto exe = find_in_path(argv[0]);
    if (!exe) return make_error("", "'" + argv[0] + "' not found in PATH");
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return make_error("", std::string("pipe: ") + std::strerror(errno));
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        return make_error("", std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) return make_error("", std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);  // own process group: a timeout kills the whole tree
        int in = open(opts.stdin_file.empty() ? "/dev/null" : opts.stdin_file.c_str(), O_RDONLY);
        if (in < 0) _exit(126);
        dup2(in, 0);
        if (!opts.stdout_file.empty()) {
            int o = open(opts.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (o < 0) _exit(126);
            dup2(o, 1);
        } else {
            dup2(out_pipe[1], 1);
        }
        dup2(err_pipe[1], 2);
        if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) _exit(126);
        execv(exe->c_str(), cargv.data());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    ProcessResult res;
    double deadline = opts.timeout_s > 0 ? now_s() + opts.timeout_s : 0;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now_s();
            if (left <= 0) {
                res.timed_out = true;
                kill(-pid, SIGKILL);
                break;
            }
            wait_ms = static_cast<int>(left * 1000) + 1;
        }
        int n = poll(fds, 2, wait_ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t r = read(fds[i].fd, buf, sizeof(buf));
            if (r <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            std::string& dst = i == 0 ? res.out : res.err;
            dst.append(buf, static_cast<size_t>(r));
            if (i == 1 && dst.size() > 65536) dst.erase(0, dst.size() - 65536);
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) res.exit_code = 128 + WTERMSIG(status);
    if (res.exit_code == 127 && res.out.empty()) return make_error("", "cannot execute '" + *exe + "'");
    return res;
}

}  // namespace patchfuzz::kernel
