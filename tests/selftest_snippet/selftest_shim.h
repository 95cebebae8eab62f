/* What a patchfuzz selftest snippet needs from the selftest tree, restated so that it compiles
 * on its own: tools/testing/selftests/bpf/progs/bpf_misc.h defines the real macros (the test
 * annotations there become BTF decl tags the test loader reads; here they expand to nothing). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define __used __attribute__((used))
#define __naked __attribute__((naked))
/* asm operands: a helper by id, an object (map, subprog) by address */
#define __imm(name) [name] "i"(name)
#define __imm_addr(name) [name] "i"(&name)
#define __clobber_all "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "memory"
#define __description(text)
#define __success
#define __xlated(text)
