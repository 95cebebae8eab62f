/* A hash-map lookup: the do_misc_fixups hash-lookup inline site. */
#include "common.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

SEC("xdp")
int hash_lookup(struct xdp_md *ctx) {
    __u32 key = ctx->ingress_ifindex;
    __u64 *v = bpf_map_lookup_elem(&counts, &key);
    if (v) {
        __sync_fetch_and_add(v, 1);
        return XDP_PASS;
    }
    __u64 one = 1;
    bpf_map_update_elem(&counts, &key, &one, BPF_ANY);
    return XDP_DROP;
}
