/* pfk_batch.h: the batch file the host (harness/kernel/batch_writer.cpp) writes into the guest's
 * initramfs as /batch.bin and the guest loader (guest/pfk_loader.c) reads. Plain C so that both
 * the static C guest and the C++ host include the same definition. Little-endian, no padding:
 * every field is read with memcpy at a byte cursor, so alignment never matters.
 *
 *   header   "PFKB" u32 version u32 case_cnt u32 flags
 *   case     u32 record_size (bytes of the whole case record, header included)
 *            u32 prog_type u32 prog_flags u32 privilege (PFK_PRIV_*) u32 insn_cnt
 *            u16 map_cnt u16 kfunc_cnt u16 run_cnt u16 name_len
 *            name bytes (not NUL-terminated)
 *            u32 expected_attach_type u16 attach_len attach bytes   (TRACING programs: the BTF
 *                name of the target function, or of the tracepoint for BPF_TRACE_RAW_TP; else 0, 0)
 *            map_cnt   x { u32 type u32 key_size u32 value_size u32 max_entries u32 map_flags
 *                          type PFK_MAP_TYPE_INSN_ARRAY: then max_entries x u32 orig_off }
 *            kfunc_cnt x { i32 prog_imm u16 name_len name bytes }   (call imm -> kfunc name)
 *            insn_cnt  x 8 bytes (struct bpf_insn; ld_imm64 map imms are map indexes)
 *            run_cnt   x { u32 data_len data u32 ctx_len ctx u32 entry_cnt
 *                          entry_cnt x { u16 map u16 key_len u32 value_len key value } }
 *
 * The guest answers on its console with lines that all start with "@@" (see pfk_loader.c). */
#ifndef PATCHFUZZ_GUEST_PFK_BATCH_H
#define PATCHFUZZ_GUEST_PFK_BATCH_H

#define PFK_BATCH_MAGIC "PFKB"
#define PFK_BATCH_VERSION 4u

/* header flags */
#define PFK_FLAG_TEST_RUN 0x1u   /* run BPF_PROG_TEST_RUN on each case's runs */
#define PFK_FLAG_ALWAYS_LOG 0x2u /* print the verifier log tail even when the load succeeds */

/* The loader's privilege level for one case (its maps are created at the same level, so an array
 * map's bypass_spec_v1 follows it too):
 *   ROOT   all capabilities;
 *   BPF    CAP_BPF alone (CAP_PERFMON, CAP_SYS_ADMIN, CAP_NET_ADMIN dropped): bpf_capable() but
 *          not bypass_spec_v1 / allow_ptr_leaks;
 *   UNPRIV uid/gid 65534, no capabilities (root sets kernel.unprivileged_bpf_disabled=0 first).
 * The xlated code of a BPF or UNPRIV load is read by root through the prog id (an unprivileged
 * caller gets xlated_prog_len = 0, and a file it opened hides call imms). */
#define PFK_PRIV_ROOT 0u
#define PFK_PRIV_BPF 1u
#define PFK_PRIV_UNPRIV 2u
#define PFK_PRIV_LEVELS 3u

/* BPF_MAP_TYPE_INSN_ARRAY (enum bpf_map_type, after ARENA): newer than the uapi headers that
 * build the guest. The guest creates such a map for its case alone (never pooled: the kernel binds
 * it to one program), with value_size PFK_INSN_ARRAY_VALUE_SIZE (struct bpf_insn_array_value:
 * u32 orig_off, xlated_off, jitted_off, pad), writes each entry's orig_off, freezes it (the kernel
 * refuses an unfrozen one at load), and after the load prints every entry's xlated_off. */
#define PFK_MAP_TYPE_INSN_ARRAY 34u
#define PFK_INSN_ARRAY_VALUE_SIZE 16u
#define PFK_MAX_INSN_ARRAY_ENTRIES 4096u

/* limits the guest enforces (a record beyond them is reported as rejected input, rc=-E2BIG) */
#define PFK_MAX_MAPS 64u
#define PFK_MAX_KFUNCS 64u
#define PFK_MAX_INSNS 1000000u
#define PFK_LOG_TAIL_LINES 24u

#define PFK_BATCH_HEADER_SIZE 16u
#define PFK_CASE_HEADER_SIZE 28u
#define PFK_MAP_RECORD_SIZE 20u

/* Output line tags (guest -> host), each at the start of a console line. */
#define PFK_OUT_BEGIN "@@PFK-BEGIN"
#define PFK_OUT_FACT "@@FACT"
#define PFK_OUT_CASE "@@CASE"
#define PFK_OUT_XLATED "@@X"
#define PFK_OUT_LOG "@@LOG"
#define PFK_OUT_RUN "@@RUN"
#define PFK_OUT_MAP "@@MAP"
#define PFK_OUT_INSN_ARRAY "@@IA" /* @@IA <i> <map> <xlated_off>,... (u32 each; 4294967295 = deleted) */
#define PFK_OUT_SYM "@@SYM"
#define PFK_OUT_CASE_END "@@END"
#define PFK_OUT_DONE "@@PFK-DONE"
#define PFK_OUT_ERROR "@@PFK-ERROR"

#endif
