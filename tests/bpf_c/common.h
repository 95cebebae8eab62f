/* Shared declarations for patchfuzz's own BPF C test objects. Only linux/bpf.h and libbpf's
 * bpf_helpers.h (libbpf-dev): no vmlinux.h, no kernel BTF. */
#ifndef PATCHFUZZ_TEST_BPF_COMMON_H
#define PATCHFUZZ_TEST_BPF_COMMON_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#endif
