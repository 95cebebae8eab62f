/* Calls to .text subprograms (BPF_PSEUDO_CALL through relocations), one called twice and one
 * calling another: libbpf appends each once, in call order. */
#include "common.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u32);
} seen SEC(".maps");

__attribute__((noinline)) static int mix(int a, int b) {
    return (a * 31) ^ (b + 7);
}

__attribute__((noinline)) static int lookup_or(__u32 key, int dflt) {
    __u32 *v = bpf_map_lookup_elem(&seen, &key);
    return v ? mix((int)*v, dflt) : dflt;
}

SEC("xdp")
int subprog_call(struct xdp_md *ctx) {
    int x = mix((int)ctx->ingress_ifindex, (int)ctx->rx_queue_index);
    int y = mix(x, 3);
    return lookup_or((__u32)y, x) & 3;
}

SEC("xdp")
int second_entry(struct xdp_md *ctx) {
    return mix((int)ctx->rx_queue_index, 1) & 1;
}
