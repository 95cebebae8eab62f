/* An array lookup (7/8-insn inline) and a per-CPU array lookup. */
#include "common.h"

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u64);
} slots SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} percpu SEC(".maps");

SEC("socket")
int array_lookup(struct __sk_buff *skb) {
    __u32 key = skb->len & 63;
    __u64 *v = bpf_map_lookup_elem(&slots, &key);
    __u32 k2 = 1;
    __u32 *c = bpf_map_lookup_elem(&percpu, &k2);
    if (c) *c += 1;
    return v ? (int)*v : 0;
}
