/* pfk_loader: PID 1 of the patchfuzz kernel-oracle VM (issue 9). Static, no libbpf.
 *
 * It reads /batch.bin (format: guest/pfk_batch.h), and for every case creates its maps, resolves
 * its kfunc names to the running kernel's BTF ids (parsing /sys/kernel/btf/vmlinux itself),
 * synthesises a minimal BTF + func_info when the program has subprograms (the verifier refuses
 * callbacks without func_info), loads it with BPF_PROG_LOAD, reads the rewritten ("xlated")
 * instructions back with BPF_OBJ_GET_INFO_BY_FD, optionally runs BPF_PROG_TEST_RUN on the case's
 * inputs, and prints everything on the console as "@@" lines. Then it powers the VM off.
 *
 * Output lines (one case = CASE, X*, LOG*, RUN/MAP*, END):
 *   @@PFK-BEGIN v=<batch version> release=<uname -r> jit=<bpf_jit_enable> cases=<n> uptime_ms=<guest clock at start>
 *   @@FACT <name> <value>                       struct offsets read from the kernel's BTF
 *   @@CASE <i> rc=<0|-errno> insns=<n> xlated=<n> verified=<n> load_us=<n> maps=<id,id|-> jited=<bytes>
 *                                               (jited=0: the program runs in the interpreter)
 *   @@X <i> <hex>                               xlated bytes, at most 512 hex digits a line
 *   @@SYM <i> <pc> <name[,alias]|?>             what a call / kernel address at xlated pc names (pfk_ksyms.h)
 *   @@LOG <i> <text>                            verifier log tail (failures, or ALWAYS_LOG)
 *   @@RUN <i> <k> rc=<0|-errno> retval=<u32>
 *   @@IA <i> <map> <xlated_off>,...             an instruction array's entries after the load
 *   @@MAP <i> <k> <map> <keyhex> <valuehex>     map contents after run k (array/hash only)
 *   @@END <i>
 *   @@PFK-DONE ok=<n> failed=<n> us=<total load+dump time> wall_us=<whole batch, guest clock>
 *   @@PFK-ERROR <text>                          the batch itself was unusable
 *
 * Safety: this program issues bpf() syscalls, so it refuses to run unless it is PID 1 and the
 * kernel command line carries "pfk.guest=1" (set only by the host's qemu runner): it must never
 * load generated programs into a developer's own kernel.
 * Build: cc -O2 -static -o pfk-guest pfk_loader.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <linux/reboot.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "pfk_batch.h"
#include "pfk_btf.h"
#include "pfk_ksyms.h"

static long sys_bpf(int cmd, union bpf_attr *attr) { return syscall(__NR_bpf, cmd, attr, sizeof(*attr)); }

#include "pfk_privilege.h"

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Byte offset of member `name` in struct/union `id`, looking through anonymous members (the
 * kernel's `struct bpf_array` keeps `value` inside an anonymous union); -1 when absent. */
static long btf_member_off(uint32_t id, const char *name, int depth) {
    const unsigned char *t = btf_type(id);
    while (t && depth < 16) { /* skip typedef / volatile / const / restrict / type tags */
        uint32_t k = btf_kind(t);
        if (k != 8 && k != 9 && k != 10 && k != 11 && k != 18) break;
        t = btf_type(rd32(t + 8));
        depth++;
    }
    if (!t || (btf_kind(t) != 4 && btf_kind(t) != 5) || depth >= 16) return -1;
    uint32_t info = rd32(t + 4), vlen = info & 0xffff, kflag = info >> 31;
    for (uint32_t m = 0; m < vlen; m++) {
        const unsigned char *mp = t + 12 + 12 * m;
        uint32_t bits = rd32(mp + 8);
        if (kflag) bits &= 0xffffff;
        const char *mn = btf_str(rd32(mp));
        if (strcmp(mn, name) == 0) return (long)(bits / 8);
        if (!*mn) {
            long inner = btf_member_off(rd32(mp + 4), name, depth + 1);
            if (inner >= 0) return (long)(bits / 8) + inner;
        }
    }
    return -1;
}

static void print_facts(void) {
    int arr = btf_find("bpf_array", BTF_KIND_STRUCT);
    int htab = btf_find("htab_elem", BTF_KIND_STRUCT);
    printf(PFK_OUT_FACT " btf_types %u\n", g_btf.cnt ? g_btf.cnt - 1 : 0);
    printf(PFK_OUT_FACT " array_value_off %ld\n", arr > 0 ? btf_member_off((uint32_t)arr, "value", 0) : -1L);
    printf(PFK_OUT_FACT " htab_elem_key_off %ld\n", htab > 0 ? btf_member_off((uint32_t)htab, "key", 0) : -1L);
    /* the LRU hash inline tests and sets htab_elem.lru_node.ref */
    int lru = btf_find("bpf_lru_node", BTF_KIND_STRUCT);
    long lru_off = htab > 0 ? btf_member_off((uint32_t)htab, "lru_node", 0) : -1L;
    long ref_off = lru > 0 ? btf_member_off((uint32_t)lru, "ref", 0) : -1L;
    printf(PFK_OUT_FACT " htab_lru_ref_off %ld\n", lru_off >= 0 && ref_off >= 0 ? lru_off + ref_off : -1L);
}

/* ---- minimal program BTF for func_info: [1] int, [2] int(void), [3] static FUNC "f" ---------- */
static int min_btf_fd(void) {
    static int fd = -2;
    if (fd != -2) return fd;
    static const char strs[] = "\0int\0f";
    uint32_t types[] = {
        1, (uint32_t)BTF_KIND_INT << 24, 4, (BTF_INT_SIGNED << 24) | 32,
        0, (uint32_t)BTF_KIND_FUNC_PROTO << 24, 1,
        5, (uint32_t)BTF_KIND_FUNC << 24, 2,
    };
    struct btf_header hdr;
    memset(&hdr, 0, sizeof(hdr));
    hdr.magic = BTF_MAGIC;
    hdr.version = BTF_VERSION;
    hdr.hdr_len = sizeof(hdr);
    hdr.type_len = sizeof(types);
    hdr.str_off = sizeof(types);
    hdr.str_len = sizeof(strs);
    static unsigned char blob[sizeof(struct btf_header) + sizeof(types) + sizeof(strs)];
    memcpy(blob, &hdr, sizeof(hdr));
    memcpy(blob + sizeof(hdr), types, sizeof(types));
    memcpy(blob + sizeof(hdr) + sizeof(types), strs, sizeof(strs));
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.btf = (uint64_t)(uintptr_t)blob;
    a.btf_size = sizeof(blob);
    fd = (int)sys_bpf(BPF_BTF_LOAD, &a);
    return fd;
}

/* Subprogram starts as the verifier finds them (add_subprog_and_kfunc): 0, every pseudo-call
 * target and every BPF_PSEUDO_FUNC ld_imm64 target; sorted, unique. */
static unsigned subprog_starts(const struct bpf_insn *in, unsigned cnt, uint32_t *starts, unsigned max) {
    unsigned n = 0;
    starts[n++] = 0;
    for (unsigned i = 0; i < cnt; i++) {
        int call = in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == BPF_PSEUDO_CALL;
        int func = in[i].code == (BPF_LD | BPF_IMM | BPF_DW) && in[i].src_reg == BPF_PSEUDO_FUNC;
        if (!call && !func) continue;
        long t = (long)i + in[i].imm + 1;
        if (t <= 0 || t >= (long)cnt) continue;
        unsigned k = 0;
        while (k < n && starts[k] < (uint32_t)t) k++;
        if (k < n && starts[k] == (uint32_t)t) continue;
        if (n == max) break;
        memmove(&starts[k + 1], &starts[k], (n - k) * sizeof(*starts));
        starts[k] = (uint32_t)t;
        n++;
    }
    return n;
}

/* ---- batch reading --------------------------------------------------------------------------- */
struct cursor {
    const unsigned char *p, *end;
    int bad;
};
static const unsigned char *take(struct cursor *c, size_t n) {
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return NULL;
    }
    const unsigned char *r = c->p;
    c->p += n;
    return r;
}
static uint32_t get32(struct cursor *c) {
    const unsigned char *p = take(c, 4);
    return p ? rd32(p) : 0;
}
static uint16_t get16(struct cursor *c) {
    const unsigned char *p = take(c, 2);
    uint16_t v = 0;
    if (p) memcpy(&v, p, 2);
    return v;
}

struct map_def {
    uint32_t type, key, value, max, flags;
    int fd;
    uint32_t id;
    int own; /* created for this case alone (an instruction array): closed when it ends */
};

static void print_hex(const unsigned char *b, size_t n) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        putchar(hx[b[i] >> 4]);
        putchar(hx[b[i] & 15]);
    }
}

static void print_log_tail(unsigned idx, const char *log) {
    size_t n = strlen(log);
    unsigned lines = 0;
    size_t start = n;
    while (start > 0) { /* walk back over the last PFK_LOG_TAIL_LINES non-empty lines */
        if (log[start - 1] == '\n' && start != n && ++lines >= PFK_LOG_TAIL_LINES) break;
        start--;
    }
    const char *p = log + start;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len) printf(PFK_OUT_LOG " %u %.*s\n", idx, (int)len, p);
        p += len + (nl ? 1 : 0);
    }
}

/* Empty every map, then write the run's entries (each run starts from its own map state). */
static void reset_maps(struct map_def *maps, unsigned nmaps) {
    static unsigned char key[512], next[512], zero[65536];
    for (unsigned m = 0; m < nmaps; m++) {
        union bpf_attr a;
        if (maps[m].fd < 0 || maps[m].key > sizeof(key) || maps[m].value > sizeof(zero)) continue;
        if (maps[m].type == BPF_MAP_TYPE_ARRAY) {
            for (uint32_t k = 0; k < maps[m].max && k < 4096; k++) {
                memset(&a, 0, sizeof(a));
                a.map_fd = (uint32_t)maps[m].fd;
                a.key = (uint64_t)(uintptr_t)&k;
                a.value = (uint64_t)(uintptr_t)zero;
                sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
            }
        } else if (maps[m].type == BPF_MAP_TYPE_HASH || maps[m].type == BPF_MAP_TYPE_LRU_HASH) {
            for (int guard = 0; guard < 100000; guard++) {
                memset(&a, 0, sizeof(a));
                a.map_fd = (uint32_t)maps[m].fd;
                a.key = 0;
                a.next_key = (uint64_t)(uintptr_t)next;
                if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &a) != 0) break;
                memcpy(key, next, maps[m].key);
                memset(&a, 0, sizeof(a));
                a.map_fd = (uint32_t)maps[m].fd;
                a.key = (uint64_t)(uintptr_t)key;
                if (sys_bpf(BPF_MAP_DELETE_ELEM, &a) != 0) break;
            }
        }
    }
}

static void dump_maps(unsigned idx, unsigned run, struct map_def *maps, unsigned nmaps) {
    static unsigned char key[512], next[512], val[65536];
    for (unsigned m = 0; m < nmaps; m++) {
        int is_array = maps[m].type == BPF_MAP_TYPE_ARRAY;
        int is_hash = maps[m].type == BPF_MAP_TYPE_HASH || maps[m].type == BPF_MAP_TYPE_LRU_HASH;
        if (maps[m].fd < 0 || (!is_array && !is_hash) || maps[m].key > sizeof(key) || maps[m].value > sizeof(val))
            continue;
        int have = 0;
        for (uint32_t k = 0; k < 16; k++) {
            union bpf_attr a;
            if (is_array) {
                if (k >= maps[m].max) break;
                memset(key, 0, maps[m].key);
                memcpy(key, &k, maps[m].key < 4 ? maps[m].key : 4);
            } else {
                memset(&a, 0, sizeof(a));
                a.map_fd = (uint32_t)maps[m].fd;
                a.key = have ? (uint64_t)(uintptr_t)key : 0;
                a.next_key = (uint64_t)(uintptr_t)next;
                if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &a) != 0) break;
                memcpy(key, next, maps[m].key);
                have = 1;
            }
            memset(&a, 0, sizeof(a));
            a.map_fd = (uint32_t)maps[m].fd;
            a.key = (uint64_t)(uintptr_t)key;
            a.value = (uint64_t)(uintptr_t)val;
            if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) != 0) continue;
            printf(PFK_OUT_MAP " %u %u %u ", idx, run, m);
            print_hex(key, maps[m].key);
            putchar(' ');
            print_hex(val, maps[m].value);
            putchar('\n');
        }
    }
}

/* Maps are pooled across cases: creating and freeing thousands of maps dominated the batch time
 * under TCG. A case takes, per map, a pooled map with the same definition that no earlier map of
 * the same case took; ids still identify each map (the host maps them back to indexes). Test runs
 * empty the maps first, so no state leaks between cases. */
/* The kernel's id of the map behind `fd` (0 when it cannot be read). */
static uint32_t map_id_of(int fd) {
    struct bpf_map_info mi;
    memset(&mi, 0, sizeof(mi));
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.info.bpf_fd = (uint32_t)fd;
    a.info.info_len = sizeof(mi);
    a.info.info = (uint64_t)(uintptr_t)&mi;
    return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 ? mi.id : 0;
}

struct pool_map {
    uint32_t type, key, value, max, flags, id, level;
    int fd;
};
static struct pool_map g_pool[4096];
static unsigned g_pool_cnt;

/* A map is created at the case's level (an array map's bypass_spec_v1, and so its lookup's index
 * mask, is decided by its creator), and pooled per level. */
static int pool_get(struct map_def *want, const struct map_def *taken, unsigned ntaken, unsigned level) {
    for (unsigned i = 0; i < g_pool_cnt; i++) {
        struct pool_map *p = &g_pool[i];
        if (p->type != want->type || p->key != want->key || p->value != want->value || p->max != want->max ||
            p->flags != want->flags || p->level != level)
            continue;
        int used = 0;
        for (unsigned t = 0; t < ntaken; t++)
            if (taken[t].fd == p->fd) used = 1;
        if (used) continue;
        want->id = p->id;
        return p->fd;
    }
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.map_type = want->type;
    a.key_size = want->key;
    a.value_size = want->value;
    a.max_entries = want->max;
    a.map_flags = want->flags;
    int fd = (int)sys_bpf_as(level, BPF_MAP_CREATE, &a);
    if (fd < 0) return -errno;
    want->id = map_id_of(fd);
    if (g_pool_cnt < sizeof(g_pool) / sizeof(g_pool[0]))
        g_pool[g_pool_cnt++] =
            (struct pool_map){want->type, want->key, want->value, want->max, want->flags, want->id, level, fd};
    return fd;
}

/* An instruction array (BPF_MAP_TYPE_INSN_ARRAY) for this case alone: created at the case's level,
 * each entry's orig_off written, then frozen (bpf_insn_array_init refuses an unfrozen map). The
 * batch's value size is the model's (8: the code address a program reads per entry); the kernel's
 * is struct bpf_insn_array_value. Returns the fd or -errno; a failing step says which in `log`. */
static int insn_array_create(struct map_def *want, const uint32_t *orig, unsigned level, char *log, size_t log_size) {
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.map_type = PFK_MAP_TYPE_INSN_ARRAY;
    a.key_size = 4;
    a.value_size = PFK_INSN_ARRAY_VALUE_SIZE;
    a.max_entries = want->max;
    int fd = (int)sys_bpf_as(level, BPF_MAP_CREATE, &a);
    if (fd < 0) {
        int err = errno;
        if (!log[0]) snprintf(log, log_size, "pfk: BPF_MAP_CREATE of an instruction array failed: errno %d\n", err);
        return -err;
    }
    for (uint32_t k = 0; k < want->max; k++) {
        uint32_t value[PFK_INSN_ARRAY_VALUE_SIZE / 4] = {orig[k]};
        memset(&a, 0, sizeof(a));
        a.map_fd = (uint32_t)fd;
        a.key = (uint64_t)(uintptr_t)&k;
        a.value = (uint64_t)(uintptr_t)value;
        if (sys_bpf_as(level, BPF_MAP_UPDATE_ELEM, &a)) {
            int err = errno;
            if (!log[0]) snprintf(log, log_size, "pfk: writing instruction array entry %u failed: errno %d\n", k, err);
            close(fd);
            return -err;
        }
    }
    memset(&a, 0, sizeof(a));
    a.map_fd = (uint32_t)fd;
    if (sys_bpf_as(level, BPF_MAP_FREEZE, &a)) {
        int err = errno;
        if (!log[0]) snprintf(log, log_size, "pfk: BPF_MAP_FREEZE of an instruction array failed: errno %d\n", err);
        close(fd);
        return -err;
    }
    want->id = map_id_of(fd);
    want->own = 1;
    return fd;
}

/* Every instruction array's entries as the verifier left them (xlated_off after all its patching). */
static void dump_insn_arrays(unsigned idx, const struct map_def *maps, unsigned nmaps) {
    for (unsigned m = 0; m < nmaps; m++) {
        if (maps[m].type != PFK_MAP_TYPE_INSN_ARRAY || maps[m].fd < 0) continue;
        printf(PFK_OUT_INSN_ARRAY " %u %u ", idx, m);
        for (uint32_t k = 0; k < maps[m].max; k++) {
            uint32_t value[PFK_INSN_ARRAY_VALUE_SIZE / 4] = {0, 0xffffffffu, 0, 0};
            union bpf_attr a;
            memset(&a, 0, sizeof(a));
            a.map_fd = (uint32_t)maps[m].fd;
            a.key = (uint64_t)(uintptr_t)&k;
            a.value = (uint64_t)(uintptr_t)value;
            if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a)) value[1] = 0xffffffffu;
            printf("%s%u", k ? "," : "", value[1]);
        }
        putchar('\n');
    }
}

/* The same program through a file root opened (BPF_PROG_GET_FD_BY_ID): the xlated dump of a file
 * a lower level opened has its call imms and kernel addresses zeroed (bpf_dump_raw_ok of the
 * opener's credentials). Closes `fd`; -1 with errno on failure. */
static char g_reopen_err[160];
static unsigned g_test_run_fallbacks; /* test runs a lower level was refused, made by root instead */
static int reopen_as_root(int fd) {
    struct bpf_prog_info info;
    memset(&info, 0, sizeof(info));
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.info.bpf_fd = (uint32_t)fd;
    a.info.info_len = sizeof(info);
    a.info.info = (uint64_t)(uintptr_t)&info;
    long rc = sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
    int root_fd = -1;
    if (rc == 0) {
        memset(&a, 0, sizeof(a));
        a.prog_id = info.id;
        root_fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
    }
    int err = errno;
    if (root_fd < 0)
        snprintf(g_reopen_err, sizeof(g_reopen_err), "pfk: root could not reopen the program (%s, prog id %u): errno %d\n",
                 rc ? "BPF_OBJ_GET_INFO_BY_FD" : "BPF_PROG_GET_FD_BY_ID", info.id, err);
    close(fd); /* only now: the program lives as long as some fd holds it */
    errno = err;
    return root_fd;
}

static int run_case(unsigned idx, struct cursor *c, uint32_t flags, uint64_t *busy_us) {
    static char log[1 << 20];
    static uint32_t starts[4096];
    static struct bpf_func_info finfo[4096];
    static unsigned char data_out[65536 + 4096];
    struct map_def maps[PFK_MAX_MAPS];
    const unsigned char *rec = c->p;
    uint32_t size = get32(c);
    if (c->bad || size < PFK_CASE_HEADER_SIZE || (size_t)(c->end - rec) < size) return -1;
    struct cursor r = {c->p, rec + size, 0};
    c->p = rec + size;
    uint32_t prog_type = get32(&r), prog_flags = get32(&r), level = get32(&r), insn_cnt = get32(&r);
    uint16_t map_cnt = get16(&r), kfunc_cnt = get16(&r), run_cnt = get16(&r), name_len = get16(&r);
    take(&r, name_len);
    uint32_t attach_type = get32(&r);
    uint16_t attach_len = get16(&r);
    const unsigned char *attach = take(&r, attach_len);
    if (r.bad || map_cnt > PFK_MAX_MAPS || kfunc_cnt > PFK_MAX_KFUNCS || insn_cnt > PFK_MAX_INSNS ||
        level >= PFK_PRIV_LEVELS) {
        printf(PFK_OUT_CASE " %u rc=-%d insns=0 xlated=0 verified=0 load_us=0 maps=-\n" PFK_OUT_CASE_END " %u\n",
               idx, E2BIG, idx);
        return 1;
    }
    int rc = 0;
    log[0] = 0;
    if (level != PFK_PRIV_ROOT && !g_proxy_ok[level])
        snprintf(log, sizeof(log), "pfk: no loader at privilege level %u (lowering failed: errno %d)\n", level,
                 g_proxy_err[level]);
    for (unsigned m = 0; m < map_cnt; m++) {
        maps[m].fd = -1;
        maps[m].own = 0;
    }
    for (unsigned m = 0; m < map_cnt; m++) {
        maps[m].type = get32(&r);
        maps[m].key = get32(&r);
        maps[m].value = get32(&r);
        maps[m].max = get32(&r);
        maps[m].flags = get32(&r);
        maps[m].id = 0;
        if (maps[m].type == PFK_MAP_TYPE_INSN_ARRAY) {
            static uint32_t orig[PFK_MAX_INSN_ARRAY_ENTRIES];
            if (maps[m].max == 0 || maps[m].max > PFK_MAX_INSN_ARRAY_ENTRIES) {
                r.bad = 1;
                break;
            }
            for (uint32_t k = 0; k < maps[m].max; k++) orig[k] = get32(&r);
            if (r.bad) break;
            maps[m].fd = rc ? -1 : insn_array_create(&maps[m], orig, level, log, sizeof(log));
        } else {
            maps[m].fd = pool_get(&maps[m], maps, m, level);
        }
        if (maps[m].fd < 0 && !rc) {
            rc = maps[m].fd;
            if (!log[0]) snprintf(log, sizeof(log), "pfk: BPF_MAP_CREATE of map %u failed: errno %d\n", m, -rc);
        }
    }
    if (r.bad && !rc) {
        rc = -E2BIG;
        snprintf(log, sizeof(log), "pfk: the case's map records are malformed (an instruction array of 0 or over %u entries?)\n",
                 PFK_MAX_INSN_ARRAY_ENTRIES);
    }
    int32_t kf_from[PFK_MAX_KFUNCS], kf_to[PFK_MAX_KFUNCS];
    for (unsigned k = 0; k < kfunc_cnt; k++) {
        kf_from[k] = (int32_t)get32(&r);
        uint16_t nl = get16(&r);
        const unsigned char *nm = take(&r, nl);
        char name[256];
        snprintf(name, sizeof(name), "%.*s", nm ? (int)nl : 0, nm ? (const char *)nm : "");
        kf_to[k] = btf_find(name, BTF_KIND_FUNC);
        if (kf_to[k] < 0 && !rc) rc = -ENOENT;
    }
    const unsigned char *raw = take(&r, (size_t)insn_cnt * 8);
    struct bpf_insn *insns = raw && insn_cnt ? malloc((size_t)insn_cnt * 8) : NULL;
    if (insns) memcpy(insns, raw, (size_t)insn_cnt * 8);
    if (!insns && !rc) rc = -EINVAL;
    for (unsigned i = 0; insns && i < insn_cnt; i++) {
        struct bpf_insn *in = &insns[i];
        if (in->code == (BPF_LD | BPF_IMM | BPF_DW)) {
            if ((in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_VALUE) && in->imm >= 0 &&
                (unsigned)in->imm < map_cnt)
                in->imm = maps[in->imm].fd;
            i++;
        } else if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_KFUNC_CALL) {
            for (unsigned k = 0; k < kfunc_cnt; k++)
                if (kf_from[k] == in->imm) {
                    in->imm = kf_to[k];
                    in->off = 0;
                }
        }
    }
    int fd = -1;
    uint32_t nx = 0, verified = 0, jited = 0;
    struct bpf_insn *xl = NULL;
    uint64_t t0 = now_us();
    if (!rc) {
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        unsigned nsub = subprog_starts(insns, insn_cnt, starts, 4096);
        if (nsub > 1) {
            int bfd = min_btf_fd();
            for (unsigned k = 0; k < nsub; k++) {
                finfo[k].insn_off = starts[k];
                finfo[k].type_id = 3;
            }
            if (bfd >= 0) {
                a.prog_btf_fd = (uint32_t)bfd;
                a.func_info_rec_size = sizeof(struct bpf_func_info);
                a.func_info = (uint64_t)(uintptr_t)finfo;
                a.func_info_cnt = nsub;
            }
        }
        a.prog_type = prog_type;
        a.prog_flags = prog_flags;
        if (prog_type == BPF_PROG_TYPE_TRACING) {
            /* fentry/fexit/fmod_ret name a kernel function; tp_btf the typedef btf_trace_<tp>. */
            char an[256];
            snprintf(an, sizeof(an), "%s%.*s", attach_type == BPF_TRACE_RAW_TP ? "btf_trace_" : "",
                     attach ? (int)attach_len : 0, attach ? (const char *)attach : "");
            int id = btf_find(an, attach_type == BPF_TRACE_RAW_TP ? BTF_KIND_TYPEDEF : BTF_KIND_FUNC);
            a.expected_attach_type = attach_type;
            a.attach_btf_id = id > 0 ? (uint32_t)id : 0;
            if (id <= 0) snprintf(log, sizeof(log), "pfk: attach target %s not in the kernel's BTF\n", an);
        }
        a.insns = (uint64_t)(uintptr_t)insns;
        a.insn_cnt = insn_cnt;
        a.license = (uint64_t)(uintptr_t)"GPL";
        if (flags & PFK_FLAG_ALWAYS_LOG) {
            a.log_level = 1;
            a.log_buf = (uint64_t)(uintptr_t)log;
            a.log_size = sizeof(log);
        }
        fd = (int)sys_bpf_as(level, BPF_PROG_LOAD, &a);
        g_reopen_err[0] = 0;
        if (fd >= 0 && level != PFK_PRIV_ROOT) fd = reopen_as_root(fd);
        if (fd < 0) {
            rc = -errno;
            if (g_reopen_err[0]) snprintf(log, sizeof(log), "%s", g_reopen_err);
            if (!(flags & PFK_FLAG_ALWAYS_LOG)) { /* load again with the log on, to say why */
                a.log_level = 1;
                a.log_buf = (uint64_t)(uintptr_t)log;
                a.log_size = sizeof(log);
                int again = (int)sys_bpf_as(level, BPF_PROG_LOAD, &a);
                if (again >= 0) close(again);
            }
        } else {
            struct bpf_prog_info info;
            memset(&info, 0, sizeof(info));
            union bpf_attr ia;
            memset(&ia, 0, sizeof(ia));
            ia.info.bpf_fd = (uint32_t)fd;
            ia.info.info_len = sizeof(info);
            ia.info.info = (uint64_t)(uintptr_t)&info;
            if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &ia) == 0 && info.xlated_prog_len) {
                uint32_t len = info.xlated_prog_len;
                verified = info.verified_insns;
                jited = info.jited_prog_len;
                xl = malloc(len);
                memset(&info, 0, sizeof(info));
                info.xlated_prog_len = len;
                info.xlated_prog_insns = (uint64_t)(uintptr_t)xl;
                memset(&ia, 0, sizeof(ia));
                ia.info.bpf_fd = (uint32_t)fd;
                ia.info.info_len = sizeof(info);
                ia.info.info = (uint64_t)(uintptr_t)&info;
                if (xl && sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &ia) == 0) nx = len / 8;
            }
        }
    }
    uint64_t dt = now_us() - t0;
    *busy_us += dt;
    printf(PFK_OUT_CASE " %u rc=%d insns=%u xlated=%u verified=%u load_us=%llu maps=", idx, rc, insn_cnt, nx, verified,
           (unsigned long long)dt);
    for (unsigned m = 0; m < map_cnt; m++) printf("%s%u", m ? "," : "", maps[m].id);
    printf("%s jited=%u\n", map_cnt ? "" : "-", jited);
    for (uint32_t off = 0; off < nx; off += 32) {
        printf(PFK_OUT_XLATED " %u ", idx);
        print_hex((const unsigned char *)xl + (size_t)off * 8, (size_t)((nx - off < 32 ? nx - off : 32) * 8));
        putchar('\n');
    }
    if (xl && nx) print_xlated_symbols(idx, (const struct bpf_insn *)xl, nx);
    if (fd >= 0) dump_insn_arrays(idx, maps, map_cnt);
    if (log[0] && (rc != 0 || (flags & PFK_FLAG_ALWAYS_LOG))) print_log_tail(idx, log);
    for (unsigned k = 0; k < run_cnt; k++) {
        uint32_t dlen = get32(&r);
        const unsigned char *data = take(&r, dlen);
        uint32_t clen = get32(&r);
        const unsigned char *ctx = take(&r, clen);
        uint32_t ecnt = get32(&r);
        if (fd >= 0 && (flags & PFK_FLAG_TEST_RUN)) reset_maps(maps, map_cnt);
        for (uint32_t e = 0; e < ecnt && !r.bad; e++) {
            uint16_t m = get16(&r), kl = get16(&r);
            uint32_t vl = get32(&r);
            const unsigned char *kb = take(&r, kl), *vb = take(&r, vl);
            if (fd < 0 || !(flags & PFK_FLAG_TEST_RUN) || !kb || !vb || m >= map_cnt || maps[m].fd < 0) continue;
            union bpf_attr a;
            memset(&a, 0, sizeof(a));
            a.map_fd = (uint32_t)maps[m].fd;
            a.key = (uint64_t)(uintptr_t)kb;
            a.value = (uint64_t)(uintptr_t)vb;
            sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
        }
        if (fd < 0 || !(flags & PFK_FLAG_TEST_RUN) || r.bad) continue;
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        a.test.prog_fd = (uint32_t)fd;
        a.test.repeat = 1;
        if (dlen) {
            a.test.data_in = (uint64_t)(uintptr_t)data;
            a.test.data_size_in = dlen;
            a.test.data_out = (uint64_t)(uintptr_t)data_out;
            a.test.data_size_out = sizeof(data_out);
        }
        if (clen) {
            a.test.ctx_in = (uint64_t)(uintptr_t)ctx;
            a.test.ctx_size_in = clen;
        }
        /* At the case's level (the proxy reaches root's fd through the shared table); a level the
         * kernel refuses a test run (-EPERM) is run by root: what the program computes is the same. */
        int trc = sys_bpf_as(level, BPF_PROG_TEST_RUN, &a) ? -errno : 0;
        if (trc == -EPERM && level != PFK_PRIV_ROOT) {
            g_test_run_fallbacks++;
            trc = sys_bpf(BPF_PROG_TEST_RUN, &a) ? -errno : 0;
        }
        printf(PFK_OUT_RUN " %u %u rc=%d retval=%u\n", idx, k, trc, a.test.retval);
        dump_maps(idx, k, maps, map_cnt);
    }
    printf(PFK_OUT_CASE_END " %u\n", idx);
    fflush(stdout);
    if (fd >= 0) close(fd);
    for (unsigned m = 0; m < map_cnt; m++)
        if (maps[m].own && maps[m].fd >= 0) close(maps[m].fd);
    free(xl);
    free(insns);
    return fd >= 0 ? 0 : 1;
}

static void power_off(void) {
    fflush(stdout);
    sync();
    reboot(LINUX_REBOOT_CMD_POWER_OFF);
    _exit(0); /* PID 1 exiting panics the kernel, and panic=-1 + -no-reboot ends qemu too */
}

static int cmdline_has(const char *word) {
    size_t n = 0;
    unsigned char *c = read_file("/proc/cmdline", &n);
    if (!c) return 0;
    c[n ? n - 1 : 0] = 0;
    int found = 0;
    for (char *tok = strtok((char *)c, " \n"); tok; tok = strtok(NULL, " \n"))
        if (strcmp(tok, word) == 0) found = 1;
    free(c);
    return found;
}

int main(void) {
    if (getpid() != 1) {
        fprintf(stderr, "pfk-guest: refusing to run: not PID 1 of the patchfuzz VM (it loads BPF programs)\n");
        return 2;
    }
    struct rlimit nofile = {65536, 65536}; /* the map pool keeps thousands of fds open */
    setrlimit(RLIMIT_NOFILE, &nofile);
    mkdir("/proc", 0555);
    mkdir("/sys", 0555);
    mount("proc", "/proc", "proc", 0, NULL);
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
    if (!cmdline_has("pfk.guest=1")) {
        printf(PFK_OUT_ERROR " kernel command line lacks pfk.guest=1\n");
        power_off();
    }
    struct utsname u;
    uname(&u);
    int jit = -1;
    size_t jl = 0;
    unsigned char *j = read_file("/proc/sys/net/core/bpf_jit_enable", &jl);
    if (j && jl) jit = atoi((const char *)j);
    size_t len = 0;
    unsigned char *batch = read_file("/batch.bin", &len);
    struct cursor c = {batch, batch + len, 0};
    const unsigned char *magic = take(&c, 4);
    uint32_t version = get32(&c), cnt = get32(&c), flags = get32(&c);
    if (!batch || !magic || memcmp(magic, PFK_BATCH_MAGIC, 4) != 0 || version != PFK_BATCH_VERSION || c.bad) {
        printf(PFK_OUT_ERROR " /batch.bin missing or not a version %u batch\n", PFK_BATCH_VERSION);
        power_off();
    }
    size_t ul = 0;
    unsigned char *up = read_file("/proc/uptime", &ul);
    long uptime_ms = up && ul ? (long)(strtod((const char *)up, NULL) * 1000.0) : -1;
    printf(PFK_OUT_BEGIN " v=%u release=%s jit=%d cases=%u uptime_ms=%ld\n", PFK_BATCH_VERSION, u.release, jit, cnt,
           uptime_ms);
    print_facts();
    /* unprivileged loads need kernel.unprivileged_bpf_disabled = 0 (Debian boots with 2; only 1 is sticky) */
    int sysctl = open("/proc/sys/kernel/unprivileged_bpf_disabled", O_WRONLY);
    if (sysctl >= 0) {
        if (write(sysctl, "0\n", 2) != 2) printf(PFK_OUT_FACT " unprivileged_bpf_disabled_write %d\n", -errno);
        close(sysctl);
    }
    start_proxies();
    fflush(stdout);
    unsigned ok = 0, failed = 0;
    uint64_t busy = 0, start = now_us();
    for (unsigned i = 0; i < cnt; i++) {
        int res = run_case(i, &c, flags, &busy);
        if (res < 0) {
            printf(PFK_OUT_ERROR " case %u: truncated record\n", i);
            break;
        }
        if (res == 0)
            ok++;
        else
            failed++;
    }
    printf(PFK_OUT_FACT " test_run_root_fallbacks %u\n", g_test_run_fallbacks);
    printf(PFK_OUT_DONE " ok=%u failed=%u us=%llu wall_us=%llu\n", ok, failed, (unsigned long long)busy,
           (unsigned long long)(now_us() - start));
    power_off();
    return 0;
}
