/* Global data: .data, .rodata and .bss become internal array maps referenced through
 * BPF_PSEUDO_MAP_VALUE ld_imm64 with the value offset in the second slot. */
#include "common.h"

volatile const __u32 factor = 5;       /* .rodata */
volatile __u64 hits = 1;               /* .data */
volatile __u64 last_len;               /* .bss */
volatile __u32 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};  /* .data, non-zero offset */

SEC("socket")
int global_data(struct __sk_buff *skb) {
    hits += 1;
    last_len = skb->len;
    return (int)(table[skb->len & 7] * factor);
}
