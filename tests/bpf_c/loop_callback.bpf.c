/* bpf_loop with a static callback (PSEUDO_FUNC ld_imm64, callback subprog) and constant flags 0:
 * the bpf_loop inline site. */
#include "common.h"

struct loop_ctx {
    __u64 sum;
    __u32 limit;
};

static int step(__u32 i, void *data) {
    struct loop_ctx *c = data;
    c->sum += i * 3;
    return c->sum > c->limit ? 1 : 0;
}

SEC("tc")
int loop_callback(struct __sk_buff *skb) {
    struct loop_ctx c = {.sum = 0, .limit = skb->len};
    bpf_loop(100, step, &c, 0);
    return (int)c.sum;
}
