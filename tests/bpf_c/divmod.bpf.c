/* Division and modulo by a register, 32 and 64 bit: the div/mod-by-zero rewrite sites.
 * clang 14 never emits BPF_MOD (it expands x % y into div, mul, sub), so the modulos are
 * emitted as raw encodings (.quad) on pinned registers. */
#include "common.h"

SEC("socket")
int divmod(struct __sk_buff *skb) {
    __u64 a = (__u64)skb->len << 32 | skb->hash, b = skb->mark;
    __u64 c = (__u64)skb->tc_index << 32 | skb->len, d = skb->hash;
    __u32 e = skb->priority, f = skb->protocol;
    __u32 g = skb->queue_mapping, h = skb->vlan_tci;
    __u64 q = a / b;
    __u32 q32 = e / f;
    register __u64 rc asm("r2") = c;
    register __u64 rd asm("r3") = d;
    register __u64 rg asm("r4") = g;
    register __u64 rh asm("r5") = h;
    asm volatile(".quad 0x000000000000329f" : "+r"(rc) : "r"(rd)); /* r2 %= r3 (ALU64|MOD|X) */
    asm volatile(".quad 0x000000000000549c" : "+r"(rg) : "r"(rh)); /* w4 %= w5 (ALU|MOD|X) */
    return (int)(q + rc + q32 + (__u32)rg);
}
