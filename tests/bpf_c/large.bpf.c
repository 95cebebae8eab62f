/* A large object (>= 50k insns after libbpf appends its subprograms): fully unrolled loops with
 * hash, LRU-hash, array and per-CPU array lookups and helper calls, split over a main program and
 * .text subprograms, shaped like the pyperf selftests (which are ~47k-80k insns). */
#include "common.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u64);
} big_hash SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 512);
    __type(key, __u64);
    __type(value, __u64);
} big_lru SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, __u64);
} big_array SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} big_percpu SEC(".maps");

#define ROUNDS 840

__attribute__((noinline)) static __u64 walk_hash(__u64 seed) {
    __u64 acc = seed;
#pragma clang loop unroll(full)
    for (int i = 0; i < ROUNDS; i++) {
        __u32 k = (__u32)(acc ^ (__u64)i * 2654435761u);
        __u64 *v = bpf_map_lookup_elem(&big_hash, &k);
        if (v) acc += *v;
        else acc ^= bpf_get_prandom_u32();
    }
    return acc;
}

__attribute__((noinline)) static __u64 walk_lru(__u64 seed) {
    __u64 acc = seed;
#pragma clang loop unroll(full)
    for (int i = 0; i < ROUNDS; i++) {
        __u64 k = acc + (__u64)i * 40503u;
        __u64 *v = bpf_map_lookup_elem(&big_lru, &k);
        if (v) acc = acc * 3 + *v;
        else acc += bpf_ktime_get_ns() & 0xff;
    }
    return acc;
}

__attribute__((noinline)) static __u64 walk_array(__u64 seed) {
    __u64 acc = seed;
#pragma clang loop unroll(full)
    for (int i = 0; i < ROUNDS; i++) {
        __u32 k = (__u32)((acc >> 3) + i) & 255;
        __u64 *v = bpf_map_lookup_elem(&big_array, &k);
        if (v) acc ^= *v + i;
        __u32 z = 0;
        __u64 *p = bpf_map_lookup_elem(&big_percpu, &z);
        if (p) *p += acc;
    }
    return acc;
}

SEC("xdp")
int large(struct xdp_md *ctx) {
    __u64 acc = ctx->ingress_ifindex;
#pragma clang loop unroll(full)
    for (int i = 0; i < ROUNDS; i++) {
        __u32 k = (__u32)(acc * 31 + i);
        __u64 *v = bpf_map_lookup_elem(&big_hash, &k);
        if (v) acc += *v / (i + 1);
        else acc += bpf_get_smp_processor_id();
    }
    acc = walk_hash(acc);
    acc = walk_lru(acc);
    acc = walk_array(acc);
    return (int)(acc & 3);
}
