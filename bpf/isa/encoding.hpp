#pragma once
// The encoding constants our model needs beyond the uapi header that builds us: the encodings newer
// than the 6.1 uapi headers on Debian 12 and the kernel-internal ones (include/linux/filter.h),
// guarded so a newer uapi wins. A header of its own so that the per-opcode facts (insn_facts.hpp)
// and the instruction type (insn.hpp) can both name them.
#include <linux/bpf.h>

#include <cstdint>

namespace patchfuzz::isa {

// ---- encodings missing from the Debian 12 (6.1) uapi header -------------------------------------
#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80  // sign-extending load mode (cpu v4)
#endif
#ifndef BPF_JCOND
#define BPF_JCOND 0xe0  // JMP|JCOND: may_goto
#endif
#ifndef BPF_MAY_GOTO
#define BPF_MAY_GOTO 0  // src_reg of JCOND
#endif
#ifndef BPF_LOAD_ACQ
#define BPF_LOAD_ACQ 0x100  // atomic imm: load-acquire
#endif
#ifndef BPF_STORE_REL
#define BPF_STORE_REL 0x110  // atomic imm: store-release
#endif

// Kernel-internal encodings (include/linux/filter.h); never accepted from user space.
inline constexpr uint8_t kOpTailCall = 0xf0;       // BPF_TAIL_CALL: JMP|0xf0
inline constexpr uint8_t kModeProbeMem = 0x20;     // BPF_PROBE_MEM (LDX)
inline constexpr uint8_t kModeProbeMemSx = 0x40;   // BPF_PROBE_MEMSX (LDX)
inline constexpr uint8_t kModeProbeMem32 = 0xa0;   // BPF_PROBE_MEM32 (arena)
inline constexpr uint8_t kModeProbeMem32Sx = 0x20; // unused here; named for completeness of the table
inline constexpr uint8_t kModeProbeAtomic = 0xe0;  // BPF_PROBE_ATOMIC
inline constexpr uint8_t kModeNospec = 0xc0;       // BPF_NOSPEC: ST|NOSPEC = 0xc2, the speculation barrier
// BPF_REG_AX: MAX_BPF_REG in torvalds include/linux/filter.h (= 11). Trees with BPF_REG_PARAMS
// differ (docs/patching.md §1.1); we model the torvalds numbering.
inline constexpr uint8_t kRegAx = 11;
inline constexpr uint8_t kRegFp = 10;
inline constexpr int32_t kMaxLoops = 8 * 1024 * 1024;  // BPF_MAX_LOOPS (include/linux/bpf.h)
inline constexpr int32_t kMaxTimedLoops = 0xffff;      // BPF_MAX_TIMED_LOOPS
inline constexpr uint32_t kInsnDeleted = 0xffffffffu;  // INSN_DELETED (insn-array entries)
// BPF_MAP_TYPE_INSN_ARRAY is newer than the 6.1 uapi that builds us: its number in the kernel's
// enum bpf_map_type (after BPF_MAP_TYPE_ARENA, 33).
inline constexpr uint32_t kMapTypeInsnArray = 34;

}  // namespace patchfuzz::isa
