// /init of a throwaway VM for finding 0008 (bpf_get_func_arg with bits 32-63 set in n). Build and
// run with ./run.sh (README). The BTF lookup is the oracle guest's (guest/pfk_btf.h).
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <linux/capability.h>

static long sys_bpf(int cmd, union bpf_attr *attr) { return syscall(__NR_bpf, cmd, attr, sizeof(*attr)); }
#include "guest/pfk_btf.h"

static int kmsg = -1;
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void say(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("%s\n", buf);
    fflush(stdout);
    tcdrain(1);
}
static void kmark(const char *s) {
    if (kmsg >= 0) write(kmsg, s, strlen(s));
}

#define I(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static char logbuf[1 << 20];

static void run_one(uint64_t N, int btf_id, int map_fd) {
    struct bpf_insn p[32];
    int n = 0;
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);              // r6 = r1
    p[n++] = I(BPF_LD | BPF_IMM | BPF_DW, 2, 0, 0, (int32_t)(uint32_t)N); // r2 = N
    p[n++] = I(0, 0, 0, 0, (int32_t)(uint32_t)(N >> 32));
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0);             // r3 = r10
    p[n++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -8);             // r3 += -8
    p[n++] = I(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 0);              // *(u64*)(r10-8) = 0
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0);              // r1 = r6
    p[n++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, 183);                     // call bpf_get_func_arg
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0);              // r7 = r0
    p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 8, 10, -8, 0);             // r8 = *(u64*)(r10-8)
    p[n++] = I(BPF_ST | BPF_MEM | BPF_W, 10, 0, -16, 0);              // *(u32*)(r10-16) = 0
    p[n++] = I(BPF_LD | BPF_IMM | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, map_fd);
    p[n++] = I(0, 0, 0, 0, 0);
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);             // r2 = r10
    p[n++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -16);            // r2 += -16
    p[n++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
    p[n++] = I(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2, 0);                // if r0 == 0 goto +2
    p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 7, 0, 0);               // *(u64*)(r0+0) = r7
    p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 8, 8, 0);               // *(u64*)(r0+8) = r8
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);              // r0 = 0
    p[n++] = I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    // reset map value to a marker
    uint32_t key = 0;
    uint64_t val[2] = {0xdeadbeefdeadbeefull, 0xdeadbeefdeadbeefull};
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = map_fd; a.key = (uint64_t)(uintptr_t)&key; a.value = (uint64_t)(uintptr_t)val;
    sys_bpf(BPF_MAP_UPDATE_ELEM, &a);

    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_TRACING;
    a.expected_attach_type = BPF_TRACE_FENTRY;
    a.attach_btf_id = btf_id;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = n;
    a.license = (uint64_t)(uintptr_t)"GPL";
    strcpy(a.prog_name, "fa_test");
    int pfd = (int)sys_bpf(BPF_PROG_LOAD, &a);
    int load_rc = pfd >= 0 ? 0 : -errno;
    if (pfd < 0) {  /* the same load again, with the verifier log on, to say why */
        a.log_level = 1; a.log_buf = (uint64_t)(uintptr_t)logbuf; a.log_size = sizeof logbuf;
        logbuf[0] = 0;
        int f2 = (int)sys_bpf(BPF_PROG_LOAD, &a);
        say("N=0x%llx load=%d (retry with log rc=%d errno=%d) log:\n%s", (unsigned long long)N, load_rc, f2, errno, logbuf);
        say("N=0x%llx load=%d attach=NA run=NA helper_ret=NA value=NA", (unsigned long long)N, load_rc);
        if (f2 >= 0) close(f2);
        return;
    }
    // xlated dump
    static struct bpf_insn x[256];
    struct bpf_prog_info info;
    memset(&info, 0, sizeof info);
    info.xlated_prog_len = sizeof x;
    info.xlated_prog_insns = (uint64_t)(uintptr_t)x;
    memset(&a, 0, sizeof a);
    a.info.bpf_fd = pfd; a.info.info_len = sizeof info; a.info.info = (uint64_t)(uintptr_t)&info;
    if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0) {
        unsigned cnt = info.xlated_prog_len / 8;
        say("XLATED-BEGIN N=0x%llx insns=%u jited_len=%u", (unsigned long long)N, cnt, info.jited_prog_len);
        for (unsigned i = 0; i < cnt && i < 256; i++) {
            unsigned char *b = (unsigned char *)&x[i];
            say("  %3u: %02x %02x %02x %02x %02x %02x %02x %02x   code=0x%02x dst=r%u src=r%u off=%d imm=%d", i,
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], x[i].code, x[i].dst_reg, x[i].src_reg, x[i].off, x[i].imm);
        }
        say("XLATED-END");
    } else {
        say("get_info failed errno=%d", errno);
    }
    // attach
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.prog_fd = pfd;
    a.raw_tracepoint.name = 0;
    int lfd = (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    int attach_rc = lfd >= 0 ? 0 : -errno;
    if (lfd < 0) {
        say("raw_tp_open failed errno=%d, trying LINK_CREATE", errno);
        memset(&a, 0, sizeof a);
        a.link_create.prog_fd = pfd;
        a.link_create.attach_type = BPF_TRACE_FENTRY;
        lfd = (int)sys_bpf(BPF_LINK_CREATE, &a);
        attach_rc = lfd >= 0 ? 0 : -errno;
    }
    int run_rc = 1;
    unsigned retval = 0;
    if (lfd >= 0) {
        char m[128];
        snprintf(m, sizeof m, "about to run N=0x%llx\n", (unsigned long long)N);
        say("about to run N=0x%llx", (unsigned long long)N);
        kmark(m);
        usleep(300000);
        memset(&a, 0, sizeof a);
        a.test.prog_fd = pfd;
        run_rc = (int)sys_bpf(BPF_PROG_TEST_RUN, &a);
        if (run_rc < 0) run_rc = -errno;
        retval = a.test.retval;
        kmark("run returned\n");
    }
    memset(val, 0, sizeof val);
    memset(&a, 0, sizeof a);
    a.map_fd = map_fd; a.key = (uint64_t)(uintptr_t)&key; a.value = (uint64_t)(uintptr_t)val;
    int lk = (int)sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
    say("N=0x%llx load=%d attach=%d run=%d test_retval=%u lookup=%d helper_ret=0x%llx value=0x%llx",
        (unsigned long long)N, load_rc, attach_rc, run_rc, retval, lk, (unsigned long long)val[0],
        (unsigned long long)val[1]);
    if (lfd >= 0) close(lfd);
    close(pfd);
}

// fa.caps=bpf or fa.caps=bpf+perfmon on the command line: after creating the map, keep only
// those capabilities (CAP_BPF 39, CAP_PERFMON 38) in the effective, permitted and inheritable sets,
// so the load below shows which privilege a loader of the program needs.
static void drop_caps(const char *which) {
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    const int bpf = 39, perfmon = 38;
    d[bpf / 32].effective |= 1u << (bpf % 32);
    if (strcmp(which, "bpf+perfmon") == 0) d[perfmon / 32].effective |= 1u << (perfmon % 32);
    for (int i = 0; i < 2; i++) d[i].permitted = d[i].inheritable = d[i].effective;
    int rc = (int)syscall(SYS_capset, &h, d);
    say("caps=%s capset=%d errno=%d", which, rc, rc ? errno : 0);
}

int main(void) {
    mount("proc", "/proc", "proc", 0, NULL);
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    kmsg = open("/dev/kmsg", O_WRONLY);
    struct utsname u;
    uname(&u);
    say("FA-BEGIN kernel=%s", u.release);
    // which N values: fa.n=hex,hex,... on the kernel command line (default: all three)
    uint64_t Ns[8] = {1, 0x100000001ull, 0xffffffff00000001ull};
    int nN = 3;
    size_t cl = 0;
    unsigned char *cmd = read_file("/proc/cmdline", &cl);
    if (cmd) {
        cmd[cl ? cl - 1 : 0] = 0;
        say("cmdline: %s", cmd);
        char *s = strstr((char *)cmd, "fa.n=");
        if (s) {
            s += 5;
            nN = 0;
            while (*s && *s != ' ' && nN < 8) {
                Ns[nN++] = strtoull(s, &s, 16);
                if (*s == ',') s++;
            }
        }
    }
    int id = btf_find("bpf_fentry_test2", BTF_KIND_FUNC);
    say("btf_types=%u bpf_fentry_test2 btf_id=%d", g_btf.cnt, id);
    {
        FILE *f = fopen("/proc/sys/net/core/bpf_jit_enable", "r");
        int j = -1;
        if (f) { fscanf(f, "%d", &j); fclose(f); }
        say("bpf_jit_enable=%d", j);
    }
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY; a.key_size = 4; a.value_size = 16; a.max_entries = 1;
    int map_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
    say("map_fd=%d errno=%d", map_fd, map_fd < 0 ? errno : 0);
    if (cmd) {
        char *c = strstr((char *)cmd, "fa.caps=");
        if (c) {
            char which[32] = {0};
            sscanf(c + 8, "%31s", which);
            drop_caps(which);
        }
    }
    if (id > 0 && map_fd >= 0)
        for (int i = 0; i < nN; i++) run_one(Ns[i], id, map_fd);
    say("FA-DONE");
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
