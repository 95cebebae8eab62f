/* The guest's kernel symbols (issue 22 item 5): the host runs the kernel's xlated program in its
 * own interpreter, and for that must know what each call and each kernel address in it names.
 * The xlated code gives a helper or kfunc call as imm = function - __bpf_call_base (the kernel's
 * BPF_CALL_IMM) and &jiffies as a plain 64-bit constant; only the running kernel's symbol table
 * turns those back into names. PID 1 is root, so /proc/kallsyms shows the real addresses.
 *
 * The table is read once, on the first lookup, and kept sorted by address; lookups are exact
 * (an address inside a function names nothing). Part of pfk_loader.c's single translation unit. */
#ifndef PATCHFUZZ_GUEST_PFK_KSYMS_H
#define PATCHFUZZ_GUEST_PFK_KSYMS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pfk_ksym {
    unsigned long addr;
    const char *name;
};

static struct pfk_ksym *g_ksyms;
static size_t g_ksym_cnt;
static int g_ksyms_loaded;
static unsigned long g_bpf_call_base;

static int ksym_cmp(const void *a, const void *b) {
    unsigned long x = ((const struct pfk_ksym *)a)->addr, y = ((const struct pfk_ksym *)b)->addr;
    return x < y ? -1 : x > y;
}

/* "ffffffff81000000 T _stext\n" or "... t name\t[module]\n": the text is kept, its separators
 * become NULs so that names point into it. */
static void load_ksyms(void) {
    if (g_ksyms_loaded) return;
    g_ksyms_loaded = 1;
    size_t len = 0;
    unsigned char *text = read_file("/proc/kallsyms", &len);
    if (!text || !len) return;
    size_t cap = 1 << 16;
    g_ksyms = malloc(cap * sizeof(*g_ksyms));
    char *p = (char *)text, *end = (char *)text + len;
    while (p < end && g_ksyms) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        *nl = 0;
        char *sp1 = strchr(p, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (sp2) {
            char *name = sp2 + 1, *tab = strchr(name, '\t');
            if (tab) *tab = 0;
            if (g_ksym_cnt == cap) {
                cap *= 2;
                struct pfk_ksym *n = realloc(g_ksyms, cap * sizeof(*g_ksyms));
                if (!n) break;
                g_ksyms = n;
            }
            g_ksyms[g_ksym_cnt].addr = strtoul(p, NULL, 16);
            g_ksyms[g_ksym_cnt].name = name;
            if (strcmp(name, "__bpf_call_base") == 0) g_bpf_call_base = g_ksyms[g_ksym_cnt].addr;
            g_ksym_cnt++;
        }
        p = nl + 1;
    }
    if (g_ksyms) qsort(g_ksyms, g_ksym_cnt, sizeof(*g_ksyms), ksym_cmp);
}

/* Prints the names of the symbols at exactly `addr`, comma-separated (aliases such as jiffies and
 * jiffies_64 share one), or "?" when there is none. */
static void print_ksyms_at(unsigned long addr) {
    size_t lo = 0, hi = g_ksym_cnt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_ksyms[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    int printed = 0;
    for (size_t i = lo; i < g_ksym_cnt && g_ksyms[i].addr == addr && printed < 4; i++, printed++)
        printf("%s%s", printed ? "," : "", g_ksyms[i].name);
    if (!printed) putchar('?');
}

/* @@SYM <case> <pc> <names>: for each helper/kfunc call of the xlated program the symbol at
 * __bpf_call_base + imm, and for each ld_imm64 of a kernel-half constant the symbol at that
 * address (jiffies). Without __bpf_call_base in the table nothing is printed: the host then
 * reports every call as unresolved. */
static void print_xlated_symbols(unsigned idx, const struct bpf_insn *x, uint32_t n) {
    load_ksyms();
    if (!g_bpf_call_base) return;
    for (uint32_t i = 0; i < n; i++) {
        const struct bpf_insn *in = &x[i];
        if (in->code == (BPF_JMP | BPF_CALL) && (in->src_reg == 0 || in->src_reg == BPF_PSEUDO_KFUNC_CALL)) {
            printf(PFK_OUT_SYM " %u %u ", idx, i);
            print_ksyms_at(g_bpf_call_base + (unsigned long)(long)in->imm);
            putchar('\n');
        } else if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && i + 1 < n) {
            uint64_t v = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)x[i + 1].imm << 32;
            if (in->src_reg == 0 && (unsigned long)v == v && (long)(unsigned long)v < 0) {
                printf(PFK_OUT_SYM " %u %u ", idx, i);
                print_ksyms_at((unsigned long)v);
                putchar('\n');
            }
            i++;
        }
    }
}

#endif
