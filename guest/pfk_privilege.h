/* The guest loader's privilege levels (PFK_PRIV_*: root, CAP_BPF alone, unprivileged): the proxy
 * tasks that make a lower level's bpf() calls. Part of pfk_loader.c's single translation unit,
 * included after its sys_bpf(). */
#ifndef PATCHFUZZ_GUEST_PFK_PRIVILEGE_H
#define PATCHFUZZ_GUEST_PFK_PRIVILEGE_H

/* A lower level's bpf() calls are made by a proxy task of its own: a clone of this process that
 * shares its memory and fd table (CLONE_VM | CLONE_FILES) but not its credentials, which it lowers
 * once with raw syscalls (they change the calling task only, unlike glibc's set*id wrappers that
 * change every thread). The attr and every buffer it points to are in shared memory, and the fds
 * the proxy gets (maps, programs) are ours too. Requests go one at a time through a pipe; the
 * caller blocks on the answer, so the two tasks never run libc code at the same time. */
struct proxy_req {
    int cmd;
    union bpf_attr *attr;
};
struct proxy_ans {
    long ret;
    int err;
};
static int g_proxy_req[PFK_PRIV_LEVELS][2], g_proxy_ans[PFK_PRIV_LEVELS][2];
static int g_proxy_ok[PFK_PRIV_LEVELS];
static int g_proxy_err[PFK_PRIV_LEVELS]; /* errno of a proxy that could not lower its privileges */

static int lower_privilege(unsigned level) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof(d));
    if (level == PFK_PRIV_BPF) { /* CAP_BPF alone, uid 0 kept: the bpf() checks read capabilities */
        d[CAP_BPF / 32].effective = d[CAP_BPF / 32].permitted = 1u << (CAP_BPF % 32);
        return (int)syscall(SYS_capset, &h, d);
    }
    if (syscall(SYS_setgroups, 0, NULL) || syscall(SYS_setresgid, 65534, 65534, 65534) ||
        syscall(SYS_setresuid, 65534, 65534, 65534))
        return -1;
    return (int)syscall(SYS_capset, &h, d); /* setresuid cleared them already; say so explicitly */
}

static int proxy_main(void *arg) {
    unsigned level = (unsigned)(uintptr_t)arg;
    struct proxy_ans ok = {lower_privilege(level), 0};
    ok.err = ok.ret ? errno : 0;
    if (write(g_proxy_ans[level][1], &ok, sizeof(ok)) != (ssize_t)sizeof(ok) || ok.ret) return 1;
    struct proxy_req q;
    while (read(g_proxy_req[level][0], &q, sizeof(q)) == (ssize_t)sizeof(q)) {
        struct proxy_ans a = {syscall(__NR_bpf, q.cmd, q.attr, sizeof(*q.attr)), 0};
        a.err = a.ret < 0 ? errno : 0;
        if (write(g_proxy_ans[level][1], &a, sizeof(a)) != (ssize_t)sizeof(a)) return 1;
    }
    return 0;
}

/* Starts the proxies of the lower levels; prints @@FACT priv_<level> 1 when one is ready. */
static void start_proxies(void) {
    static unsigned char stacks[PFK_PRIV_LEVELS][1 << 16] __attribute__((aligned(16)));
    for (unsigned level = PFK_PRIV_BPF; level < PFK_PRIV_LEVELS; level++) {
        if (pipe(g_proxy_req[level]) || pipe(g_proxy_ans[level])) continue;
        int pid = clone(proxy_main, stacks[level] + sizeof(stacks[level]), CLONE_VM | CLONE_FILES | SIGCHLD,
                        (void *)(uintptr_t)level);
        struct proxy_ans ok = {-1, 0};
        if (pid < 0) ok.err = errno;
        if (pid > 0 && read(g_proxy_ans[level][0], &ok, sizeof(ok)) == (ssize_t)sizeof(ok) && ok.ret == 0)
            g_proxy_ok[level] = 1;
        g_proxy_err[level] = ok.err;
        printf(PFK_OUT_FACT " priv_%s %d\n", level == PFK_PRIV_BPF ? "bpf" : "unpriv", g_proxy_ok[level]);
    }
}

/* bpf(cmd, attr) at `level`: -1 with errno set on failure, as syscall(). */
static long sys_bpf_as(unsigned level, int cmd, union bpf_attr *attr) {
    if (level == PFK_PRIV_ROOT) return sys_bpf(cmd, attr);
    if (level >= PFK_PRIV_LEVELS || !g_proxy_ok[level]) {
        errno = EPERM;
        return -1;
    }
    struct proxy_req q = {cmd, attr};
    struct proxy_ans a = {-1, EPIPE};
    if (write(g_proxy_req[level][1], &q, sizeof(q)) != (ssize_t)sizeof(q) ||
        read(g_proxy_ans[level][0], &a, sizeof(a)) != (ssize_t)sizeof(a)) {
        errno = EPIPE;
        return -1;
    }
    errno = a.err;
    return a.ret;
}

#endif
