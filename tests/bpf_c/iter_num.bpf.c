/* A bpf_for loop spelled out: bpf_iter_num_new/next/destroy kfunc calls on an 8-byte stack slot
 * (the numeric-iterator inline sites). The kfuncs are externs resolved at load, never here. */
#include "common.h"

struct bpf_iter_num {
    __u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

SEC("tc")
int iter_num(struct __sk_buff *skb) {
    struct bpf_iter_num it;
    int *v;
    int sum = 0;
    bpf_iter_num_new(&it, 0, (int)(skb->len & 0xff));
    while ((v = bpf_iter_num_next(&it))) sum += *v;
    bpf_iter_num_destroy(&it);
    return sum;
}
