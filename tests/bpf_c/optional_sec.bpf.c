/* Programs in "?" sections (SEC("?tc"): libbpf does not auto-load them; newer kernel selftests use
 * them widely), one with an array lookup, one calling a subprogram. libbpf's section name drops
 * the "?" that the ELF section name keeps. */
#include "common.h"

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

static __attribute__((noinline)) int twice(int x) { return x * 2 + 1; }

SEC("?tc")
int opt_lookup(struct __sk_buff *skb) {
    __u32 key = skb->len & 15;
    __u64 *v = bpf_map_lookup_elem(&counts, &key);
    return v ? (int)*v : 0;
}

SEC("?socket")
int opt_subprog(struct __sk_buff *skb) { return twice((int)skb->len); }
