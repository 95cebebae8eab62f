/* pfk_btf.h: a file reader and a minimal reader of the running kernel's BTF
 * (/sys/kernel/btf/vmlinux), enough to look up a type id by name and kind. Static functions for
 * static guest programs: the oracle's loader (pfk_loader.c) and the throwaway VM reproducers in
 * corpus/regression/findings include it. */
#ifndef PATCHFUZZ_GUEST_PFK_BTF_H
#define PATCHFUZZ_GUEST_PFK_BTF_H

#include <fcntl.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (n == cap) {
            cap *= 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* ---- the running kernel's BTF: FUNC ids for kfuncs, struct offsets for the facts ------------- */
struct btf_view {
    const unsigned char *data;
    size_t len;
    const unsigned char *types, *strs;
    uint32_t types_len, strs_len;
    uint32_t *off; /* off[id] = byte offset of type id inside types */
    uint32_t cnt;  /* number of type ids + 1 */
};
static struct btf_view g_btf;
static int g_btf_loaded;

static uint32_t rd32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Bytes that follow the 12-byte common header of a BTF type, by kind (uapi linux/btf.h). */
static uint32_t btf_extra(uint32_t kind, uint32_t vlen) {
    switch (kind) {
        case 1: return 4;          /* INT */
        case 3: return 12;         /* ARRAY */
        case 4: case 5: return 12 * vlen; /* STRUCT, UNION */
        case 6: return 8 * vlen;   /* ENUM */
        case 13: return 8 * vlen;  /* FUNC_PROTO */
        case 14: return 4;         /* VAR */
        case 15: return 12 * vlen; /* DATASEC */
        case 17: return 4;         /* DECL_TAG */
        case 19: return 12 * vlen; /* ENUM64 */
        default: return 0;         /* PTR FWD TYPEDEF VOLATILE CONST RESTRICT FUNC FLOAT TYPE_TAG */
    }
}

static int btf_load(void) {
    if (g_btf_loaded) return g_btf.cnt ? 0 : -1;
    g_btf_loaded = 1;
    size_t len = 0;
    unsigned char *d = read_file("/sys/kernel/btf/vmlinux", &len);
    if (!d || len < sizeof(struct btf_header)) return -1;
    struct btf_header h;
    memcpy(&h, d, sizeof(h));
    if (h.magic != BTF_MAGIC || (size_t)h.hdr_len + h.type_off + h.type_len > len ||
        (size_t)h.hdr_len + h.str_off + h.str_len > len)
        return -1;
    g_btf.data = d;
    g_btf.len = len;
    g_btf.types = d + h.hdr_len + h.type_off;
    g_btf.types_len = h.type_len;
    g_btf.strs = d + h.hdr_len + h.str_off;
    g_btf.strs_len = h.str_len;
    uint32_t cap = 1 << 17, n = 1;
    uint32_t *off = malloc(cap * sizeof(uint32_t));
    uint32_t p = 0;
    while (off && p + 12 <= h.type_len) {
        if (n == cap) {
            cap *= 2;
            uint32_t *no = realloc(off, cap * sizeof(uint32_t));
            if (!no) break;
            off = no;
        }
        off[n++] = p;
        uint32_t info = rd32(g_btf.types + p + 4);
        p += 12 + btf_extra((info >> 24) & 0x1f, info & 0xffff);
    }
    g_btf.off = off;
    g_btf.cnt = off ? n : 0;
    return g_btf.cnt ? 0 : -1;
}

static const char *btf_str(uint32_t off) { return off < g_btf.strs_len ? (const char *)g_btf.strs + off : ""; }
static const unsigned char *btf_type(uint32_t id) { return id && id < g_btf.cnt ? g_btf.types + g_btf.off[id] : NULL; }
static uint32_t btf_kind(const unsigned char *t) { return (rd32(t + 4) >> 24) & 0x1f; }

/* First type id of `kind` called `name`, or -1. */
static int btf_find(const char *name, uint32_t kind) {
    if (btf_load() != 0) return -1;
    for (uint32_t id = 1; id < g_btf.cnt; id++) {
        const unsigned char *t = btf_type(id);
        if (btf_kind(t) == kind && strcmp(btf_str(rd32(t)), name) == 0) return (int)id;
    }
    return -1;
}

#endif
